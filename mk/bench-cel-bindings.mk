# cel-lite through the bindings, beside CEL implementations a user could pick
# instead: in Python cel-python (celpy) and common-expression-language, in Node
# @marcbachmann/cel-js. Both build the binding in release mode apart from the
# debug builds the tests use (a wheel in target/bench-wheels installed into
# .venv-bench; an addon in target/bench-node loaded through
# NAPI_RS_NATIVE_LIBRARY_PATH), so they work in a fresh clone.
BENCH_TARGETS += bench-cel-python bench-cel-node

BENCH_VENV ?= $(ROOT)/.venv-bench
BENCH_WHEELS := target/bench-wheels
BENCH_NODE_ADDON := target/bench-node

bench-cel-python: venv ## benchmark hw.cel_lite (release wheel) beside cel-python and common-expression-language
	test -x $(BENCH_VENV)/bin/python || python3 -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r bench/python/requirements.txt
	rm -rf $(BENCH_WHEELS)
	$(VENV)/bin/maturin build --release --manifest-path bindings-python/Cargo.toml --out $(BENCH_WHEELS)
	$(BENCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps $(BENCH_WHEELS)/harnessweaver-*.whl
	$(BENCH_VENV)/bin/python bench/python/bench_cel.py

bench-cel-node: $(NODE_MODULES_STAMP) ## benchmark celLite (release addon) beside @marcbachmann/cel-js
	cd bench/node && npm ci --no-audit --no-fund --loglevel=error
	cd $(NODE_DIR) && npx napi build --platform --release --output-dir $(ROOT)/$(BENCH_NODE_ADDON) --no-js --dts native.d.ts
	NAPI_RS_NATIVE_LIBRARY_PATH=$$(ls $(ROOT)/$(BENCH_NODE_ADDON)/*.node | head -n 1) node bench/node/bench_cel.mjs

.PHONY: bench-cel-python bench-cel-node
