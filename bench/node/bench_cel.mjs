// Benchmark (not a test): a typical approval expression compiled once and
// evaluated against realistic variables through the npm package's `celLite`,
// beside the same expression in @marcbachmann/cel-js (pure JavaScript), in the
// same run. Prints ns per evaluation and the ratio.
//
// Run with `make bench-cel-node` (it builds the release package into
// target/bench-node-pkg and points HW_NODE_PACKAGE at it). Every implementation must
// give the same answers on the same variables before it is timed.
import { parse } from '@marcbachmann/cel-js'

import { PKG, REPEATS, Results, hw, medianNs, packageVersion, value } from './benchlib.mjs'

const EXPR = "args.amount_usd > 100 && !('finance' in principal.roles) || tool.risk == 'critical'"

// What a governor would pass for a refund call: the principal, the tool's facts, the args.
const VARS = [
  {
    principal: { id: 'u-42', roles: ['engineer', 'oncall'], scopes: ['tickets:write', 'refunds:create'] },
    tenant: { id: 'acme', plan: 'enterprise', region: 'eu' },
    tool: { name: 'refund_payment', risk: 'high', labels: ['payments', 'external'] },
    args: { order_id: 'ord_8812', amount_usd: 250, currency: 'USD', reason: 'damaged on arrival' },
  },
  {
    principal: { id: 'u-7', roles: ['finance'], scopes: ['refunds:create'] },
    tenant: { id: 'acme', plan: 'enterprise', region: 'eu' },
    tool: { name: 'refund_payment', risk: 'high', labels: ['payments', 'external'] },
    args: { order_id: 'ord_8813', amount_usd: 250, currency: 'USD', reason: 'duplicate charge' },
  },
  {
    principal: { id: 'u-9', roles: ['support'], scopes: [] },
    tenant: { id: 'globex', plan: 'team', region: 'us' },
    tool: { name: 'wipe_account', risk: 'critical', labels: ['destructive'] },
    args: { order_id: 'ord_1', amount_usd: 12.5, currency: 'USD', reason: 'test' },
  },
]
const EXPECTED = [true, false, true]

// Median ns per evaluation (one variable set after another).
function timeit(run) {
  return medianNs(() => {
    for (const v of VARS) run(v)
  }) / VARS.length
}

const program = hw.celLite.compile(EXPR)
const peer = parse(EXPR)
const contenders = [
  ['harnessweaver celLite evaluate', (v) => program.evaluate(v)],
  ['harnessweaver celLite approvalRequired', (v) => program.approvalRequired(v).required],
  ['@marcbachmann/cel-js (pure JS)', (v) => peer(v)],
]
for (const [name, run] of contenders) {
  const got = VARS.map((v) => Boolean(run(v)))
  if (JSON.stringify(got) !== JSON.stringify(EXPECTED)) throw new Error(`${name} gives ${got}, expected ${EXPECTED}`)
}
console.log(`expression: ${EXPR}`)
console.log(`node ${process.version}; package ${PKG}`)
console.log(`median of ${REPEATS} samples, ${VARS.length} variable sets per loop\n`)
const results = contenders.map(([name, run]) => [name, timeit(run)])
const ours = results[0][1]
const width = Math.max(...results.map(([n]) => n.length))
for (const [name, ns] of results) {
  const ratio = ns === ours ? '' : ns > ours ? `${(ns / ours).toFixed(1)}x slower than celLite` : `${(ours / ns).toFixed(1)}x faster than celLite`
  console.log(`  ${name.padEnd(width)}  ${ns.toFixed(0).padStart(10)} ns/eval  ${ratio}`)
}
const res = new Results('cel-node')
// The goal: within 2x of the pure-JavaScript peer (ours / peer <= 2, the report's ratio peer / ours >= 0.5).
res.row('cel-lite', `approval expression (${VARS.length} variable sets), Node`, value('celLite evaluate', ours, 'ns'),
  value(`@marcbachmann/cel-js ${packageVersion('@marcbachmann/cel-js')} (pure JS)`, results[2][1], 'ns'),
  { goal: { metric: 'ratio', op: '>=', value: 0.5, text: 'within 2x of cel-js' }, headline: true })
res.write()
