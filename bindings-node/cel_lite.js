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
 * @param {string[]} names the variable names expressions may use (the core's)
 */
module.exports = function makeCelLite(native, HarnessweaverError, rethrow, names) {
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
  const [evaluateParts, approvalParts] = native.celLitePartsFunctions()
  const PLAN = Symbol('plan')
  const HANDLE = Symbol('handle')
  const NAME_SET = new Set(names)
  const isEnumerable = Object.prototype.propertyIsEnumerable
  // The most arguments of a parts call (the addon reads at most 64), and presence bits (integers below 2^53).
  const MAX_ARGS = 64
  const MAX_BIT = 2 ** 52

  function isPlainObject(v) {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return false
    const proto = Object.getPrototypeOf(v)
    return proto === Object.prototype || proto === null
  }

  // Gathers what the program reads of a present `value` into `out` (the
  // addon's plan, from the core: `need` null is the whole value, else
  // `[field, need, …]`): a whole value is one part (undefined when absent);
  // a map one presence bit, then its fields. Conversion only: the addon
  // converts the parts by the shared rules. False when the value needs the
  // addon's own reading (a map that is not a plain object, an own
  // `undefined`), which reports what is wrong.
  function gather(value, need, out, st) {
    if (need === null) {
      out.push(value)
      return true
    }
    if (!isPlainObject(value) || st.bit > MAX_BIT) return false
    st.bits += st.bit
    st.bit *= 2
    for (let i = 0; i < need.length; i += 2) {
      const child = need[i + 1]
      if (isEnumerable.call(value, need[i])) {
        const item = value[need[i]]
        if (item === undefined || !gather(item, child, out, st)) return false
      } else if (child === null) {
        out.push(undefined)
      } else {
        if (st.bit > MAX_BIT) return false
        st.bit *= 2
      }
    }
    return true
  }

  // `[handle, bits, ...parts]` for the addon's parts functions, or null for its exact route.
  function parts(program, vars) {
    const out = [program[HANDLE], 0]
    const st = { bits: 0, bit: 1 }
    if (vars !== undefined && vars !== null) {
      if (typeof vars !== 'object' || Array.isArray(vars)) return null
      for (const key of Object.keys(vars)) if (!NAME_SET.has(key)) return null
    }
    const plan = program[PLAN]
    for (let i = 0; i < plan.length; i += 2) {
      const value = vars === undefined || vars === null ? undefined : vars[plan[i]]
      const need = plan[i + 1]
      if (value !== undefined) {
        if (!gather(value, need, out, st)) return null
      } else if (need === null) {
        out.push(undefined)
      } else {
        if (st.bit > MAX_BIT) return null
        st.bit *= 2
      }
    }
    if (out.length > MAX_ARGS) return null
    out[1] = st.bits
    return out
  }

  function verdict(answer) {
    return typeof answer === 'string' ? { required: true, reason: answer } : { required: answer, reason: null }
  }

  /** A compiled expression: immutable; evaluate it as often as needed. */
  class Program {
    constructor(inner) {
      if (!(inner instanceof native.CelProgram)) throw new TypeError('use celLite.compile(text) to make a Program')
      this[NATIVE] = inner
      this[PLAN] = inner.plan
      this[HANDLE] = inner.handle
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
        const args = parts(this, vars)
        return args === null ? this[NATIVE].evaluate(vars) : evaluateParts(...args)
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
        const args = parts(this, vars)
        return verdict(args === null ? this[NATIVE].approvalRequired(vars) : approvalParts(...args))
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
  const NAMES = Object.freeze(names)

  return Object.freeze({ compile, Program, CompileError, Unevaluable, NAMES })
}
