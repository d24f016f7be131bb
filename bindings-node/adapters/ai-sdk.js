'use strict'
// harnessweaver/ai-sdk for require(): the adapter over the framework's CommonJS build.
// See impl/ai-sdk.js and docs/adapters.md.

const impl = require('./impl/ai-sdk.js')
const { requireFramework } = require('./impl/common.js')

const sdk = () => requireFramework(impl.PACKAGE, 'ai-sdk', impl.RANGE)

module.exports = {
  tools: (harness, run, options) => impl.tools(sdk, harness, run, options),
  approve: impl.approve,
  reject: impl.reject,
}
