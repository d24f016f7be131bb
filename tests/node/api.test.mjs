// The npm package's API: loading, tool descriptions, value conversion, errors
// with codes and problems, the bin, and its type declarations.
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'

import { ROOT, hw } from './fixture_support.mjs'

const SHOP = join(ROOT, 'examples', 'shop', 'harness.yaml')
const REFUND = join(ROOT, 'examples', 'shop', 'tools', 'refund_payment.yaml')
const NODE_DIR = join(ROOT, 'bindings-node')

// Python's json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=True) for plain ASCII-keyed values.
function pyJson(v) {
  if (Array.isArray(v)) return `[${v.map(pyJson).join(',')}]`
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v).sort()
    return `{${keys.map((k) => `${pyJson(k)}:${pyJson(v[k])}`).join(',')}}`
  }
  if (typeof v === 'string') return JSON.stringify(v).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
  return JSON.stringify(v)
}

function referenceDigest(name, description, schema) {
  return `sha256:${createHash('sha256').update(pyJson({ name, description, input_schema: schema })).digest('hex')}`
}

test('load describes every tool', () => {
  const harness = hw.inspect(SHOP)
  assert.ok(harness.tools.length > 0)
  for (const tool of harness.tools) {
    assert.ok(tool instanceof hw.ToolDescription)
    assert.ok(['pinned', 'mismatched', 'unpinned'].includes(tool.pin))
    assert.equal(tool.digest, hw.definitionDigest(tool.name, tool.description, tool.input_schema))
    for (const field of ['name', 'description', 'input_schema', 'digest', 'pin', 'transport', 'risk', 'timeout']) {
      assert.ok(field in tool, field)
    }
    assert.ok(Object.isFrozen(tool))
    assert.equal(harness.tool(tool.name), tool)
  }
  assert.equal(harness.tool('no_such_tool'), undefined)
})

test('load keeps native handlers and checks them', () => {
  const harness = hw.load(SHOP, { tools: { refund_payment: () => 'ok', lookup_order: async () => 1, search_catalog: () => [] } })
  assert.deepEqual(harness.handlerNames, ['lookup_order', 'refund_payment', 'search_catalog'])
  // A native tool without a handler is a load error.
  assert.throws(() => hw.load(SHOP, { tools: { refund_payment: () => 'ok' } }), (e) => e instanceof hw.LoadError && e.problems.some((p) => p.code === 'handler_not_registered'))
  for (const bad of [3, 'x', [], null]) {
    assert.throws(() => hw.load(SHOP, { tools: bad }), (e) => e instanceof hw.InvalidArgumentError && e.code === 'invalid_tools')
  }
  assert.throws(() => hw.load(SHOP, { tools: { refund_payment: 42 } }), (e) => e.code === 'invalid_tools' && /refund_payment/.test(e.message))
  assert.throws(() => hw.load(SHOP, 5), (e) => e.code === 'invalid_options')
})

test('ToolDescription.fromManifest agrees with load', () => {
  const loaded = hw.inspect(SHOP).tool('refund_payment')
  const fromText = hw.ToolDescription.fromManifest(readFileSync(REFUND, 'utf8'))
  assert.equal(fromText.digest, loaded.digest)
  assert.equal(fromText.pin, loaded.pin)
  const manifest = {
    apiVersion: 'harnessweaver/v1',
    kind: 'Tool',
    metadata: { name: 'echo' },
    spec: { transport: 'native', handler: 'm:echo', description: 'Echo.', input_schema: { type: 'object', properties: { x: { type: 'number', minimum: 1.0 } } } },
  }
  const tool = hw.ToolDescription.fromManifest(manifest)
  assert.equal(tool.name, 'echo')
  assert.equal(tool.pin, 'unpinned')
  assert.equal(tool.digest, referenceDigest('echo', 'Echo.', manifest.spec.input_schema))
  assert.equal(hw.ToolDescription.fromManifest(JSON.stringify(manifest)).digest, tool.digest)
})

