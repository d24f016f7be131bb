// Runs every case of fixtures/canonical/, fixtures/digest/ and fixtures/load/
// through the Node binding. A case this runner cannot run fails; expected
// failures are listed in EXPECTED_FAILURES, never skipped.
import assert from 'node:assert/strict'
import { basename, join } from 'node:path'
import { test } from 'node:test'

import { cases, hw, loadCaseDirs, read, rel, untag } from './fixture_support.mjs'

// Cases known to fail in Node, by "<area>/<case>", each with the reason. Keep empty.
const EXPECTED_FAILURES = new Map()

function runCase(id, check) {
  if (EXPECTED_FAILURES.has(id)) {
    assert.throws(check, assert.AssertionError, `${id} is listed as an expected failure but passes`)
  } else {
    check()
  }
}

function expecting(expect, key, compute) {
  if ('error' in expect) {
    let got
    assert.throws(
      () => {
        got = compute()
      },
      (err) => {
        assert.ok(err instanceof hw.HarnessweaverError, `not a HarnessweaverError: ${err}`)
        assert.equal(err.code, expect.error, err.message)
        return true
      },
      `expected error ${expect.error}, got ${JSON.stringify(got)}`,
    )
  } else {
    assert.deepEqual(Object.keys(expect), [key], `unknown expectation ${JSON.stringify(expect)}`)
    assert.equal(compute(), expect[key])
  }
}

test('every fixture area has cases', () => {
  assert.ok(cases('canonical').length > 0, 'no fixtures in fixtures/canonical')
  assert.ok(cases('digest').length > 0, 'no fixtures in fixtures/digest')
  assert.ok(loadCaseDirs().length > 0, 'no fixtures in fixtures/load')
})

for (const path of cases('canonical')) {
  const id = `canonical/${basename(path, '.json')}`
  test(id, () => {
    const c = read(path)
    runCase(id, () => expecting(c.expect, 'canonical', () => hw.canonicalJson(untag(c.value))))
  })
}

for (const path of cases('digest')) {
  const id = `digest/${basename(path, '.json')}`
  test(id, () => {
    const c = read(path)
    runCase(id, () =>
      expecting(c.expect, 'digest', () => hw.definitionDigest(c.name, c.tool_description, untag(c.input_schema), c.output_schema === undefined ? null : untag(c.output_schema))),
    )
  })
}

for (const caseDir of loadCaseDirs()) {
  const id = `load/${basename(caseDir)}`
  test(id, () => {
    const expected = read(join(caseDir, 'expected.json'))
    const harnessPath = join(caseDir, expected.harness ?? 'harness.yaml')
    runCase(id, () => {
      assert.ok('tools' in expected || 'problems' in expected, 'expected.json has neither `tools` nor `problems`')
      if ('problems' in expected) {
        let err
        try {
          hw.inspect(harnessPath)
        } catch (e) {
          err = e
        }
        assert.ok(err instanceof hw.LoadError, `expected a LoadError, got ${err}`)
        const got = err.problems.map((p, i) => {
          const want = expected.problems[i]
          if (!want) return p
          const full = { ...p, file: rel(p.file, caseDir), line: p.line ?? null, column: p.column ?? null, path: p.path ?? '' }
          return Object.fromEntries(Object.keys(want).map((k) => [k, full[k] ?? null]))
        })
        assert.deepEqual(got, expected.problems, err.message)
      } else {
        const keys = Object.keys(expected).filter((k) => k !== 'description' && k !== 'harness')
        assert.deepEqual(keys, ['tools'], `unknown expectation ${JSON.stringify(expected)}`)
        const harness = hw.inspect(harnessPath)
        assert.deepEqual(
          harness.tools.map((t) => ({ ...t })),
          expected.tools,
        )
      }
    })
  })
}

test('expected failures name real cases', () => {
  const all = new Set([
    ...cases('canonical').map((p) => `canonical/${basename(p, '.json')}`),
    ...cases('digest').map((p) => `digest/${basename(p, '.json')}`),
    ...loadCaseDirs().map((p) => `load/${basename(p)}`),
  ])
  for (const id of EXPECTED_FAILURES.keys()) assert.ok(all.has(id), id)
})
