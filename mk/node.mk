# Node: the napi-rs addon, the npm package in bindings-node/, and its node --test suite.
# What every native build is made from (defined in each binding's fragment,
# since fragments are read in name order).
ifndef RUST_SOURCES
RUST_SOURCES := Cargo.toml Cargo.lock core/Cargo.toml runtime/Cargo.toml workspace-hack/Cargo.toml $(shell find core/src runtime/src -name '*.rs' 2>/dev/null)
endif
TEST_TARGETS += test-node

NODE_DIR := bindings-node
NODE_MODULES_STAMP := $(NODE_DIR)/node_modules/.hw-npm.stamp
NODE_BUILD_STAMP := $(NODE_DIR)/node_modules/.hw-build-node.stamp
NODE_SOURCES := $(RUST_SOURCES) $(NODE_DIR)/Cargo.toml $(NODE_DIR)/build.rs \
	$(shell find $(NODE_DIR)/src -name '*.rs' 2>/dev/null)

$(NODE_MODULES_STAMP): $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# napi also writes native.js and native.d.ts (committed; tests/node/api.test.mjs checks them for drift).
build-node: $(NODE_BUILD_STAMP) ## build the npm package's addon (npm ci + napi build, debug)

$(NODE_BUILD_STAMP): $(NODE_MODULES_STAMP) $(NODE_SOURCES)
	cd $(NODE_DIR) && npx napi build --platform --js native.js --dts native.d.ts
	touch $@

test-node: build-node ## run the Node tests (API, fixtures)
	node --test tests/node/*.test.mjs

.PHONY: build-node test-node
