// Benchmark (not a test): input validation of realistic tool arguments from
// Node, beside ajv on the same schemas and arguments
// (target/bench-inputs/validation.json: the example shop's tools and a nested
// ticket schema).
//
// harnessweaver has no validate-only entry point: validation is step 2 of a
// governed call, so "ours" is a whole `await h.call(...)` (steps 1-9, a
// trivial sync handler, the promise) for valid arguments, and the call refused
// at step 2 (`raiseOnRefusal: false`) for invalid ones. That is more work than
// ajv does (it only validates), so the ratios are a lower bound for
// validation alone. ajv compiles each schema once (strict mode off, as the
// schemas are plain JSON Schema 2020-12 without $schema).
//
//   make bench-validate
import Ajv2020 from 'ajv/dist/2020.js'

import { Results, hw, loadInputs, medianNs, medianNsAsync, packageVersion, value } from './benchlib.mjs'

const data = loadInputs('validation')
const cases = data.cases
const tools = {}
for (const c of cases) tools[c.tool] = () => null
const h = hw.load(data.harness, { tools })
const principal = { id: 'bench' }
const ajv = new Ajv2020({ strict: false, allErrors: false })

const prepared = []
for (const c of cases) {
  const validate = ajv.compile(c.schema)
  const ok = await h.call(c.tool, c.valid, { principal, raiseOnRefusal: false })
  const refused = await h.call(c.tool, c.invalid, { principal, raiseOnRefusal: false })
  if (!ok.allowed) throw new Error(`${c.tool}: valid args refused: ${ok.code}`)
  if (refused.step !== 'validate') throw new Error(`${c.tool}: invalid args not refused at validate: ${refused.code}`)
  if (!validate(c.valid) || validate(c.invalid)) throw new Error(`${c.tool}: ajv disagrees`)
  prepared.push({ ...c, validate })
}

const res = new Results('validate-node')
const n = prepared.length
const ajvName = `ajv ${packageVersion('ajv')} (compiled)`
const oursName = { valid: 'await h.call, steps 1-9', invalid: 'await h.call refused at step 2' }
for (const outcome of ['valid', 'invalid']) {
  const ours = (await medianNsAsync(async () => {
    for (const c of prepared) await h.call(c.tool, c[outcome], { principal, raiseOnRefusal: false })
  })) / n
  const peer = medianNs(() => {
    for (const c of prepared) c.validate(c[outcome])
  }) / n
  res.row('validation', `${outcome} args, ${n} tools (mean per call), Node`, value(oursName[outcome], ours, 'ns'), value(ajvName, peer, 'ns'),
    { note: `tools: ${prepared.map((c) => c.tool).join(', ')}` })
}
res.write()
