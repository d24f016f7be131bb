// `npx harnessweaver add tool ./tools.ts#name` round-trips a realistic
// tools.ts (add_tool/tools.ts) into manifests that load, pin cleanly and
// validate calls; without a `typescript` package, or for types with no JSON
// form, it says what to do.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'

import { hw, ROOT } from './fixture_support.mjs'

const HERE = dirname(fileURLToPath(import.meta.url))
const BIN = join(ROOT, 'bindings-node', 'bin', 'harnessweaver.js')
const TYPESCRIPT = join(ROOT, 'bindings-node', 'node_modules', 'typescript')
// TypeScript 7 (the native compiler, what `npm install typescript` gives now): a devDependency alias.
const TYPESCRIPT7 = join(ROOT, 'bindings-node', 'node_modules', 'typescript7')
const HARNESS = `# The shop's harness: tools come from \`npx harnessweaver add tool\`.
apiVersion: harnessweaver/v1
kind: Harness
spec:
  mode: test
  tools:
    manifests: ["other/*.yaml"]   # hand-written ones
`
const TOOLS = [
  ['lookupOrder', 'low', 'read'],
  ['searchProducts', 'low', 'read'],
  ['setOrderStatus', 'medium', 'write_internal'],
  ['createShipment', 'medium', 'write_external'],
  ['refundPayment', 'high', 'destructive'],
  ['bulkUpdatePrices', 'high', 'write_internal'],
  ['quoteShipping', 'low', 'none'],
]
const PRINCIPAL = { id: 'agent', roles: [], scopes: [] }

function cli(cwd, ...args) {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8' })
  return { code: r.status, out: r.stdout, err: r.stderr }
}

/** A project with tools.ts, a harness and `typescript` installed (linked; `typescript` may name which). */
function project({ typescript = true } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'hw-add-tool-'))
  copyFileSync(join(HERE, 'add_tool', 'tools.ts'), join(dir, 'tools.ts'))
  writeFileSync(join(dir, 'harness.yaml'), HARNESS)
  mkdirSync(join(dir, 'other'))
  writeFileSync(join(dir, 'other', 'ping.yaml'), 'apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {name: ping}\nspec:\n  handler: "x:y"\n')
  if (typescript) {
    mkdirSync(join(dir, 'node_modules'))
    symlinkSync(typescript === true ? TYPESCRIPT : typescript, join(dir, 'node_modules', 'typescript'), 'dir')
  }
  return dir
}

/** tools.ts compiled (by the project's typescript) and loaded, as the host would. */
function compiled(dir) {
  const ts = createRequire(join(dir, 'x.js'))('typescript')
  const out = ts.transpileModule(readFileSync(join(dir, 'tools.ts'), 'utf8'), { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } })
  writeFileSync(join(dir, 'tools.cjs'), out.outputText)
  return createRequire(join(dir, 'x.js'))('./tools.cjs')
}

/** `add tool` of one tool; a draft `effect: null` (issue 21) does not load until reviewed, then `tools add` pins it. */
function add(dir, name, risk, side) {
  let r = cli(dir, 'add', 'tool', `./tools.ts#${name}`, '--risk', risk, '--side-effect', side)
  if (side === 'write_external' || side === 'destructive') {
    const draft = join(dir, 'tools', `${name}.json`)
    assert.equal(r.code, 1, r.out + r.err)
    assert.match(r.out, /\[effect_contract_missing\]/)
    assert.match(r.out, /is a draft: fill in `spec.effect`/)
    assert.doesNotMatch(r.out, /pinned at/)
    const text = readFileSync(draft, 'utf8')
    assert.equal(JSON.parse(text).spec.effect, null)
    writeFileSync(draft, text.replace('"effect": null', '"effect": {"kind": "external_write", "retry_mode": "none"}'))
    r = cli(dir, 'tools', 'add', `tools/${name}.json`)
  }
  assert.equal(r.code, 0, r.out + r.err)
  assert.match(r.out, new RegExp(`tool \`${name}\` pinned at sha256:`))
}

const dir = project()
for (const [name, risk, side] of TOOLS) add(dir, name, risk, side)

test('the harness gains one glob and keeps its comments', () => {
  assert.equal(readFileSync(join(dir, 'harness.yaml'), 'utf8'), HARNESS.replace('["other/*.yaml"]', '["other/*.yaml", "tools/*.json"]'))
  assert.deepEqual(readdirSync(join(dir, 'tools')).sort(), TOOLS.map(([n]) => `${n}.json`).sort())
})

// Every native tool needs a handler at load time; the hand-written one too.
const stubs = () => Object.fromEntries([...TOOLS.map(([n]) => [n, () => null]), ['ping', () => null]])

test('every manifest loads pinned and doctor is clean', () => {
  const h = hw.load(join(dir, 'harness.yaml'), { tools: stubs() })
  for (const [name, risk, side] of TOOLS) {
    const t = h.tool(name)
    assert.equal(t.pin, 'pinned', name)
    assert.deepEqual([t.risk, t.side_effect, t.transport], [risk, side, 'native'])
  }
  const doctor = cli(dir, 'doctor')
  assert.equal(doctor.code, 0, doctor.out)
  assert.equal(doctor.out.match(/warning:/g).length, 1, 'only the hand-written tool is unpinned')
})

