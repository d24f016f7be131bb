// `celLite` from a user's side: the API, and hostile expressions and arguments
// (10 MB strings, million-item lists, deep nesting, catastrophic patterns,
// unknown names, values with no JSON form). Each gives a clear CompileError,
// Unevaluable or InvalidValueError in bounded time, never a crash or a hang.
// `harnessweaver doctor` (the npm bin) reports cel-lite problems with places.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { test } from 'node:test'

import { FIXTURES, ROOT, hw } from './fixture_support.mjs'

const { celLite } = hw
const APPROVAL = "args.amount_usd > 100 && !('finance' in principal.roles) || tool.risk == 'critical'"
const VARS = {
  args: { amount_usd: 250, currency: 'USD' },
  principal: { id: 'u-1', roles: ['engineer'] },
  tool: { name: 'refund_payment', risk: 'high' },
}
// Generous for a debug build on a busy machine; the point is "bounded", not "fast".
const BOUND_MS = 20_000

function bounded(f) {
  const start = performance.now()
  try {
    return f()
  } finally {
    const took = performance.now() - start
    assert.ok(took < BOUND_MS, `took ${took} ms`)
  }
}

function unevaluable(expr, vars) {
  const program = celLite.compile(expr)
  const err = bounded(() => {
    try {
      return { value: program.evaluate(vars) }
    } catch (e) {
      return e
    }
  })
  assert.ok(err instanceof celLite.Unevaluable, `expected unevaluable, got ${JSON.stringify(err)?.slice(0, 200)}`)
  assert.equal(err.code, 'unevaluable')
  assert.equal(err.message, err.reason)
  const verdict = bounded(() => program.approvalRequired(vars))
  assert.equal(verdict.required, true)
  assert.equal(typeof verdict.reason, 'string')
  return err.reason
}

function compileError(expr) {
  try {
    bounded(() => celLite.compile(expr))
  } catch (e) {
    assert.ok(e instanceof celLite.CompileError, String(e))
    return e
  }
  assert.fail(`expected a compile error for ${expr.slice(0, 80)}`)
}

test('compile and evaluate', () => {
  const program = celLite.compile(APPROVAL)
  assert.ok(program instanceof celLite.Program)
  assert.equal(program.source, APPROVAL)
  assert.deepEqual(program.names, ['args', 'principal', 'tool'])
  assert.equal(program.evaluate(VARS), true)
  assert.deepEqual(program.approvalRequired(VARS), { required: true, reason: null })
  const finance = { ...VARS, principal: { roles: ['finance'] } }
  assert.equal(program.evaluate(finance), false)
  assert.deepEqual(program.approvalRequired(finance), { required: false, reason: null })
  assert.deepEqual(celLite.compile("[1, 2.5, 'x', null, {'a': true}]").evaluate(), [1, 2.5, 'x', null, { a: true }])
  assert.deepEqual(celLite.compile("{1: 'a'}").evaluate({}), { 1: 'a' })
  assert.deepEqual(celLite.NAMES, ['principal', 'tenant', 'task', 'tool', 'args', 'labels', 'run'])
  assert.ok(Object.isFrozen(program))
  assert.throws(() => new celLite.Program({}), TypeError)
  // Only the names the expression uses are converted.
  assert.equal(celLite.compile('args.x + 1').evaluate({ args: { x: 1 }, tenant: new Map() }), 2)
  assert.equal(celLite.compile('args.x + 1').evaluate({ args: { x: 1 }, tenant: undefined }), 2)
})

test('unevaluable throws, or gives the default', () => {
  const program = celLite.compile('args.amount_usd > 100')
  const err = (() => {
    try {
      program.evaluate({ args: {} })
    } catch (e) {
      return e
    }
  })()
  assert.ok(err instanceof celLite.Unevaluable && err instanceof hw.HarnessweaverError && err instanceof Error)
  assert.equal(err.code, 'unevaluable')
  assert.equal(err.reason, 'no such key `amount_usd` in `args`')
  assert.equal(program.evaluate({ args: {} }, { default: null }), null)
  assert.equal(program.evaluate({ args: {} }, { default: undefined }), undefined)
  assert.equal(program.evaluate({ args: { amount_usd: 5 } }, { default: 'x' }), false)
  assert.deepEqual(program.approvalRequired({}), { required: true, reason: '`args` is not set' })
  assert.deepEqual(program.approvalRequired(), { required: true, reason: '`args` is not set' })
})

