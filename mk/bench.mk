# Benchmarks (issue 9): `make bench` runs every BENCH_TARGETS entry, each of
# which writes machine-readable rows (medians over repeats) into
# target/bench-results/<suite>.jsonl, then bench/report.py builds the one
# table of ratios against the peers measured in the same run and writes
# BENCHMARKS.md. See bench/README.md.
#
# Builds: one release wheel installed into .venv-bench with every Python peer
# (bench/python/requirements.txt), one release addon in target/bench-node-pkg
# for the Node scripts (peers in bench/node, package-lock.json). Nothing here
# runs in `make test` except bench-smoke (about 10 s), which asserts nothing about speed.
#
# Every `cargo bench` of the core (digest_validate, cel_lite, governor,
# transports) runs with `--features bench-peer`: one feature set, so the core
# is built once for all of them instead of once per set.
#
# BENCH_QUICK=1 make bench: fewer repeats and shorter samples.
BENCH_TARGETS += bench-digest bench-validate bench-policy bench-load bench-concurrency
TEST_TARGETS += bench-smoke

BENCH_VENV ?= $(ROOT)/.venv-bench
BENCH_PY := $(BENCH_VENV)/bin/python
BENCH_PY_STAMP := $(BENCH_VENV)/.hw-bench-requirements.stamp
BENCH_NPM_STAMP := bench/node/node_modules/.hw-npm.stamp
BENCH_NODE_PKG := $(ROOT)/target/bench-node-pkg
BENCH_RELEASE_WHEELS := $(ROOT)/target/bench-release-wheels
# Rows of one `make` invocation share a run id, so the report can leave out rows of earlier runs.
ifndef HW_BENCH_RUN
export HW_BENCH_RUN := $(shell date -u +%Y%m%dT%H%M%S.%N)
endif
ifndef HW_BENCH_COMMAND
export HW_BENCH_COMMAND := $(if $(BENCH_QUICK),BENCH_QUICK=$(BENCH_QUICK) )make $(or $(MAKECMDGOALS),bench)
endif
export BENCH_QUICK
# criterion's output, read back by bench/criterion_results.py.
export CRITERION_HOME ?= $(ROOT)/target/criterion
BENCH_ROWS := python3 $(ROOT)/bench/criterion_results.py
CRITERION_ARGS := $(if $(BENCH_QUICK),--warm-up-time 1 --measurement-time 2)
BENCH_NODE := HW_NODE_PACKAGE=$(BENCH_NODE_PKG) node

bench-venv: $(BENCH_PY_STAMP) ## create .venv-bench with every Python peer of the benchmarks (pinned)

$(BENCH_PY_STAMP): bench/python/requirements.txt
	test -x $(BENCH_PY) || python3 -m venv $(BENCH_VENV)
	$(BENCH_PY) -m pip install --quiet --disable-pip-version-check -r bench/python/requirements.txt
	touch $@

$(BENCH_NPM_STAMP): bench/node/package.json bench/node/package-lock.json
	cd bench/node && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The release builds every benchmark script uses (cargo skips what is up to date).
bench-wheel: venv $(BENCH_PY_STAMP) ## build the release wheel and install it into .venv-bench
	rm -rf $(BENCH_RELEASE_WHEELS)
	$(VENV)/bin/maturin build --release --manifest-path bindings-python/Cargo.toml --out $(BENCH_RELEASE_WHEELS)
	$(BENCH_PY) -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps $(BENCH_RELEASE_WHEELS)/harnessweaver-*.whl

