// Runs every case of fixtures/sanitize/cases.jsonl through the Node binding's
// `sanitize(value, sanitizers)` and compares the output exactly: with the gold
// output, or, for the cases in fixtures/sanitize/divergences.jsonl, with the
// output recorded there (Rust and Python check the same two files).
//
// Every case must run; none is skipped.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'

import { FIXTURES, hw } from './fixture_support.mjs'

// Cases known to fail in Node only, by id, each with the reason. Keep empty.
const EXPECTED_FAILURES = new Map()

function readJsonl(name) {
  return readFileSync(join(FIXTURES, 'sanitize', name), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l))
}

test('sanitize corpus', () => {
  const cases = readJsonl('cases.jsonl')
  const recorded = new Map(readJsonl('divergences.jsonl').map((d) => [d.id, d.output]))
  assert.ok(cases.length >= 3000)
  const failures = []
  for (const c of cases) {
    const { value } = hw.sanitize(c.input, c.sanitizers)
    const want = recorded.has(c.id) ? recorded.get(c.id) : c.expected
    let ok = true
    try {
      assert.deepStrictEqual(value, want)
    } catch {
      ok = false
    }
    if (EXPECTED_FAILURES.has(c.id)) ok = !ok
    if (!ok) failures.push(`${c.id}: expected ${JSON.stringify(want)}, got ${JSON.stringify(value)}`)
  }
  assert.equal(failures.length, 0, `${failures.length} failures:\n${failures.slice(0, 50).join('\n')}`)
})

test('sanitize API', () => {
  const { value, counts } = hw.sanitize({ 'ann@example.com': 'call +1 415 555 0100', n: 3 }, ['pii_redact'])
  assert.deepStrictEqual(value, { '[EMAIL]': 'call [PHONE]', n: 3 })
  assert.deepStrictEqual(counts, { EMAIL: 1, PHONE: 1 })
  assert.throws(() => hw.sanitize('x', ['scrub_everything']), (e) => e.code === 'unknown_sanitizer')
  assert.throws(() => hw.sanitize(NaN, ['pii_redact']), (e) => e.code === 'non_finite_number')
})