test('compile errors carry code, place and caret', () => {
  const err = compileError('args.amount_usd > 100 &&\n  bogus.x')
  assert.ok(err instanceof hw.HarnessweaverError)
  assert.equal(err.name, 'CompileError')
  assert.deepEqual([err.code, err.line, err.column], ['cel_unknown_name', 2, 3])
  assert.ok(err.reason.startsWith('unknown name `bogus`'))
  assert.equal(err.message, `line 2, column 3: ${err.reason}\n    bogus.x\n    ^`)
  assert.deepEqual(err.problems, [{ code: 'cel_unknown_name', message: err.reason, file: null, line: 2, column: 3, path: '' }])
  for (const [expr, code, hint] of [
    ['args.a and args.b', 'cel_syntax', '&&'],
    ['args.a = 1', 'cel_syntax', '=='],
    ['len(args.a)', 'cel_unknown_function', 'size'],
    ["args.a.startswith('x')", 'cel_unknown_function', 'startsWith'],
    ['args.a == True', 'cel_unknown_name', 'true'],
    ["args.a.matches('(')", 'cel_bad_regex', ''],
    ['size()', 'cel_wrong_arguments', ''],
    ['', 'cel_syntax', ''],
  ]) {
    const e = compileError(expr)
    assert.equal(e.code, code, `${expr}: ${e.message}`)
    assert.ok(e.reason.includes(hint), `${expr}: ${e.reason}`)
  }
  assert.throws(() => celLite.compile(42), TypeError)
})

test('bad vars are clear errors', () => {
  const program = celLite.compile('args')
  assert.throws(() => program.evaluate({ argz: {} }), (e) => e instanceof hw.InvalidArgumentError && e.code === 'invalid_vars' && /argz/.test(e.message))
  assert.throws(() => program.evaluate([1]), (e) => e instanceof hw.InvalidArgumentError && e.code === 'invalid_vars')
  assert.throws(() => program.evaluate('args'), (e) => e instanceof hw.InvalidArgumentError && e.code === 'invalid_vars')
  for (const [bad, code] of [
    [NaN, 'non_finite_number'],
    [Infinity, 'non_finite_number'],
    [2n ** 70n, 'integer_out_of_range'],
    [new Date(0), 'unsupported_type'],
    [new Map(), 'unsupported_type'],
    [() => 1, 'unsupported_type'],
    [{ x: undefined }, 'unsupported_type'],
  ]) {
    assert.throws(() => program.evaluate({ args: bad }), (e) => e instanceof hw.InvalidValueError && e.code === code, String(code))
  }
})

