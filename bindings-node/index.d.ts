/**
 * harnessweaver: a governor for the tool calls of LLM agents.
 *
 * The Rust core decides everything; this package converts JavaScript values to
 * the core's JSON values and back. Numbers: integral and within ±2^53 are
 * integers, others doubles; `NaN`/`Infinity` are refused (`non_finite_number`),
 * as is a `BigInt` beyond ±2^53 (`integer_out_of_range`).
 *
 * Hand-written; `tests/node/api.test.mjs` fails when it and the addon's
 * exports drift apart.
 *
 * @packageDocumentation
 */

/** Any value with a JSON form. */
export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | { [key: string]: JsonValue }

/** One load problem, with where it is. */
export interface Problem {
  /** Stable snake_case code, for example `unknown_field`. */
  code: string
  /** What is wrong, safe to show a model. */
  message: string
  /** The file the problem is in (relative to the harness directory), or null. */
  file: string | null
  /** 1-based line, or null when unknown. */
  line: number | null
  /** 1-based column, or null when unknown. */
  column: number | null
  /** The field path, for example `spec.timeout`; empty for a whole file. */
  path: string
}

/** Base class of every harnessweaver error. */
export declare class HarnessweaverError extends Error {
  /** The stable snake_case code. */
  readonly code: string
  /** The load problems; empty for other errors. */
  readonly problems: Problem[]
}

/** A harness or manifest failed to load; `problems` lists every problem found. */
export declare class LoadError extends HarnessweaverError {}

/** A value with no portable JSON form (NaN, huge integers, nesting too deep, unsupported types). */
export declare class InvalidValueError extends HarnessweaverError {}

/** A bad argument from the caller (for example `tools` that is not an object of functions). */
export declare class InvalidArgumentError extends HarnessweaverError {}

/** Whether a manifest's `definition_digest` matches its current definition. */
export type PinState = 'pinned' | 'mismatched' | 'unpinned'

/**
 * One tool as loaded from its manifest: name, description, input schema,
 * digest, pin state and every spec field with its default filled in.
 */
export declare class ToolDescription {
  /** The tool's name (`metadata.name`), what the model calls. */
  readonly name: string
  /** What the model is told (`spec.description`); part of the pinned definition. */
  readonly description: string
  /** The JSON Schema of the arguments (`spec.input_schema`); part of the pinned definition. */
  readonly input_schema: { [key: string]: JsonValue }
  /** The digest of the current definition (`sha256:…`). */
  readonly digest: string
  /** `pinned` (the pin matches), `mismatched` (every call is refused `digest_mismatch`) or `unpinned`. */
  readonly pin: PinState
  /** Every other spec field, as the core describes it. */
  readonly [field: string]: unknown

  /**
   * Parses one `kind: Tool` manifest, given as an object or as YAML/JSON text.
   * @throws {@link LoadError} listing every problem.
   */
  static fromManifest(manifest: string | { [key: string]: JsonValue }, origin?: string): ToolDescription
}

/** What a handler gets besides the arguments. */
export interface HandlerContext {
  /** The call's idempotency key: the same for a retried or approved call; send it to services that dedupe. */
  idempotencyKey: string
  /** The tool's name. */
  tool: string
  /**
   * The values of the tool's secret handles, `{HANDLE: value}`, only for a tool
   * whose manifest says `secrets_delivery: native` (see docs/secrets.md).
   * Never log or return them: an echo in the output is masked as `[SECRET]`.
   */
  secrets?: { [handle: string]: string }
  /**
   * Reports progress while the call runs (issue 22): relayed to the caller when it listens (an
   * MCP client's progress token through `serveMcp`), each `progress` greater than the last, the
   * message sanitized like the tool's output and cut to 1 KiB; dropped after the call ends.
   */
  progress(progress: number, total?: number | null, message?: string | null): void
}

/**
 * A native tool handler: gets the validated arguments as one object (and the
 * call's context); returns a JSON value, or a promise of one. A sync handler
 * blocks the event loop while it runs and cannot be abandoned; give slow work
 * an async handler so that the tool's `timeout` can abandon it.
 */
