# Dist (issue 18): what a user installs, built into dist/ from one release
# build, and the install test that runs the getting-started pages against
# installed packages outside the tree.
#
# `make dist`: one `cargo zigbuild --release` of both native libraries (zig
# links them against glibc 2.17's symbols, so the wheel is manylinux2014), the
# sandbox worker and the confinement launcher the same way, then tools/dist/package.py packs the wheel (its
# tag set by `auditwheel repair`) and the npm main and platform tarballs, and
# maturin writes the sdist. It lands in target/<triple>/release/, the layout
# of every other build (.cargo/config.toml), so a later release build reuses
# the Rust crates.
#
# `make test-dist` (in `make test`) packs the debug build the other tests
# already made, through the same package.py, so no release build runs in
# `make test`; it installs the packages into a fresh venv and npm project in a
# temporary directory and runs the getting-started pages there
# (tests/dist/test_install.py).

DIST := $(ROOT)/dist
DIST_REQUIREMENTS := tools/dist/requirements.txt
DIST_TOOLS_STAMP := $(VENV)/.hw-dist-tools.stamp
# The oldest glibc this toolchain links for (Rust's own minimum).
DIST_GLIBC := 2.17
DIST_MANYLINUX := manylinux_2_17_$(firstword $(subst -, ,$(HOST_TRIPLE)))
DIST_TEST := $(ROOT)/target/dist-test
TEST_TARGETS += test-dist

# (python.mk, which names the venv stamp, is read after this file.)
$(DIST_TOOLS_STAMP): $(VENV)/.hw-requirements.stamp $(DIST_REQUIREMENTS)
	$(PY) -m pip install --quiet --disable-pip-version-check -r $(DIST_REQUIREMENTS)
	touch $@

dist: $(DIST_TOOLS_STAMP) ## build the release wheel (manylinux2014, abi3), sdist and npm tarballs into dist/
	PYO3_BUILD_EXTENSION_MODULE=1 cargo zigbuild --release --target $(HOST_TRIPLE).$(DIST_GLIBC) \
		-p harnessweaver-python -p harnessweaver-node
	cargo zigbuild --release --target $(HOST_TRIPLE).$(DIST_GLIBC) \
		--manifest-path sandbox/Cargo.toml --target-dir $(SANDBOX_TARGET)
	cargo zigbuild --release --target $(HOST_TRIPLE).$(DIST_GLIBC) -p harnessweaver-runtime --bin harnessweaver-confine
	rm -rf $(DIST) && mkdir -p $(DIST)/.unrepaired
	$(PY) tools/dist/package.py --profile release --out $(DIST)/.unrepaired
	auditwheel repair --plat $(DIST_MANYLINUX) -w $(DIST) $(DIST)/.unrepaired/*.whl
	mv $(DIST)/.unrepaired/*.tgz $(DIST)/ && rm -rf $(DIST)/.unrepaired
	$(VENV)/bin/maturin sdist --manifest-path bindings-python/Cargo.toml --out $(DIST)
	auditwheel show $(DIST)/*.whl
	@ls -l $(DIST)

test-dist: build-python build-node build-sandbox build-confine ## install the packages (packed from the debug build) outside the tree; run the getting-started pages there
	rm -rf $(DIST_TEST)
	$(PY) tools/dist/package.py --profile debug --out $(DIST_TEST)
	env -u HARNESSWEAVER_SANDBOX_WORKER HW_DIST=$(DIST_TEST) $(PY) -m pytest -q tests/dist

# The sdist builds: pip makes a wheel of it as a user without the wheel would
# (maturin's PEP 517 backend, in the dev profile and this tree's target/ so
# the registry crates of the debug build are reused), and that wheel installs
# into a fresh venv and governs a call.
SDIST_TEST := $(ROOT)/target/sdist-test
test-sdist: build-python ## build a wheel from the sdist with pip and make a governed call with it
	rm -rf $(SDIST_TEST) && mkdir -p $(SDIST_TEST)
	$(VENV)/bin/maturin sdist --manifest-path bindings-python/Cargo.toml --out $(SDIST_TEST)
	CARGO_TARGET_DIR=$(ROOT)/target MATURIN_PEP517_ARGS="--profile dev" \
		$(PY) -m pip wheel --no-deps --no-build-isolation -w $(SDIST_TEST) $(SDIST_TEST)/harnessweaver-*.tar.gz
	python3 -m venv $(SDIST_TEST)/venv
	$(SDIST_TEST)/venv/bin/pip install --quiet --no-index $(SDIST_TEST)/harnessweaver-*.whl
	cd $(SDIST_TEST) && env -u VIRTUAL_ENV venv/bin/python -c 'import harnessweaver as hw, json; \
		h = hw.load("$(ROOT)/examples/shop/harness.yaml"); \
		r = h.call("lookup_order", {"order_id": "A-1001"}, principal={"id": "bot"}); \
		assert r.decision == "allowed" and r.output["customer"] == "[EMAIL]", r; print("sdist wheel:", r.decision)'

.PHONY: dist test-dist test-sdist
