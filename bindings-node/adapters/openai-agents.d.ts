/**
 * `harnessweaver/openai-agents`: a run's harness tools as OpenAI Agents SDK
 * function tools (`@openai/agents` 0.20, an optional peer dependency), with the
 * SDK's approvals tied to the harness's.
 *
 * ```ts
 * import { Agent, run } from '@openai/agents'
 * import * as hwa from 'harnessweaver/openai-agents'
 *
 * const hrun = h.run({ principal: user })
 * const agent = new Agent({ name: 'support', tools: hwa.tools(h, hrun) })
 * let result = await run(agent, 'refund order A-1001')
 * while (result.interruptions.length > 0) {           // calls waiting for a human
 *   for (const item of result.interruptions) hwa.approve(result.state, item, { approver: financeUser })
 *   result = await run(agent, result.state)
 * }
 * ```
 *
 * @packageDocumentation
 */
import type { FunctionTool, RunState, RunToolApprovalItem } from '@openai/agents'
import type { Harness, Principal, Run } from '../index.js'

/** Options of {@link tools}. */
export interface ToolsOptions {
  /** Only these tools (each must be a tool of the harness); default: every tool the run's principal may call. */
  names?: Iterable<string>
}

/**
 * The tools `run`'s principal may call, as `FunctionTool`s with the pinned
 * manifest's name, description and input schema (`strict: false`: the
 * manifest's schema is the contract, and the governor validates it). A call
 * runs through the governor with the run's context; the tool's output is the
 * cleaned output, or for a refused call the text
 * `[tool call refused: <code>] <message>`, which the model reads. A call the
 * governor sends to approval (step 7) is made when the SDK asks
 * `needsApproval`, so the harness holds the pending approval while the run
 * stops with an interruption; answer it with {@link approve} or {@link reject}
 * and resume with `run(agent, result.state)`.
 * @throws {@link InvalidArgumentError} `invalid_run`, `unknown_tool`; `framework_missing` without `@openai/agents`.
 */
export declare function tools(harness: Harness, run: Run, options?: ToolsOptions): FunctionTool<any, any, unknown>[]

/**
 * Approves a waiting call: grants its harness approval as `approver`, then
 * approves `interruption` in `state`. Resumed, the handler runs once. An
 * interruption of a tool that is not a harness tool is only approved in the SDK.
 * @throws {@link InvalidArgumentError} `approver_not_allowed` when `approver` lacks the tool's `approver_role` (the call keeps waiting).
 */
export declare function approve(state: RunState<any, any>, interruption: RunToolApprovalItem, options: { approver: Principal }): void

/**
 * Denies a waiting call: denies its harness approval (recorded with `by` and
 * `reason`, audited as an `approval_denied` refusal), then rejects
 * `interruption` in `state` with the core's refusal text as the message the
 * model reads. The handler never runs.
 */
export declare function reject(
  state: RunState<any, any>,
  interruption: RunToolApprovalItem,
  options: { by: Principal; reason?: string },
): Promise<void>