export type ToolHandler = (args: any, context: HandlerContext) => unknown

/** Who makes a call. */
export interface Principal {
  /** A stable identifier (non-empty). */
  id: string
  /** Roles, for approvals (`approver_role`) and policy rules. */
  roles?: string[]
  /** Permissions; a tool's `scopes` must all be held. */
  scopes?: string[]
  /** Anything else policy rules may read (`principal.attrs.team`). */
  attrs?: { [key: string]: JsonValue }
}

/** An audit event: narrow, never args, outputs or secrets. */
export interface AuditEvent {
  /** When the call was decided, in ms since the epoch (the governor's clock). */
  ts_ms: number
  /** The call's id (unique). */
  call_id: string
  /** The run the call belongs to. */
  run_id: string
  /** The tool the model asked for (as asked, for `unknown_tool`). */
  tool: string
  /** The principal's id (never its attributes). */
  principal: string
  /** The tenant, or null. */
  tenant: string | null
  /** How the call ended. */
  decision: Decision
  /** The refusal or pending code, or null when allowed. */
  code: string | null
  /** The step that refused or asked for approval, or null. */
  step: Step | null
  /** `sha256:` digest of the canonical args (never the args), or null when they had no JSON form. */
  args_digest: string | null
  /** The approval the call used or created, or null. */
  approval_id: string | null
  /** Replacements made by the output's sanitizers, per kind (never what was replaced). */
  redactions?: { [kind: string]: number }
  /** Whether the output was cut to `max_bytes`. */
  truncated?: boolean
  /** Microseconds spent deciding (steps 1–7), in the tool (step 8) and on the output (step 9). */
  timings: { decide_us: number; invoke_us: number; output_us: number }
  [field: string]: unknown
}

/** A call waiting for a human, as the caller and the approver see it. */
export interface ApprovalRequest {
  /** The id to pass to `approve`, `grant` or `deny`. */
  id: string
  /** The tool the call is for. */
  tool: string
  /** Digest of the canonical args the approval is bound to. */
  args_digest: string
  /** The role an approver must hold, or null. */
  approver_role: string | null
  /** Why approval is needed (the `approval.when` that was true or unevaluable, the risk, the rule). */
  reasons: string[]
  /** When it expires, in ms since the epoch. */
  expires_ms: number
  [field: string]: unknown
}

/** Options of {@link load}. */
export interface LoadOptions {
  /** Native tool handlers by tool name; every native tool needs one. */
  tools?: { [name: string]: ToolHandler }
  /** Tools registered in code: `[ToolDescription.fromManifest(...), handler]` pairs (`tools.require_manifest` covers them). */
  codeTools?: Array<[ToolDescription, ToolHandler] | [ToolDescription]>
  /** Receives every audit event (with `audit.sink: callback`, or to override the harness's sink). */
  audit?: (event: AuditEvent) => unknown
  /**
   * May answer an approval inline, synchronously: `true` approves, `false`
   * denies, `{ accept: id }` accepts the candidate with that id from
   * `request.candidates` (a built-in tool's "always allow": written to the
   * permission file, and the call runs); anything else (or a throw) leaves
   * the call pending.
   */
  onApproval?: (request: ApprovalRequest, approval: { [key: string]: JsonValue }) => unknown
}

/** The nine steps. */
export type Step = 'resolve' | 'validate' | 'pin' | 'policy' | 'limits' | 'flow' | 'approval' | 'invoke' | 'output'

/** How a call ended. */
export type Decision = 'allowed' | 'refused' | 'pending'

/** A run's labels. */
export interface Labels {
  /** A tool that reads personal data (`pii:*`) ran in this run. */
  private: boolean
  /** The run saw output labelled `untrusted`. */
  untrusted: boolean
}

/**
 * The value every call gives: allowed, refused or pending, with its stable
 * code, step and a message safe to give a model. Field names are the core's,
 * the same in every language.
 */
