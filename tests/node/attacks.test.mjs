// Attacks from Node (issue 10): `__proto__` and `constructor` keys in args and
// schemas are plain data, never prototype pollution, and canonical JSON and
// digests see them as keys; NaN and unsafe integers are refused.
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'

import { FIXTURES, hw } from './fixture_support.mjs'

test('__proto__ keys are data: canonical JSON keeps them, nothing is polluted', () => {
  const value = JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"x": 1}}, "a": 1}')
  const text = hw.canonicalJson(value)
  assert.equal(text, '{"__proto__":{"polluted":true},"a":1,"constructor":{"prototype":{"x":1}}}')
  assert.equal({}.polluted, undefined)
  assert.equal(Object.prototype.polluted, undefined)
  // The digest of a schema with such keys is the digest of those keys (same text Python hashes).
  const d = hw.definitionDigest('t', 'd', value)
  assert.match(d, /^sha256:[0-9a-f]{64}$/)
})

test('NaN, infinities and unsafe integers are refused, not hashed', () => {
  for (const bad of [NaN, Infinity, -Infinity, 2n ** 53n + 1n, 2n ** 64n, -(2n ** 70n)]) {
    assert.throws(() => hw.canonicalJson({ x: bad }), (e) => typeof e.code === 'string', String(bad))
  }
  // A Number beyond 2^53 is a double, not an integer: it is printed as Python prints that float.
  assert.equal(hw.canonicalJson(2 ** 53 + 2), '9007199254740994.0')
})

test('a handler receives __proto__ as an own key, and the output does not pollute', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hw-attack-'))
  mkdirSync(join(dir, 'tools'))
  writeFileSync(join(dir, 'tools', 'echo.json'), JSON.stringify({
    apiVersion: 'harnessweaver/v1', kind: 'Tool', metadata: { name: 'echo' },
    spec: { transport: 'native', handler: 'h:echo', description: 'd', input_schema: { type: 'object', additionalProperties: false, properties: { a: { type: 'integer' } } } },
  }))
  writeFileSync(join(dir, 'harness.yaml'), JSON.stringify({ apiVersion: 'harnessweaver/v1', kind: 'Harness', spec: { mode: 'test', tools: { manifests: ['tools/*.json'] } } }))
  let seen
  const h = hw.load(join(dir, 'harness.yaml'), { tools: { echo: (args) => { seen = args; return JSON.parse('{"__proto__": {"polluted": 1}}') } } })
  // additionalProperties: false sees `__proto__` as a property: refused at validate.
  const args = JSON.parse('{"__proto__": {"a": 1}}')
  await assert.rejects(h.call('echo', args, { principal: { id: 'p' } }), (e) => e.code === 'invalid_args')
  const r = await h.call('echo', { a: 1 }, { principal: { id: 'p' } })
  assert.equal(r.decision, 'allowed')
  assert.deepEqual(seen, { a: 1 })
  assert.equal({}.polluted, undefined)
})

test('issue17 item13: confusable tool names are a load error naming both files', () => {
  const caseDir = join(FIXTURES, 'load', 'confusable_tool')
  let err
  try {
    hw.inspect(join(caseDir, 'harness.yaml'))
  } catch (e) {
    err = e
  }
  assert.ok(err instanceof hw.LoadError, `expected a LoadError, got ${err}`)
  assert.deepEqual(err.problems.map((p) => [p.code, p.file.endsWith('tools/b.yaml') || p.file.endsWith('tools/d.yaml')]), [
    ['confusable_tool', true], ['confusable_tool', true],
  ])
  const [first, second] = err.problems.map((p) => p.message)
  assert.ok(first.includes('`Refund_payment`') && first.includes('`refund_payment`') && first.includes('tools/a.yaml'), first)
  assert.ok(second.includes('`wire_10`') && second.includes('`wire_l0`') && second.includes('tools/c.yaml'), second)
})

test('issue17_item12: an invalid value is named by its JSON pointer and rule only, in args and handler outputs', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hw-attack-'))
  mkdirSync(join(dir, 'tools'))
  const manifest = (name) => JSON.stringify({
    apiVersion: 'harnessweaver/v1', kind: 'Tool', metadata: { name },
    spec: { transport: 'native', handler: `h:${name}`, description: 'd', input_schema: { type: 'object' } },
  })
  writeFileSync(join(dir, 'tools', 't.json'), manifest('t'))
  writeFileSync(join(dir, 'tools', 'big.json'), manifest('big'))
  writeFileSync(join(dir, 'harness.yaml'), JSON.stringify({ apiVersion: 'harnessweaver/v1', kind: 'Harness', spec: { mode: 'test', tools: { manifests: ['tools/*.json'] } } }))
  const huge = 2n ** 64n + 987654321n
  const h = hw.load(join(dir, 'harness.yaml'), { tools: { t: (args) => args, big: () => ({ n: [0, { 'a/b': huge }] }) } })
  await assert.rejects(h.call('t', { order: { items: [1, huge] } }, { principal: { id: 'p' } }), (e) => {
    assert.equal(e.code, 'integer_out_of_range')
    assert.ok(e.message.startsWith('at `/order/items/1`: '), e.message)
    assert.ok(!e.message.includes('987654321'), e.message)
    return true
  })
  const r = await h.call('big', {}, { principal: { id: 'p' }, raiseOnRefusal: false })
  assert.equal(r.code, 'handler_error')
  assert.equal(r.message, '`big` returned a value with no JSON form (at `/n/1/a~1b`: `integer_out_of_range`)')
})
