# Bindings: the governor's added cost per call from Python and Node (a full call
# of a trivial native handler beside the handler called directly). Benchmarks
# run against the release builds of mk/bench.mk, kept apart from the debug
# builds the tests use: the wheel in .venv-bench, the npm package in target/bench-node-pkg.
BENCH_TARGETS += bench-python-call bench-python-audit bench-node-call

bench-python-call: bench-wheel ## benchmark a governed call from Python (release build) against the bare handler
	$(BENCH_PY) bench/python/bench_call.py

bench-python-audit: bench-wheel ## benchmark what an audit sink (JSON Lines, callback, SQLite) adds to a call from Python (release build)
	$(BENCH_PY) bench/python/bench_audit.py

bench-node-call: bench-addon ## benchmark a governed call from Node (release build) against the bare handler
	$(BENCH_NODE) bench/node/bench_call.mjs

.PHONY: bench-python-call bench-python-audit bench-node-call