export declare class CallResult {
  /** `allowed` (the tool ran), `refused` or `pending` (waits for approval). */
  readonly decision: Decision
  /** The stable code of a refusal or pending approval. */
  readonly code: string | null
  /** The step that refused, or asked for approval. */
  readonly step: Step | null
  /** Safe to show a model: never args, secrets or handler internals. */
  readonly message: string
  /** The tool called. */
  readonly tool: string
  /** The call's id (the same as its audit event's). */
  readonly call_id: string
  /** The run the call belongs to. */
  readonly run_id: string
  /** The cleaned output (allowed calls). */
  readonly output: JsonValue
  /** What the output policy did (allowed calls). */
  readonly output_report: {
    truncated: boolean
    redactions: { [kind: string]: number }
    label: string
    /** MCP content parts (issue 22): how many the output holds, and those step 9 dropped (index, type, code). */
    content?: { parts: number; dropped: { index: number; type: string; code: string }[] }
  } | null
  /** The pending approval (pending calls). */
  readonly approval: ApprovalRequest | null
  /** When a rate-limited call may be retried. */
  readonly retry_after_ms: number | null
  /** Which rules, fields or expressions decided. */
  readonly reasons: string[]
  /** The run's labels after the call. */
  readonly labels: Labels
  /** Whether the call ran. */
  readonly allowed: boolean
  /** The text to hand back to the model. */
  toModel(): string
  /** The core's JSON form. */
  toJSON(): { [key: string]: JsonValue }
}

/** A call that did not run (refused or pending); `code`, `step` and the whole `result`. */
export declare class ToolBlocked extends HarnessweaverError {
  /** The step that refused or asked for approval. */
  readonly step: Step | null
  /** The whole result of the call. */
  readonly result: CallResult
  /** The text to hand back to the model. */
  toModel(): string
}
/** Step 1 (resolve): unknown tool, no manifest, disabled, tenant not enabled. */
export declare class ToolNotFound extends ToolBlocked {}
/** Step 2 (validate): the args fail the schema or a payload constraint. */
export declare class InvalidArguments extends ToolBlocked {}
/** Step 3 (pin): the tool changed since it was pinned. */
export declare class DigestMismatch extends ToolBlocked {}
/** Step 4 (policy): a scope is missing or a policy rule denies. */
export declare class PolicyDenied extends ToolBlocked {}
/** Step 5 (limits): a budget is spent or a rate limit hit. */
export declare class LimitExceeded extends ToolBlocked {
  /** For `rate_limited`: when the call may be retried, in ms; null for `budget_exhausted`. */
  readonly retryAfterMs: number | null
}
/** Step 6 (flow): the lethal-trifecta rule. */
export declare class FlowBlocked extends ToolBlocked {}
/** Step 7: the call waits for a human. */
export declare class ApprovalRequired extends ToolBlocked {
  /** The pending approval: pass its `id` to `approve`, `grant` or `deny`. */
  readonly approval: ApprovalRequest
}
/** Step 7: the approval was denied, expired or does not cover the call. */
export declare class ApprovalDenied extends ToolBlocked {}
/** Step 8 (invoke): the handler threw, timed out or returned no JSON. */
export declare class ToolFailed extends ToolBlocked {}
/** Step 9 (output): the output fails the tool's output constraints. */
export declare class OutputRejected extends ToolBlocked {}

/** The context of a call. */
export interface CallOptions {
  /** Who calls (required). */
  principal: Principal
  /** The tenant the call is made for (checked against the tool's `tenants`). */
  tenant?: string | null
  /** The task the call serves (free text or an id; policy rules may read it). */
  task?: string | null
  /** The run (or its id); without one the call gets a run of its own. */
  run?: Run | string | null
  /** An approval granted for exactly this call (or its id). */
  approval?: ApprovalRequest | string | null
  /** `false`: resolve to the refused or pending result instead of rejecting. */
  raiseOnRefusal?: boolean
}

