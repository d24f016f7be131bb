'use strict'
// What the framework adapters share: loading the framework only when an
// adapter is used (from the entry of the app's module system, so the app and
// the adapter use one copy of a framework that ships CommonJS and ES builds), the tools a run's principal may call (the pinned manifests'
// name, description and input schema), and the gate that ties a framework's
// tool call id to the harness approval the call waits on. Every decision is the
// governor's; this file only carries ids between the framework and the harness.

const { HarnessweaverError, InvalidArgumentError, canonicalJson } = require('../../index.js')

/** The error of an adapter whose framework `pkg` is not installed. */
function frameworkMissing(pkg, adapter, range) {
  return new HarnessweaverError(`\`harnessweaver/${adapter}\` needs \`${pkg}\`: npm install ${pkg}@${range}`, 'framework_missing', [])
}

/** Whether `err` says that `pkg` itself (not something it needs) could not be found, by require or import. */
function isMissing(err, pkg) {
  return Boolean(err) && (err.code === 'MODULE_NOT_FOUND' || err.code === 'ERR_MODULE_NOT_FOUND') && String(err.message).includes(`'${pkg}'`)
}

/** Requires the framework `pkg`, or throws `framework_missing` naming the package to install. */
function requireFramework(pkg, adapter, range) {
  try {
    return require(pkg)
  } catch (err) {
    if (isMissing(err, pkg)) throw frameworkMissing(pkg, adapter, range)
    throw err
  }
}

function checkRun(harness, run) {
  if (!harness || typeof harness.call !== 'function' || typeof harness.toolSpecs !== 'function') {
    throw new InvalidArgumentError('expected a harness from load()', 'invalid_harness', [])
  }
  if (!run || typeof run !== 'object' || typeof run.id !== 'string' || !run.principal) {
    throw new InvalidArgumentError('expected a run from h.run({ principal })', 'invalid_run', [])
  }
}

/**
 * The tools `run`'s principal may call, in the harness's order, as
 * `{ name, description, parameters }`; `names` keeps only those (each must be
 * a tool of the harness).
 */
