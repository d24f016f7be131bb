// Benchmark (not a test): `definitionDigest` from Node for a small (~200 B)
// and a large (~50 KB) tool definition, beside what a Node user would write
// instead: a sorted-key stringify (fast-json-stable-stringify) + node:crypto
// sha256. Both sides hash the same definitions (target/bench-inputs/digest.json).
//
//   make bench-digest
import { createHash } from 'node:crypto'

import stringify from 'fast-json-stable-stringify'

import { Results, hw, loadInputs, medianNs, packageVersion, value } from './benchlib.mjs'

const peerDigest = (name, description, schema) =>
  'sha256:' + createHash('sha256').update(stringify({ description, input_schema: schema, name }), 'utf8').digest('hex')

const inputs = loadInputs('digest')
const res = new Results('digest-node')
for (const size of ['small', 'large']) {
  const { name, description, input_schema: schema, bytes } = inputs[size]
  const ours = hw.definitionDigest(name, description, schema)
  // The canonical JSON escapes non-ASCII (\u00e9); JSON.stringify does not, so the check escapes it first
  // (the timed peer hashes the UTF-8 text as it is: the same work, other bytes for the large definition).
  const ascii = (t) => t.replace(/[\u0080-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))
  const check = 'sha256:' + createHash('sha256').update(ascii(stringify({ description, input_schema: schema, name })), 'utf8').digest('hex')
  if (ours !== check) throw new Error(`${size}: ${ours} != ${check}`)
  const o = medianNs(() => hw.definitionDigest(name, description, schema))
  const p = medianNs(() => peerDigest(name, description, schema))
  res.row('digest', `${size} definition (${bytes.toLocaleString('en-US')} B), Node`, value('definitionDigest', o, 'ns'),
    value(`fast-json-stable-stringify ${packageVersion('fast-json-stable-stringify')} + crypto sha256`, p, 'ns'),
    { goal: { metric: 'ratio', op: '>=', value: 1, text: '>= 1x fast-json-stable-stringify + crypto' } })
}
res.write()
