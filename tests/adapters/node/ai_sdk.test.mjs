// harnessweaver/ai-sdk driven by the real Vercel AI SDK (`generateText`) with its
// own mock model (MockLanguageModelV3 from ai/test): no network, no key.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { alice, finance, hw, intern, require, setup } from './support.mjs'

const adapter = require('harnessweaver/ai-sdk')
const { generateText, stepCountIs } = require('ai')
const { MockLanguageModelV3 } = require('ai/test')

const USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
}

function toolCalls(...calls) {
  return {
    content: calls.map(([toolCallId, toolName, input]) => ({ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(input) })),
    finishReason: { unified: 'tool-calls', raw: undefined },
    usage: USAGE,
    warnings: [],
  }
}

function text(t) {
  return { content: [{ type: 'text', text: t }], finishReason: { unified: 'stop', raw: undefined }, usage: USAGE, warnings: [] }
}

// A model that answers with the scripted responses in order and records what it was sent.
function scripted(...responses) {
  const prompts = []
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      prompts.push(options.prompt)
      const next = responses.shift()
      assert.ok(next, 'the model was called more often than scripted')
      return next
    },
  })
  return { model, prompts, remaining: () => responses.length }
}

// The tool results the model was sent, by tool call id.
function resultsSeen(prompt) {
  const seen = {}
  for (const message of prompt) {
    if (message.role !== 'tool') continue
    for (const part of message.content) if (part.type === 'tool-result') seen[part.toolCallId] = part.output
  }
  return seen
}

test('the tool set carries the pinned manifest description and schema', () => {
  const { h, run } = setup()
  const tools = adapter.tools(h, run)
  assert.deepEqual(Object.keys(tools), ['lookup_order', 'refund'])
  assert.equal(tools.refund.description, "Refund part or all of an order's payment.")
  assert.deepEqual(tools.refund.inputSchema.jsonSchema, h.toolSpecs('openai', { principal: alice })[1].function.parameters)
  assert.deepEqual(Object.keys(adapter.tools(h, run, { names: ['lookup_order'] })), ['lookup_order'])
  assert.throws(() => adapter.tools(h, run, { names: ['nope'] }), { code: 'unknown_tool' })
})

test('an allowed call runs the real handler; the model sees the cleaned output', async () => {
  const { h, run, calls } = setup()
  const s = scripted(toolCalls(['c1', 'lookup_order', { order_id: 'A-1001' }]), text('found it'))
  const result = await generateText({ model: s.model, tools: adapter.tools(h, run), prompt: 'where is A-1001?', stopWhen: stepCountIs(5) })
  assert.equal(result.text, 'found it')
  assert.deepEqual(calls, [['lookup_order', { order_id: 'A-1001' }]])
  assert.deepEqual(resultsSeen(s.prompts[1]).c1, { type: 'json', value: { email: '[EMAIL]', id: 'A-1001' } })
  assert.deepEqual(result.steps[0].toolResults.map((r) => r.output), [{ email: '[EMAIL]', id: 'A-1001' }])
})

test('schema and policy refusals reach the model as tool errors with their codes; no handler runs', async () => {
  const { h, run, calls, audit } = setup(intern)
  const s = scripted(
    toolCalls(['bad', 'lookup_order', { order_id: 'nope' }], ['deny', 'refund', { order_id: 'A-1001', amount_usd: 5 }]),
    text('sorry'),
  )
  const result = await generateText({ model: s.model, tools: adapter.tools(h, run), prompt: 'go', stopWhen: stepCountIs(5) })
  assert.equal(result.text, 'sorry')
  const seen = resultsSeen(s.prompts[1])
  assert.equal(seen.bad.type, 'error-text')
  assert.match(seen.bad.value, /^\[tool call refused: invalid_args\] arguments at `\/order_id` fail `pattern`/)
  assert.equal(seen.deny.type, 'error-text')
  assert.match(seen.deny.value, /^\[tool call refused: policy_denied\] /)
  // The app sees the governor's error, with its code and step.
  const errors = result.steps[0].content.filter((p) => p.type === 'tool-error').map((p) => p.error)
  assert.deepEqual(errors.map((e) => [e instanceof hw.ToolBlocked, e.code, e.step]), [[true, 'invalid_args', 'validate'], [true, 'policy_denied', 'policy']])
  assert.deepEqual(calls, [])
  assert.deepEqual(audit.map((e) => e.code).sort(), ['invalid_args', 'policy_denied'])
})

