'use strict'
// celLite: the expression language of `approval.when` and policy rules, usable
// outside a harness. The core compiles, evaluates, and writes the JavaScript
// that gathers what an expression reads (and decides common cases); this file
// shapes the API around it.
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
  // What is wrong with variables the core's gather function checked: thrown as the core words it.
  const wrong = (type, key) => native.request('cel_vars', type === undefined ? { key } : { type })

  const TOKEN = Symbol('compiled')
  const GATHER = Symbol('gather')

  /** A compiled expression: immutable; evaluate it as often as needed. */
  class Program {
    constructor(token, source, [evaluate, gather, names]) {
      if (token !== TOKEN) throw new TypeError('use celLite.compile(text) to make a Program')
      // The core's JavaScript: checks and gathers the variables, decides common cases, else calls `evaluate`.
      this[GATHER] = new Function(`return ${gather}`)()(evaluate, wrong)
      /** The source text. */
      this.source = source
      /** The variable names the expression uses, in order of first use. */
      this.names = Object.freeze(names)
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