test('schemas come from the types and JSDoc', () => {
  const h = hw.load(join(dir, 'harness.yaml'), { tools: stubs() })
  const search = h.tool('searchProducts')
  assert.equal(search.description, 'Search the catalogue.')
  assert.deepEqual(search.input_schema, {
    type: 'object',
    properties: {
      query: { type: 'string', description: 'Words to look for.' },
      limit: { type: 'number', description: 'At most this many results.', default: 10 },
      maxPrice: { type: ['number', 'null'], default: null },
      inStockOnly: { type: 'boolean', default: false },
      tags: { type: 'array', items: { type: 'string' } },
    },
    required: ['query'],
    additionalProperties: false,
  })
  assert.equal(h.tool('lookupOrder').input_schema.properties.orderId.description, "The order's id, like `A-1001`.")
  const status = h.tool('setOrderStatus').input_schema.properties
  assert.deepEqual(status.status, { type: 'string', enum: ['cancelled', 'pending', 'shipped'] })
  assert.deepEqual(status.priority, { type: 'integer', enum: [1, 2, 3] })
  const shipment = h.tool('createShipment').input_schema.properties
  assert.deepEqual(shipment.address.required, ['street', 'city', 'country'])
  assert.equal(shipment.address.properties.country.description, 'ISO 3166 country code.')
  assert.deepEqual(shipment.options, { type: 'object', additionalProperties: { type: 'boolean' } })
  assert.deepEqual(h.tool('bulkUpdatePrices').input_schema.properties.currency, { type: 'string', enum: ['EUR', 'USD'], default: 'USD' })
  const quote = h.tool('quoteShipping').input_schema.properties
  assert.deepEqual(quote.dimsCm, { type: 'array', prefixItems: [{ type: 'number' }, { type: 'number' }, { type: 'number' }], minItems: 3, maxItems: 3 })
  assert.deepEqual(quote.insured, { type: ['boolean', 'null'] })
  assert.deepEqual(h.tool('refundPayment').input_schema.properties.memo, { type: ['string', 'null'] })
})

const GOOD = {
  lookupOrder: { orderId: 'A-1001' },
  searchProducts: { query: 'mug', limit: 2, tags: ['kitchen'] },
  setOrderStatus: { orderId: 'A-1', status: 'shipped', note: 'customer', priority: 3 },
  createShipment: { orderId: 'A-1', address: { street: '1 Rue', city: 'Paris', country: 'FR' }, items: [{ sku: 'S-1', quantity: 2 }, { sku: 'S-2', quantity: 1, giftWrap: true }], options: { signature: true } },
  refundPayment: { orderId: 'A-1', amountUsd: 12.5, reason: 'late', memo: null },
  bulkUpdatePrices: { updates: { 'S-1': 9.99 }, currency: 'EUR', dryRun: false },
  quoteShipping: { dimsCm: [10, 20, 30], destination: { country: 'FR', postcode: '75001' }, services: ['express'], insured: null },
}
const BAD = [
  ['lookupOrder', {}],
  ['lookupOrder', { orderId: 7 }],
  ['lookupOrder', { orderId: 'A-1', extra: true }],
  ['searchProducts', { query: 'mug', limit: 'ten' }],
  ['searchProducts', { query: 'mug', tags: ['ok', 3] }],
  ['setOrderStatus', { orderId: 'A-1', status: 'lost' }],
  ['setOrderStatus', { orderId: 'A-1', status: 'shipped', priority: 9 }],
  ['createShipment', { orderId: 'A-1', address: { street: 'x', city: 'y' }, items: [] }],
  ['createShipment', { orderId: 'A-1', address: { street: 'x', city: 'y', country: 'DE' }, items: [{ sku: 'S-1' }] }],
  ['createShipment', { orderId: 'A-1', address: { street: 'x', city: 'y', country: 'DE' }, items: [], options: { fast: 'yes' } }],
  ['refundPayment', { orderId: 'A-1', amountUsd: '12', reason: 'late' }],
  ['refundPayment', { orderId: 'A-1', amountUsd: 12, reason: 'bored' }],
  ['bulkUpdatePrices', { updates: { 'S-1': 'cheap' } }],
  ['quoteShipping', { dimsCm: [1, 2], destination: { country: 'FR', postcode: '1' } }],
  ['quoteShipping', { dimsCm: [1, 2, 3], destination: { country: 'FR' } }],
  ['quoteShipping', { dimsCm: [1, 2, 3], destination: { country: 'FR', postcode: '1' }, services: ['teleport'] }],
]

