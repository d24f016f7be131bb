// A host serving a harness with `serveMcp` over stdio whose native tool
// `index_docs` reports progress through `ctx.progress` (issue 22;
// tests/gateway/ts_progress.test.mjs).
//
//   node progress_host.mjs HARNESS_DIR
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const hw = require(join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'bindings-node'))

async function index_docs({ docs }, ctx) {
  for (let i = 1; i <= docs; i++) {
    ctx.progress(i, docs, `indexed doc ${i} of bob@example.com`)
    await new Promise((resolve) => setImmediate(resolve))
  }
  ctx.progress(docs, docs, 'the same progress again: dropped')
  return { indexed: docs }
}

const h = hw.load(process.argv[2], { tools: { index_docs } })
await hw.serveMcp(h, {})
