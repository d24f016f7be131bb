'use strict'
// The Vercel AI SDK adapter (`npm install ai`): a run's harness tools as an AI
// SDK tool set, with the SDK's tool approvals (`needsApproval`,
// `tool-approval-request` / `tool-approval-response` parts) tied to the
// harness's. The entry files (../ai-sdk.js, .mjs) bind `tools` to the SDK as
// the app's module system loads it. See docs/adapters.md.

const { ToolBlocked } = require('../../index.js')
const { specs, Gate, GATE } = require('./common.js')

const PACKAGE = 'ai'
const RANGE = '^6.0.0'

/** The error a refused call throws inside `execute`: the SDK makes it a `tool-error` the model reads. */
function refusal(result) {
  const err = new ToolBlocked(result)
  // What the SDK shows the model is the error's message: the core's text, with the code.
  err.message = result.toModel()
  return err
}

/**
 * The tools `run`'s principal may call, as an AI SDK tool set made with
 * `sdk().tool` and `sdk().jsonSchema`: each `tool({ description, inputSchema:
 * jsonSchema(<pinned schema>), needsApproval, execute })`. A call runs through
 * the governor with the run's context; a refusal throws a ToolBlocked whose
 * message is `[tool call refused: <code>] <message>` (a `tool-error` part the
 * model reads). A call that needs approval ends the generation with a
 * `tool-approval-request` part: answer it with {@link approve} or
 * {@link reject} and call `generateText` again with the response in a `tool`
 * message.
 */
function tools(sdk, harness, run, options) {
  const { tool, jsonSchema } = sdk()
  const o = options || {}
  const gate = new Gate(harness, run)
  const set = {}
  for (const spec of specs(harness, run, o.names)) {
    const t = tool({
      description: spec.description,
      // No `validate`: the governor validates against the manifest's schema and refuses with `invalid_args`.
      inputSchema: jsonSchema(spec.parameters),
      needsApproval: (input, callOptions) => gate.needsApproval(spec.name, input ?? {}, callOptions.toolCallId),
      execute: async (input, callOptions) => {
        const result = await gate.call(spec.name, input ?? {}, callOptions.toolCallId)
        if (!result.allowed) throw refusal(result)
        return result.output
      },
    })
    Object.defineProperty(t, GATE, { value: gate })
    set[spec.name] = t
  }
  return set
}

function gateOf(toolSet, request) {
  const call = request && request.toolCall
  const t = call && toolSet && Object.prototype.hasOwnProperty.call(toolSet, call.toolName) ? toolSet[call.toolName] : undefined
  return t && t[GATE]
}

/**
 * Approves a `tool-approval-request` part: grants its harness approval as
 * `approver` (who must hold the tool's `approver_role`, or this throws
 * `approver_not_allowed` and the call keeps waiting) and returns the
 * `tool-approval-response` part to send back in a `tool` message.
 */
function approve(toolSet, request, options) {
  const gate = gateOf(toolSet, request)
  if (gate !== undefined) {
    const call = request.toolCall
    gate.grant(call.toolName, call.input ?? {}, call.toolCallId, (options || {}).approver)
  }
  return { type: 'tool-approval-response', approvalId: request.approvalId, approved: true }
}

/**
 * Denies a `tool-approval-request` part: denies its harness approval (recorded
 * with `by` and `reason`, and audited as an `approval_denied` refusal) and
 * returns the `tool-approval-response` part whose reason is the core's refusal
 * text, which the model reads.
 */
async function reject(toolSet, request, options) {
  const o = options || {}
  const gate = gateOf(toolSet, request)
  let message
  if (gate !== undefined) {
    const call = request.toolCall
    message = await gate.deny(call.toolName, call.input ?? {}, call.toolCallId, o.by, o.reason)
  }
  const reason = message ?? o.reason
  return { type: 'tool-approval-response', approvalId: request.approvalId, approved: false, ...(reason ? { reason } : {}) }
}

module.exports = { PACKAGE, RANGE, tools, approve, reject }
