# The approvals console (runtime/src/console/, `harnessweaver console`) in a
# real browser: Debian's Chromium (installed from Debian's packages when
# missing: no browser download is possible here) driven by npm playwright-core,
# with an agent in another process speaking MCP through the gateway (gateway-deps:
# the binary, the venv with the MCP SDK; gateway.mk is read after this file, so
# its targets are named, not its variables).
TEST_TARGETS += test-console

CONSOLE_DIR := tests/console
CONSOLE_NODE_STAMP := $(CONSOLE_DIR)/node_modules/.hw-npm.stamp
CHROMIUM ?= /usr/bin/chromium

chromium: ## install chromium (Debian package) when it is missing
	@test -x $(CHROMIUM) || ($(SUDO) apt-get update && $(SUDO) apt-get install -y chromium)

$(CONSOLE_NODE_STAMP): $(CONSOLE_DIR)/package.json $(CONSOLE_DIR)/package-lock.json
	cd $(CONSOLE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The console embeds Chart.js from this npm package (no CDN); this refreshes
# the committed copy after a version bump in tests/console/package.json.
console-assets: $(CONSOLE_NODE_STAMP) ## copy Chart.js from npm into runtime/src/console/assets/
	cp $(CONSOLE_DIR)/node_modules/chart.js/dist/chart.umd.min.js runtime/src/console/assets/chart.umd.min.js
	cp $(CONSOLE_DIR)/node_modules/chart.js/LICENSE.md runtime/src/console/assets/chart.js-LICENSE.md

test-console: gateway-deps chromium $(CONSOLE_NODE_STAMP) ## run the approvals console's browser test (Chromium + playwright-core)
	cmp -s $(CONSOLE_DIR)/node_modules/chart.js/dist/chart.umd.min.js runtime/src/console/assets/chart.umd.min.js || \
		(echo "runtime/src/console/assets/chart.umd.min.js differs from npm's chart.js: run make console-assets" && false)
	HW_GATEWAY_BIN=$(GATEWAY_BIN) HW_GATEWAY_PYTHON=$(PY) HW_CHROMIUM=$(CHROMIUM) node --test $(CONSOLE_DIR)/*.test.mjs

.PHONY: chromium console-assets test-console
