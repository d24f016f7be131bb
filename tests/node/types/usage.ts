// Type-checked (never run) by tests/node/api.test.mjs: the README-style uses of
// the package must compile against index.d.ts under `strict`.
import {
  canonicalJson,
  celLite,
  definitionDigest,
  HarnessweaverError,
  InvalidValueError,
  load,
  LoadError,
  type Harness,
  type JsonValue,
  type PinState,
  type Problem,
  ToolDescription,
} from '../../../bindings-node/index.js'

const harness: Harness = load('examples/shop/harness.yaml', { tools: { refund_payment: (args: unknown) => args } })
for (const tool of harness.tools) {
  const pin: PinState = tool.pin
  const digest: string = tool.digest
  const name: string = tool.name
  const other: unknown = tool.risk
  void [pin, digest, name, other]
}
const found: ToolDescription | undefined = harness.tool('refund_payment')
const names: string[] = harness.handlerNames
const d: string = definitionDigest('t', 'd', { type: 'object', n: 1, big: 5n, list: [null, true, 'x'] })
const c: string = canonicalJson([1, 2.5, 'é'])
const fromText: ToolDescription = ToolDescription.fromManifest('apiVersion: harnessweaver/v1\nkind: Tool\n')
const fromObject: ToolDescription = ToolDescription.fromManifest({ apiVersion: 'harnessweaver/v1' }, 'inline')
void [found, names, d, c, fromText, fromObject]

try {
  load('missing.yaml')
} catch (err) {
  if (err instanceof LoadError) {
    const problems: Problem[] = err.problems
    const code: string = err.code
    const line: number | null | undefined = problems[0]?.line
    void [code, line]
  } else if (err instanceof InvalidValueError || err instanceof HarnessweaverError) {
    const code: string = err.code
    void code
  }
}

// @ts-expect-error: a schema is a JSON value, not a function
definitionDigest('t', 'd', () => 1)
// @ts-expect-error: tools maps names to functions
load('h.yaml', { tools: { x: 1 } })

// cel-lite: compile once, evaluate with typed vars; errors narrow by class.
const program: celLite.Program = celLite.compile("args.amount_usd > 100 && !('finance' in principal.roles)")
const value: JsonValue = program.evaluate({ args: { amount_usd: 250 }, principal: { roles: ['engineer'] } })
const orNull: JsonValue | null = program.evaluate({ args: {} }, { default: null })
const verdict: celLite.ApprovalVerdict = program.approvalRequired({ args: { amount_usd: 5n } })
const required: boolean = verdict.required
const why: string | null = verdict.reason
const used: celLite.Name[] = program.names
const source: string = program.source
void [value, orNull, required, why, used, source, celLite.NAMES]
try {
  program.evaluate()
} catch (err) {
  if (err instanceof celLite.Unevaluable) {
    const reason: string = err.reason
    void reason
  } else if (err instanceof celLite.CompileError) {
    const at: [celLite.CompileErrorCode, number, number] = [err.code, err.line, err.column]
    void at
  }
}
// @ts-expect-error: only the six names are variables
program.evaluate({ request: {} })
// @ts-expect-error: a Program is made by compile
new celLite.Program()

// The governor: calls, runs, refusals, approvals, tool specs.
import { ApprovalRequired, type CallResult, inspect, ToolBlocked } from '../../../bindings-node/index.js'
async function governed(): Promise<void> {
  const h = load('examples/shop/harness.yaml', {
    tools: { lookup_order: async (args: { order_id: string }) => ({ id: args.order_id }), refund_payment: (_a, ctx) => ctx.idempotencyKey, search_catalog: () => [] },
    audit: (event) => void event.code,
    onApproval: (request) => request.tool === 'refund_payment' ? undefined : false,
  })
  const alice = { id: 'alice', roles: ['support'], scopes: ['orders:read'] }
  const r: CallResult = await h.call('lookup_order', { order_id: 'A-1001' }, { principal: alice })
  const text: string = r.toModel()
  const run = h.run({ principal: alice, tenant: 'acme' })
  const again: CallResult = await run.call('search_catalog', { query: 'x' })
  try {
    await h.call('refund_payment', { order_id: 'A-1001', amount_usd: 500 }, { principal: alice })
  } catch (e) {
    if (e instanceof ApprovalRequired) await h.approve(e.approval.id, { approver: { id: 'bob', roles: ['finance'] } })
    else if (e instanceof ToolBlocked) void [e.code, e.step, e.result.toModel()]
  }
  const specs = h.toolSpecs('openai', { principal: alice })
  const unknown = h.effects('unknown')
  const compensated = h.compensate('call-1', { principal: alice, tenant: 'acme' })
  const resolved = h.resolveEffect('call-2', true, { by: { id: 'ops' } })
  const accepted = h.acceptCandidate('approval-1', 'cand-1', { approver: { id: 'bob' } }).state
  void [text, again, run.labels.private, specs, unknown, compensated, resolved, accepted, inspect('examples/shop/harness.yaml').tools]
}
void governed
