// Values cross to the addon as JavaScript values, read there by the core's
// rules: a plain value reads as its `JSON.stringify` text says, and every
// kind of value `JSON.stringify` drops or changes is read by the rule or
// refused with the core's code, on the fixtures, numbers JavaScript prints in
// its own way, lone surrogates, and what has no JSON form.
import assert from 'node:assert/strict'
import { test } from 'node:test'

import { cases, hw, read, untag } from './fixture_support.mjs'

function outcome(f) {
  try {
    return { value: f() }
  } catch (err) {
    return { error: err.code ?? String(err) }
  }
}

/** The same result as the value its `JSON.stringify` text parses to. */
function asText(value, label) {
  const parsed = JSON.parse(JSON.stringify(value))
  assert.deepEqual(outcome(() => hw.canonicalJson(value)), outcome(() => hw.canonicalJson(parsed)), `canonicalJson of ${label}`)
  assert.deepEqual(outcome(() => hw.definitionDigest('t', 'd', value)), outcome(() => hw.definitionDigest('t', 'd', parsed)), `digest of ${label}`)
}

const NUMBERS = [
  0, -0, 1, -1, 2 ** 53, -(2 ** 53), 2 ** 53 + 2, -(2 ** 53 + 2), 2 ** 60, 2 ** 64, 2 ** 70, -(2 ** 63),
  1e21, 1e-7, 1e16, 5e-324, 0.1 + 0.2, 1.5e300, Number.MAX_VALUE, Number.MIN_VALUE, 123456789012345680,
  562949953421312.25, 562949953421312.2, 1.0000000000000002, -1234.125, 9007199254740994, 4.35, 0.000001,
]

test('plain values read as their JSON text says', () => {
  const values = [
    ...NUMBERS,
    NUMBERS,
    'é 東京 😀',
    '\u2028\u2029',
    '\u0000\u001f\u007f"\\/\b\f\n\r\t',
    { '\uffff': 1, '\u{10000}': 2, b: 3, a: 4, 10: 5, 9: 6 },
    { nested: { deeper: [1, { x: null, y: true, z: false }], empty: {}, list: [] } },
    Object.assign(Object.create(null), { b: 1, a: 2 }),
    Object.defineProperty({ a: 1 }, 'hidden', { value: 2, enumerable: false }),
    { get x() { return 1 } },
  ]
  for (const v of values) asText(v, JSON.stringify(v))
  for (const path of cases('canonical')) {
    const c = read(path)
    assert.deepEqual(outcome(() => hw.canonicalJson(untag(c.value))), c.expect.error ? { error: c.expect.error } : { value: c.expect.canonical }, path)
  }
})

test('what JSON.stringify would lose is read by the core\'s rules or refused with its code', () => {
  class Point {
    constructor() {
      this.x = 1
    }
  }
  const cyclic = { a: 1 }
  cyclic.self = cyclic
  let deep = 1
  for (let i = 0; i < 150; i++) deep = i % 2 ? [deep] : { k: deep }
  let tooDeep = 1
  for (let i = 0; i < 600; i++) tooDeep = [tooDeep]
  const UNSUPPORTED = 'unsupported_type'
  for (const [v, want] of [
    [undefined, UNSUPPORTED], [NaN, 'non_finite_number'], [Infinity, 'non_finite_number'], [-Infinity, 'non_finite_number'], [1n, '1'],
    [2n ** 70n, 'integer_out_of_range'], [Symbol('s'), UNSUPPORTED], [() => 1, UNSUPPORTED], [{ a: undefined }, UNSUPPORTED],
    [[undefined], UNSUPPORTED], [[, 1], UNSUPPORTED], [{ f() {} }, UNSUPPORTED], [{ n: NaN }, 'non_finite_number'], [[Infinity], 'non_finite_number'],
    [{ big: 2n ** 60n }, 'integer_out_of_range'], [new Date(0), UNSUPPORTED], [new Map([['a', 1]]), UNSUPPORTED], [new Set([1]), UNSUPPORTED],
    [new Point(), UNSUPPORTED], [new Number(1), UNSUPPORTED], [new String('s'), UNSUPPORTED], [new Uint8Array(2), UNSUPPORTED],
    [{ toJSON: () => 1 }, UNSUPPORTED], [Object.defineProperty({ a: 1 }, 'toJSON', { value: () => 2, enumerable: false }), '{"a":1}'],
    [Object.defineProperty({}, '__proto__', { value: { x: 1 }, enumerable: true }), '{"__proto__":{"x":1}}'],
    [cyclic, 'nesting_too_deep'], [tooDeep, 'nesting_too_deep'],
  ]) {
    const got = outcome(() => hw.canonicalJson(v))
    assert.equal(got.value ?? got.error, want, String(typeof v === 'symbol' ? 'symbol' : v))
  }
  assert.equal(hw.canonicalJson(deep), hw.canonicalJson(JSON.parse(JSON.stringify(deep))))
  // Inherited toJSON (a polluted prototype) changes what JSON.stringify prints, not what the core reads.
  for (const proto of [Object.prototype, Array.prototype]) {
    proto.toJSON = () => 'polluted' // eslint-disable-line no-extend-native
    try {
      assert.equal(hw.canonicalJson({ a: [1] }), '{"a":[1]}')
    } finally {
      delete proto.toJSON
    }
  }
})

test('lone surrogates read as U+FFFD, as N-API reads them', () => {
  for (const [v, same] of [['\ud800', '\ufffd'], ['a\udc00b', 'a\ufffdb'], [{ '\ud800': 1 }, { '\ufffd': 1 }], [['x\udfff'], ['x\ufffd']], ['ok\ud83d\ude00', 'ok😀']]) {
    assert.equal(hw.canonicalJson(v), hw.canonicalJson(same))
  }
})
