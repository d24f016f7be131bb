# Fuzzing (issue 10): cargo-fuzz targets in fuzz/ (their own workspace and
# target directory). `make fuzz` builds them once with cargo-fuzz (stable
# rustc with RUSTC_BOOTSTRAP=1; no sanitizer: ASan needs a nightly std) and
# runs each under libFuzzer for FUZZ_SECONDS, then the differential tests
# with HW_DIFF_EXAMPLES_LONG cases. New corpus entries stay untracked
# (fuzz/.gitignore); a crash lands in fuzz/artifacts/<target>/ and fails.
# `make test-fuzz` is the short CI pass: the committed corpus plus bounded
# mutations through a plain cargo test (core/tests/fuzz_corpus.rs), since a
# cold instrumented build of the core takes far longer (25 min measured here,
# under load) than CI should spend.
TEST_TARGETS += test-fuzz

FUZZ_SECONDS ?= 180
FUZZ_TARGETS := manifest_parse harness_load canonical cel_lite sanitize call
FUZZ_SHORT_SECONDS ?= 2
HW_DIFF_EXAMPLES_LONG ?= 20000

cargo-fuzz: ## install cargo-fuzz (from crates.io) when it is missing
	@command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

test-fuzz: ## the short fuzz pass: committed corpus + a few seconds of mutations per target (plain cargo test)
	HW_FUZZ_SECONDS=$(FUZZ_SHORT_SECONDS) cargo test -p harnessweaver-core --test fuzz_corpus -- --nocapture

FUZZ_BIN := $(ROOT)/fuzz/target/$(HOST_TRIPLE)/release

fuzz: cargo-fuzz venv build-python ## run every libFuzzer target for FUZZ_SECONDS each, then the long differential run
	cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz build --sanitizer none
	@set -e; cd fuzz; for t in $(FUZZ_TARGETS); do \
	  mkdir -p corpus/$$t artifacts/$$t; \
	  echo "== fuzz $$t for $(FUZZ_SECONDS) s"; \
	  $(FUZZ_BIN)/$$t corpus/$$t -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=10 \
	    -artifact_prefix=artifacts/$$t/ -print_final_stats=1 > artifacts/$$t.log 2>&1 || true; \
	  grep -E '^stat::(number_of_executed_units|peak_rss_mb)|Done [0-9]+ runs|ERROR|panicked' artifacts/$$t.log || true; \
	  if ls artifacts/$$t/* >/dev/null 2>&1; then echo "!! fuzz $$t found inputs in fuzz/artifacts/$$t (log: fuzz/artifacts/$$t.log)"; exit 1; fi; \
	done
	HW_DIFF_EXAMPLES=$(HW_DIFF_EXAMPLES_LONG) $(PY) -m pytest -q tests/python/test_differential.py

.PHONY: cargo-fuzz test-fuzz fuzz
