// The adapters as the npm package ships them: subpath exports, types checked
// with tsc against the frameworks' own types, and a main package that needs
// neither framework.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join, posix } from 'node:path'
import { pathToFileURL } from 'node:url'
import { test } from 'node:test'
import { NODE_DIR, ROOT, require } from './support.mjs'


test('the adapters type-check (strict) against their .d.ts and the frameworks', () => {
  const tsc = join(NODE_DIR, 'node_modules', 'typescript', 'bin', 'tsc')
  const out = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tests', 'adapters', 'node', 'types', 'tsconfig.json')], { encoding: 'utf8' })
  assert.equal(out.status, 0, `tsc failed:\n${out.stdout}${out.stderr}`)
})

test('every export and member of the adapters\' .d.ts has TSDoc', () => {
  for (const name of ['ai-sdk', 'openai-agents']) {
    const out = spawnSync(process.execPath, [join(ROOT, 'tests', 'docs', 'check_tsdoc.mjs'), join(NODE_DIR, 'adapters', `${name}.d.ts`)], { encoding: 'utf8' })
    assert.equal(out.status, 0, `without TSDoc:\n${out.stdout}${out.stderr}`)
  }
})

test('the frameworks are optional peers, installed here only for the tests', () => {
  const pkg = JSON.parse(readFileSync(join(NODE_DIR, 'package.json'), 'utf8'))
  for (const name of ['ai', '@openai/agents']) {
    assert.equal(pkg.peerDependenciesMeta[name].optional, true, name)
    assert.ok(pkg.devDependencies[name], name)
    assert.equal(pkg.dependencies?.[name], undefined, name)
  }
  assert.ok(pkg.files.includes('adapters/'))
  for (const sub of ['openai-agents', 'ai-sdk']) {
    assert.deepEqual(pkg.exports[`./${sub}`], { types: `./adapters/${sub}.d.ts`, import: `./adapters/${sub}.mjs`, default: `./adapters/${sub}.js` })
  }
})

test('the packed package holds every module its modules require (npm pack --dry-run)', () => {
  const out = spawnSync('npm', ['pack', '--dry-run', '--json', '--loglevel=error'], { cwd: NODE_DIR, encoding: 'utf8' })
  assert.equal(out.status, 0, out.stderr)
  const files = new Set(JSON.parse(out.stdout)[0].files.map((f) => f.path))
  const missing = []
  for (const file of files) {
    if (!/\.(c|m)?js$/.test(file)) continue
    const text = readFileSync(join(NODE_DIR, file), 'utf8')
    // Relative modules (not the platform addons and the WASI fallback, which native.js tries by name).
    for (const m of text.matchAll(/(?:require\(|from |import\()\s*'(\.{1,2}\/[^']+\.m?js)'/g)) {
      const target = posix.normalize(posix.join(posix.dirname(file), m[1]))
      if (!files.has(target)) missing.push(`${file} -> ${target}`)
    }
  }
  assert.deepEqual(missing, [])
  for (const name of ['adapters/ai-sdk.mjs', 'adapters/openai-agents.d.ts', 'index.d.ts']) assert.ok(files.has(name), name)
})

test('the main package loads neither framework', () => {
  const script = `require(${JSON.stringify(NODE_DIR)}); const loaded = Object.keys(require.cache).filter((p) => /node_modules[\\\\/](ai|@openai)[\\\\/]/.test(p)); console.log(JSON.stringify(loaded))`
  const out = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' })
  assert.equal(out.status, 0, out.stderr)
  assert.deepEqual(JSON.parse(out.stdout), [])
})

test('require() and import get the same adapter, each over the framework build of its own module system', () => {
  // One child process imports the ES entry, another requires the CommonJS one; each reports
  // which builds of the Agents SDK core got loaded: never both (no dual-package hazard).
  const harness = join(ROOT, 'tests', 'adapters', 'node', 'harness', 'harness.yaml')
  const body = `const h = hw.load(${JSON.stringify(harness)}, { tools: { lookup_order: () => 1, refund: () => 1 } })
    const names = hwa.tools(h, h.run({ principal: { id: 'a' } })).map((t) => t.name)
    const loaded = (p) => /agents-core[\\\\/]dist[\\\\/]index\\.(m?js)$/.test(p)`
  const esm = `import { createRequire } from 'node:module'
    const require = createRequire(${JSON.stringify(join(NODE_DIR, 'package.json'))})
    const hw = require('harnessweaver')
    const hwa = await import(${JSON.stringify(pathToFileURL(join(NODE_DIR, 'adapters', 'openai-agents.mjs')).href)})
    ${body}
    console.log(JSON.stringify({ names, cjs: Object.keys(require.cache).some(loaded) }))`
  const cjs = `const hw = require(${JSON.stringify(NODE_DIR)})
    const hwa = require(${JSON.stringify(join(NODE_DIR, 'adapters', 'openai-agents.js'))})
    ${body}
    console.log(JSON.stringify({ names, cjs: Object.keys(require.cache).some(loaded) }))`
  const run = (args) => {
    const out = spawnSync(process.execPath, args, { encoding: 'utf8' })
    assert.equal(out.status, 0, out.stderr)
    return JSON.parse(out.stdout)
  }
  assert.deepEqual(run(['--input-type=module', '-e', esm]), { names: ['lookup_order', 'refund'], cjs: false })
  assert.deepEqual(run(['-e', cjs]), { names: ['lookup_order', 'refund'], cjs: true })
})

test('an adapter whose framework is missing says which package to install', async () => {
  const { requireFramework, isMissing, frameworkMissing } = require('./adapters/impl/common.js')
  const expected = {
    code: 'framework_missing',
    message: '`harnessweaver/ai-sdk` needs `harnessweaver-no-such-framework`: npm install harnessweaver-no-such-framework@^6.0.0',
  }
  assert.throws(() => requireFramework('harnessweaver-no-such-framework', 'ai-sdk', '^6.0.0'), expected)
  // The ES entry tells the same from import()'s error.
  const err = await import('harnessweaver-no-such-framework').then(() => null, (e) => e)
  assert.equal(isMissing(err, 'harnessweaver-no-such-framework'), true)
  assert.throws(() => { throw frameworkMissing('harnessweaver-no-such-framework', 'ai-sdk', '^6.0.0') }, expected)
})
