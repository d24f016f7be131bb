// A host serving the gateway harness with `serveMcp`, its native tool `greet`
// a JavaScript function (tests/gateway/ts_client.test.mjs); with --no-tools, a
// harness of transport tools only (the relay harness, ts_relays.test.mjs).
//
//   node ts_host.mjs HARNESS_DIR [--http 127.0.0.1:0] [--no-tools]
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const hw = require(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bindings-node'))

async function greet({ name }) {
  if (name === 'boom') throw new RangeError('the handler failed on purpose')
  return `Hello, ${name}!`
}

const args = process.argv.slice(2)
const h = hw.load(args[0], { tools: args.includes('--no-tools') ? {} : { greet } })
const at = args.indexOf('--http')
await hw.serveMcp(h, at >= 0 ? { http: args[at + 1] } : {})
