// Runs every case of fixtures/sanitize/cases.jsonl through the Node binding's
// `sanitize(value, sanitizers)` and compares the output exactly: with the gold
// output, or, for the cases in fixtures/sanitize/divergences.jsonl, with the
// output recorded there (Rust and Python check the same two files).
//
// Until the binding exposes `sanitize` (docs/sanitizers.md, "What the bindings
// need"), the test is skipped with that reason, visibly.
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

const skip = typeof hw.sanitize === 'function' ? false : 'the Node binding has no sanitize() yet (docs/sanitizers.md)'

test('sanitize corpus', { skip }, () => {
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
