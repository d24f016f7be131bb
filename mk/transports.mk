# Transports (runtime/src/transport/): the sandbox worker for `transport: code`
# and the third-party MCP servers the MCP tests start.
#
# sandbox/ is a workspace of its own (monty's jiter would clash with pyo3 in
# the root workspace), built into target/sandbox-worker/ — the directory the
# Rust tests build it into themselves when it is missing. The Python and Node
# runners find it through HARNESSWEAVER_SANDBOX_WORKER, exported here.
# test-rust runs these tests (with the rest of the core's); test-transports
# runs only them. Every runner of the governor fixtures needs the worker.

SANDBOX_TARGET := $(ROOT)/target/sandbox-worker
SANDBOX_WORKER := $(SANDBOX_TARGET)/$(HOST_TRIPLE)/debug/harnessweaver-sandbox
export HARNESSWEAVER_SANDBOX_WORKER := $(SANDBOX_WORKER)
MCP_TEST_DIR := tests/mcp
MCP_NODE_STAMP := $(MCP_TEST_DIR)/node_modules/.hw-npm.stamp
MCP_PY_STAMP := $(VENV)/.hw-mcp-requirements.stamp

build-sandbox: $(SANDBOX_WORKER) ## build the sandbox worker (harnessweaver-sandbox, Monty) for code tools

$(SANDBOX_WORKER): sandbox/Cargo.toml sandbox/Cargo.lock sandbox/src/main.rs
	cargo build --manifest-path sandbox/Cargo.toml --target-dir $(SANDBOX_TARGET)
	touch $@

# @modelcontextprotocol/server-everything, pinned by tests/mcp/package-lock.json.
$(MCP_NODE_STAMP): $(MCP_TEST_DIR)/package.json $(MCP_TEST_DIR)/package-lock.json
	cd $(MCP_TEST_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The official Python MCP SDK, for tests/mcp/py_server.py.
$(MCP_PY_STAMP): $(VENV_STAMP) $(MCP_TEST_DIR)/requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r $(MCP_TEST_DIR)/requirements.txt
	touch $@

mcp-servers: $(MCP_NODE_STAMP) $(MCP_PY_STAMP) ## install the MCP servers the transport tests start (npm ci, pip)

test-transports: build-sandbox mcp-servers ## run the transport tests (http server, sandbox, MCP servers)
	cargo test -p harnessweaver-runtime --test transport_http --test transport_code --test transport_mcp --test transport_process --test sandbox_attacks --test fixtures_governor

test-rust: build-sandbox mcp-servers
test-python test-node: build-sandbox

.PHONY: build-sandbox mcp-servers test-transports

# Release builds (worker and core) for the per-call figures in docs/transports.md.
BENCH_TARGETS += bench-transports
SANDBOX_WORKER_RELEASE := $(SANDBOX_TARGET)/$(HOST_TRIPLE)/release/harnessweaver-sandbox

bench-transports: mcp-servers ## benchmark http, code (warm/cold) and mcp calls through the governor
	cargo build --release --manifest-path sandbox/Cargo.toml --target-dir $(SANDBOX_TARGET)
	HARNESSWEAVER_SANDBOX_WORKER=$(SANDBOX_WORKER_RELEASE) cargo bench -p harnessweaver-runtime --bench transports
	$(BENCH_ROWS) transports

.PHONY: bench-transports