test('good arguments run the function, bad ones are refused before it runs', async () => {
  const mod = compiled(dir)
  const handlers = { ...stubs(), ...Object.fromEntries(TOOLS.map(([n]) => [n, mod[n]])) }
  const h = hw.load(join(dir, 'harness.yaml'), { tools: handlers })
  for (const [name, args] of Object.entries(GOOD)) {
    const r = await h.call(name, args, { principal: PRINCIPAL })
    assert.equal(r.decision, 'allowed', name)
    assert.deepEqual(r.output, JSON.parse(JSON.stringify(await mod[name](args))), name)
  }
  for (const [name, args] of BAD) {
    const r = await h.call(name, args, { principal: PRINCIPAL, raiseOnRefusal: false })
    assert.deepEqual([r.decision, r.code, r.step], ['refused', 'invalid_args', 'validate'], `${name} ${JSON.stringify(args)}`)
  }
})

test('TypeScript 7 writes the same manifests as TypeScript 6, JSDoc of inline type literals included', () => {
  assert.match(JSON.parse(readFileSync(join(TYPESCRIPT7, 'package.json'), 'utf8')).version, /^7\./)
  const dir7 = project({ typescript: TYPESCRIPT7 })
  for (const [name, risk, side] of TOOLS) {
    add(dir7, name, risk, side)
    assert.equal(readFileSync(join(dir7, 'tools', `${name}.json`), 'utf8'), readFileSync(join(dir, 'tools', `${name}.json`), 'utf8'), name)
  }
  const lookup = JSON.parse(readFileSync(join(dir7, 'tools', 'lookupOrder.json'), 'utf8'))
  assert.equal(lookup.spec.input_schema.properties.orderId.description, "The order's id, like `A-1001`.")
  // What cannot be described says so, as with TypeScript 6, with no stack trace.
  const date = cli(dir7, 'add', 'tool', './tools.ts#exportReport')
  assert.equal(date.code, 1)
  assert.match(date.out, /parameter `args`\.since: `Date` has no JSON form.*\[unsupported_type\]/)
  assert.doesNotMatch(date.out + date.err, /\n\s+at /)
})

test('adding again changes nothing; a different manifest needs --force', () => {
  const before = readFileSync(join(dir, 'tools', 'bulkUpdatePrices.json'), 'utf8')
  const again = cli(dir, 'add', 'tool', './tools.ts#bulkUpdatePrices', '--risk', 'high', '--side-effect', 'write_internal', '--json')
  assert.equal(again.code, 0, again.out + again.err)
  const report = JSON.parse(again.out)
  assert.deepEqual([report.ok, report.harness_changed, report.tool], [true, false, 'bulkUpdatePrices'])
  assert.equal(readFileSync(join(dir, 'tools', 'bulkUpdatePrices.json'), 'utf8'), before)
  const clash = cli(dir, 'add', 'tool', './tools.ts#bulkUpdatePrices')
  assert.equal(clash.code, 1)
  assert.match(clash.out, /\[manifest_exists\]/)
  // A reviewed effect contract is not overwritten by a new draft.
  const reviewed = readFileSync(join(dir, 'tools', 'refundPayment.json'), 'utf8')
  const draft = cli(dir, 'add', 'tool', './tools.ts#refundPayment', '--risk', 'high', '--side-effect', 'destructive')
  assert.equal(draft.code, 1)
  assert.match(draft.out, /\[manifest_exists\]/)
  assert.equal(readFileSync(join(dir, 'tools', 'refundPayment.json'), 'utf8'), reviewed)
})

test('types with no JSON form, and no typescript package, say what to do', () => {
  const date = cli(dir, 'add', 'tool', './tools.ts#exportReport')
  assert.equal(date.code, 1)
  assert.match(date.out, /parameter `args`\.since: `Date` has no JSON form.*\[unsupported_type\]/)
  const positional = cli(dir, 'add', 'tool', './tools.ts#lookupById')
  assert.equal(positional.code, 1)
  assert.match(positional.out, /receives the call's arguments as one object: write `function lookupById\(args: \{ orderId: string \}\)`/)
  assert.equal(existsSync(join(dir, 'tools', 'exportReport.json')), false)
  const missing = cli(dir, 'add', 'tool', './tools.ts#nope')
  assert.equal(missing.code, 1)
  assert.match(missing.out, /exports no `nope`/)

  const bare = project({ typescript: false })
  const none = cli(bare, 'add', 'tool', './tools.ts#lookupOrder')
  assert.equal(none.code, 3, none.out + none.err)
  assert.match(none.err, /npm install --save-dev typescript/)
  assert.equal(readFileSync(join(bare, 'harness.yaml'), 'utf8'), HARNESS)

  assert.equal(cli(dir, 'add', 'tool').code, 2)
  assert.equal(cli(dir, 'add', 'tool', './tools.ts#lookupOrder', '--risk', 'extreme').code, 2)
  assert.equal(cli(dir, 'add', 'widget').code, 2)
  const help = cli(dir, 'add', 'tool', '--help')
  assert.equal(help.code, 0)
  assert.match(help.out, /^usage: harnessweaver add tool/)
  assert.match(help.out, /exit codes:/)
})
