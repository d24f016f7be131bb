'use strict'
// harnessweaver/ai-sdk for require(): the adapter over the framework's CommonJS
// build. See impl/ai-sdk.js and docs/adapters.md.

module.exports = require('./impl/common.js').requireEntry(require('./impl/ai-sdk.js'), 'ai-sdk')
