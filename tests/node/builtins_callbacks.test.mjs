// Issue 20: an inline approval callback (`onApproval`) accepts a built-in tool's
// "always allow" candidate by answering `{ accept: id }`: the call runs, the rule
// is written to the permission file and the question is not asked again. The
// core reads the answer, as for Python (tests/python/test_builtins_callbacks.py).
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'

import { hw } from './fixture_support.mjs'

const ALICE = { id: 'alice', roles: ['developer'] }

function harness() {
  const dir = mkdtempSync(join(tmpdir(), 'hw-node-callbacks-'))
  mkdirSync(join(dir, 'ws', 'src'), { recursive: true })
  const spec = { mode: 'test', tools: { manifests: [] }, builtins: { workspace: 'ws', tools: ['write_file'] } }
  writeFileSync(join(dir, 'harness.yaml'), JSON.stringify({ apiVersion: 'harnessweaver/v1', kind: 'Harness', spec }))
  return dir
}

test('the callback accepts a candidate and the next write is not asked', async () => {
  const dir = harness()
  const asked = []
  const h = hw.load(join(dir, 'harness.yaml'), {
    onApproval: (request) => {
      asked.push(request)
      // "always allow writes under src/" when offered, else the file itself.
      const chosen = request.candidates.find((c) => JSON.stringify(c.paths) === '["src/**"]') ?? request.candidates[0]
      return { accept: chosen.id }
    },
  })
  const first = await h.call('write_file', { path: 'src/a.py', content: 'a' }, { principal: ALICE, raiseOnRefusal: false })
  assert.equal(first.decision, 'allowed', JSON.stringify(first))
  assert.equal(readFileSync(join(dir, 'ws', 'src', 'a.py'), 'utf8'), 'a')
  const permissions = readFileSync(join(dir, 'permissions.yaml'), 'utf8')
  assert.ok(permissions.includes('"src/**"') && permissions.includes('accepted by callback'), permissions)
  const second = await h.call('write_file', { path: 'src/b.py', content: 'b' }, { principal: ALICE, raiseOnRefusal: false })
  assert.equal(second.decision, 'allowed')
  assert.equal(asked.length, 1)
  const other = await h.call('write_file', { path: 'c.py', content: 'c' }, { principal: ALICE, raiseOnRefusal: false })
  assert.equal(asked.length, 2)
  assert.equal(other.decision, 'allowed')
})

test('a candidate the approval does not offer accepts nothing', async () => {
  const dir = harness()
  const h = hw.load(join(dir, 'harness.yaml'), { onApproval: () => ({ accept: 'c99' }) })
  const r = await h.call('write_file', { path: 'src/a.py', content: 'a' }, { principal: ALICE, raiseOnRefusal: false })
  assert.equal(r.decision, 'pending')
  assert.equal(r.code, 'approval_required')
  assert.ok(!existsSync(join(dir, 'ws', 'src', 'a.py')))
  assert.ok(!existsSync(join(dir, 'permissions.yaml')))
  const dir2 = harness()
  const h2 = hw.load(join(dir2, 'harness.yaml'), { onApproval: () => ({ accept: 'c1', also: true }) })
  const r2 = await h2.call('write_file', { path: 'src/a.py', content: 'a' }, { principal: ALICE, raiseOnRefusal: false })
  assert.equal(r2.decision, 'pending')
})
