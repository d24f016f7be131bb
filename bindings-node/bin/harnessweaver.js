#!/usr/bin/env node
'use strict'
// The `harnessweaver` command line: the core's implementation.
const { cliRun } = require('../index.js')
process.exitCode = cliRun(process.argv.slice(2))
