// celLite's JavaScript fast path (in the core's `Program::gather_js`) answers exactly
// as the core does: every fixture expression and a set of expressions inside
// the fast path's subset, over many variable sets (edge values of every kind:
// -0, NaN, 2^53 + 2, lone surrogates, long strings, holes, BigInts, getters,
// objects with no JSON form), evaluated by `celLite` and by a `celLite` whose
// programs have no fast path (every evaluation in the core) give the same
// value, verdict or error.
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { test } from 'node:test'

import { ROOT, cases, hw, read, untag } from './fixture_support.mjs'

const require = createRequire(import.meta.url)
const native = require(join(ROOT, 'bindings-node', 'native.js'))
const makeCelLite = require(join(ROOT, 'bindings-node', 'cel_lite.js'))

// The same package's celLite, its programs compiled without the fast path.
const coreOnly = makeCelLite(
  { ...native, celLiteCompile: (text) => native.celLiteCompile(text, false) },
  { HarnessweaverError: hw.HarnessweaverError },
  hw.celLite.NAMES,
)

const SUBSET = [
  "args.amount_usd > 100 && !('finance' in principal.roles) || tool.risk == 'critical'",
  'args.x == args.y',
  'args.x != args.y',
  'args.x < args.y || args.x >= 3',
  'args.x <= 2.5 && args.y > -1',
  "args.x in args.list || 'a' in args.list",
  'args.x in [1, 2.5, "a", true, null]',
  'args.x == null || args.y == true',
  '!(args.x == 1) && !args.y',
  'args.x && args.y || args.list',
  "tool.risk == 'high' || tool.risk == 'critical' || args.x > 1000",
  'principal.id == "u-42" && args.nested.deep.x == 1',
  'args.x == 1e300 || args.y < 0.1',
  'false || args.x',
  'true && args.y == "é"',
]
// The edge values go through the subset and one expression beyond it.
const EXPRS = [...SUBSET, 'args.x == 9007199254740993']

const VALUES = [
  0, -0, 1, 2, 2.5, -1, 3, 1000, 1e300, 2 ** 53, 2 ** 53 + 2, 0.1, NaN, Infinity, -Infinity, 5n, 2n ** 60n,
  '', 'a', 'é', 'high', 'critical', '\ud800', '\ud83d\ude00', 'x'.repeat(256), 'x'.repeat(300),
  true, false, null, undefined,
  [], ['a'], [1, 2, 3], ['engineer', 'oncall'], ['finance'], [1, 'a', null, true], [[1]], [{}], [, 'a'], Array(101).fill('a'),
  [undefined], [NaN], [2n],
  {}, { a: 1 }, { deep: { x: 1 } }, () => 1, new Date(0), Object.create({ inherited: 1 }),
]

// Every outcome as comparable data: the value, or the error's class, code and message.
function outcome(run) {
  try {
    return { value: run() }
  } catch (err) {
    return { threw: err.name, code: err.code, message: err.message }
  }
}

const compiled = new Map()
function same(expr, vars, label) {
  if (!compiled.has(expr)) compiled.set(expr, [hw.celLite.compile(expr), coreOnly.compile(expr)])
  const [fast, core] = compiled.get(expr)
  assert.deepEqual(outcome(() => fast.evaluate(vars)), outcome(() => core.evaluate(vars)), `${label}: evaluate ${expr}`)
  assert.deepEqual(outcome(() => fast.approvalRequired(vars)), outcome(() => core.approvalRequired(vars)), `${label}: approvalRequired ${expr}`)
}

test('the core writes a fast path for the subset, and none outside it', () => {
  const fast = (expr) => native.celLiteCompile(expr)[1].includes('function fast(')
  for (const expr of SUBSET) assert.ok(fast(expr), expr)
  for (const expr of ['args.x == 9007199254740993', 'args.x + 1 > 2', 'size(args.list) > 0', "has(args.x) || args.x.matches('a')", 'args.x', '1u == args.x']) {
    assert.ok(!fast(expr), expr)
  }
})

test('fixture expressions answer alike with and without the fast path', () => {
  for (const path of cases('cel_lite')) {
    const doc = read(path)
    for (const c of doc.cases) {
      if (c.expect && 'compile_error' in c.expect) continue
      same(c.expr, untag('vars' in c ? c.vars : doc.vars || {}), c.name)
    }
  }
})

test('edge values answer alike with and without the fast path', () => {
  const base = {
    principal: { id: 'u-42', roles: ['engineer'] },
    tool: { name: 't', risk: 'high' },
    args: { amount_usd: 250, x: 1, y: 2, list: ['a'], nested: { deep: { x: 1 } } },
  }
  for (const expr of EXPRS) {
    for (const v of VALUES) {
      for (const at of ['x', 'y', 'list', 'amount_usd']) same(expr, { ...base, args: { ...base.args, [at]: v } }, `args.${at} = ${String(v)}`)
      same(expr, { ...base, principal: { ...base.principal, roles: v } }, `principal.roles = ${String(v)}`)
      same(expr, { ...base, tool: { ...base.tool, risk: v } }, `tool.risk = ${String(v)}`)
      same(expr, { ...base, args: v }, `args = ${String(v)}`)
    }
    same(expr, { ...base, args: { ...base.args, x: 2 ** 53 + 2, y: 9007199254740993 } }, 'beyond 2^53')
    same(expr, {}, 'no variables')
    same(expr, { args: { x: 1, get y() { return 2 } } }, 'a getter')
  }
})

test('pairs of edge values compare alike with and without the fast path', () => {
  const values = [...VALUES, '\ufffd', 'x'.repeat(255) + 'y', '\ud83d', 0.30000000000000004]
  for (const expr of ['args.x == args.y', 'args.x != args.y', 'args.x < args.y', 'args.x >= args.y', 'args.x in args.y']) {
    for (const x of values) for (const y of values) same(expr, { args: { x, y } }, `x = ${String(x)}, y = ${String(y)}`)
  }
})
