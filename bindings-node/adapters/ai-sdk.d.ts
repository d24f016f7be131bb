/**
 * `harnessweaver/ai-sdk`: a run's harness tools as a Vercel AI SDK tool set
 * (`ai` 6, an optional peer dependency), with the SDK's tool approvals tied to
 * the harness's.
 *
 * ```ts
 * import { generateText, stepCountIs, type ModelMessage } from 'ai'
 * import * as hwai from 'harnessweaver/ai-sdk'
 *
 * const run = h.run({ principal: user })
 * const tools = hwai.tools(h, run)
 * const messages: ModelMessage[] = [{ role: 'user', content: 'refund order A-1001' }]
 * let result = await generateText({ model, tools, messages, stopWhen: stepCountIs(5) })
 * messages.push(...result.response.messages)
 * const requests = result.content.filter((p) => p.type === 'tool-approval-request')
 * if (requests.length > 0) {                           // calls waiting for a human
 *   messages.push({ role: 'tool', content: requests.map((r) => hwai.approve(tools, r, { approver: financeUser })) })
 *   result = await generateText({ model, tools, messages, stopWhen: stepCountIs(5) })
 * }
 * ```
 *
 * @packageDocumentation
 */
import type { Tool, ToolApprovalResponse } from 'ai'
import type { Harness, JsonValue, Principal, Run, ToolBlocked } from '../index.js'

/** Options of {@link tools}. */
export interface ToolsOptions {
  /** Only these tools (each must be a tool of the harness); default: every tool the run's principal may call. */
  names?: Iterable<string>
}

/** The SDK's `tool-approval-request` part (from `result.content` or `result.steps[i].content`). */
export interface ApprovalRequestPart {
  /** The SDK's id of the approval request (not the harness approval's id). */
  approvalId: string
  /** The tool call waiting: its id, the tool's name and the model's input. */
  toolCall: { toolCallId: string; toolName: string; input: unknown }
}

/**
 * The tools `run`'s principal may call, keyed by name: each
 * `tool({ description, inputSchema: jsonSchema(<pinned schema>), needsApproval, execute })`.
 * A call runs through the governor with the run's context and resolves to the
 * cleaned output. A refused call throws a {@link ToolBlocked} (`code`, `step`,
 * `result`) whose message is `[tool call refused: <code>] <message>`: the SDK
 * makes it a `tool-error` part, and the model reads that text. A call the
 * governor sends to approval (step 7) is made when the SDK asks `needsApproval`,
 * so the harness holds the pending approval; the generation ends with a
 * `tool-approval-request` part, answered with {@link approve} or {@link reject}.
 * @throws {@link InvalidArgumentError} `invalid_run`, `unknown_tool`; `framework_missing` without `ai`.
 */
export declare function tools(harness: Harness, run: Run, options?: ToolsOptions): { [name: string]: Tool<any, JsonValue> }

/**
 * Approves a `tool-approval-request`: grants its harness approval as `approver`
 * and returns the `tool-approval-response` to send back in a `tool` message;
 * the next `generateText` runs the handler once.
 * @throws {@link InvalidArgumentError} `approver_not_allowed` when `approver` lacks the tool's `approver_role` (the call keeps waiting).
 */
export declare function approve(tools: { [name: string]: Tool<any, any> }, request: ApprovalRequestPart, options: { approver: Principal }): ToolApprovalResponse

/**
 * Denies a `tool-approval-request`: denies its harness approval (recorded with
 * `by` and `reason`, audited as an `approval_denied` refusal) and resolves to
 * the `tool-approval-response` whose `reason` is the core's refusal text, which
 * the model reads. The handler never runs.
 */
export declare function reject(
  tools: { [name: string]: Tool<any, any> },
  request: ApprovalRequestPart,
  options: { by: Principal; reason?: string },
): Promise<ToolApprovalResponse>