# (node.mk is read after this file: its stamp by name, since prerequisites expand when read)
bench-addon: bindings-node/node_modules/.hw-npm.stamp $(BENCH_NPM_STAMP) ## build the release addon into target/bench-node-pkg
	rm -rf $(BENCH_NODE_PKG) && mkdir -p $(BENCH_NODE_PKG)
	cd $(NODE_DIR) && npx napi build --platform --release --output-dir $(BENCH_NODE_PKG) --no-js --dts $(BENCH_NODE_PKG)/native.d.ts
	cp -r $(NODE_DIR)/*.js $(NODE_DIR)/adapters $(NODE_DIR)/package.json $(BENCH_NODE_PKG)/

bench-inputs: bench-wheel ## write the shared digest and validation inputs (target/bench-inputs)
	$(BENCH_PY) bench/inputs.py

bench-digest: bench-inputs bench-addon ## definition_digest (small, large) in Rust, Python and Node beside sorted-key JSON + sha256
	HW_BENCH_INPUTS=$(ROOT)/target/bench-inputs cargo bench -p harnessweaver-core --bench digest_validate --features bench-peer -- digest $(CRITERION_ARGS)
	$(BENCH_ROWS) digest
	$(BENCH_PY) bench/python/bench_digest.py
	$(BENCH_NODE) bench/node/bench_digest.mjs

bench-validate: bench-inputs bench-addon ## input validation beside jsonschema, fastjsonschema (Python) and ajv (Node)
	HW_BENCH_INPUTS=$(ROOT)/target/bench-inputs cargo bench -p harnessweaver-core --bench digest_validate --features bench-peer -- validate $(CRITERION_ARGS)
	$(BENCH_ROWS) validate
	$(BENCH_PY) bench/python/bench_validate.py
	$(BENCH_NODE) bench/node/bench_validate.mjs

bench-policy: bench-wheel ## a policy decision beside cedarpy (reference point)
	$(BENCH_PY) bench/python/bench_policy.py

bench-load: bench-wheel ## load()/inspect() of 10, 1,000 and 10,000 manifests: time and peak RSS
	$(BENCH_PY) bench/python/bench_load.py

bench-concurrency: bench-wheel bench-addon ## calls/s from 1-64 async callers (Python, Node), the GIL, Node's event-loop delay
	$(BENCH_PY) bench/python/bench_concurrency.py
	$(BENCH_NODE) bench/node/bench_concurrency.mjs

# After every BENCH_TARGETS entry (the Makefile's `bench: $(BENCH_TARGETS)`).
bench:
	python3 bench/report.py --run "$(HW_BENCH_RUN)"

bench-report: ## rebuild BENCHMARKS.md from the rows in target/bench-results (every run's)
	python3 bench/report.py

# Each new benchmark script once on tiny inputs (debug builds, the test venv's
# harnessweaver; rows go to a scratch directory): they must not rot. Asserts
# nothing about speed, only that every side agrees on every input.
BENCH_SMOKE_ENV := BENCH_SMOKE=1 HW_BENCH_RESULTS=$(ROOT)/target/bench-smoke/results HW_BENCH_INPUTS=$(ROOT)/target/bench-smoke/inputs \
	PYTHONPATH=$(ROOT)/bindings-python/python HW_NODE_PACKAGE=$(ROOT)/bindings-node

bench-smoke: build-python build-node $(BENCH_PY_STAMP) $(BENCH_NPM_STAMP) ## run each benchmark script once on tiny inputs (debug builds; no timing asserted)
	rm -rf target/bench-smoke
	$(BENCH_SMOKE_ENV) $(BENCH_PY) bench/inputs.py
	$(BENCH_SMOKE_ENV) $(BENCH_PY) bench/python/bench_digest.py
	$(BENCH_SMOKE_ENV) $(BENCH_PY) bench/python/bench_validate.py
	$(BENCH_SMOKE_ENV) $(BENCH_PY) bench/python/bench_policy.py
	$(BENCH_SMOKE_ENV) $(BENCH_PY) bench/python/bench_load.py
	$(BENCH_SMOKE_ENV) $(BENCH_PY) bench/python/bench_concurrency.py
	$(BENCH_SMOKE_ENV) node bench/node/bench_digest.mjs
	$(BENCH_SMOKE_ENV) node bench/node/bench_validate.mjs
	$(BENCH_SMOKE_ENV) node bench/node/bench_concurrency.mjs
	$(BENCH_SMOKE_ENV) $(BENCH_PY) bench/python/bench_call.py
	$(BENCH_SMOKE_ENV) $(BENCH_PY) bench/python/bench_audit.py
	$(BENCH_SMOKE_ENV) $(BENCH_PY) bench/python/bench_cel.py
	$(BENCH_SMOKE_ENV) node bench/node/bench_call.mjs
	$(BENCH_SMOKE_ENV) node bench/node/bench_cel.mjs
	$(BENCH_SMOKE_ENV) python3 bench/report.py --results target/bench-smoke/results --out target/bench-smoke/BENCHMARKS.md \
		> target/bench-smoke/report.txt
	@echo "bench-smoke: every benchmark script ran once; rows in target/bench-smoke (not timings to read)"

.PHONY: bench-venv bench-wheel bench-addon bench-inputs bench-digest bench-validate bench-policy bench-load bench-concurrency bench-report bench-smoke
