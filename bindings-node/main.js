'use strict'
// The package's entry point: index.js, except that where npm installed no native binary for this
// platform (one this release has no package for, or optional dependencies omitted) the error says
// so and what to do, instead of napi-rs's generic "Cannot find native binding".
try {
  module.exports = require('./index.js')
} catch (err) {
  if (!(err instanceof Error) || !err.message.startsWith('Cannot find native binding')) throw err
  const pkg = require('./package.json')
  const shipped = Object.keys(pkg.optionalDependencies || {}).join(', ') || (pkg.napi.targets || []).join(', ')
  const message = `harnessweaver: no native binary is installed for this platform (${process.platform}-${process.arch}). This release has one for: ${shipped}. On one of those, install the platform package with the main one (npm installs it through optionalDependencies unless they are omitted, e.g. by --omit=optional); elsewhere, build the package from a checkout of the repository (\`make dist\`).`
  throw Object.assign(new Error(message), { code: 'ERR_HARNESSWEAVER_NO_BINARY', cause: err })
}
