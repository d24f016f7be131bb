'use strict'
// `npx harnessweaver add tool ./tools.ts#name`: a manifest from a TypeScript
// function. The types are read with the TypeScript compiler API, from the
// `typescript` package of the user's project (never bundled; TypeScript 6's
// API in the package, or TypeScript 7's `typescript/unstable/sync`): a handler
// receives its arguments as one object, so the function's first parameter
// (an interface, a type literal, …) becomes `input_schema`. The manifest is
// written as JSON beside the harness (tools/<name>.json), then the core's
// `tools add` puts its directory into `tools.manifests` and pins it.

const fs = require('node:fs')
const path = require('node:path')
const { parseArgs } = require('node:util')

// The manifest's values, from the core.
// Tools with `contractSideEffects` get the draft `effect: null` (issue 21): it does not load until reviewed.
const { risks: RISKS, sideEffects: SIDE_EFFECTS, contractSideEffects: CONTRACT_SIDE_EFFECTS } = require('../native.js').request('tables', {})
const EXIT_OK = 0
const EXIT_PROBLEMS = 1
const EXIT_USAGE = 2
const EXIT_UNAVAILABLE = 3

const HELP = `usage: harnessweaver add tool ./tools.ts#name [--risk R] [--side-effect S] [--transport native]
                              [--harness FILE] [--out DIR] [--force] [--json]

Writes a tool manifest from an exported TypeScript function, reading its types
with the TypeScript compiler (the \`typescript\` package of your project, 6 or 7:
npm install --save-dev typescript). A handler receives the call's arguments as one
object, so the function's first parameter gives input_schema: string, number,
boolean, null, literal unions (enum), TypeScript enums, arrays and tuples,
Record<string, T> and index signatures, interfaces and type literals (optional
properties are not required; JSDoc on a property, also of a type literal written
inline, is its description), unions (anyOf), and destructuring defaults
(default); enum values are sorted, so TypeScript 6 and 7 write the same
manifest. The name is the function's, the description the first paragraph of
its JSDoc. Then adds the manifest's
directory to the harness's tools.manifests (a text edit that keeps comments; a
missing harness.yaml is created) and pins it (\`harnessweaver tools add\`).

options:
  --risk R            low, medium, high or critical (default low)
  --side-effect S     none, read, write_internal, write_external or destructive (default none)
                      (write_external and destructive get the draft \`effect: null\`, which
                      does not load until you fill it in and run \`harnessweaver tools add\`)
  --transport T       native (the only transport a function can have)
  --harness FILE      the harness (default ./harness.yaml; a directory means its harness.yaml)
  --out DIR           where to write <name>.json (default tools/ beside the harness)
  --force             overwrite an existing manifest that differs
  --json              print one JSON document for scripts
  -h, --help          print this help

exit codes: 0 clean, 1 problems found (a type with no JSON Schema form, a manifest in
the way, a harness that does not load), 2 usage error, 3 no \`typescript\` package found`

class MappingError extends Error {}

function usage(message) {
  process.stderr.write(`harnessweaver add tool: ${message}\n\n${HELP}\n`)
  return EXIT_USAGE
}

function fail(message, code, asJson) {
  if (asJson) {
    process.stdout.write(JSON.stringify({ ok: false, problems: [{ code, message }] }, null, 2) + '\n')
  } else {
    process.stdout.write(`error: ${message} [${code}]\n`)
  }
  return EXIT_PROBLEMS
}

/**
 * The TypeScript compiler of the user's project, as an engine `describe` can
 * use, or null when none is installed. TypeScript 6 and older have the
 * compiler API in the package itself; TypeScript 7 (the native compiler) has
 * none there, only `typescript/unstable/sync`, which talks to its `tsgo`
 * binary. Each engine gives the same few questions about types, so the
 * mapping to JSON Schema below is written once.
 */
function findTypescript(dirs) {
  for (const dir of dirs) {
    let ts
    try {
      ts = require(require.resolve('typescript', { paths: [dir] }))
    } catch {
      continue // not installed there
    }
    if (typeof ts.createProgram === 'function') return { version: ts.version, open: (file) => classicEngine(ts, file) }
    const major = Number(String(ts.version).split('.')[0])
    if (major >= 7) {
      let api, ast
      try {
        api = require(require.resolve('typescript/unstable/sync', { paths: [dir] }))
        ast = require(require.resolve('typescript/unstable/ast', { paths: [dir] }))
      } catch (err) {
        throw new MappingError(`TypeScript ${ts.version} is installed, but its compiler API (\`typescript/unstable/sync\`) did not load here ` +
          `(${err.code ?? err.message}); it needs Node.js 20.19 or newer`)
      }
      return { version: ts.version, open: (file) => nativeEngine(api, ast.SyntaxKind, file) }
    }
    throw new MappingError(`the \`typescript\` package here (${ts.version ?? 'unknown version'}) has no compiler API add tool knows`)
  }
  return null
}

