# Fuzzing (issue 10): cargo-fuzz targets in fuzz/ (their own workspace and
# target directory). `make fuzz` runs each under libFuzzer for FUZZ_SECONDS
# (stable rustc with RUSTC_BOOTSTRAP=1; no sanitizer, since ASan needs a
# nightly std here). `make test-fuzz` is the short CI pass: the committed
# corpus plus bounded mutations through a plain cargo test (core/tests/
# fuzz_corpus.rs), because an instrumented cold build of the core takes far
# longer than the few seconds CI should spend; the differential tests' long
# run (`HW_DIFF_EXAMPLES`) is part of `make fuzz` too.
TEST_TARGETS += test-fuzz

FUZZ_SECONDS ?= 180
FUZZ_TARGETS := manifest_parse harness_load canonical cel_lite sanitize call
FUZZ_SHORT_SECONDS ?= 2
HW_DIFF_EXAMPLES_LONG ?= 20000

cargo-fuzz: ## install cargo-fuzz (from crates.io) when it is missing
	@command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

test-fuzz: ## the short fuzz pass: committed corpus + a few seconds of mutations per target (plain cargo test)
	HW_FUZZ_SECONDS=$(FUZZ_SHORT_SECONDS) cargo test -p harnessweaver-core --test fuzz_corpus -- --nocapture

fuzz: cargo-fuzz venv build-python ## run every libFuzzer target for FUZZ_SECONDS each, then the long differential run
	@set -e; cd fuzz; for t in $(FUZZ_TARGETS); do \
	  mkdir -p corpus/$$t artifacts/$$t; \
	  echo "== fuzz $$t for $(FUZZ_SECONDS) s"; \
	  RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$(ROOT)/fuzz/target cargo fuzz run --sanitizer none $$t corpus/$$t -- \
	    -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=10 -artifact_prefix=artifacts/$$t/ -print_final_stats=1 2>&1 \
	    | grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss|==|INFO: Seed|.*(crash|panic|leak|timeout|oom).*)' || true; \
	  if ls artifacts/$$t/* >/dev/null 2>&1; then echo "!! fuzz $$t found inputs in fuzz/artifacts/$$t"; exit 1; fi; \
	done
	HW_DIFF_EXAMPLES=$(HW_DIFF_EXAMPLES_LONG) $(PY) -m pytest -q tests/python/test_differential.py

.PHONY: cargo-fuzz test-fuzz fuzz
