'use strict'
// celLite: the expression language of `approval.when` and policy rules, usable
// outside a harness. The core compiles, evaluates and says what an expression
// reads; this file gathers exactly those parts.
//
//   const { celLite } = require('harnessweaver')
//   const program = celLite.compile("args.amount_usd > 100 && !('finance' in principal.roles)")
//   program.evaluate({ args: { amount_usd: 250 }, principal: { roles: [] } })   // true
//   program.evaluate({ args: {} }, { default: null })                           // null (unevaluable)
//   program.approvalRequired({ args: {} })  // { required: true, reason: 'no such key `amount_usd` in `args`' }

/** Builds the `celLite` namespace over the addon, adding its error classes to `classes` (which the addon throws). */
module.exports = function makeCelLite(native, classes, names) {
  // A cel-lite expression did not compile (`message` shows the line with a caret; `line`, `column`, `reason`),
  // or a runtime error stopped an evaluation (`reason` says which part failed): the addon throws them.
  for (const name of ['CompileError', 'Unevaluable']) classes[name] = { [name]: class extends classes.HarnessweaverError {} }[name]
  // A switch over the core's names: faster than a Set on every call.
  const known = new Function('key', `switch (key) { ${names.map((n) => `case ${JSON.stringify(n)}:`).join(' ')} return true } return false`)
  const { hasOwn, getPrototypeOf } = Object
  const isEnumerable = Object.prototype.propertyIsEnumerable
  const isPlain = (v) => typeof v === 'object' && v !== null && !Array.isArray(v) && plainProto(getPrototypeOf(v))
  const plainProto = (p) => p === Object.prototype || p === null
  // Asks the core to word what is wrong with `vars` (not a mapping, an unknown key); else returns.
  function checkVars(vars) {
    if (typeof vars !== 'object' || Array.isArray(vars)) native.request('cel_vars', { type: Array.isArray(vars) ? 'array' : typeof vars })
    for (const key in vars) if (!known(key) && hasOwn(vars, key)) native.request('cel_vars', { key })
  }

  // One gather function per program, written from the core's reads (`[name, parent, whole, depth]`,
  // parents first): it reads exactly those parts (own enumerable properties, as the whole conversion
  // does) and hands them to the program's native function with their kinds (see src/cel_lite.rs).
  function gatherer(reads, evaluate, fast) {
    const kind = (i, k) => `k${(i + 1) >> 4} |= ${(k << (2 * ((i + 1) & 15))) | 0}`
    const read = (i) => {
      const [name, parent, whole] = reads[i]
      const key = JSON.stringify(name)
      const from = parent === null ? 'vars' : `v${parent}`
      // A variable must be own (an own `undefined` is unbound); a field own and enumerable.
      const has = parent === null ? `hasOwn(vars, ${key})` : `isEnumerable.call(${from}, ${key})`
      const fields = reads.map((r, j) => (r[1] === i ? read(j) : '')).join('')
      const inner = whole ? `p${i} = v${i}; ${kind(i, 1)}` : `if (isPlain(v${i})) { ${kind(i, 2)}; ${fields} } else { p${i} = v${i}; ${kind(i, 1)} }`
      return `if (${has}) { const v${i} = ${from}[${key}]; ${parent === null ? `if (v${i} !== undefined) ` : ''}{ ${inner} } }\n`
    }
    const ks = Array.from({ length: Math.ceil((reads.length + 1) / 16) }, (_, w) => `k${w}`)
    const ps = reads.map((_, i) => `p${i}`)
    const body = `return function gather(vars, want) {
      let ${ks.map((k, w) => `${k} = ${w === 0 ? 'want' : 0}`).join(', ')}${ps.length ? `, ${ps.join(', ')}` : ''}
      if (vars !== undefined && vars !== null) {
        checkVars(vars)
        ${reads.map((r, i) => (r[1] === null ? read(i) : '')).join('')}
      }
      ${fast ? `const decided = fast(${[...ks, ...ps].join(', ')}); if (decided !== undefined) return decided` : ''}
      return evaluate(${[...ks, ...ps].join(', ')})
    }`
    // The core's fast path (`Program::fast_js`): decides the common cases here, else leaves them to the core.
    fast = fast && new Function(`return ${fast}`)()
    return new Function('hasOwn', 'isEnumerable', 'isPlain', 'checkVars', 'evaluate', 'fast', body)(hasOwn, isEnumerable, isPlain, checkVars, evaluate, fast)
  }

  const TOKEN = Symbol('compiled')
  const GATHER = Symbol('gather')

  /** A compiled expression: immutable; evaluate it as often as needed. */
  class Program {
    constructor(token, source, [evaluate, reads, fast]) {
      if (token !== TOKEN) throw new TypeError('use celLite.compile(text) to make a Program')
      this[GATHER] = gatherer(reads, evaluate, fast)
      /** The source text. */
      this.source = source
      /** The variable names the expression uses, in order of first use. */
      this.names = Object.freeze(reads.filter((r) => r[1] === null).map((r) => r[0]))
      Object.freeze(this)
    }

    /** The value of the expression; throws Unevaluable, unless `options.default` is given. */
    evaluate(vars, options) {
      try {
        return this[GATHER](vars, 0)
      } catch (err) {
        if (err instanceof classes.Unevaluable && options && typeof options === 'object' && 'default' in options) return options.default
        throw err
      }
    }

    /** The approval rule: `{ required, reason }`; true, unevaluable or not a bool means required. */
    approvalRequired(vars) {
      const answer = this[GATHER](vars, 1)
      return typeof answer === 'string' ? { required: true, reason: answer } : { required: answer, reason: null }
    }

    toString() {
      return `Program(${JSON.stringify(this.source)})`
    }
  }

  /** Compiles a cel-lite expression; throws CompileError with `code`, `line`, `column`. */
  function compile(text) {
    if (typeof text !== 'string') throw new TypeError('celLite.compile expects the expression as a string')
    return new Program(TOKEN, text, native.celLiteCompile(text))
  }

  return Object.freeze({ compile, Program, CompileError: classes.CompileError, Unevaluable: classes.Unevaluable, NAMES: Object.freeze(names) })
}
