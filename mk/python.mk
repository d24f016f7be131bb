# Python: the venv, the PyO3 package built with maturin, and its pytest suite.
# Every cargo step runs with the Makefile's CARGO_BUILD_TARGET and VIRTUAL_ENV,
# so cargo, maturin and napi share one target directory without rebuilding.
# What every native build is made from (defined in each binding's fragment,
# since fragments are read in name order).
ifndef RUST_SOURCES
RUST_SOURCES := Cargo.toml Cargo.lock core/Cargo.toml runtime/Cargo.toml workspace-hack/Cargo.toml $(shell find core/src runtime/src -name '*.rs' 2>/dev/null)
endif
TEST_TARGETS += test-python

PY_REQUIREMENTS := tests/python/requirements.txt
VENV_STAMP := $(VENV)/.hw-requirements.stamp
PYTHON_BUILD_STAMP := $(VENV)/.hw-build-python.stamp
PYTHON_SOURCES := $(RUST_SOURCES) bindings-python/Cargo.toml bindings-python/pyproject.toml \
	$(shell find bindings-python/src -name '*.rs' 2>/dev/null)

venv: $(VENV_STAMP) ## create .venv with maturin, pytest and hypothesis (python3 -m venv + pip)

$(VENV_STAMP): $(PY_REQUIREMENTS)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r $(PY_REQUIREMENTS)
	touch $@

build-python: $(PYTHON_BUILD_STAMP) ## build the Python package into .venv (maturin develop, debug)

$(PYTHON_BUILD_STAMP): $(VENV_STAMP) $(PYTHON_SOURCES)
	$(VENV)/bin/maturin develop --manifest-path bindings-python/Cargo.toml
	touch $@

test-python: build-python build-node ## run the Python tests: API, fixtures, property test (Python vs Node)
	$(PY) -m pytest -q tests/python

.PHONY: venv build-python test-python