test('load errors carry code and problems', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hw-node-'))
  mkdirSync(join(dir, 'tools'))
  writeFileSync(join(dir, 'harness.yaml'), 'apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [tools/*.yaml]\n')
  writeFileSync(
    join(dir, 'tools', 'bad.yaml'),
    'apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {name: bad}\nspec:\n  transport: native\n  description: d\n  input_schema: {type: object}\n  bogus_field: 1\n',
  )
  let err
  try {
    hw.load(join(dir, 'harness.yaml'))
  } catch (e) {
    err = e
  }
  assert.ok(err instanceof hw.LoadError, String(err))
  assert.ok(err instanceof hw.HarnessweaverError)
  assert.ok(err instanceof Error)
  assert.ok(err.problems.length > 0)
  assert.equal(err.code, err.problems.length === 1 ? err.problems[0].code : 'load_error')
  for (const p of err.problems) {
    assert.deepEqual(Object.keys(p).sort(), ['code', 'column', 'file', 'line', 'message', 'path'])
  }
  const unknown = err.problems.find((p) => /bogus_field/.test(p.message) || /bogus_field/.test(p.path))
  assert.ok(unknown, JSON.stringify(err.problems))
  assert.match(unknown.file, /bad\.yaml$/)
  assert.equal(unknown.line, 8)
  assert.match(err.message, /bad\.yaml/)

  assert.throws(() => hw.load(join(dir, 'missing.yaml')), (e) => e instanceof hw.LoadError && e.problems.length > 0)
  assert.throws(() => hw.ToolDescription.fromManifest('apiVersion: harnessweaver/v1\nkind: Tool\nspec: [\n'), (e) => e instanceof hw.LoadError && e.problems.length > 0)
})

test('value errors carry codes', () => {
  const cases = [
    [NaN, 'non_finite_number'],
    [Infinity, 'non_finite_number'],
    [-Infinity, 'non_finite_number'],
    [2n ** 53n + 1n, 'integer_out_of_range'],
    [-(2n ** 53n) - 1n, 'integer_out_of_range'],
    [10n ** 40n, 'integer_out_of_range'],
    [undefined, 'unsupported_type'],
    [() => 1, 'unsupported_type'],
    [Symbol('s'), 'unsupported_type'],
    [new Map([['a', 1]]), 'unsupported_type'],
    [new Set([1]), 'unsupported_type'],
    [new Date(0), 'unsupported_type'],
    [new Uint8Array(2), 'unsupported_type'],
    [new (class Point { constructor() { this.x = 1 } })(), 'unsupported_type'],
  ]
  for (const [value, code] of cases) {
    assert.throws(() => hw.canonicalJson(value), (e) => e instanceof hw.InvalidValueError && e.code === code, String(code))
    assert.throws(() => hw.definitionDigest('t', 'd', { x: [value] }), (e) => e.code === code)
  }
})

test('too deep and cyclic values are refused, not a crash', () => {
  let deep = 1
  for (let i = 0; i < 512; i++) deep = [deep]
  assert.ok(hw.canonicalJson(deep).startsWith('[['))
  assert.throws(() => hw.canonicalJson([deep]), (e) => e.code === 'nesting_too_deep')
  const cyclic = {}
  cyclic.self = cyclic
  assert.throws(() => hw.canonicalJson(cyclic), (e) => e.code === 'nesting_too_deep')
})

test('number, BigInt and key rules', () => {
  assert.equal(
    hw.canonicalJson([true, 1, 1.0, -0, 1e-7, 1e16, 2 ** 53, -(2 ** 53), 2n ** 53n, 5n, 0.1]),
    '[true,1,1,0,1e-07,1e+16,9007199254740992,-9007199254740992,9007199254740992,5,0.1]',
  )
  // Keys sort by code point (not UTF-16 units): U+FFFF before U+10000.
  assert.equal(hw.canonicalJson({ '\u{10000}': 2, '\uffff': 1 }), '{"\\uffff":1,"\\ud800\\udc00":2}')
  // An own `__proto__` key is a key, both ways.
  const parsed = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}')
  assert.equal(hw.canonicalJson(parsed), '{"__proto__":{"polluted":true},"a":1}')
  // Only own enumerable string keys count; numeric keys are strings.
  const plain = { own: 2 }
  plain[Symbol('s')] = 3
  Object.defineProperty(plain, 'hidden', { value: 4, enumerable: false })
  assert.equal(hw.canonicalJson(plain), '{"own":2}')
  // An object with another prototype is not plain (it could hide inherited fields).
  assert.throws(() => hw.canonicalJson(Object.create({ inherited: 1 })), (e) => e.code === 'unsupported_type')
  assert.equal(hw.canonicalJson({ 10: 'a', 9: 'b' }), '{"10":"a","9":"b"}')
  assert.equal(hw.canonicalJson(null), 'null')
  const bare = Object.create(null)
  bare.b = 1
  assert.equal(hw.canonicalJson(bare), '{"b":1}')
})