/** The first paragraph of a JSDoc comment, on one line. */
function firstParagraph(text) {
  return String(text ?? '').trim().split(/\n\s*\n/)[0].split('\n').map((l) => l.trim()).filter(Boolean).join(' ')
}

/** Literal defaults of a destructured first parameter: `({ limit = 10 }: Args)`. */
function defaultsOf(SK, param, textOf) {
  const out = {}
  if (!param || param.name?.kind !== SK.ObjectBindingPattern) return out
  for (const el of param.name.elements) {
    const init = el.initializer
    if (!init) continue
    const key = textOf(el.propertyName ?? el.name)
    if (init.kind === SK.StringLiteral || init.kind === SK.NoSubstitutionTemplateLiteral) out[key] = init.text
    else if (init.kind === SK.NumericLiteral) out[key] = Number(init.text)
    else if (init.kind === SK.PrefixUnaryExpression && init.operator === SK.MinusToken && init.operand?.kind === SK.NumericLiteral) out[key] = -Number(init.operand.text)
    else if (init.kind === SK.TrueKeyword) out[key] = true
    else if (init.kind === SK.FalseKeyword) out[key] = false
    else if (init.kind === SK.NullKeyword) out[key] = null
  }
  return out
}

/** The compiler API of TypeScript 6 and older, in this process. */
function classicEngine(ts, file) {
  const program = ts.createProgram([file], {
    strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext, skipLibCheck: true, allowImportingTsExtensions: true,
  })
  const checker = program.getTypeChecker()
  const doc = (symbol) => firstParagraph(ts.displayPartsToString(symbol.getDocumentationComment(checker)))
  const typeOf = (symbol) => {
    const decl = symbol.valueDeclaration ?? symbol.declarations?.[0]
    return decl ? checker.getTypeOfSymbolAtLocation(symbol, decl) : checker.getDeclaredTypeOfSymbol(symbol)
  }
  return {
    F: ts.TypeFlags, S: ts.SymbolFlags, checker,
    exports() {
      const source = program.getSourceFile(file)
      if (!source) throw new MappingError(`cannot read \`${file}\``)
      const moduleSymbol = checker.getSymbolAtLocation(source)
      return moduleSymbol ? checker.getExportsOfModule(moduleSymbol) : []
    },
    typeOf,
    doc,
    signatureDoc: (signature) => firstParagraph(ts.displayPartsToString(signature.getDocumentationComment(checker))),
    callSignatures: (type) => type.getCallSignatures(),
    members: (type) => type.types,
    literal: (type) => (type.flags & ts.TypeFlags.BooleanLiteral ? checker.typeToString(type) === 'true' : type.value),
    stringIndex: (type) => type.getStringIndexType(),
    defaults: (param) => defaultsOf(ts.SyntaxKind, param.valueDeclaration, (n) => n.getText()),
    close() {},
  }
}

/** The compiler API of TypeScript 7 (`typescript/unstable/sync`, over its `tsgo` binary). */
function nativeEngine(api, SyntaxKind, file) {
  const { SignatureKind, TypeFlags } = api
  const session = new api.API({ cwd: path.dirname(file) })
  try {
    const project = session.updateSnapshot({ openFiles: [file] }).getDefaultProjectForFile(file)
    if (!project) throw new MappingError(`TypeScript found no project for \`${file}\``)
    const checker = project.checker
    return {
      F: TypeFlags, S: api.SymbolFlags, checker,
      exports() {
        const source = project.program.getSourceFile(file)
        if (!source) throw new MappingError(`cannot read \`${file}\``)
        const moduleSymbol = checker.getSymbolAtLocation(source)
        return moduleSymbol ? checker.getExportsOfModule(moduleSymbol) : []
      },
      typeOf: (symbol) => checker.getTypeOfSymbol(symbol),
      doc: (symbol) => firstParagraph(symbol.getDocumentationComment(checker)),
      signatureDoc: () => '',
      callSignatures: (type) => checker.getSignaturesOfType(type, SignatureKind.Call),
      members: (type) => type.getTypes(),
      literal: (type) => type.value,
      stringIndex: (type) => checker.getIndexInfosOfType(type).find((i) => i.keyType.flags & TypeFlags.String)?.valueType,
      defaults: (param) => defaultsOf(SyntaxKind, param.valueDeclaration?.resolve(project), (n) => n.text),
      close: () => session.close(),
    }
  } catch (err) {
    session.close()
    throw err
  }
}

