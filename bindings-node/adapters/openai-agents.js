'use strict'
// harnessweaver/openai-agents for require(): the adapter over the framework's CommonJS build.
// See impl/openai-agents.js and docs/adapters.md.

const impl = require('./impl/openai-agents.js')
const { requireFramework } = require('./impl/common.js')

const sdk = () => requireFramework(impl.PACKAGE, 'openai-agents', impl.RANGE)

module.exports = {
  tools: (harness, run, options) => impl.tools(sdk, harness, run, options),
  approve: impl.approve,
  reject: impl.reject,
}
