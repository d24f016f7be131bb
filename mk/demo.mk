# The README's first command, and its TypeScript twin: a support agent for a shop
# (examples/support/), driven by a scripted model (examples/support/transcript.json)
# through the real governor: schema refusal, PII redaction, a neutralised
# injection from a page served on 127.0.0.1, a code tool in the Monty sandbox,
# a refund approved by finance, the trifecta rule, a rug pull refused by its pin,
# and the audit trail. test-demo runs both and checks every event happened.
#
# Prerequisites are the phony build targets of python.mk, node.mk and
# transports.mk (read after this file, so their stamp variables are not set yet).

DEMO_DIR := examples
DEMO_NPM_STAMP := $(DEMO_DIR)/node_modules/.hw-npm.stamp
DEMO_TS_JS := $(DEMO_DIR)/.build/demo.js
TEST_TARGETS += test-demo

demo: build-python build-sandbox ## run the demo: a shop's support agent through the governor (examples/demo.py; --help for options)
	$(PY) examples/demo.py

demo-ts: build-node build-sandbox $(DEMO_TS_JS) ## the same demo in TypeScript with the npm package (examples/demo.ts, compiled by tsc)
	node $(DEMO_TS_JS)

# typescript and @types/node for the demo, and a link to bindings-node (pinned by examples/package-lock.json).
$(DEMO_NPM_STAMP): $(DEMO_DIR)/package.json $(DEMO_DIR)/package-lock.json
	cd $(DEMO_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(DEMO_TS_JS): $(DEMO_DIR)/demo.ts $(DEMO_DIR)/tsconfig.json $(DEMO_NPM_STAMP)
	cd $(DEMO_DIR) && node_modules/.bin/tsc -p tsconfig.json

test-demo: build-python build-node build-sandbox $(DEMO_TS_JS) ## run both demos and check each expected event (tests/demo)
	$(PY) -m pytest -q tests/demo

.PHONY: demo demo-ts test-demo