/** Maps TypeScript types to JSON Schema; throws MappingError with the place and a remedy. */
function makeMapper(engine) {
  const { F, S, checker } = engine
  const seen = []
  const literal = (t) => (t.flags & (F.StringLiteral | F.NumberLiteral | F.BooleanLiteral) ? engine.literal(t) : undefined)
  const jsonType = (v) => (typeof v === 'string' ? 'string' : typeof v === 'boolean' ? 'boolean' : Number.isInteger(v) ? 'integer' : 'number')
  // Sorted: the order of a union's members is the compiler's (TypeScript 6
  // and 7 differ), and the manifest, so its pin, must not depend on it.
  const order = (a, b) => (typeof a === typeof b ? (a < b ? -1 : a > b ? 1 : 0) : typeof a < typeof b ? -1 : 1)
  const enumOf = (unsorted) => {
    const values = [...unsorted].sort(order)
    const kinds = new Set(values.map(jsonType))
    if (kinds.size === 2 && kinds.has('integer') && kinds.has('number')) return { type: 'number', enum: values }
    return kinds.size === 1 ? { type: [...kinds][0], enum: values } : { enum: values }
  }
  const remedy = 'use string, number, boolean, literal unions, arrays, Record<string, T>, interfaces or type literals, or edit input_schema in the manifest by hand'

  function schema(type, where) {
    const f = type.flags
    if (f & (F.Any | F.Unknown)) return {}
    if (f & F.String) return { type: 'string' }
    if (f & F.Number) return { type: 'number' }
    if (f & F.Boolean) return { type: 'boolean' }
    if (f & F.Null) return { type: 'null' }
    if (f & (F.StringLiteral | F.NumberLiteral | F.BooleanLiteral)) return enumOf([literal(type)])
    if (f & F.Union) {
      let members = engine.members(type).filter((t) => !(t.flags & (F.Undefined | F.Void)))
      const nullable = members.some((t) => t.flags & F.Null)
      members = members.filter((t) => !(t.flags & F.Null))
      const bools = members.filter((t) => t.flags & F.BooleanLiteral)
      let inner
      if (members.length > 0 && members.every((t) => literal(t) !== undefined)) {
        inner = bools.length === 2 && members.length === 2 ? { type: 'boolean' } : enumOf(members.map(literal))
      } else if (members.length === 1) {
        inner = schema(members[0], where)
      } else {
        // `boolean` inside a wider union is `true | false`: keep it one member.
        const rest = bools.length === 2 ? members.filter((t) => !(t.flags & F.BooleanLiteral)) : members
        const options = rest.map((t) => schema(t, where))
        if (bools.length === 2) options.push({ type: 'boolean' })
        inner = options.length === 1 ? options[0] : { anyOf: options }
      }
      if (!nullable) return inner
      if (inner.enum) return { ...inner, type: [inner.type, 'null'].filter(Boolean), enum: [...inner.enum, null] }
      if (typeof inner.type === 'string') return { ...inner, type: [inner.type, 'null'] }
      return { anyOf: [inner, { type: 'null' }] }
    }
    if (checker.isTupleType(type)) {
      const items = checker.getTypeArguments(type).map((t, i) => schema(t, `${where}[${i}]`))
      return { type: 'array', prefixItems: items, minItems: items.length, maxItems: items.length }
    }
    if (checker.isArrayType(type)) {
      const [item] = checker.getTypeArguments(type)
      return { type: 'array', items: schema(item, `${where}[]`) }
    }
    if (f & F.Object) {
      if (engine.callSignatures(type).length > 0) throw new MappingError(`${where}: a function has no JSON form; ${remedy}`)
      const name = checker.typeToString(type)
      if (['Date', 'Map', 'Set', 'RegExp', 'Promise', 'Buffer', 'Uint8Array'].some((n) => name === n || name.startsWith(`${n}<`))) {
        throw new MappingError(`${where}: \`${name}\` has no JSON form (a call delivers plain JSON values); ${remedy}`)
      }
      if (seen.some((t) => t === type || (t.id !== undefined && t.id === type.id))) throw new MappingError(`${where}: \`${name}\` refers to itself; ${remedy}`)
      seen.push(type)
      try {
        const properties = {}
        const required = []
        for (const prop of checker.getPropertiesOfType(type)) {
          if (prop.flags & S.Method) throw new MappingError(`${where}.${prop.name}: a method has no JSON form; ${remedy}`)
          let s = schema(engine.typeOf(prop), `${where}.${prop.name}`)
          // JSDoc on the property, of an interface or of a type literal written inline.
          const doc = engine.doc(prop)
          if (doc && !s.description) s = { ...s, description: doc }
          properties[prop.name] = s
          if (!(prop.flags & S.Optional)) required.push(prop.name)
        }
        const out = { type: 'object', properties }
        if (required.length) out.required = required
        const index = engine.stringIndex(type)
        out.additionalProperties = index ? schema(index, `${where}[string]`) : false
        if (index && Object.keys(properties).length === 0) return { type: 'object', additionalProperties: out.additionalProperties }
        return out
      } finally {
        seen.pop()
      }
    }
    throw new MappingError(`${where}: \`${checker.typeToString(type)}\` has no JSON Schema form; ${remedy}`)
  }
  return schema
}