test('the bin runs the core CLI', () => {
  const bin = join(NODE_DIR, 'bin', 'harnessweaver.js')
  const ok = spawnSync(process.execPath, [bin, 'doctor', SHOP], { encoding: 'utf8' })
  assert.ok([0, 1].includes(ok.status), ok.stderr)
  const usage = spawnSync(process.execPath, [bin, 'no-such-command'], { encoding: 'utf8' })
  assert.equal(usage.status, 2)
  const pkg = JSON.parse(readFileSync(join(NODE_DIR, 'package.json'), 'utf8'))
  assert.equal(pkg.bin.harnessweaver, 'bin/harnessweaver.js')
})

test('index.d.ts declares every export of index.js', () => {
  const dts = readFileSync(join(NODE_DIR, 'index.d.ts'), 'utf8')
  const declared = new Set([...dts.matchAll(/^export declare (?:function|class|const|namespace) (\w+)/gm)].map((m) => m[1]))
  assert.deepEqual([...declared].sort(), Object.keys(hw).sort())
})

test('native.d.ts matches the addon', () => {
  const native = createRequireNative()
  const dts = readFileSync(join(NODE_DIR, 'native.d.ts'), 'utf8')
  const declared = new Set([...dts.matchAll(/^export declare (?:function|class|const) (\w+)/gm)].map((m) => m[1]))
  assert.deepEqual([...declared].sort(), Object.keys(native).sort())
})

test('generated native.js and native.d.ts are committed fresh', () => {
  // `make build-node` regenerates them; a difference from the commit is drift.
  const inRepo = spawnSync('git', ['-C', ROOT, 'rev-parse', '--is-inside-work-tree'], { encoding: 'utf8' })
  assert.equal(inRepo.status, 0, 'the drift check needs the git checkout')
  const diff = spawnSync('git', ['-C', ROOT, 'diff', '--exit-code', '--stat', '--', 'bindings-node/native.d.ts', 'bindings-node/native.js'], { encoding: 'utf8' })
  assert.equal(diff.status, 0, `regenerated files differ from the commit; commit them:\n${diff.stdout}`)
  const tracked = execFileSync('git', ['-C', ROOT, 'ls-files', 'bindings-node/native.d.ts', 'bindings-node/native.js'], { encoding: 'utf8' })
  assert.equal(tracked.trim().split('\n').length, 2, 'native.js and native.d.ts are committed')
})

test('index.d.ts type-checks a typical use under strict', () => {
  const tsc = join(NODE_DIR, 'node_modules', 'typescript', 'bin', 'tsc')
  const out = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tests', 'node', 'types', 'tsconfig.json')], { encoding: 'utf8' })
  assert.equal(out.status, 0, `tsc failed:\n${out.stdout}${out.stderr}`)
})

function createRequireNative() {
  return JSON.parse(
    execFileSync(process.execPath, ['-e', `process.stdout.write(JSON.stringify(Object.fromEntries(Object.keys(require(${JSON.stringify(join(NODE_DIR, 'native.js'))})).map((k) => [k, 1]))))`], { encoding: 'utf8' }),
  )
}

test('every export of the package is a named export for ESM importers', async () => {
  // Node's ESM loader finds a CommonJS module's names by reading its source
  // (cjs-module-lexer); a name it misses cannot be imported by name.
  const esm = await import(join(ROOT, 'bindings-node', 'index.js'))
  const missing = Object.keys(hw).filter((name) => !(name in esm) || esm[name] !== hw[name])
  assert.deepEqual(missing, [])
})
