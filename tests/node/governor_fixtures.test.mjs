// Runs every scenario of fixtures/governor/ and fixtures/builtins/ through the Node binding, as
// runtime/tests/fixtures_governor.rs does through the core: the same handler
// behaviours (async handlers with timers for `sleeps_ms`), a manual clock,
// deterministic ids, and subset compares of each expectation against the
// result's JSON and of the audit events. A scenario this runner cannot run fails.
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { test } from 'node:test'

import { FIXTURES, hw, read, ROOT } from './fixture_support.mjs'

const inArea = (area) => readdirSync(join(FIXTURES, area)).filter((f) => f.endsWith('.json')).sort().map((f) => join(FIXTURES, area, f))
// fixtures/builtins/ (issue 20) and fixtures/effects/ (issue 21: the effect journal, compensation, secret handles)
// have the same shape.
const SCENARIOS = [...inArea('governor'), ...inArea('builtins'), ...inArea('effects')]

// The `fs` step: changes made between calls (paths relative to the scenario directory).
// The host methods a fixture's `request` steps name, as Node spells them (the rest through `_request`).
const HOST_METHODS = {
  effects: (h, a) => h.effects(a.state),
  resolve_effect: (h, a) => h.resolveEffect(a.call_id, a.applied, { by: a.by }),
  compensate: (h, a) => h.compensate(a.call_id, { principal: a.principal, tenant: a.tenant, task: a.task, run: a.run }),
}

function fsOps(dir, ops) {
  for (const op of ops) {
    if ('write' in op) writeFileSync(join(dir, op.write), op.text)
    else if ('rename' in op) renameSync(join(dir, op.rename), join(dir, op.to))
    else if ('symlink' in op) symlinkSync(op.to, join(dir, op.symlink))
    else if ('remove' in op) unlinkSync(join(dir, op.remove))
    else assert.fail(`unknown fs op ${JSON.stringify(op)}`)
  }
}

// The `file` step: `text` exactly, `exists`, `contains` and `lacks`.
function checkFile(path, expect, what) {
  let text = null
  try {
    text = readFileSync(path, 'utf8')
  } catch {}
  if ('exists' in expect) assert.equal(text !== null, expect.exists, `${what}: ${path} exists`)
  if ('text' in expect) assert.equal(text, expect.text, `${what}: ${path}`)
  for (const part of expect.contains ?? []) assert.ok((text ?? '').includes(part), `${what}: ${path} lacks ${part}: ${text}`)
  for (const part of expect.lacks ?? []) assert.ok(!(text ?? '').includes(part), `${what}: ${path} holds ${part}`)
}

// Objects by the keys of `want` (recursively), arrays item by item with the same length, else equal.
function matches(want, got) {
  if (Array.isArray(want)) return Array.isArray(got) && want.length === got.length && want.every((w, i) => matches(w, got[i]))
  if (want && typeof want === 'object') return !!got && typeof got === 'object' && Object.entries(want).every(([k, v]) => matches(v, got[k] ?? null))
  return want === got
}

// Scenarios that fail today, by name, each with the reason. Keep empty.
const EXPECTED_FAILURES = new Map([
])

function namedError(kind) {
  const err = new Error('fixture failure')
  err.name = kind
  return err
}

function handlerFor(b) {
  const body = (args, ctx) => {
    // A sync handler that blocks its thread (the event loop) past its timeout.
    if ('sleep_ms' in b) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, b.sleep_ms)
    if ('raises' in b) throw namedError(b.raises)
    if ('unserializable' in b) return () => 'a function has no JSON form'
    if ('echo' in b) return { args }
    if ('returns_key' in b) return { idempotency_key: ctx.idempotencyKey }
    // What the handler received (`secrets_delivery: native`); step 9 masks the values.
    if ('uses_secrets' in b) {
      const s = ctx.secrets ?? null
      return { lengths: Object.fromEntries(Object.entries(s ?? {}).map(([k, v]) => [k, v.length])), echo: s }
    }
    if ('returns_repeat' in b) return b.returns_repeat.text.repeat(b.returns_repeat.times)
    return b.returns ?? null
  }
  if ('sleeps_ms' in b) {
    return async (args, ctx) => {
      await new Promise((resolve) => setTimeout(resolve, b.sleeps_ms))
      return body(args, ctx)
    }
  }
  return body
}

