# Sanitizers (issue 5): the side-by-side benchmark and the corpus generator.
BENCH_TARGETS += bench-sanitize
BENCH_VENV := $(ROOT)/.venv-bench
SANITIZE_BIN = $${CARGO_TARGET_DIR:-$(ROOT)/target}/$(HOST_TRIPLE)/release/examples/sanitize_corpus

$(BENCH_VENV)/.installed:
	python3 -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install -q presidio-analyzer==2.2.366 presidio-anonymizer==2.2.366 scrubadub==2.0.1
	touch $@

bench-sanitize: $(BENCH_VENV)/.installed ## sanitizers vs Presidio and scrubadub: P/R/F1 per kind, injections, benign changes, MB/s
	cargo build --release -p harnessweaver-core --example sanitize_corpus
	$(BENCH_VENV)/bin/python bench/sanitize_bench.py --ours-bin "$(SANITIZE_BIN)" --write-docs

corpus-sanitize: ## regenerate fixtures/sanitize/cases.jsonl and re-record its known divergences
	python3 fixtures/sanitize/generate.py
	cargo run -q -p harnessweaver-core --example sanitize_corpus -- --bless

.PHONY: bench-sanitize corpus-sanitize
