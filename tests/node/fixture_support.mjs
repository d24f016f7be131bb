// Shared helpers of the Node fixture runners: where the fixtures are, and
// decoding their tagged JSON (see fixtures/README.md) into JavaScript values.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, isAbsolute, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
export const FIXTURES = join(ROOT, 'fixtures')
export const hw = createRequire(import.meta.url)(join(ROOT, 'bindings-node', 'index.js'))

/** Every case file of an area, sorted. */
export function cases(area) {
  const dir = join(FIXTURES, area)
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => join(dir, f))
}

/** Every case directory of fixtures/load/, sorted. */
export function loadCaseDirs() {
  const dir = join(FIXTURES, 'load')
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .sort()
    .map((f) => join(dir, f))
    .filter((p) => statSync(p).isDirectory())
}

export function read(path) {
  return JSON.parse(readFileSync(path, 'utf8'))
}

const FLOATS = { nan: NaN, inf: Infinity, '-inf': -Infinity }

/** `{"$float": text}` → number, `{"$int": text}` → BigInt, `{"$nest": {depth, leaf}}` → nested value. */
export function untag(v) {
  if (Array.isArray(v)) return v.map(untag)
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v)
    if (keys.length === 1 && keys[0] === '$float') {
      return Object.hasOwn(FLOATS, v.$float) ? FLOATS[v.$float] : Number(v.$float)
    }
    if (keys.length === 1 && keys[0] === '$int') return BigInt(v.$int)
    if (keys.length === 1 && keys[0] === '$nest') {
      let out = untag(v.$nest.leaf)
      for (let i = 0; i < v.$nest.depth; i++) out = i % 2 === 0 ? { k: out } : [out]
      return out
    }
    const out = {}
    for (const k of keys) {
      // defineProperty, so a key `__proto__` stays a key.
      Object.defineProperty(out, k, { value: untag(v[k]), enumerable: true, writable: true, configurable: true })
    }
    return out
  }
  return v
}

/**
 * A problem's file relative to the case directory (as `expected.json` writes it).
 * The core already names files relative to the harness directory; an absolute
 * path (a file it could not place) is made relative here.
 */
export function rel(file, caseDir) {
  if (typeof file !== 'string') return file ?? null
  if (!isAbsolute(file)) return file.split('\\').join('/')
  return relative(caseDir, file).split('\\').join('/')
}
