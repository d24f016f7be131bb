# cel-lite through the bindings, beside CEL implementations a user could pick
# instead: in Python cel-python (celpy) and common-expression-language, in Node
# @marcbachmann/cel-js. Both use the release builds of mk/bench.mk, apart from
# the debug builds the tests use (bench-wheel: a wheel installed into
# .venv-bench; bench-addon: the npm package in target/bench-node-pkg), so they
# work in a fresh clone.
BENCH_TARGETS += bench-cel-python bench-cel-node

BENCH_VENV ?= $(ROOT)/.venv-bench

bench-cel-python: bench-wheel ## benchmark hw.cel_lite (release wheel) beside cel-python and common-expression-language
	$(BENCH_VENV)/bin/python bench/python/bench_cel.py

bench-cel-node: bench-addon ## benchmark celLite (release addon) beside @marcbachmann/cel-js
	HW_NODE_PACKAGE=$(BENCH_NODE_PKG) node bench/node/bench_cel.mjs

.PHONY: bench-cel-python bench-cel-node