function specs(harness, run, names) {
  checkRun(harness, run)
  let wanted = null
  if (names !== undefined && names !== null) {
    wanted = new Set(Array.from(names, String))
    const unknown = [...wanted].filter((n) => harness.tool(n) === undefined).sort()
    if (unknown.length > 0) {
      throw new InvalidArgumentError(`the harness has no tool ${unknown.map((n) => `\`${n}\``).join(', ')}`, 'unknown_tool', [])
    }
  }
  const out = []
  for (const spec of harness.toolSpecs('openai', { principal: run.principal, tenant: run.tenant ?? null })) {
    const fn = spec.function
    if (wanted === null || wanted.has(fn.name)) {
      out.push({ name: fn.name, description: fn.description ?? '', parameters: fn.parameters ?? { type: 'object' } })
    }
  }
  return out
}

/**
 * The harness approvals of one set of tools, by the framework's tool call id.
 * A call the governor would send to approval (step 7, seen with `explain`) is
 * made when the framework asks whether it needs approval, so the pending
 * approval exists (and is audited) while the human decides; the framework's
 * approve or reject then grants or denies that approval, and the resumed call
 * uses it. A call id missing here (tools made anew, another process with a
 * shared store) is found among the harness's approvals by run, tool and args.
 */
class Gate {
  constructor(harness, run) {
    this.harness = harness
    this.run = run
    /** call id → harness approval id */
    this.pending = new Map()
    /** call id → CallResult decided while asking (an inline `onApproval`, or a refusal) */
    this.settled = new Map()
  }

  context(extra) {
    const run = this.run
    return { principal: run.principal, tenant: run.tenant ?? null, task: run.task ?? null, run: run.id, ...extra }
  }

  /** Whether the framework must ask a human before running this call. */
  async needsApproval(tool, args, callId) {
    if (this.pending.has(callId)) return true
    if (this.settled.has(callId)) return false
    if (this.stored(tool, args) !== undefined) {
      return true
    }
    const verdict = this.harness.explain(tool, args, this.context())
    if (verdict.decision !== 'pending') return false // allowed or refused: the call itself says which
    const result = await this.harness.call(tool, args, this.context({ raiseOnRefusal: false }))
    if (result.decision === 'pending') {
      this.pending.set(callId, result.approval.id)
      return true
    }
    this.settled.set(callId, result)
    return false
  }

  /** The approval of this run waiting for (or granted to) exactly this call, from the harness's store. */
  stored(tool, args) {
    let text
    try {
      text = canonicalJson(args)
    } catch {
      return undefined
    }
    const found = this.harness.approvals().find((a) => a.run_id === this.run.id && a.tool === tool && canonicalJson(a.args) === text)
    return found === undefined ? undefined : found.id
  }

  approvalOf(tool, args, callId) {
    return this.pending.get(callId) ?? this.stored(tool, args)
  }

  /** Runs the call through the governor (with its approval, if one was asked); resolves to the CallResult. */
  async call(tool, args, callId) {
    const settled = this.settled.get(callId)
    if (settled !== undefined) {
      this.settled.delete(callId)
      return settled
    }
    const approval = this.approvalOf(tool, args, callId)
    this.pending.delete(callId)
    return this.harness.call(tool, args, this.context({ approval: approval ?? null, raiseOnRefusal: false }))
  }

  /** Grants the harness approval of this call as `approver` (throws `approver_not_allowed` without the role). */
  grant(tool, args, callId, approver) {
    const approval = this.approvalOf(tool, args, callId)
    if (approval !== undefined) this.harness.grant(approval, { approver })
  }

  /**
   * Denies the harness approval of this call (recorded with `by` and `reason`)
   * and makes the call with it, which the core refuses (`approval_denied`) and
   * audits; resolves to that refusal's text for the model, or undefined when
   * the call had no harness approval.
   */
  async deny(tool, args, callId, by, reason) {
    const approval = this.approvalOf(tool, args, callId)
    this.pending.delete(callId)
    if (approval === undefined) return undefined
    this.harness.deny(approval, { by, reason: reason ?? '' })
    const result = await this.harness.call(tool, args, this.context({ approval, raiseOnRefusal: false }))
    return result.toModel()
  }
}

/** Parses a framework's argument text; what is not JSON goes to the governor as is (it refuses non-objects). */
function parseArgs(value) {
  if (typeof value !== 'string') return value ?? {}
  if (value === '') return {}
  try {
    return JSON.parse(value)
  } catch {
    return value
  }
}

const GATE = Symbol('harnessweaver.gate')

/** An adapter's public functions, its `tools` bound to `sdk()`. */
function bind(impl, sdk) {
  return {
    tools: (harness, run, options) => impl.tools(sdk, harness, run, options),
    approve: impl.approve,
    reject: impl.reject,
  }
}

/** The adapter `impl` over the framework's CommonJS build (the `require` entry). */
function requireEntry(impl, adapter) {
  return bind(impl, () => requireFramework(impl.PACKAGE, adapter, impl.RANGE))
}

/**
 * The adapter `impl` over the framework's ES build (the `import` entry). A
 * missing framework is thrown by `tools()`, as the `require` entry does, so
 * importing the adapter never fails for it.
 */
async function importEntry(impl, adapter) {
  let framework
  try {
    framework = await import(impl.PACKAGE)
  } catch (err) {
    if (!isMissing(err, impl.PACKAGE)) throw err
    return bind(impl, () => {
      throw frameworkMissing(impl.PACKAGE, adapter, impl.RANGE)
    })
  }
  return bind(impl, () => framework)
}

module.exports = { frameworkMissing, isMissing, requireFramework, requireEntry, importEntry, specs, Gate, GATE, parseArgs }
