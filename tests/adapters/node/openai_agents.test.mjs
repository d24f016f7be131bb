// harnessweaver/openai-agents driven by the real OpenAI Agents SDK with its own
// scripted model (ScriptedModel from @openai/agents/testing): no network, no key.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { alice, finance, intern, require, setup } from './support.mjs'

const adapter = require('harnessweaver/openai-agents')
const { Agent, Runner, RunState } = require('@openai/agents')
const { ScriptedModel, functionCall, assistantMessage, modelResponder } = require('@openai/agents/testing')

// The model's view: the output of each function call it made, by call id.
function outputsSeen(call) {
  const seen = {}
  for (const item of call.request.input) {
    if (item && item.type === 'function_call_result') {
      seen[item.callId] = typeof item.output === 'string' ? item.output : item.output.text ?? JSON.stringify(item.output)
    }
  }
  return seen
}

function agentWith(tools, script) {
  const model = new ScriptedModel(script)
  const agent = new Agent({ name: 'support', instructions: 'help', model, tools })
  return { agent, model, runner: new Runner({ tracingDisabled: true }) }
}

test('tools carry the pinned manifest name, description and schema, not strict', () => {
  const { h, run } = setup()
  const tools = adapter.tools(h, run)
  assert.deepEqual(tools.map((t) => t.name), ['lookup_order', 'refund'])
  const refund = tools[1]
  assert.equal(refund.type, 'function')
  assert.equal(refund.description, "Refund part or all of an order's payment.")
  assert.equal(refund.strict, false)
  assert.deepEqual(refund.parameters, h.toolSpecs('openai', { principal: alice })[1].function.parameters)
  assert.deepEqual(adapter.tools(h, run, { names: ['refund'] }).map((t) => t.name), ['refund'])
  assert.throws(() => adapter.tools(h, run, { names: ['nope'] }), { code: 'unknown_tool' })
  assert.throws(() => adapter.tools(h, { principal: alice }), { code: 'invalid_run' })
})

test('an allowed call runs the real handler; the model sees the cleaned output', async () => {
  const { h, run, calls } = setup()
  let seen
  const { agent, model, runner } = agentWith(adapter.tools(h, run), [
    [functionCall('lookup_order', { order_id: 'A-1001' }, { callId: 'c1' })],
    modelResponder((call) => {
      seen = outputsSeen(call)
      return [assistantMessage('found it')]
    }),
  ])
  const result = await runner.run(agent, 'where is A-1001?')
  model.assertComplete()
  assert.equal(result.finalOutput, 'found it')
  assert.deepEqual(calls, [['lookup_order', { order_id: 'A-1001' }]])
  assert.deepEqual(JSON.parse(seen.c1), { email: '[EMAIL]', id: 'A-1001' })
  assert.equal(run.labels.private, false)
})

test('schema and policy refusals reach the model with their codes; no handler runs', async () => {
  const { h, run, calls, audit } = setup(intern)
  let seen
  const { agent, runner } = agentWith(adapter.tools(h, run), [
    [
      functionCall('lookup_order', { order_id: 'nope' }, { callId: 'bad' }),
      functionCall('refund', { order_id: 'A-1001', amount_usd: 5 }, { callId: 'deny' }),
    ],
    modelResponder((call) => {
      seen = outputsSeen(call)
      return [assistantMessage('sorry')]
    }),
  ])
  const result = await runner.run(agent, 'go')
  assert.equal(result.interruptions.length, 0)
  assert.match(seen.bad, /^\[tool call refused: invalid_args\] arguments at `\/order_id` fail `pattern`/)
  assert.match(seen.deny, /^\[tool call refused: policy_denied\] /)
  assert.deepEqual(calls, [])
  assert.deepEqual(audit.map((e) => e.code).sort(), ['invalid_args', 'policy_denied'])
})

async function untilInterrupted() {
  const { h, run, calls, audit } = setup()
  let seen
  const { agent, model, runner } = agentWith(adapter.tools(h, run), [
    [functionCall('refund', { order_id: 'A-1001', amount_usd: 250 }, { callId: 'r1' })],
    modelResponder((call) => {
      seen = outputsSeen(call)
      return [assistantMessage('done')]
    }),
  ])
  const first = await runner.run(agent, 'refund A-1001')
  return { h, run, calls, audit, agent, model, runner, first, seen: () => seen }
}

test('a call needing approval interrupts; approved by finance it runs once on resume', async () => {
  const t = await untilInterrupted()
  assert.equal(t.first.interruptions.length, 1)
  const item = t.first.interruptions[0]
  assert.equal(item.name, 'refund')
  assert.deepEqual(t.calls, [])
  // The harness holds the pending approval, bound to these args.
  const [pending] = t.h.approvals()
  assert.equal(pending.state, 'pending')
  assert.deepEqual(pending.args, { amount_usd: 250, order_id: 'A-1001' })

  // Someone without the approver role cannot approve it: nothing changes.
  assert.throws(() => adapter.approve(t.first.state, item, { approver: alice }), { code: 'approver_not_allowed' })
  adapter.approve(t.first.state, item, { approver: finance })
  const second = await t.runner.run(t.agent, t.first.state)
  t.model.assertComplete()
  assert.equal(second.finalOutput, 'done')
  assert.deepEqual(t.calls, [['refund', { order_id: 'A-1001', amount_usd: 250 }]])
  assert.deepEqual(JSON.parse(t.seen().r1), { refunded: 250 })
  assert.deepEqual(t.h.approvals(), [])
  assert.deepEqual(t.audit.map((e) => e.decision), ['pending', 'allowed'])
})

test('a call needing approval, rejected, never runs; the model reads approval_denied', async () => {
  const t = await untilInterrupted()
  const item = t.first.interruptions[0]
  await adapter.reject(t.first.state, item, { by: finance, reason: 'too much' })
  const second = await t.runner.run(t.agent, t.first.state)
  assert.equal(second.finalOutput, 'done')
  assert.deepEqual(t.calls, [])
  assert.match(t.seen().r1, /^\[tool call refused: approval_denied\] /)
  assert.deepEqual(t.audit.map((e) => e.code), ['approval_required', 'approval_denied'])
})

test('a run state saved and resumed with new tools finds its approval in the harness store', async () => {
  const t = await untilInterrupted()
  const saved = t.first.state.toString()
  // A new agent with new tools over the same harness and run, as in a later request of the app.
  let seen
  const model = new ScriptedModel([
    modelResponder((call) => {
      seen = outputsSeen(call)
      return [assistantMessage('done later')]
    }),
  ])
  const agent = new Agent({ name: 'support', instructions: 'help', model, tools: adapter.tools(t.h, t.run) })
  const state = await RunState.fromString(agent, saved)
  const [item] = state.getInterruptions()
  adapter.approve(state, item, { approver: finance })
  const result = await t.runner.run(agent, state)
  assert.equal(result.finalOutput, 'done later')
  assert.deepEqual(t.calls, [['refund', { order_id: 'A-1001', amount_usd: 250 }]])
  assert.deepEqual(JSON.parse(seen.r1), { refunded: 250 })
})
