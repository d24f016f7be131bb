# Bindings: the governor's added cost per call from Python and Node (a full call
# of a trivial native handler beside the handler called directly). Benchmarks
# run against release builds kept apart from the debug builds the tests use:
# the Python package in target/bench-python, the npm package in target/bench-node.
BENCH_TARGETS += bench-python-call bench-node-call

BENCH_PY_DIR := $(ROOT)/target/bench-python
BENCH_NODE_DIR := $(ROOT)/target/bench-node

bench-python-call: venv ## benchmark a governed call from Python (release build) against the bare handler
	rm -rf $(ROOT)/target/bench-wheels
	$(VENV)/bin/maturin build --release --manifest-path bindings-python/Cargo.toml --out $(ROOT)/target/bench-wheels
	rm -rf $(BENCH_PY_DIR)
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --target $(BENCH_PY_DIR) $(ROOT)/target/bench-wheels/*.whl
	PYTHONPATH=$(BENCH_PY_DIR) $(PY) bench/python/bench_call.py

bench-node-call: $(NODE_MODULES_STAMP) ## benchmark a governed call from Node (release build) against the bare handler
	rm -rf $(BENCH_NODE_DIR) && mkdir -p $(BENCH_NODE_DIR)
	cd $(NODE_DIR) && npx napi build --platform --release --output-dir $(BENCH_NODE_DIR) --no-js --dts $(BENCH_NODE_DIR)/native.d.ts
	cp $(NODE_DIR)/*.js $(NODE_DIR)/package.json $(BENCH_NODE_DIR)/
	HW_NODE_PACKAGE=$(BENCH_NODE_DIR) node bench/node/bench_call.mjs

.PHONY: bench-python-call bench-node-call
