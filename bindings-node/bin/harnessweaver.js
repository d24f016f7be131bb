#!/usr/bin/env node
'use strict'
// The `harnessweaver` command line: the core's implementation, plus `add tool`,
// which needs the TypeScript compiler to read a function's types.
const { cliRun } = require('../main.js')
const args = process.argv.slice(2)
if (args[0] === 'add' && args[1] === 'tool') {
  process.exitCode = require('./add-tool.js').main(args.slice(2), cliRun)
} else if (args[0] === 'add') {
  process.stderr.write('harnessweaver add: the only thing to add is a tool: `npx harnessweaver add tool ./tools.ts#name` (see `npx harnessweaver add tool --help`)\n')
  process.exitCode = 2
} else {
  process.exitCode = cliRun(args)
}
