// Issue 24: each governed call reaches the host's own OpenTelemetry API as an
// `execute_tool <tool>` span (the core's span record), read back with the
// SDK's in-memory exporter; no argument or output value in any attribute; the
// harness's own audit trail unchanged; no span asked of the core before an SDK
// is registered. Each test file runs in its own process (node --test), so the
// global provider set here is this file's alone.
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'

import { hw, ROOT } from './fixture_support.mjs'

// The copies the binding itself resolves (its devDependencies).
const fromBinding = createRequire(join(ROOT, 'bindings-node', 'package.json'))
const otel = fromBinding('@opentelemetry/api')
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = fromBinding('@opentelemetry/sdk-trace-base')
const { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } = fromBinding('@opentelemetry/sdk-metrics')

const ALICE = { id: 'alice', roles: ['support'] }
const SECRET = 'sk-live-4242-do-not-trace' // an argument value
const OUTPUT = 'refund-receipt-7f3a' // an output value

function writeHarness(spec = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'hw-otel-'))
  mkdirSync(join(dir, 'tools'))
  const schema = { type: 'object', properties: { note: { type: 'string' }, amount: { type: 'integer', maximum: 100 } }, required: ['note', 'amount'] }
  const manifest = {
    apiVersion: 'harnessweaver/v1',
    kind: 'Tool',
    metadata: { name: 'refund' },
    spec: { transport: 'native', handler: 'h:refund', description: 'Refunds an order.', input_schema: schema },
  }
  writeFileSync(join(dir, 'tools', 'refund.json'), JSON.stringify(manifest))
  const harness = { apiVersion: 'harnessweaver/v1', kind: 'Harness', metadata: { name: 't' }, spec: { mode: 'test', tools: { manifests: ['tools/*.json'] }, ...spec } }
  writeFileSync(join(dir, 'harness.yaml'), JSON.stringify(harness))
  return { dir, path: join(dir, 'harness.yaml') }
}

const refund = ({ amount }) => ({ receipt: OUTPUT, amount })

