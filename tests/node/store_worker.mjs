// A worker of the mixed-language multi-process store test: loads a harness
// with the Node binding, waits for the common start time, calls `ping` N
// times and prints what was decided as one JSON line.
import { createRequire } from 'node:module'
import { join } from 'node:path'

import { hw as built } from './fixture_support.mjs'

// HW_NODE_PACKAGE: another build of the package (as bench/node does).
const hw = process.env.HW_NODE_PACKAGE ? createRequire(import.meta.url)(join(process.env.HW_NODE_PACKAGE, 'index.js')) : built

const [harness, calls, startMs, name] = process.argv.slice(2)
const h = hw.load(harness, { tools: { ping: () => 'pong' } })
await new Promise((resolve) => setTimeout(resolve, Math.max(0, Number(startMs) - Date.now())))
const counts = {}
for (let i = 0; i < Number(calls); i++) {
  const r = await h.call('ping', {}, { principal: { id: name }, tenant: 'acme', raiseOnRefusal: false })
  const key = r.decision === 'allowed' ? 'allowed' : r.code
  counts[key] = (counts[key] ?? 0) + 1
}
console.log(JSON.stringify(counts))