/** `{name, description, input_schema}` of exported function `name` in `file`, read by `compiler` (findTypescript's). */
function describe(compiler, file, name) {
  const engine = compiler.open(file)
  try {
    return describeWith(engine, file, name)
  } finally {
    engine.close()
  }
}

function describeWith(engine, file, name) {
  const { S, checker } = engine
  const exported = engine.exports()
  let symbol = exported.find((s) => s.name === name)
  if (!symbol) {
    const names = exported.map((s) => s.name).sort()
    const near = names.filter((n) => n.toLowerCase() === name.toLowerCase())
    const hint = near.length ? `; did you mean \`${near[0]}\`?` : ''
    throw new MappingError(`\`${file}\` exports no \`${name}\` (exports: ${names.join(', ') || 'none'})${hint}`)
  }
  if (symbol.flags & S.Alias) symbol = checker.getAliasedSymbol(symbol)
  const type = engine.typeOf(symbol)
  const [signature] = engine.callSignatures(type)
  if (!signature) throw new MappingError(`\`${name}\` in \`${file}\` is not a function`)
  const params = signature.getParameters()
  let schema = { type: 'object', properties: {}, additionalProperties: false }
  if (params.length > 0) {
    const first = params[0]
    const paramType = engine.typeOf(first)
    const mapped = makeMapper(engine)(checker.getNonNullableType(paramType) ?? paramType, `parameter \`${first.name}\``)
    if (mapped.type !== 'object') {
      throw new MappingError(
        `parameter \`${first.name}\` of \`${name}\` is \`${checker.typeToString(paramType)}\`, but a handler receives the call's ` +
        `arguments as one object: write \`function ${name}(args: { ${first.name}: ${checker.typeToString(paramType)} })\``)
    }
    schema = mapped
    for (const [key, value] of Object.entries(engine.defaults(first))) {
      if (schema.properties?.[key]) schema.properties[key] = { ...schema.properties[key], default: value }
    }
  }
  const description = engine.doc(symbol) || engine.signatureDoc(signature)
  return { name, description: description || `${name}.`, input_schema: schema }
}

