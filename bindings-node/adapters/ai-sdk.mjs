// harnessweaver/ai-sdk for import: the adapter over the framework's ES build, so an
// ES app and the adapter share one copy of it. See impl/ai-sdk.js and docs/adapters.md.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const impl = require('./impl/ai-sdk.js')
const { frameworkMissing, isMissing } = require('./impl/common.js')

let framework
let missing = false
try {
  framework = await import(impl.PACKAGE)
} catch (err) {
  if (!isMissing(err, impl.PACKAGE)) throw err
  missing = true // thrown by tools(), as the require() entry does, so importing never fails for it
}

function sdk() {
  if (missing) throw frameworkMissing(impl.PACKAGE, 'ai-sdk', impl.RANGE)
  return framework
}

export function tools(harness, run, options) {
  return impl.tools(sdk, harness, run, options)
}
export const approve = impl.approve
export const reject = impl.reject
