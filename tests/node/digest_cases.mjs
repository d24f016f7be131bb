// Reads a JSON array of {name, description, input_schema} cases (written by
// tests/python/test_property.py) and prints the array of Node's digests.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const hw = require('../../bindings-node/index.js')

const cases = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const out = cases.map((c) => {
  try {
    return hw.definitionDigest(c.name, c.description, c.input_schema)
  } catch (err) {
    return { error: err.code || String(err) }
  }
})
process.stdout.write(JSON.stringify(out))
