'use strict'
// harnessweaver/openai-agents for require(): the adapter over the framework's CommonJS
// build. See impl/openai-agents.js and docs/adapters.md.

module.exports = require('./impl/common.js').requireEntry(require('./impl/openai-agents.js'), 'openai-agents')