test('no SDK registered: no span is asked of the core; a later SDK gets spans', async (t) => {
  const { path } = writeHarness()
  const h = hw.load(path, { tools: { refund } })
  const asked = []
  const request = h._rt.request.bind(h._rt)
  // The native host's methods live on its prototype; this instance's own property shadows it.
  Object.defineProperty(h._rt, 'request', { value: (m, a) => (asked.push(m), request(m, a)) })
  await h.call('refund', { note: 'x', amount: 1 }, { principal: ALICE })
  assert.ok(!asked.includes('span'), `asked: ${asked}`)
  assert.ok(!asked.includes('observe'), 'the switch was set at load, not per call')

  const exporter = new InMemorySpanExporter()
  otel.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }))
  t.after(() => otel.trace.disable())
  assert.deepEqual(asked, ['observe'], 'registering a provider turns the observer on, once')
  await h.call('refund', { note: 'x', amount: 2 }, { principal: ALICE })
  assert.equal(asked.filter((m) => m === 'span').length, 1, 'the SDK registered after load is used from the next call')

  await t.test('calls become execute_tool spans without argument or output values', async () => {
    exporter.reset()
    const { dir, path } = writeHarness({ audit: { sink: 'logs/audit.jsonl' } })
    const g = hw.load(path, { tools: { refund } })
    const allowed = await g.call('refund', { note: SECRET, amount: 7 }, { principal: ALICE })
    assert.equal(allowed.output.receipt, OUTPUT)
    await assert.rejects(g.call('refund', { note: SECRET, amount: 5000 }, { principal: ALICE }), (err) => err.code === 'invalid_args')

    const spans = exporter.getFinishedSpans()
    const calls = spans.filter((s) => s.name === 'execute_tool refund')
    assert.equal(calls.length, 2)
    const [ok, no] = calls
    assert.equal(ok.kind, otel.SpanKind.INTERNAL)
    const { 'gen_ai.guardrail.policy.version': version, ...attributes } = ok.attributes
    assert.match(version, /^sha256:/, 'the policy version that decided')
    assert.deepEqual(attributes, {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'refund',
      'gen_ai.tool.call.id': allowed.call_id,
      'gen_ai.tool.description': 'Refunds an order.',
      'gen_ai.guardrail.verdict.type': 'allow',
      'harnessweaver.run.id': allowed.run_id,
      'harnessweaver.principal': 'alice',
    })
    assert.notEqual(ok.status.code, otel.SpanStatusCode.ERROR)
    // The refusal: its code as error.type, the span's status an error.
    assert.equal(no.attributes['error.type'], 'invalid_args')
    assert.equal(no.attributes['gen_ai.guardrail.verdict.type'], 'deny')
    assert.equal(no.attributes['harnessweaver.code'], 'invalid_args')
    assert.equal(no.status.code, otel.SpanStatusCode.ERROR)
    // The phases are children of their call's span.
    const children = spans.filter((s) => s.parentSpanContext).map((s) => `${s.name} ${s.parentSpanContext.spanId}`)
    assert.ok(children.includes(`harnessweaver.decide ${ok.spanContext().spanId}`))
    assert.ok(children.includes(`harnessweaver.invoke ${ok.spanContext().spanId}`))
    assert.ok(children.includes(`harnessweaver.decide ${no.spanContext().spanId}`))
    assert.ok(!children.includes(`harnessweaver.invoke ${no.spanContext().spanId}`))
    // No argument or output value in any attribute of any span.
    for (const s of spans) {
      for (const v of Object.values(s.attributes)) assert.ok(!String(v).includes(SECRET) && !String(v).includes(OUTPUT), `${s.name}: ${v}`)
    }
    // The harness's own trail is still written (the shim observes beside it).
    const trail = readFileSync(join(dir, 'logs', 'audit.jsonl'), 'utf8')
    assert.ok(trail.includes(allowed.call_id))
    assert.equal(trail.split('"tool":"refund"').length - 1, 2)
  })

  await t.test("the host's audit callback still gets every event", async () => {
    exporter.reset()
    const events = []
    const { path } = writeHarness({ audit: { sink: 'callback' } })
    const g = hw.load(path, { tools: { refund }, audit: (e) => events.push(e) })
    await g.call('refund', { note: 'x', amount: 1 }, { principal: ALICE })
    assert.deepEqual(events.map((e) => e.tool), ['refund'])
    assert.deepEqual(exporter.getFinishedSpans().filter((s) => s.name.startsWith('execute_tool')).map((s) => s.name), ['execute_tool refund'])
  })

  await t.test('approval waits reach the meter; the pending span names the policy version', async () => {
    exporter.reset()
    const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
    const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 })
    otel.metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }))
    const { path } = writeHarness({ policy: { rules: [{ name: 'refund-review', effect: 'approve', tools: ['refund'] }] } })
    const g = hw._testing.load(path, { tools: { refund } }, { clockMs: 1000 })
    const ask = async (amount) => {
      const err = await g.call('refund', { note: SECRET, amount }, { principal: ALICE }).then(() => null, (e) => e)
      assert.equal(err && err.code, 'approval_required')
      return err
    }
    const first = await ask(50)
    hw._testing.advanceMs(g, 4000)
    g.deny(first, { by: { id: 'bob' }, reason: 'no' })
    const second = await ask(60)
    hw._testing.advanceMs(g, 250)
    assert.ok((await g.approve(second, { approver: { id: 'bob' } })).allowed)
    await reader.forceFlush()
    const points = metricExporter
      .getMetrics()
      .flatMap((rm) => rm.scopeMetrics)
      .flatMap((sm) => sm.metrics)
      .filter((m) => m.descriptor.name === 'harnessweaver.approval.wait')
      .flatMap((m) => m.dataPoints)
    const last = new Map(points.map((p) => [p.attributes['harnessweaver.approval.state'], p]))
    assert.deepEqual([...last.keys()].sort(), ['approved', 'denied'])
    assert.deepEqual([last.get('denied').value.count, last.get('denied').value.sum], [1, 4])
    assert.deepEqual([last.get('approved').value.count, last.get('approved').value.sum], [1, 0.25])
    const pending = exporter.getFinishedSpans().find((s) => s.name === 'execute_tool refund')
    assert.equal(pending.attributes['gen_ai.guardrail.verdict.type'], 'escalate')
    assert.deepEqual(pending.attributes['gen_ai.guardrail.policy.rule.id'], ['harness/refund-review'])
    assert.match(pending.attributes['gen_ai.guardrail.policy.version'], /^sha256:/)
    otel.metrics.disable()
  })

  // Removing the provider turns the observer off again: no span is asked.
  asked.length = 0
  otel.trace.disable()
  await h.call('refund', { note: 'x', amount: 3 }, { principal: ALICE })
  assert.deepEqual(asked, ['observe'], `asked: ${asked}`)
})
