'use strict'
// celLite: the expression language of `approval.when` and policy rules, usable
// outside a harness. The core compiles, evaluates and says what an expression
// reads; this file gathers exactly those parts and maps errors.
//
//   const { celLite } = require('harnessweaver')
//   const program = celLite.compile("args.amount_usd > 100 && !('finance' in principal.roles)")
//   program.evaluate({ args: { amount_usd: 250 }, principal: { roles: [] } })   // true
//   program.evaluate({ args: {} }, { default: null })                           // null (unevaluable)
//   program.approvalRequired({ args: {} })  // { required: true, reason: 'no such key `amount_usd` in `args`' }

/**
 * Builds the `celLite` namespace over the addon and the package's base error.
 * @param {object} native the addon (native.js)
 * @param {Function} HarnessweaverError the package's base error class
 * @param {Function} rethrow the package's mapping of other addon errors (bad vars, values with no JSON form)
 * @param {string[]} names the variable names expressions may use (the core's)
 * @param {Function} textOf a value's JSON text at a nesting depth; throws the core's error for a value with no JSON form
 */
module.exports = function makeCelLite(native, HarnessweaverError, rethrow, names, textOf) {
  /** A cel-lite expression did not compile; `message` shows the line with a caret. */
  class CompileError extends HarnessweaverError {
    constructor({ message, code, line, column, reason }) {
      super(message, code, [{ code, message: reason, file: null, line, column, path: '' }])
      /** 1-based line of the spot. */
      this.line = line
      /** 1-based column of the spot, in characters. */
      this.column = column
      /** What is wrong, without the place and caret. */
      this.reason = reason
    }
  }

  /** A runtime error stopped the evaluation; `reason` says which part failed. */
  class Unevaluable extends HarnessweaverError {
    constructor(reason) {
      super(reason, 'unevaluable', [])
      this.reason = reason
    }
  }

  // A switch over the core's names: faster than a Set on every call.
  const known = new Function('key', `switch (key) { ${names.map((n) => `case ${JSON.stringify(n)}:`).join(' ')} return true } return false`)
  const { hasOwn, getPrototypeOf } = Object
  const isEnumerable = Object.prototype.propertyIsEnumerable
  const isPlain = (v) => typeof v === 'object' && v !== null && !Array.isArray(v) &&
    (getPrototypeOf(v) === Object.prototype || getPrototypeOf(v) === null)

  // Asks the core to word what is wrong with `vars` (not a mapping, an unknown key); else returns.
  function checkVars(vars) {
    if (typeof vars !== 'object' || Array.isArray(vars)) native.celLiteBadVars(Array.isArray(vars) ? 'array' : typeof vars, null)
    for (const key in vars) if (!known(key) && hasOwn(vars, key)) native.celLiteBadVars(null, key)
  }

  // One gather function per program, written from the core's reads (`[name, parent, whole, depth]`,
  // parents first): it reads exactly those parts (own enumerable properties, as the whole
  // conversion does) and hands them to the program's native function with their kinds
  // (see src/cel_lite.rs): a string, number, bool or null as itself; a plain object read field
  // by field a map; another value read whole its JSON text; anything missing absent.
  function gatherer(reads, evaluate) {
    const words = Math.ceil((reads.length + 1) / 16)
    const kind = (i, k) => `k${(i + 1) >> 4} |= ${(k << (2 * ((i + 1) & 15))) | 0}`
    const read = (i) => {
      const [name, parent, whole, depth] = reads[i]
      const key = JSON.stringify(name)
      const from = parent === null ? 'vars' : `v${parent}`
      // A variable must be own (an own `undefined` is unbound); a field own and enumerable.
      const has = parent === null ? `hasOwn(vars, ${key})` : `isEnumerable.call(${from}, ${key})`
      const value = `if (isScalar(v${i})) { p${i} = v${i}; ${kind(i, 1)} } else { p${i} = textOf(v${i}, ${depth}); ${kind(i, 3)} }`
      const fields = reads.map((r, j) => (r[1] === i ? read(j) : '')).join('')
      const inner = whole ? value : `if (isPlain(v${i})) { ${kind(i, 2)}; ${fields} } else { ${value} }`
      const unbound = parent === null ? `if (v${i} !== undefined) ` : ''
      return `if (${has}) { const v${i} = ${from}[${key}]; ${unbound}{ ${inner} } }\n`
    }
    const ks = Array.from({ length: words }, (_, w) => `k${w}`)
    const ps = reads.map((_, i) => `p${i}`)
    const body = `return function gather(vars, want) {
      let ${ks.map((k, w) => `${k} = ${w === 0 ? 'want' : 0}`).join(', ')}${ps.length ? `, ${ps.join(', ')}` : ''}
      if (vars !== undefined && vars !== null) {
        checkVars(vars)
        ${reads.map((r, i) => (r[1] === null ? read(i) : '')).join('')}
      }
      const out = evaluate(${[...ks, ...ps].join(', ')})
      return typeof out === 'object' && out !== null ? JSON.parse(out.json) : out
    }`
    const isScalar = (v) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || v === null
    return new Function('hasOwn', 'isEnumerable', 'isPlain', 'isScalar', 'checkVars', 'textOf', 'evaluate', body)(
      hasOwn, isEnumerable, isPlain, isScalar, checkVars, textOf, evaluate)
  }

  function mapError(err) {
    if (typeof err === 'string') throw new Unevaluable(err)
    return rethrow(err)
  }

  const TOKEN = Symbol('compiled')
  const GATHER = Symbol('gather')

  /** A compiled expression: immutable; evaluate it as often as needed. */
  class Program {
    constructor(token, source, reads, evaluate) {
      if (token !== TOKEN) throw new TypeError('use celLite.compile(text) to make a Program')
      this[GATHER] = gatherer(reads, evaluate)
      /** The source text. */
      this.source = source
      /** The variable names the expression uses, in order of first use. */
      this.names = Object.freeze(reads.filter((r) => r[1] === null).map((r) => r[0]))
      Object.freeze(this)
    }

    /**
     * The value of the expression; throws Unevaluable, unless `options.default` is given.
     * @param {object} [vars] some of principal, tenant, task, tool, args, labels
     * @param {{default?: unknown}} [options]
     */
    evaluate(vars, options) {
      try {
        return this[GATHER](vars, 0)
      } catch (err) {
        if (typeof err === 'string' && options && typeof options === 'object' && 'default' in options) return options.default
        return mapError(err)
      }
    }

    /** The approval rule: `{ required, reason }`; true, unevaluable or not a bool means required. */
    approvalRequired(vars) {
      let answer
      try {
        answer = this[GATHER](vars, 1)
      } catch (err) {
        return mapError(err)
      }
      return typeof answer === 'string' ? { required: true, reason: answer } : { required: answer, reason: null }
    }

    toString() {
      return `Program(${JSON.stringify(this.source)})`
    }
  }

  /** Compiles a cel-lite expression; throws CompileError with `code`, `line`, `column`. */
  function compile(text) {
    if (typeof text !== 'string') throw new TypeError('celLite.compile expects the expression as a string')
    const [evaluate, json] = native.celLiteCompile(text)
    const data = JSON.parse(json)
    if (evaluate === null) throw new CompileError(data)
    return new Program(TOKEN, text, data, evaluate)
  }

  /** The variable names an expression may use. */
  const NAMES = Object.freeze(names)

  return Object.freeze({ compile, Program, CompileError, Unevaluable, NAMES })
}