// tests/servers/http_fixture_server.py on a free port (the server every runner starts).
async function startHttpServer() {
  const python = existsSync(join(ROOT, '.venv', 'bin', 'python')) ? join(ROOT, '.venv', 'bin', 'python') : 'python3'
  const proc = spawn(python, [join(ROOT, 'tests', 'servers', 'http_fixture_server.py')], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines = createInterface({ input: proc.stdout })
  const port = await new Promise((resolve, reject) => {
    lines.once('line', (line) => resolve(Number(line.trim())))
    proc.once('error', reject)
  })
  lines.close()
  return { url: `http://127.0.0.1:${port}`, close: () => proc.kill() }
}

// The `harnessweaver-sandbox` worker, as runtime/tests/transport_support finds or builds it.
function sandboxWorker() {
  if (process.env.HARNESSWEAVER_SANDBOX_WORKER) return process.env.HARNESSWEAVER_SANDBOX_WORKER
  const target = join(ROOT, 'target', 'sandbox-worker')
  const triple = process.env.CARGO_BUILD_TARGET
  const candidates = [...(triple ? [join(target, triple, 'debug', 'harnessweaver-sandbox')] : []), join(target, 'debug', 'harnessweaver-sandbox')]
  if (!candidates.some((c) => existsSync(c))) {
    const built = spawnSync('cargo', ['build', '--quiet', '--manifest-path', join(ROOT, 'sandbox', 'Cargo.toml'), '--target-dir', target], { stdio: 'inherit' })
    assert.equal(built.status, 0, 'building sandbox/ failed')
  }
  return candidates.find((c) => existsSync(c))
}

function checkSubset(want, got, what) {
  for (const [k, v] of Object.entries(want)) {
    assert.deepEqual(got?.[k] ?? null, v, `${what}: \`${k}\` differs; got ${JSON.stringify(got)}`)
  }
}

async function runScenario(path) {
  const name = basename(path, '.json')
  const dir = mkdtempSync(join(tmpdir(), `hw-gov-node-${name}-`))
  // `{{dir}}`: the scenario's directory, absolute (a `host_reads` root, a path in an expectation).
  const c = JSON.parse(JSON.stringify(read(path)).replaceAll('{{dir}}', dir))
  const http = c.servers && c.servers.http ? await startHttpServer() : null
  // `env`: variables the harness reads (`headers_env`), set before the load.
  Object.assign(process.env, c.env || {})
  try {
    for (const [rel, text] of Object.entries(c.files)) {
      mkdirSync(dirname(join(dir, rel)), { recursive: true })
      writeFileSync(join(dir, rel), http ? text.replaceAll('{{http}}', http.url) : text)
    }
    // `symlinks`: link -> target (as written, relative to the link's directory).
    for (const [rel, to] of Object.entries(c.symlinks || {})) symlinkSync(to, join(dir, rel))
    const sandbox = c.sandbox ? sandboxWorker() : undefined
    const events = []
    const tools = Object.fromEntries(Object.entries(c.handlers).map(([k, b]) => [k, handlerFor(b)]))
    const load = () => hw._testing.load(join(dir, 'harness.yaml'), { tools, audit: (e) => events.push(e) }, { clockMs: c.start_ms, sandboxWorker: sandbox })
    if ('load_problems' in c) {
      let err
      try {
        load()
      } catch (e) {
        err = e
      }
      assert.ok(err instanceof hw.LoadError, `${name}: expected the load to fail, got ${err}`)
      assert.equal(err.problems.length, c.load_problems.length, `${name}: problems ${JSON.stringify(err.problems)}`)
      c.load_problems.forEach((w, i) => checkSubset(w, err.problems[i], `${name} load problem`))
      return
    }
    const h = load()
    const principals = c.principals
    const runs = new Map()
    let lastApproval = null
    let lastResult = null
    const approvalRef = (r) => {
      if (r !== 'last' && r !== 'last_result') return r
      assert.ok(lastApproval, 'no approval yet')
      return r === 'last' ? lastApproval : lastResult // the result itself: its approval's id is read
    }
    for (const [i, step] of c.steps.entries()) {
      const what = `${name} step ${i}`
      if ('advance_ms' in step) {
        hw._testing.advanceMs(h, step.advance_ms)
        continue
      }
      if ('fs' in step) {
        fsOps(dir, step.fs)
        continue
      }
      if ('file' in step) {
        checkFile(join(dir, step.file), step.expect, what)
        continue
      }
      if ('run' in step && !('call' in step)) {
        // An `api` run for the principal; `expect.error` when it is not admitted.
        let started
        try {
          started = h.run({ principal: principals[step.principal] })
        } catch (e) {
          if (!(e instanceof hw.HarnessweaverError)) throw e
          assert.equal(e.code, step.expect?.error, `${what}: ${e.message}`)
          continue
        }
        assert.ok(!('expect' in step), `${what}: the run started; expected ${JSON.stringify(step.expect)}`)
        runs.set(step.run, started.id)
        continue
      }
      const expect = step.expect
      let result = null
      let error = null
      let other = null
      const codeOf = (fn) => {
        try {
          return fn()
        } catch (e) {
          if (!(e instanceof hw.HarnessweaverError)) throw e
          error = e.code
          return null
        }
      }
      if ('call' in step && 'after_begin' in step) {
        // Filesystem changes and clock moves between steps 1–7 and the invocation.
        const o = {
          principal: principals[step.principal],
          tenant: step.tenant,
          task: step.task,
          run: 'run' in step ? runs.get(step.run) : undefined,
          raiseOnRefusal: false,
        }
        const begun = hw._testing.begin(h, step.call, step.args, o)
        if (begun.held === undefined) {
          result = begun
        } else {
          for (const op of step.after_begin) {
            if ('advance_ms' in op) hw._testing.advanceMs(h, op.advance_ms)
            else fsOps(dir, [op])
          }
          result = await hw._testing.resume(h, begun.held, o)
        }
      } else if ('call' in step) {
        result = await h.call(step.call, step.args, {
          principal: principals[step.principal],
          tenant: step.tenant,
          task: step.task,
          run: 'run' in step ? runs.get(step.run) : undefined,
          approval: 'approval' in step ? approvalRef(step.approval) : undefined,
          raiseOnRefusal: false,
        })
      } else if ('explain' in step) {
        other = h.explain(step.explain, step.args, {
          principal: principals[step.principal],
          tenant: step.tenant,
          run: 'run' in step ? runs.get(step.run) : undefined,
        })
      } else if ('tool_specs' in step) {
        other = { specs: h.toolSpecs(step.tool_specs, { principal: step.principal ? principals[step.principal] : null, tenant: step.tenant }) }
      } else if ('request' in step) {
        const args = Object.fromEntries(Object.entries(step.args).map(([k, v]) => [k, (k === 'principal' || k === 'by') && principals[v] ? principals[v] : v]))
        let value
        try {
          value = (HOST_METHODS[step.request] ?? ((h, a) => h._request(step.request, a)))(h, args)
        } catch (e) {
          if (!(e instanceof hw.HarnessweaverError)) throw e
          assert.equal(e.code, expect.error, `${what}: expected ${JSON.stringify(expect)}, got error ${e.code}`)
          continue
        }
        assert.ok(!('error' in expect) && matches(expect.value, value), `${what}: expected ${JSON.stringify(expect)}, got ${JSON.stringify(value)}`)
        continue
      } else if ('approve' in step) {
        try {
          result = await h.approve(approvalRef(step.approve), { approver: principals[step.approver], args: step.args, raiseOnRefusal: false })
        } catch (e) {
          if (!(e instanceof hw.HarnessweaverError)) throw e
          error = e.code
        }
      } else if ('approve_only' in step) {
        const a = codeOf(() => h.grant(approvalRef(step.approve_only), { approver: principals[step.approver] }))
        if (a) other = { state: a.state }
      } else if ('accept' in step) {
        other = codeOf(() => h.acceptCandidate(approvalRef(step.accept), step.candidate, { approver: principals[step.approver] }))
      } else if ('deny' in step) {
        const by = principals[step.by] ?? { id: step.by }
        const a = codeOf(() => h.deny(approvalRef(step.deny), { by, reason: step.reason }))
        if (a) other = { state: a.state }
      } else {
        assert.fail(`${what}: unknown step ${JSON.stringify(step)}`)
      }
      if (result) {
        assert.ok(!('error' in expect), `${what}: expected error ${JSON.stringify(expect)}, got ${JSON.stringify(result)}`)
        const got = JSON.parse(JSON.stringify(result))
        for (const [k, v] of Object.entries(got)) assert.deepEqual(result[k], v, `${what}: \`${k}\` and the core's JSON disagree`)
        if (result.approval) [lastApproval, lastResult] = [result.approval.id, result]
        const { approval: wantApproval, ...want } = expect
        checkSubset(want, got, what)
        if (wantApproval !== undefined) checkSubset(wantApproval, got.approval, what)
      } else if (other) {
        checkSubset(expect, other, what)
      } else {
        assert.equal(error, expect.error ?? null, `${what}: expected ${JSON.stringify(expect)}, got error ${error}`)
      }
    }
    if ('audit' in c) {
      assert.equal(events.length, c.audit.length, `${name}: audit event count`)
      c.audit.forEach((w, i) => checkSubset(w, events[i], `${name} audit`))
    }
  } finally {
    if (http) http.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

test('there are governor scenarios', () => {
  assert.ok(SCENARIOS.length > 0)
})

for (const path of SCENARIOS) {
  const name = basename(path, '.json')
  test(`${basename(dirname(path))}/${name}`, async () => {
    if (EXPECTED_FAILURES.has(name)) {
      await assert.rejects(runScenario(path), assert.AssertionError, `${name} is listed as an expected failure but passes`)
    } else {
      await runScenario(path)
    }
  })
}

test('expected failures name real scenarios', () => {
  const names = new Set(SCENARIOS.map((p) => basename(p, '.json')))
  for (const name of EXPECTED_FAILURES.keys()) assert.ok(names.has(name), name)
})