function main(argv, cliRun) {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        help: { type: 'boolean', short: 'h' }, risk: { type: 'string' }, 'side-effect': { type: 'string' },
        transport: { type: 'string' }, harness: { type: 'string' }, out: { type: 'string' },
        force: { type: 'boolean' }, json: { type: 'boolean' },
      },
    })
  } catch (err) {
    return usage(err.message)
  }
  const o = parsed.values
  if (o.help) {
    process.stdout.write(HELP + '\n')
    return EXIT_OK
  }
  if (parsed.positionals.length !== 1) return usage(parsed.positionals.length ? `unexpected argument \`${parsed.positionals[1]}\`` : 'name the function as ./file.ts#name')
  const ref = parsed.positionals[0]
  const hash = ref.lastIndexOf('#')
  if (hash <= 0 || hash === ref.length - 1) return usage(`\`${ref}\` is not ./file.ts#name`)
  const risk = o.risk ?? 'low'
  const side = o['side-effect'] ?? 'none'
  if (!RISKS.includes(risk)) return usage(`--risk is one of ${RISKS.join(', ')}, not \`${risk}\``)
  if (!SIDE_EFFECTS.includes(side)) return usage(`--side-effect is one of ${SIDE_EFFECTS.join(', ')}, not \`${side}\``)
  if ((o.transport ?? 'native') !== 'native') return usage('a function is a native tool: --transport native')
  const file = path.resolve(ref.slice(0, hash))
  const name = ref.slice(hash + 1)
  if (!/\.(c|m)?tsx?$/.test(file)) return fail(`\`${ref.slice(0, hash)}\` is not a TypeScript file; add tool reads types, so name a .ts file, or write the manifest by hand (docs/harness.md)`, 'unsupported_file', o.json)
  if (!fs.existsSync(file)) return fail(`cannot read \`${ref.slice(0, hash)}\`: no such file`, 'io_error', o.json)
  let harness = path.resolve(o.harness ?? 'harness.yaml')
  if (fs.existsSync(harness) && fs.statSync(harness).isDirectory()) harness = path.join(harness, 'harness.yaml')
  const base = path.dirname(harness)

  let compiler
  try {
    compiler = findTypescript([process.cwd(), path.dirname(file), base])
  } catch (err) {
    if (!(err instanceof MappingError)) throw err
    process.stderr.write(`harnessweaver add tool: ${err.message}\n`)
    return EXIT_UNAVAILABLE
  }
  if (!compiler) {
    process.stderr.write(
      `harnessweaver add tool: reading the types of \`${ref}\` needs the TypeScript compiler, and no \`typescript\` ` +
      `package is installed in this project (looked from ${process.cwd()}). Install it with \`npm install --save-dev typescript\` ` +
      'and run this again, or write the manifest by hand (docs/cli.md, docs/harness.md) and run `harnessweaver tools add MANIFEST`.\n')
    return EXIT_UNAVAILABLE
  }
  let tool
  try {
    tool = describe(compiler, file, name)
  } catch (err) {
    if (err instanceof MappingError) return fail(`\`${ref}\`: ${err.message}`, 'unsupported_type', o.json)
    // The compiler itself failed (an API that changed, a crashed tsgo): say so, without a stack trace.
    return fail(`\`${ref}\`: TypeScript ${compiler.version} could not read the types: ${err.message}`, 'typescript_error', o.json)
  }
  const manifest = {
    apiVersion: 'harnessweaver/v1',
    kind: 'Tool',
    metadata: { name: tool.name },
    spec: {
      transport: 'native',
      handler: `${path.relative(base, file).split(path.sep).join('/')}#${name}`,
      description: tool.description,
      side_effect: side,
      risk,
      input_schema: tool.input_schema,
    },
  }
  const draft = CONTRACT_SIDE_EFFECTS.includes(side)
  if (draft) manifest.spec.effect = null
  const text = JSON.stringify(manifest, null, 2) + '\n'
  const outDir = path.resolve(o.out ?? path.join(base, 'tools'))
  const target = path.join(outDir, `${name}.json`)
  const previous = fs.existsSync(target) ? fs.readFileSync(target, 'utf8') : null
  const withoutPin = (t) => t.split('\n').filter((l) => !l.trim().startsWith('"definition_digest"')).join('\n')
  let toWrite = text
  if (previous !== null && previous !== text) {
    if (withoutPin(previous) === withoutPin(text)) toWrite = previous
    else if (!o.force) return fail(`\`${path.relative(process.cwd(), target)}\` exists and differs; pass --force to overwrite it`, 'manifest_exists', o.json)
  }
  fs.mkdirSync(outDir, { recursive: true })
  if (previous !== toWrite) fs.writeFileSync(target, toWrite)
  if (!o.json) process.stdout.write(`wrote: ${path.relative(process.cwd(), target)}: tool \`${name}\` from \`${ref}\`\n`)
  const code = cliRun(['tools', 'add', target, '--harness', harness, ...(o.json ? ['--json'] : [])])
  if (code !== EXIT_OK && draft) {
    // A draft stays for review; the core said why it does not load yet.
    const shown = path.relative(process.cwd(), target)
    if (!o.json) process.stdout.write(`add tool: \`${shown}\` is a draft: fill in \`spec.effect\`, then run \`harnessweaver tools add ${shown}\`\n`)
  } else if (code !== EXIT_OK && previous !== toWrite) {
    // The core printed why; leave no manifest behind that the globs would pick up.
    if (previous === null) fs.rmSync(target)
    else fs.writeFileSync(target, previous)
    if (!o.json) process.stdout.write(`add tool: \`${path.relative(process.cwd(), target)}\` was ${previous === null ? 'removed' : 'put back as it was'}\n`)
  }
  return code
}

module.exports = { main, describe, findTypescript, HELP }