/** A run: its calls share labels, budgets and the run id. */
export interface Run {
  /** The run's id. */
  readonly id: string
  /** Who calls, for every call of the run. */
  readonly principal: Principal
  /** The tenant of every call of the run, or null. */
  readonly tenant: string | null
  /** The task of every call of the run, or null. */
  readonly task: string | null
  /** The labels as the store holds them now. */
  readonly labels: Labels
  /** {@link Harness.call} within this run (its labels, budgets and id). */
  call(tool: string, args?: { [key: string]: JsonValue }, options?: { approval?: ApprovalRequest | string | null; raiseOnRefusal?: boolean }): Promise<CallResult>
}

/** A loaded harness. */
export declare class Harness {
  /** The path given to {@link load}. */
  readonly path: string
  /** The tools, in the order their manifests were found. */
  readonly tools: ToolDescription[]
  /** The tool called `name`. */
  tool(name: string): ToolDescription | undefined
  /** The names of the native handlers given to {@link load}, sorted. */
  readonly handlerNames: string[]

  /**
   * Calls `tool` through the nine steps. Resolves to the {@link CallResult};
   * a refused or pending call rejects with a {@link ToolBlocked} subclass
   * unless `raiseOnRefusal: false`.
   */
  call(tool: string, args: { [key: string]: JsonValue } | undefined, options: CallOptions): Promise<CallResult>
  /** Starts a run. */
  run(options: { principal: Principal; tenant?: string | null; task?: string | null }): Run
  /**
   * Grants approval `id` (the approver must hold the tool's approver role) and
   * runs the approved call; `args` is the approver's edit, checked again from step 1.
   */
  approve(
    id: string | ApprovalRequest,
    options: { approver: Principal; args?: { [key: string]: JsonValue }; raiseOnRefusal?: boolean },
  ): Promise<CallResult>
  /** Grants approval `id` without running the call (pass `approval: id` to the call later). */
  grant(id: string | ApprovalRequest, options: { approver: Principal }): { [key: string]: JsonValue }
  /** Denies approval `id`. */
  deny(id: string | ApprovalRequest, options: { by: Principal; reason?: string }): { [key: string]: JsonValue }
  /** Approvals pending, or granted and not yet used. */
  approvals(): Array<{ [key: string]: JsonValue }>
  /** Each step's verdict for a call, without running it or changing any state; `text` is readable. */
  explain(tool: string, args: { [key: string]: JsonValue } | undefined, options: { principal: Principal; tenant?: string | null; task?: string | null; run?: Run | string | null }): { [key: string]: JsonValue; text: string }
  /** The tools as model APIs take them, leaving out tools the principal and tenant can never call. */
  toolSpecs(format: 'openai' | 'anthropic' | 'mcp', options?: { principal?: Principal | null; tenant?: string | null }): Array<{ [key: string]: JsonValue }>
  /** The effect journal's entries, oldest first (only those in `state` when given). */
  effects(state?: 'unknown' | 'succeeded' | 'failed' | null): Array<{ [key: string]: JsonValue }>
  /**
   * Records what an `unknown` effect did (`applied`: whether the write happened); returns the entry.
   * @throws {@link HarnessweaverError} `unknown_effect` or `effect_not_resolvable`.
   */
  resolveEffect(callId: string, applied: boolean, options: { by: Principal }): { [key: string]: JsonValue }
  /**
   * Runs the compensation tool of succeeded call `callId` through the nine steps with the principal's
   * own authority; returns its result's JSON form (a refused call included).
   * @throws {@link HarnessweaverError} `unknown_effect` or `effect_not_resolvable`.
   */
  compensate(callId: string, options: { principal: Principal; tenant?: string | null; task?: string | null; run?: Run | string | null }): { [key: string]: JsonValue }
  /** Grants approval `id` of a built-in tool and writes its permission `candidate` to the permission file. */
  acceptCandidate(id: string | ApprovalRequest, candidate: string, options: { approver: Principal }): { state: string; candidate: JsonValue }
  /**
   * The caller `by` confirms its own waiting call of an `approval.by: caller` tool (issue 22).
   * @throws {@link HarnessweaverError} `approval_not_in_band` (a `role` tool, or an approval something besides
   * `approval.when` asked for) or `approver_not_allowed` (another principal's call).
   */
  approveInBand(id: string | ApprovalRequest, options: { by: Principal; tenant?: string | null }): { state: string; decided_by: string | null }
  /** The caller `by` declines its own waiting call in band (then refused `approval_denied`); the same rule as `approveInBand`. */
  declineInBand(id: string | ApprovalRequest, options: { by: Principal; tenant?: string | null }): { state: string; decided_by: string | null }
  /**
   * Whether `tool`, running in `run`, may send a `kind` (`sampling` or `elicitation`) request to the caller's
   * client: `{decision: "allowed"}` or `{decision: "denied", code: "relay_denied", step, message, reasons}`.
   */
  relayDecision(tool: string, kind: "sampling" | "elicitation", options: { run: Run | string; includeContext?: string | null }): { [key: string]: JsonValue }
  /**
   * Issue 22: which of a running call's progress `reports` (`{progress, total?, message?}`, or
   * `"end"` where the call ends) reach its caller, given the `secrets` handed out for the call:
   * `{events: [{relayed: {progress, total?, message?}} | {dropped: code} | {ended: true}]}`.
   */
  progressDecision(tool: string, reports: JsonValue[], options?: { secrets?: string[] | null }): { [key: string]: JsonValue }
}

