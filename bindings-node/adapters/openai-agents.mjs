// harnessweaver/openai-agents for import: the adapter over the framework's ES build, so an
// ES app and the adapter share one copy of it. See impl/openai-agents.js and docs/adapters.md.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { importEntry } = require('./impl/common.js')

export const { tools, approve, reject } = await importEntry(require('./impl/openai-agents.js'), 'openai-agents')