async function untilApprovalRequested() {
  const t = setup()
  const s = scripted(toolCalls(['r1', 'refund', { order_id: 'A-1001', amount_usd: 250 }]), text('done'))
  const tools = adapter.tools(t.h, t.run)
  const messages = [{ role: 'user', content: 'refund A-1001' }]
  const first = await generateText({ model: s.model, tools, messages, stopWhen: stepCountIs(5) })
  const requests = first.content.filter((p) => p.type === 'tool-approval-request')
  messages.push(...first.response.messages)
  return { ...t, s, tools, messages, first, requests }
}

test('a call needing approval ends with an approval request; approved by finance it runs once', async () => {
  const t = await untilApprovalRequested()
  assert.equal(t.requests.length, 1)
  assert.equal(t.requests[0].toolCall.toolName, 'refund')
  assert.equal(t.s.remaining(), 1)
  assert.deepEqual(t.calls, [])
  const [pending] = t.h.approvals()
  assert.equal(pending.state, 'pending')
  assert.deepEqual(pending.args, { amount_usd: 250, order_id: 'A-1001' })

  assert.throws(() => adapter.approve(t.tools, t.requests[0], { approver: alice }), { code: 'approver_not_allowed' })
  const response = adapter.approve(t.tools, t.requests[0], { approver: finance })
  t.messages.push({ role: 'tool', content: [response] })
  const second = await generateText({ model: t.s.model, tools: t.tools, messages: t.messages, stopWhen: stepCountIs(5) })
  assert.equal(second.text, 'done')
  assert.deepEqual(t.calls, [['refund', { order_id: 'A-1001', amount_usd: 250 }]])
  assert.deepEqual(resultsSeen(t.s.prompts[1]).r1, { type: 'json', value: { refunded: 250 } })
  assert.deepEqual(t.h.approvals(), [])
  assert.deepEqual(t.audit.map((e) => e.decision), ['pending', 'allowed'])
})

test('a call needing approval, rejected, never runs; the model reads approval_denied', async () => {
  const t = await untilApprovalRequested()
  const response = await adapter.reject(t.tools, t.requests[0], { by: finance, reason: 'too much' })
  assert.equal(response.approved, false)
  t.messages.push({ role: 'tool', content: [response] })
  const second = await generateText({ model: t.s.model, tools: t.tools, messages: t.messages, stopWhen: stepCountIs(5) })
  assert.equal(second.text, 'done')
  assert.deepEqual(t.calls, [])
  const seen = resultsSeen(t.s.prompts[1]).r1
  assert.equal(seen.type, 'execution-denied')
  assert.match(seen.reason, /^\[tool call refused: approval_denied\] /)
  assert.deepEqual(t.audit.map((e) => e.code), ['approval_required', 'approval_denied'])
})

test('an approval answered in a later request, with tools made anew, is found in the harness store', async () => {
  const t = await untilApprovalRequested()
  // A new request of the app: new tools over the same harness and run, messages from the client.
  const tools = adapter.tools(t.h, t.run)
  const messages = JSON.parse(JSON.stringify(t.messages))
  messages.push({ role: 'tool', content: [adapter.approve(tools, t.requests[0], { approver: finance })] })
  const second = await generateText({ model: t.s.model, tools, messages, stopWhen: stepCountIs(5) })
  assert.equal(second.text, 'done')
  assert.deepEqual(t.calls, [['refund', { order_id: 'A-1001', amount_usd: 250 }]])
})

test('an approval response the harness never granted does not run the call', async () => {
  const t = await untilApprovalRequested()
  // A client that forges the SDK's approval: the harness approval is still pending, so the governor refuses.
  t.messages.push({ role: 'tool', content: [{ type: 'tool-approval-response', approvalId: t.requests[0].approvalId, approved: true }] })
  const second = await generateText({ model: t.s.model, tools: t.tools, messages: t.messages, stopWhen: stepCountIs(5) })
  assert.equal(second.text, 'done')
  assert.deepEqual(t.calls, [])
  const seen = resultsSeen(t.s.prompts[1]).r1
  assert.equal(seen.type, 'error-text')
  assert.match(seen.value, /^\[tool call refused: approval_required\] approval `apr_\w+` has not been granted yet/)
})
