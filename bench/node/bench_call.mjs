// Benchmark (not a test): the governor's added cost per call from Node.
//
// A full `await h.call` of a trivial native handler (steps 1-9, the audit
// event, the promise the call returns) beside the same handler called
// directly (sync, and awaited). Also shown: the addon's `call` alone (the
// steps, the handler and the finish in one native call, no promise), to
// separate the governor from the promise machinery.
//
//   make bench-node-call        (builds the addon first)
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { REPEATS, Results, hw, medianNs, medianNsAsync } from './benchlib.mjs'

const manifest = {
  apiVersion: 'harnessweaver/v1',
  kind: 'Tool',
  metadata: { name: 'lookup_order' },
  spec: {
    transport: 'native',
    handler: 'bench:lookup_order',
    description: 'Look up an order by its id.',
    input_schema: { type: 'object', properties: { order_id: { type: 'string', pattern: '^A-[0-9]{4}$' } }, required: ['order_id'], additionalProperties: false },
    scopes: ['orders:read'],
    output: { label: 'trusted' },
  },
}

const lookupOrder = ({ order_id }) => ({ order_id, status: 'shipped' })

const perCallUs = async (fn) => (await medianNsAsync(fn)) / 1000
const perCallUsSync = (fn) => medianNs(fn) / 1000

const dir = mkdtempSync(join(tmpdir(), 'hw-bench-node-'))
try {
  mkdirSync(join(dir, 'tools'))
  writeFileSync(join(dir, 'tools', 'lookup_order.json'), JSON.stringify(manifest))
  writeFileSync(join(dir, 'harness.yaml'), JSON.stringify({ apiVersion: 'harnessweaver/v1', kind: 'Harness', metadata: { name: 'bench' }, spec: { mode: 'test', tools: { manifests: ['tools/*.json'] } } }))
  const h = hw.load(join(dir, 'harness.yaml'), { tools: { lookup_order: lookupOrder } })
  const principal = { id: 'alice', scopes: ['orders:read'] }
  const args = { order_id: 'A-1001' }
  const check = await h.call('lookup_order', args, { principal })
  if (JSON.stringify(check.output) !== JSON.stringify(lookupOrder(args))) throw new Error('unexpected output')

  const direct = perCallUsSync(() => lookupOrder(args))
  const awaited = await perCallUs(async () => lookupOrder(args))
  const governed = await perCallUs(() => h.call('lookup_order', args, { principal }))
  const rt = h._rt
  // The addon's call alone: steps 1-7, the sync handler (its args and output converted) and step 9,
  // in one crossing, no promise (a refusal would be thrown).
  const core = perCallUsSync(() => rt.call('lookup_order', args, principal, null, null, null, null, true))

  const f = (x) => x.toFixed(2).padStart(8)
  console.log(`node: median of ${REPEATS} samples`)
  console.log(`  handler called directly            ${f(direct)} us/call`)
  console.log(`  handler awaited directly           ${f(awaited)} us/call`)
  console.log(`  await h.call                       ${f(governed)} us/call   added ${f(governed - awaited)} us`)
  console.log(`  addon call only (no promise)       ${f(core)} us/call   added ${f(core - direct)} us`)
  console.log('  goal: under 6 us added per call')
  const res = new Results('decision-node')
  const us = (name, v) => ({ name, value: v * 1e3, unit: 'ns' })
  res.row('decision path', 'governed call, trivial sync handler, Node', us('await h.call', governed), us('handler awaited directly', awaited),
    { goal: { metric: 'added', op: '<', value: 6000, text: '< 6 µs added' }, headline: true })
  res.row('decision path', 'core part only (the addon\'s call, handler inline), Node', us('_rt.call', core), us('handler called directly', direct),
    { note: 'what the governor itself adds, without the promise machinery' })
  res.write()
} finally {
  rmSync(dir, { recursive: true, force: true })
}
