'use strict'
// celLite: the expression language of `approval.when` and policy rules, usable
// outside a harness. The core compiles and evaluates; this file only shapes the
// API and turns the addon's errors into CompileError / Unevaluable.
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
 */
module.exports = function makeCelLite(native, HarnessweaverError, rethrow) {
  /** A cel-lite expression did not compile; `message` shows the line with a caret. */
  class CompileError extends HarnessweaverError {
    constructor(message, code, line, column, reason) {
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

  function mapError(err) {
    if (err && typeof err === 'object' && err.kind === 'unevaluable') throw new Unevaluable(err.reason)
    if (err && typeof err === 'object' && err.kind === 'cel_compile') {
      throw new CompileError(err.message, err.code, err.line, err.column, err.reason)
    }
    return rethrow(err)
  }

  const NATIVE = Symbol('native')

  /** A compiled expression: immutable; evaluate it as often as needed. */
  class Program {
    constructor(inner) {
      if (!(inner instanceof native.CelProgram)) throw new TypeError('use celLite.compile(text) to make a Program')
      this[NATIVE] = inner
      /** The source text. */
      this.source = inner.source
      Object.freeze(this)
    }

    /** The variable names the expression uses, in order of first use. */
    get names() {
      return this[NATIVE].names
    }

    /**
     * The value of the expression; throws Unevaluable, unless `options.default` is given.
     * @param {object} [vars] some of principal, tenant, task, tool, args, labels
     * @param {{default?: unknown}} [options]
     */
    evaluate(vars, options) {
      try {
        return this[NATIVE].evaluate(vars)
      } catch (err) {
        if (options && typeof options === 'object' && 'default' in options && err && err.kind === 'unevaluable') {
          return options.default
        }
        return mapError(err)
      }
    }

    /** The approval rule: `{ required, reason }`; true, unevaluable or not a bool means required. */
    approvalRequired(vars) {
      try {
        return this[NATIVE].approvalRequired(vars)
      } catch (err) {
        return mapError(err)
      }
    }

    toString() {
      return `Program(${JSON.stringify(this.source)})`
    }
  }

  /** Compiles a cel-lite expression; throws CompileError with `code`, `line`, `column`. */
  function compile(text) {
    if (typeof text !== 'string') throw new TypeError('celLite.compile expects the expression as a string')
    try {
      return new Program(native.celLiteCompile(text))
    } catch (err) {
      return mapError(err)
    }
  }

  /** The variable names an expression may use. */
  const NAMES = Object.freeze(['principal', 'tenant', 'task', 'tool', 'args', 'labels'])

  return Object.freeze({ compile, Program, CompileError, Unevaluable, NAMES })
}
