# Lint and format (issue 16): clippy and rustfmt over the Rust workspace, ruff
# and mypy (strict, plus stubtest of _native.pyi against the built module) over
# the Python package, tsc --strict over the Node package's declarations.
# The tools install themselves: ruff and mypy into .venv from
# tools/lint/requirements.txt, typescript and the types it needs through
# bindings-node's package.json (npm ci in build-node's stamp).
TEST_TARGETS += lint

LINT_PY_STAMP := $(VENV)/.hw-lint-requirements.stamp
LINT_PY_PATHS := bindings-python/python tests/python tests/dist tests/typing tools/dist
# Workspaces of their own (excluded from the root one), formatted with the same rustfmt.toml.
FMT_EXTRA_MANIFESTS := sandbox/Cargo.toml tools/uniffi-bindgen/Cargo.toml fuzz/Cargo.toml
# maturin builds pyo3 with these two variables; clippy runs with the same ones
# (once maturin has written its config), so neither reruns pyo3's build scripts
# and rebuilds the pyo3 stack after the other.
PYO3_MATURIN_CONFIG = $(firstword $(wildcard $(ROOT)/target/maturin/pyo3-config-$(HOST_TRIPLE)-*.txt))
CLIPPY_ENV = $(if $(PYO3_MATURIN_CONFIG),PYO3_CONFIG_FILE=$(PYO3_MATURIN_CONFIG) PYO3_BUILD_EXTENSION_MODULE=1)

# (python.mk and node.mk are read after this file: their stamps by name, since prerequisites expand when read)
$(LINT_PY_STAMP): $(VENV)/.hw-requirements.stamp tools/lint/requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r tools/lint/requirements.txt
	touch $@

lint: lint-layers lint-rust lint-python lint-node ## run every linter and format check (layers, clippy, rustfmt, ruff, mypy + stubtest, tsc)

lint-layers: ## the core has no world-facing or FFI dependency, and bindings call only harnessweaver_core::host
	bash tools/lint/layers.sh

# After build-python, so clippy finds maturin's pyo3 config (see CLIPPY_ENV).
lint-rust: build-python ## clippy -D warnings over the workspace (every target, the bindings too) and cargo fmt --check
	cargo fmt --all --check
	for m in $(FMT_EXTRA_MANIFESTS); do cargo fmt --manifest-path $$m --check || exit 1; done
	$(CLIPPY_ENV) cargo clippy --workspace --all-targets -- -D warnings

# build-python first: stubtest imports the built module.
lint-python: $(LINT_PY_STAMP) build-python ## ruff check and format --check, mypy --strict, stubtest of _native.pyi, the API's types (tests/typing)
	$(VENV)/bin/ruff check $(LINT_PY_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PY_PATHS)
	cd bindings-python && $(PY) -m mypy
	$(PY) -m mypy.stubtest harnessweaver._native
	MYPYPATH=bindings-python/python $(PY) -m mypy --strict --warn-unused-ignores tests/typing

lint-node: bindings-node/node_modules/.hw-npm.stamp ## tsc --strict --noEmit over index.d.ts, native.d.ts and adapters/*.d.ts
	cd $(NODE_DIR) && npx tsc --strict --noEmit -p tsconfig.json

.PHONY: lint lint-layers lint-rust lint-python lint-node
