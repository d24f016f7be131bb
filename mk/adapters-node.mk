# The TypeScript adapters (harnessweaver/openai-agents, harnessweaver/ai-sdk).
# The frameworks are devDependencies of bindings-node, so its npm ci (build-node)
# installs them; for users they are optional peer dependencies.
TEST_TARGETS += test-adapters-node

test-adapters-node: build-node ## run the TypeScript adapter tests (AI SDK, OpenAI Agents SDK; scripted models, no network)
	node --test tests/adapters/node/*.test.mjs

.PHONY: test-adapters-node
