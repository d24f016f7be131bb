// Lists every exported declaration of a .d.ts (and every member of an exported
// class, interface or namespace) that has no TSDoc comment. Prints one line per
// missing comment and exits 1 when there is any. Uses the TypeScript compiler
// (bindings-node's devDependency) to read the file.
//   node tests/docs/check_tsdoc.mjs bindings-node/index.d.ts
import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
const require = createRequire(join(root, 'bindings-node', 'package.json'))
const ts = require('typescript')

const file = process.argv[2] ?? join(root, 'bindings-node', 'index.d.ts')
const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
const missing = []

function hasDoc(node) {
  return (node.jsDoc ?? []).some((d) => (d.comment ?? '').toString().trim() !== '' || (d.tags ?? []).length > 0)
}

function nameOf(node) {
  if (node.name && ts.isIdentifier(node.name)) return node.name.text
  if (node.name && ts.isStringLiteral(node.name)) return node.name.text
  if (ts.isIndexSignatureDeclaration(node)) return '[index]'
  if (ts.isVariableStatement(node)) return node.declarationList.declarations.map((d) => d.name.getText()).join(', ')
  if (ts.isConstructorDeclaration(node)) return 'constructor'
  return node.getText().slice(0, 30)
}

function where(node) {
  const { line } = source.getLineAndCharacterOfPosition(node.getStart())
  return `${file}:${line + 1}`
}

function isPrivate(node) {
  return (node.modifiers ?? []).some((m) => m.kind === ts.SyntaxKind.PrivateKeyword)
}

function members(node, prefix) {
  for (const m of node.members ?? []) {
    if (isPrivate(m) || ts.isConstructorDeclaration(m)) continue
    // `[field: string]: unknown` catch-alls are covered by their type's comment.
    if (ts.isIndexSignatureDeclaration(m)) continue
    if (!hasDoc(m)) missing.push(`${where(m)}: ${prefix}.${nameOf(m)}`)
  }
}

function visit(statements, prefix, exportedOnly) {
  for (const node of statements) {
    const exported = !exportedOnly || (node.modifiers ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword)
    if (!exported) continue
    const name = prefix ? `${prefix}.${nameOf(node)}` : nameOf(node)
    const internal = (node.jsDoc ?? []).some((d) => (d.tags ?? []).some((t) => t.tagName.text === 'internal'))
    if (internal) continue
    if (!hasDoc(node)) missing.push(`${where(node)}: ${name}`)
    if (ts.isClassDeclaration(node) || ts.isInterfaceDeclaration(node)) members(node, name)
    if (ts.isModuleDeclaration(node) && node.body && ts.isModuleBlock(node.body)) visit(node.body.statements, name, false)
  }
}

visit(source.statements, '', true)
for (const line of missing) console.log(line)
process.exitCode = missing.length ? 1 : 0
