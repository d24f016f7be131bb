# The MCP gateway (runtime/src/gateway/): `harnessweaver gateway mcp` and
# `harnessweaver approvals`, driven by MCP clients nobody here wrote: the
# official Python SDK (PyPI `mcp`) and TypeScript SDK (`@modelcontextprotocol/sdk`),
# over stdio and streamable HTTP, plus the host-served gateways (hw.serve_mcp,
# serveMcp). `make conformance-gateway` runs the public MCP conformance suite
# (not part of `make test`; see docs/gateway.md for its results).
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

gateway-deps: $(GATEWAY_BIN_STAMP) $(GATEWAY_PY_STAMP) $(GATEWAY_NODE_STAMP) build-sandbox

test-gateway: gateway-deps ## run the MCP gateway tests (official Python and TypeScript MCP clients, approvals CLI)
	HW_GATEWAY_BIN=$(GATEWAY_BIN) $(PY) -m pytest -q -p no:cacheprovider $(GATEWAY_DIR)
	HW_GATEWAY_BIN=$(GATEWAY_BIN) HW_GATEWAY_PYTHON=$(PY) node --test $(GATEWAY_DIR)/*.test.mjs

.PHONY: gateway-deps test-gateway

# The public MCP conformance suite (@modelcontextprotocol/conformance 0.1.13, the
# last release that runs on Node 20; server mode) against `gateway mcp --http`,
# fronting tests/gateway/conformance/fixture_server.py. Not in `make test`:
# scenarios that need features a governed gateway does not offer fail (see
# docs/gateway.md), and a failing scenario waits out the suite's 60 s timeout.
conformance-gateway: gateway-deps ## run the MCP conformance suite against the gateway; table in target/conformance-gateway.md
	HW_GATEWAY_BIN=$(GATEWAY_BIN) HW_GATEWAY_PYTHON=$(PY) node $(GATEWAY_DIR)/conformance/run.mjs

.PHONY: conformance-gateway
