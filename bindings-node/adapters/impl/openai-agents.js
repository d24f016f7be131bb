'use strict'
// The OpenAI Agents SDK adapter (`npm install @openai/agents`): a run's
// harness tools as the SDK's function tools, with the SDK's approvals
// (`needsApproval`, `result.interruptions`, `state.approve` / `state.reject`)
// tied to the harness's. The entry files (../openai-agents.js, .mjs) bind
// `tools` to the SDK as the app's module system loads it. See docs/adapters.md.

const { specs, Gate, GATE, parseArgs } = require('./common.js')

const PACKAGE = '@openai/agents'
const RANGE = '^0.20.0'

/**
 * The tools `run`'s principal may call, as `FunctionTool`s made by `sdk().tool`
 * with the pinned manifest's name, description and input schema (`strict:
 * false`: the manifest's schema is the contract, and the governor validates
 * it). A call runs through the governor with the run's context; a refusal is
 * the tool's output, `[tool call refused: <code>] <message>`. A call that needs
 * approval stops the run with an interruption: answer it with {@link approve}
 * or {@link reject}, then resume with `run(agent, result.state)`.
 */
function tools(sdk, harness, run, options) {
  const { tool } = sdk()
  const o = options || {}
  const gate = new Gate(harness, run)
  return specs(harness, run, o.names).map((spec) => {
    const t = tool({
      name: spec.name,
      description: spec.description,
      parameters: spec.parameters,
      strict: false,
      needsApproval: async (_ctx, input, callId) => gate.needsApproval(spec.name, parseArgs(input), callId ?? ''),
      execute: async (input, _ctx, details) => {
        const callId = (details && details.toolCall && details.toolCall.callId) || ''
        const result = await gate.call(spec.name, parseArgs(input), callId)
        return result.allowed ? result.output : result.toModel()
      },
    })
    Object.defineProperty(t, GATE, { value: gate })
    return t
  })
}

function gateOf(interruption) {
  const name = interruption && (interruption.toolName ?? interruption.name)
  const agentTools = (interruption && interruption.agent && interruption.agent.tools) || []
  for (const t of agentTools) {
    if (t && t[GATE] && t.name === name) return t[GATE]
  }
  return undefined
}

function callOf(interruption) {
  const raw = interruption.rawItem || {}
  return { name: interruption.toolName ?? interruption.name, args: parseArgs(interruption.arguments ?? raw.arguments), callId: raw.callId ?? '' }
}

/**
 * Approves a waiting call: grants its harness approval as `approver` (who must
 * hold the tool's `approver_role`, or this throws `approver_not_allowed` and
 * the call keeps waiting), then approves `interruption` in the SDK's `state`.
 * Resume with `run(agent, state)`: the handler runs once. An interruption of a
 * tool that is not a harness tool is only approved in the SDK.
 */
function approve(state, interruption, options) {
  const gate = gateOf(interruption)
  if (gate !== undefined) {
    const call = callOf(interruption)
    gate.grant(call.name, call.args, call.callId, (options || {}).approver)
  }
  state.approve(interruption)
}

/**
 * Denies a waiting call: denies its harness approval (recorded with `by` and
 * `reason`, and audited as an `approval_denied` refusal) and rejects
 * `interruption` in the SDK's `state`, so the model reads the core's refusal
 * and the handler never runs.
 */
async function reject(state, interruption, options) {
  const o = options || {}
  const gate = gateOf(interruption)
  let message
  if (gate !== undefined) {
    const call = callOf(interruption)
    message = await gate.deny(call.name, call.args, call.callId, o.by, o.reason)
  }
  state.reject(interruption, message === undefined ? undefined : { message })
}

module.exports = { PACKAGE, RANGE, tools, approve, reject }
