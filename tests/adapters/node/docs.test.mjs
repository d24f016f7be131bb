// The TypeScript code blocks of docs/adapters.md, run as written (types
// stripped by TypeScript) against the shop example, each framework driven by
// its own scripted model. Each block runs in a child process as an ES module
// placed inside bindings-node, so `harnessweaver/...` and the frameworks
// resolve as in an app; tracing is off and no API key is passed.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { NODE_DIR, ROOT, require } from './support.mjs'

const ts = require('typescript')
const SHOP = join(ROOT, 'examples', 'shop', 'harness.yaml')

/** The first ```ts block under the heading line `heading`. */
function docBlock(heading) {
  const text = readFileSync(join(ROOT, 'docs', 'adapters.md'), 'utf8')
  const start = text.indexOf(`\n${heading}\n`)
  assert.ok(start >= 0, `docs/adapters.md has no heading ${heading}`)
  const begin = text.indexOf('```ts\n', start) + '```ts\n'.length
  return text.slice(begin, text.indexOf('```', begin))
}

// What the examples assume: the shop harness, a user who may refund, a finance approver, the calls made.
const SETUP = `
import { load as hwLoad } from 'harnessweaver'
const calls = []
const h = hwLoad(${JSON.stringify(SHOP)}, { tools: {
  lookup_order: (args) => ({ id: args.order_id }),
  refund_payment: (args) => { calls.push(args); return { refunded: args.amount_usd } },
  search_catalog: () => [],
} })
const user = { id: 'sam', roles: ['sales'], scopes: ['orders:read', 'payments:refund'] }
const financeUser = { id: 'fin-1', roles: ['finance'] }
`

function runBlock(heading, model, final) {
  const js = ts.transpileModule(docBlock(heading), { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText
  const dir = mkdtempSync(join(NODE_DIR, '.doctest-'))
  try {
    const file = join(dir, 'block.mjs')
    writeFileSync(file, `${SETUP}\n${model}\n${js}\nconsole.log(JSON.stringify({ calls, final: ${final}, waiting: h.approvals().length }))\n`)
    const env = { ...process.env, OPENAI_AGENTS_DISABLE_TRACING: '1' }
    delete env.OPENAI_API_KEY
    const out = spawnSync(process.execPath, [file], { encoding: 'utf8', env })
    assert.equal(out.status, 0, `${heading} failed:\n${out.stdout}${out.stderr}`)
    return JSON.parse(out.stdout.trim().split('\n').pop())
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

test('docs/adapters.md: the OpenAI Agents SDK for TypeScript example refunds once, after finance approves', () => {
  const model = `
import { ScriptedModel, functionCall, assistantMessage } from '@openai/agents/testing'
const model = new ScriptedModel([
  [functionCall('refund_payment', { order_id: 'A-1002', amount_usd: 250 }, { callId: 'c1' })],
  [assistantMessage('Refunded.')],
])`
  const out = runBlock('### OpenAI Agents SDK for TypeScript', model, 'result.finalOutput')
  assert.deepEqual(out, { calls: [{ order_id: 'A-1002', amount_usd: 250 }], final: 'Refunded.', waiting: 0 })
})

test('docs/adapters.md: the Vercel AI SDK example refunds once, after finance approves', () => {
  const model = `
import { MockLanguageModelV3 } from 'ai/test'
const usage = { inputTokens: { total: 1, noCache: 1 }, outputTokens: { total: 1, text: 1 } }
const replies = [
  { content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'refund_payment', input: '{"order_id":"A-1002","amount_usd":250}' }],
    finishReason: { unified: 'tool-calls', raw: undefined }, usage, warnings: [] },
  { content: [{ type: 'text', text: 'Refunded.' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] },
]
const model = new MockLanguageModelV3({ doGenerate: async () => replies.shift() })`
  const out = runBlock('### Vercel AI SDK', model, 'result.text')
  assert.deepEqual(out, { calls: [{ order_id: 'A-1002', amount_usd: 250 }], final: 'Refunded.', waiting: 0 })
})