test('only the parts of a variable an expression reads are converted', () => {
  // A selection chain reads one field of each map on its way; any other use reads the whole value.
  const date = new Date(0)
  const args = { amount_usd: 250, when: date, nested: { a: 1, f: () => 1 } }
  assert.equal(celLite.compile('args.amount_usd > 100').evaluate({ args }), true)
  assert.equal(celLite.compile('args.nested.a == 1 && has(args.nested.a)').evaluate({ args }), true)
  const invalid = (expr, vars, code) =>
    assert.throws(() => celLite.compile(expr).evaluate(vars), (e) => e instanceof hw.InvalidValueError && e.code === code, expr)
  invalid('size(args) > 1', { args }, 'unsupported_type')
  invalid('args.amount_usd > 1 && args.nested == {}', { args }, 'unsupported_type')
  invalid('args.when == 1', { args }, 'unsupported_type')
  invalid('args.x == 1', { args: { x: undefined } }, 'unsupported_type')
  invalid('args.x == 1', { args: { x: NaN } }, 'non_finite_number')
  invalid('args.x == 1', { args: new Map([['x', 1]]) }, 'unsupported_type')
  // Only own properties are fields, as for the whole value.
  const unevaluableReason = (expr, vars) => celLite.compile(expr).approvalRequired(vars).reason
  assert.equal(unevaluableReason('args.toString == 1', { args: {} }), 'no such key `toString` in `args`')
  invalid('args.x == 1', { args: Object.create({ x: 1 }) }, 'unsupported_type')
  Object.prototype.polluted = 1 // eslint-disable-line no-extend-native
  try {
    assert.equal(unevaluableReason('args.polluted == 1', { args: {} }), 'no such key `polluted` in `args`')
  } finally {
    delete Object.prototype.polluted
  }
  const bare = Object.create(null)
  bare.x = 2
  assert.equal(celLite.compile('args.x == 2').evaluate({ args: bare }), true)
  const proto = { __proto__: null }
  Object.defineProperty(proto, '__proto__', { value: { y: 3 }, enumerable: true })
  assert.equal(celLite.compile('args.__proto__.y == 3').evaluate({ args: proto }), true)
  // Not a map: the evaluation reports its type, as with the whole value.
  assert.equal(unevaluableReason('args.a.b == 1', { args: { a: 'text' } }), 'cannot select `b` from `args.a`, a string')
  assert.equal(unevaluableReason('args.a.b == 1', { args: { a: [1] } }), 'cannot select `b` from `args.a`, a list')
  assert.equal(unevaluableReason('args.a.b == 1', { args: {} }), 'no such key `a` in `args`')
  // The same answers as with the whole value on every bench-shaped input.
  for (const vars of [VARS, { ...VARS, principal: { roles: ['finance'] } }, { ...VARS, tool: { risk: 'critical' } }]) {
    const whole = celLite.compile(`(${APPROVAL}) && size(args) >= 0 && size(principal) >= 0 && size(tool) >= 0`)
    assert.equal(celLite.compile(APPROVAL).evaluate(vars), whole.evaluate(vars))
  }
})

test('a program evaluated again and again answers each call from its own values', () => {
  // The addon converts into the buffers of the previous call's values: every change of shape must show.
  const program = celLite.compile('args.x')
  const long = `${'é'.repeat(40)}😀${'x'.repeat(100)}`
  const shapes = ['a', long, '', 'b', ['x', long, ['y', []]], [], [1, 'z'], ['z'], 5, null, true, { k: ['v'] }, [long, long], 'c', [[long]], -0.5]
  for (const x of [...shapes, ...[...shapes].reverse()]) {
    assert.deepEqual(program.evaluate({ args: { x } }), x)
    const verdict = program.approvalRequired({ args: { x } })
    assert.deepEqual([verdict.required, verdict.reason === null], [true, x === true])
    assert.equal(program.approvalRequired({ args: {} }).reason, 'no such key `x` in `args`')
  }
  assert.throws(() => program.evaluate({ args: { x: ['a', undefined] } }), (e) => e instanceof hw.InvalidValueError && e.code === 'unsupported_type')
  assert.deepEqual(program.evaluate({ args: { x: ['a', 'b'] } }), ['a', 'b'])
  // A getter met while converting may evaluate the same program: each call keeps its own parts.
  let inner
  const outer = ['a', 'b']
  Object.defineProperty(outer, 1, { enumerable: true, get: () => (inner = program.evaluate({ args: { x: ['inner', long] } }), 'b') })
  assert.deepEqual(program.evaluate({ args: { x: outer } }), ['a', 'b'])
  assert.deepEqual(inner, ['inner', long])
})

const BIG = 'a'.repeat(10_000_000)
const MILLION = Array.from({ length: 1_000_000 }, (_, i) => i)

test('10 MB strings', () => {
  const args = { args: { note: BIG, pattern: '(a{1000}){1000}' } }
  assert.equal(bounded(() => celLite.compile('size(args.note)').evaluate(args)), 10_000_000)
  assert.equal(bounded(() => celLite.compile("args.note.contains('b')").evaluate(args)), false)
  assert.match(unevaluable('args.note + args.note', args), /exceed/)
  assert.match(unevaluable('args.note.matches(args.pattern)', args), /limit/)
})

