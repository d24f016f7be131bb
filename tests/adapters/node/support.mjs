// What the adapter tests share: the package as an app requires it (so
// `harnessweaver/...` goes through the package's exports), the test harness
// (harness/) with handlers that log their calls, and the principals.
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
export const NODE_DIR = join(ROOT, 'bindings-node')
/** `require` as from inside bindings-node: the package by its name, and its devDependencies (the frameworks). */
export const require = createRequire(join(NODE_DIR, 'package.json'))
export const hw = require('harnessweaver')

export const HARNESS = join(ROOT, 'tests', 'adapters', 'node', 'harness', 'harness.yaml')
export const alice = { id: 'alice', roles: ['support'] }
export const intern = { id: 'ivan', roles: ['intern'] }
export const finance = { id: 'fran', roles: ['finance'] }

/** The test harness, a run of `principal`, the handler calls and the audit events. */
export function setup(principal = alice) {
  const calls = []
  const audit = []
  const h = hw.load(HARNESS, {
    tools: {
      lookup_order: (args) => {
        calls.push(['lookup_order', args])
        return { id: args.order_id, email: 'ann@example.com' }
      },
      refund: (args) => {
        calls.push(['refund', args])
        return { refunded: args.amount_usd }
      },
    },
    audit: (event) => audit.push(event),
  })
  const run = h.run({ principal })
  return { h, run, calls, audit }
}
