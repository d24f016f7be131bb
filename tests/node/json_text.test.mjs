// Values cross to the addon as JSON text: `JSON.stringify`'s when that text
// says exactly what the value is, else the text index.js's walk writes. Both routes must give the same bytes, or the same error code, on
// every value: the fixtures, numbers JavaScript prints in its own way, lone
// surrogates, and every kind of value `JSON.stringify` drops or changes.
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { test } from 'node:test'

import { ROOT, cases, hw, read, untag } from './fixture_support.mjs'

const native = createRequire(import.meta.url)(join(ROOT, 'bindings-node', 'native.js'))

function outcome(f) {
  try {
    return { value: f() }
  } catch (err) {
    return { error: err.code ?? String(err) }
  }
}

const { exact, walk } = hw._testing

/** The same result by both routes; returns whether the text route was taken. */
function same(value, label) {
  assert.deepEqual(outcome(() => hw.canonicalJson(value)), outcome(() => native.canonicalJson(walk(value))), `canonicalJson of ${label}`)
  const digest = outcome(() => hw.definitionDigest('t', 'd', value))
  assert.deepEqual(digest, outcome(() => native.definitionDigest('t', 'd', walk(value))), `definitionDigest of ${label}`)
  return exact(value)
}

const NUMBERS = [
  0, -0, 1, -1, 2 ** 53, -(2 ** 53), 2 ** 53 + 2, -(2 ** 53 + 2), 2 ** 60, 2 ** 64, 2 ** 70, -(2 ** 63),
  1e21, 1e-7, 1e16, 5e-324, 0.1 + 0.2, 1.5e300, Number.MAX_VALUE, Number.MIN_VALUE, 123456789012345680,
  562949953421312.25, 562949953421312.2, 1.0000000000000002, -1234.125, 9007199254740994, 4.35, 0.000001,
]

test('plain values take the text route and agree with the walk', () => {
  const values = [
    ...NUMBERS,
    NUMBERS,
    'é 東京 😀',
    '\u2028\u2029',
    '\u0000\u001f\u007f"\\/\b\f\n\r\t',
    { '\uffff': 1, '\u{10000}': 2, b: 3, a: 4, 10: 5, 9: 6 },
    { nested: { deeper: [1, { x: null, y: true, z: false }], empty: {}, list: [] } },
    Object.assign(Object.create(null), { b: 1, a: 2 }),
    Object.defineProperty({}, '__proto__', { value: { x: 1 }, enumerable: true }),
    Object.defineProperty({ a: 1 }, 'hidden', { value: 2, enumerable: false }),
    { get x() { return 1 } },
  ]
  for (const v of values) assert.ok(same(v, JSON.stringify(v)), `text route not taken for ${JSON.stringify(v)}`)
})

test('every canonical and digest fixture agrees by both routes', () => {
  for (const path of cases('canonical')) same(untag(read(path).value), path)
  for (const path of cases('digest')) {
    const c = read(path)
    const schema = untag(c.input_schema)
    const walked = outcome(() => native.definitionDigest(c.name, c.tool_description, walk(schema)))
    assert.deepEqual(outcome(() => hw.definitionDigest(c.name, c.tool_description, schema)), walked, path)
  }
})

test('what JSON.stringify would lose takes the walk', () => {
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
  const lossy = [
    undefined, NaN, Infinity, -Infinity, 1n, 2n ** 70n, Symbol('s'), () => 1,
    { a: undefined }, [undefined], [, 1], { f() {} }, { n: NaN }, [Infinity], { big: 2n ** 60n },
    new Date(0), new Map([['a', 1]]), new Set([1]), new Point(), new Number(1), new String('s'), new Uint8Array(2),
    { toJSON: () => 1 }, Object.defineProperty({ a: 1 }, 'toJSON', { value: () => 2, enumerable: false }),
    cyclic, deep, tooDeep,
  ]
  for (const v of lossy) {
    const label = String(typeof v === 'symbol' ? 'symbol' : v)
    assert.equal(same(v, label), false, `text route taken for ${label}`)
  }
  // Inherited toJSON (a polluted prototype) changes what JSON.stringify prints.
  for (const proto of [Object.prototype, Array.prototype]) {
    proto.toJSON = () => 'polluted' // eslint-disable-line no-extend-native
    try {
      assert.equal(same({ a: [1] }, 'polluted'), false)
    } finally {
      delete proto.toJSON
    }
  }
})

test('lone surrogates: the text cannot carry them as N-API reads them, so the walk answers', () => {
  for (const v of ['\ud800', 'a\udc00b', '\udbff\udbff', { '\ud800': 1 }, ['x\udfff'], 'ok\ud83d\ude00']) {
    same(v, JSON.stringify(v))
  }
  // N-API reads a lone surrogate as U+FFFD: the same canonical text as U+FFFD itself.
  assert.equal(hw.canonicalJson('\ud800'), hw.canonicalJson('\ufffd'))
})