test('million-item lists', () => {
  const args = { args: { items: MILLION } }
  assert.equal(bounded(() => celLite.compile('args.items.exists(i, i == -1)').evaluate(args)), false)
  assert.equal(bounded(() => celLite.compile('-1 in args.items').evaluate(args)), false)
  assert.equal(bounded(() => celLite.compile('size(args.items.filter(x, x % 2 == 0))').evaluate(args)), 500_000)
  assert.match(unevaluable('args.items.map(x, args.items.map(y, y))', args), /limit/)
  assert.match(unevaluable('args.items + args.items', args), /exceed/)
})

test('catastrophic patterns run in linear time', () => {
  const args = { args: { note: 'a'.repeat(100_000) + '!' } }
  for (const pattern of ['(a+)+$', '^(a|aa)+$', '(a|a)*b', '^(a*)*$']) {
    assert.equal(bounded(() => celLite.compile(`args.note.matches('${pattern}')`).evaluate(args)), false)
  }
  assert.equal(compileError("args.note.matches('a{1000}{1000}{1000}')").code, 'cel_bad_regex')
})

test('deep nesting', () => {
  const err = compileError('('.repeat(2000) + '1' + ')'.repeat(2000))
  assert.deepEqual([err.code, err.line, err.column], ['cel_too_deep', 1, 65])
  assert.equal(compileError('('.repeat(100_000) + '1' + ')'.repeat(100_000)).code, 'cel_too_large')
  assert.equal(compileError('!'.repeat(3000) + 'true').code, 'cel_too_deep')
  assert.equal(compileError('['.repeat(100) + ']'.repeat(100)).code, 'cel_too_deep')
  let deep = 1
  for (let i = 0; i < 400; i++) deep = { k: deep }
  assert.match(unevaluable('args', { args: deep }), /nests deeper/)
  assert.equal(celLite.compile('has(args.k.k.k)').evaluate({ args: deep }), true)
  let deeper = 1
  for (let i = 0; i < 2000; i++) deeper = [deeper]
  assert.throws(() => celLite.compile('args').evaluate({ args: deeper }), (e) => e instanceof hw.InvalidValueError && e.code === 'nesting_too_deep')
})

test('huge expressions and blow-ups', () => {
  assert.equal(compileError('x'.repeat(10_000_000)).code, 'cel_too_large')
  const ten = '[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]'
  let expr = '1'
  for (const name of 'abcdefg') expr = `${ten}.map(${name}, ${expr})`
  assert.match(unevaluable(expr, {}), /limit/)
})

test('unknown names and functions fail at compile time', () => {
  for (const [expr, code, column] of [
    ['request.amount > 1', 'cel_unknown_name', 1],
    ["args.a > 1 || env.HOME == ''", 'cel_unknown_name', 15],
    ['len(args.x) > 1', 'cel_unknown_function', 1],
    ["args.x.lower() == 'a'", 'cel_unknown_function', 8],
    ["timestamp('2020-01-01T00:00:00Z')", 'cel_unknown_function', 1],
  ]) {
    const e = compileError(expr)
    assert.deepEqual([e.code, e.column], [code, column], `${expr}: ${e.message}`)
  }
  assert.equal(unevaluable("tenant.id == 'acme'", {}), '`tenant` is not set')
})

test('doctor reports cel-lite problems with places', () => {
  const harness = join(FIXTURES, 'load', 'cel_compile_errors', 'harness.yaml')
  const bin = join(ROOT, 'bindings-node', 'bin', 'harnessweaver.js')
  const out = spawnSync(process.execPath, [bin, 'doctor', harness], { encoding: 'utf8' })
  assert.equal(out.status, 1, out.stderr)
  const text = out.stdout + out.stderr
  const base = join(FIXTURES, 'load', 'cel_compile_errors')
  for (const [place, code] of [
    ['harness.yaml:10:54: spec.policy.rules[0].when', 'cel_syntax'],
    ['tools/a.yaml:6:39: spec.approval.when', 'cel_syntax'],
    ['tools/b.yaml:7:11: spec.approval.when', 'cel_unknown_name'],
    ['tools/c.yaml:9:7: spec.approval.when', 'cel_unknown_function'],
  ]) {
    const line = text.split('\n').find((l) => l.includes(`${base}/${place}`))
    assert.ok(line, `doctor does not name ${place}:\n${text}`)
    assert.ok(line.includes(`[${code}]`), line)
  }
})
