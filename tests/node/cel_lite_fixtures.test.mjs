// Runs every case of fixtures/cel_lite/*.json through `celLite`, with the rules
// of the Rust runner (core/tests/fixtures_cel_lite.rs):
//
// - `{"value": v}`: `evaluate` gives a value whose canonical JSON equals that of `v`;
// - `{"unevaluable": true, "reason_contains": s}`: `evaluate` throws Unevaluable
//   whose reason contains `s` when given;
// - `{"compile_error": {"code", "line", "column"}}`: `compile` throws so;
// - `{"approval": {"required", "reason_contains"}}`: `approvalRequired` gives
//   `required`, and a reason containing `reason_contains` (null when not given);
// - `{"error": code}`: `evaluate` and `approvalRequired` throw InvalidValueError with that code.
//
// Variables are decoded from the fixtures' tagged JSON first (fixtures/README.md).
// A case this runner cannot run fails; expected failures are listed in
// EXPECTED_FAILURES, never skipped.
import assert from 'node:assert/strict'
import { basename } from 'node:path'
import { test } from 'node:test'

import { cases, hw, read, untag } from './fixture_support.mjs'

const { celLite } = hw

// Cases known to fail in Node, by "<file stem>/<case name>", each with the reason. Keep empty.
const EXPECTED_FAILURES = {}

const CASES = cases('cel_lite').flatMap((path) => {
  const doc = read(path)
  const stem = basename(path, '.json')
  return doc.cases.map((c) => ({ id: `${stem}/${c.name}`, stem, c, vars: untag('vars' in c ? c.vars : doc.vars || {}) }))
})

function check(c, vars) {
  const expect = c.expect
  if ('compile_error' in expect) {
    let err
    try {
      celLite.compile(c.expr)
    } catch (e) {
      err = e
    }
    assert.ok(err instanceof celLite.CompileError, `expected compile error ${JSON.stringify(expect.compile_error)}, got ${err}`)
    assert.deepEqual({ code: err.code, line: err.line, column: err.column }, expect.compile_error, err.message)
    return
  }
  const program = celLite.compile(c.expr)
  if ('error' in expect) {
    for (const run of [() => program.evaluate(vars), () => program.approvalRequired(vars)]) {
      assert.throws(run, (e) => e instanceof hw.InvalidValueError && e.code === expect.error, `expected ${expect.error}`)
    }
    return
  }
  if ('approval' in expect) {
    const verdict = program.approvalRequired(vars)
    assert.equal(verdict.required, expect.approval.required, JSON.stringify(verdict))
    if ('reason_contains' in expect.approval) {
      assert.ok(typeof verdict.reason === 'string' && verdict.reason.includes(expect.approval.reason_contains), verdict.reason)
    } else {
      assert.equal(verdict.reason, null)
    }
    return
  }
  if ('value' in expect) {
    let got
    try {
      got = program.evaluate(vars)
    } catch (e) {
      assert.fail(`expected ${JSON.stringify(expect.value)}, got ${e.name}: ${e.reason ?? e.message}`)
    }
    assert.equal(hw.canonicalJson(got), hw.canonicalJson(expect.value))
    return
  }
  if ('unevaluable' in expect) {
    let err
    let got
    try {
      got = program.evaluate(vars)
    } catch (e) {
      err = e
    }
    assert.ok(err instanceof celLite.Unevaluable, `expected unevaluable, got ${err ? err.name : JSON.stringify(got)}`)
    assert.equal(err.code, 'unevaluable')
    if ('reason_contains' in expect) assert.ok(err.reason.includes(expect.reason_contains), err.reason)
    return
  }
  assert.fail(`unknown expectation ${JSON.stringify(expect)}`)
}

for (const { id, c, vars } of CASES) {
  test(`cel_lite/${id}`, () => {
    if (Object.hasOwn(EXPECTED_FAILURES, id)) {
      assert.throws(() => check(c, vars), assert.AssertionError, `${id} is listed as an expected failure but passes`)
    } else {
      check(c, vars)
    }
  })
}

test('cel_lite fixtures: every file has cases, expected failures name real cases', () => {
  const files = cases('cel_lite')
  assert.ok(files.length > 0, 'no fixtures in fixtures/cel_lite')
  assert.deepEqual(new Set(CASES.map((x) => x.stem)), new Set(files.map((p) => basename(p, '.json'))))
  const ids = new Set(CASES.map((x) => x.id))
  for (const id of Object.keys(EXPECTED_FAILURES)) assert.ok(ids.has(id), id)
  process.stderr.write(
    `cel-lite fixtures (Node): ${CASES.length} cases in ${files.length} files, ${Object.keys(EXPECTED_FAILURES).length} expected failures\n`,
  )
})