/**
 * Loads `harness.yaml` and every manifest it names, ready for calls. Every
 * native tool needs a handler in `tools` (or `codeTools`).
 * @throws {@link LoadError} whose `problems` lists every problem (file, line, column, path, code),
 * including `handler_not_registered`.
 */
export declare function load(path: string, options?: LoadOptions): Harness

/**
 * Loads `harness.yaml` and its manifests only to read them (no handlers
 * needed); the harness cannot take calls.
 * @throws {@link LoadError}
 */
export declare function inspect(path: string): Harness

/** @internal Test-only hooks: a manual clock and deterministic ids. Not API. */
export declare const _testing: {
  load(path: string, options?: LoadOptions, testing?: { clockMs: number; sequentialIds?: boolean; sandboxWorker?: string }): Harness
  advanceMs(harness: Harness, ms: number): void
  /** Steps 1–7 of a call whose allowed ticket is held until `resume`: `{ held }`, or the call's result. */
  begin(harness: Harness, tool: string, args: { [key: string]: JsonValue } | undefined, options: CallOptions): { held: number } | CallResult
  /** Runs a call `begin` held, to its result. */
  resume(harness: Harness, held: number, options?: { raiseOnRefusal?: boolean }): Promise<CallResult>
}

/**
 * `sha256:` + hex SHA-256 of the canonical JSON of `{description, input_schema, name}`, with
 * `output_schema` when the tool declares one.
 * @throws {@link InvalidValueError} for values with no portable JSON form.
 */
export declare function definitionDigest(name: string, description: string, inputSchema: JsonValue, outputSchema?: JsonValue | null): string

/** The canonical JSON text of a value (what every language hashes). */
export declare function canonicalJson(value: JsonValue): string

/**
 * Runs the named sanitizers (`"pii_redact"`, `"strip_instructions"`), in order,
 * on every string value and object key of `value`, as step 9 does. Returns the
 * sanitized value and the number of replacements per kind (never what was
 * replaced). Keys that sanitize to one name stay distinct (`[EMAIL]`, `[EMAIL]#2`).
 * An unknown sanitizer name throws with code `unknown_sanitizer`.
 */
export declare function sanitize(
  value: JsonValue,
  sanitizers: ReadonlyArray<'pii_redact' | 'strip_instructions'>,
): { value: JsonValue; counts: Record<string, number> }

/** Runs the `harnessweaver` command line with `args`; returns its exit code (0 clean, 1 problems, 2 usage). */
export declare function cliRun(args: string[]): number

/** Options of {@link serveMcp}. */
export interface ServeMcpOptions {
  /** Serve streamable HTTP on this address (`127.0.0.1:PORT`; port 0 picks one, printed on stderr) instead of stdio. */
  http?: string
  /** The stdio caller (an object `{ id, roles, scopes, attrs }` or an id); default `spec.gateway.stdio`. */
  principal?: Principal | string
  /** The stdio caller's tenant; default `spec.gateway.stdio.tenant`. */
  tenant?: string
}

