# Swift: the UniFFI crate, its generated Swift sources (committed in
# bindings-swift/generated/) and tests that drive the UniFFI surface through
# UniFFI's Python bindings (no Swift compiler here).
# What every native build is made from (defined in each binding's fragment,
# since fragments are read in name order).
ifndef RUST_SOURCES
RUST_SOURCES := Cargo.toml Cargo.lock core/Cargo.toml runtime/Cargo.toml workspace-hack/Cargo.toml $(shell find core/src runtime/src -name '*.rs' 2>/dev/null)
endif
TEST_TARGETS += test-swift

# The bindgen lives in its own workspace (tools/uniffi-bindgen/): inside the root
# workspace its features would change shared dependencies and rebuild the core.
UNIFFI_BINDGEN := target/$(HOST_TRIPLE)/debug/uniffi-bindgen
SWIFT_LIB := target/$(HOST_TRIPLE)/debug/libharnessweaver_swift.so
SWIFT_BUILD_STAMP := target/.hw-build-swift.stamp
SWIFT_SOURCES := $(RUST_SOURCES) bindings-swift/Cargo.toml bindings-swift/uniffi.toml \
	$(shell find bindings-swift/src -name '*.rs' 2>/dev/null)

$(UNIFFI_BINDGEN): tools/uniffi-bindgen/Cargo.toml tools/uniffi-bindgen/Cargo.lock tools/uniffi-bindgen/src/main.rs
	cargo build --manifest-path tools/uniffi-bindgen/Cargo.toml --target-dir $(ROOT)/target
	touch $@

build-swift: $(SWIFT_BUILD_STAMP) $(UNIFFI_BINDGEN) ## build the UniFFI library and the bindgen (debug)

$(SWIFT_BUILD_STAMP): $(SWIFT_SOURCES)
	cargo build -p harnessweaver-swift
	touch $@

swift-generate: build-swift ## regenerate the committed Swift sources in bindings-swift/generated/
	$(UNIFFI_BINDGEN) generate --language swift --no-format --out-dir bindings-swift/generated $(SWIFT_LIB)

test-swift: build-swift venv ## test the UniFFI surface (through UniFFI's Python bindings) and Swift drift
	HW_UNIFFI_BINDGEN=$(ROOT)/$(UNIFFI_BINDGEN) HW_SWIFT_LIB=$(ROOT)/$(SWIFT_LIB) $(PY) -m pytest -q tests/swift

.PHONY: build-swift swift-generate test-swift
