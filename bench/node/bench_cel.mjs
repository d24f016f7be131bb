// Benchmark (not a test): a typical approval expression compiled once and
// evaluated against realistic variables through the npm package's `celLite`,
// beside the same expression in @marcbachmann/cel-js (pure JavaScript), in the
// same run. Prints ns per evaluation and the ratio.
//
// Run with `make bench-cel-node` (it builds a release addon and points the
// package at it with NAPI_RS_NATIVE_LIBRARY_PATH). Every implementation must
// give the same answers on the same variables before it is timed.
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { parse } from '@marcbachmann/cel-js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const hw = createRequire(import.meta.url)(join(ROOT, 'bindings-node', 'index.js'))

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

function timeit(run, rounds, seconds = 1) {
  let n = 1
  let took
  for (;;) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < n; i++) for (const v of VARS) run(v)
    took = Number(process.hrtime.bigint() - start)
    if (took > 50e6) break
    n *= 2
  }
  const loops = Math.max(1, Math.floor((n * seconds * 1e9) / took))
  let best = Infinity
  for (let r = 0; r < rounds; r++) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < loops; i++) for (const v of VARS) run(v)
    best = Math.min(best, Number(process.hrtime.bigint() - start) / (loops * VARS.length))
  }
  return best
}

const rounds = Number(process.argv[2] || 5)
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
console.log(`node ${process.version}; addon ${process.env.NAPI_RS_NATIVE_LIBRARY_PATH || '(the package default, debug)'}`)
console.log(`best of ${rounds} rounds, ${VARS.length} variable sets per loop\n`)
const results = contenders.map(([name, run]) => [name, timeit(run, rounds)])
const ours = results[0][1]
const width = Math.max(...results.map(([n]) => n.length))
for (const [name, ns] of results) {
  const ratio = ns === ours ? '' : ns > ours ? `${(ns / ours).toFixed(1)}x slower than celLite` : `${(ours / ns).toFixed(1)}x faster than celLite`
  console.log(`  ${name.padEnd(width)}  ${ns.toFixed(0).padStart(10)} ns/eval  ${ratio}`)
}