/**
 * Serves the harness's tools over MCP, every call governed: stdio by default,
 * or streamable HTTP at `/mcp` with callers checked against
 * `spec.gateway.http` (no token, 401). Native tools run through this
 * process's functions as `call` runs them. Resolves when the stdio client
 * disconnects; over HTTP it serves until the process ends.
 */
export declare function serveMcp(h: Harness, options?: ServeMcpOptions): Promise<void>

/**
 * cel-lite: the expression language of `approval.when` and policy rules, usable
 * outside a harness (to check an expression, or in tests).
 *
 * ```ts
 * const program = celLite.compile("args.amount_usd > 100 && !('finance' in principal.roles)")
 * program.evaluate({ args: { amount_usd: 250 }, principal: { roles: [] } }) // true
 * program.evaluate({ args: {} }, { default: null })                         // null: unevaluable
 * program.approvalRequired({ args: {} }) // { required: true, reason: 'no such key `amount_usd` in `args`' }
 * ```
 */
export declare namespace celLite {
  /** The variable names an expression may use. */
  type Name = 'principal' | 'tenant' | 'task' | 'tool' | 'args' | 'labels'

  /**
   * The variables of an evaluation: some of the six names, each a JSON value.
   * A name left out (or `undefined`) is unbound: using it is unevaluable. Any
   * other key throws {@link InvalidArgumentError} (`invalid_vars`).
   */
  type Vars = { readonly [name in Name]?: JsonValue | undefined }

  /** The stable codes of {@link CompileError}. */
  type CompileErrorCode =
    | 'cel_syntax'
    | 'cel_unsupported'
    | 'cel_unknown_name'
    | 'cel_unknown_function'
    | 'cel_wrong_arguments'
    | 'cel_bad_regex'
    | 'cel_too_large'
    | 'cel_too_deep'

  /** The approval rule's verdict: true, unevaluable or not a bool means required. */
  interface ApprovalVerdict {
    /** Whether a human must approve: the expression is true, unevaluable or not a bool. */
    required: boolean
    /** Why the expression could not decide; null when it decided by itself. */
    reason: string | null
  }

  /** An expression that did not compile. `message` shows the line with a caret under the spot. */
  class CompileError extends HarnessweaverError {
    /** The stable code of what is wrong. */
    readonly code: CompileErrorCode
    /** 1-based line of the spot. */
    readonly line: number
    /** 1-based column of the spot, in characters. */
    readonly column: number
    /** What is wrong, without the place and the caret. */
    readonly reason: string
  }

  /** A runtime error (missing key, wrong type, overflow, cost limit…) stopped an evaluation. */
  class Unevaluable extends HarnessweaverError {
    /** Always `unevaluable`. */
    readonly code: 'unevaluable'
    /** Which part failed and why. */
    readonly reason: string
  }

  /** A compiled expression; immutable, evaluate it as often as needed. Made by {@link compile}. */
  class Program {
    private constructor()
    /** The source text. */
    readonly source: string
    /** The variable names the expression uses, in order of first use. */
    readonly names: Name[]
    /**
     * The expression's value as plain JSON data (map keys that are not strings become their text).
     * @throws {@link Unevaluable} when a runtime error stops it.
     * @throws {@link InvalidArgumentError} / {@link InvalidValueError} for bad `vars`.
     */
    evaluate(vars?: Vars | null): JsonValue
    /** As {@link Program.evaluate}, but returns `options.default` instead of throwing {@link Unevaluable}. */
    evaluate<D>(vars: Vars | null | undefined, options: { default: D }): JsonValue | D
    /** The approval rule (never throws for unevaluable expressions). */
    approvalRequired(vars?: Vars | null): ApprovalVerdict
  }

  /** The variable names an expression may use. */
  const NAMES: readonly Name[]

  /**
   * Compiles an expression (at most 4096 bytes, nesting at most 64).
   * @throws {@link CompileError} with `code`, `line`, `column`.
   */
  function compile(text: string): Program
}
