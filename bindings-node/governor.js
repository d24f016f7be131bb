'use strict'
// The governor for Node: calls through the nine steps. The core decides every
// step (`begin` runs 1-7; `finish*` judges the deadline, runs 9 and writes the
// audit event); this file only invokes the JavaScript handler in between
// (a promise is abandoned at the deadline, its late result ignored) and turns
// refusals into rejected promises when asked to.

const native = require('./native.js')

const { NativeTicket } = native
const TIMED_OUT = Symbol('timed out')

function errorKind(err) {
  if (err !== null && typeof err === 'object' && typeof err.name === 'string' && err.name) return err.name
  return typeof err
}

function isThenable(v) {
  return v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function'
}

/** The governed side of a loaded harness (mixed into `Harness` by index.js). */
function governed(Harness, classes, guard, invalid) {
  function deliver(result, raiseOnRefusal) {
    if (raiseOnRefusal !== false && !result.allowed) throw new classes[result.refusalClass](result)
    return result
  }

  function principalOf(options) {
    if (!options || typeof options !== 'object') throw invalid('a call needs options with a `principal`', 'invalid_principal')
    return options.principal
  }

  // Runs a ticket's handler: the finished CallResult, or a promise of it.
  function run(h, ticket) {
    const rt = h._rt
    if (ticket.transport) return rt.runTransport(ticket)
    let value
    try {
      value = h._handlers.get(ticket.tool)(ticket.args, { idempotencyKey: ticket.idempotencyKey, tool: ticket.tool })
    } catch (err) {
      return rt.finishFailed(ticket, errorKind(err))
    }
    // A handler that returns nothing returned null, as in Python.
    return isThenable(value) ? race(rt, ticket, value) : rt.finish(ticket, value === undefined ? null : value)
  }

  async function race(rt, ticket, value) {
    let timer
    const timeout = new Promise((resolve) => {
      timer = setTimeout(resolve, ticket.remainingMs, TIMED_OUT)
    })
    const pending = Promise.resolve(value)
    // An abandoned handler may still reject later: never an unhandled rejection.
    pending.catch(() => {})
    try {
      value = await Promise.race([pending, timeout])
    } catch (err) {
      return rt.finishFailed(ticket, errorKind(err))
    } finally {
      clearTimeout(timer)
    }
    return value === TIMED_OUT ? rt.finishFailed(ticket, null) : rt.finish(ticket, value === undefined ? null : value)
  }

  // A begun call to its end: a CallResult, or a promise of one.
  function settle(h, begun) {
    return begun instanceof NativeTicket ? run(h, begun) : begun
  }

  const runId = (run) => (run && typeof run === 'object' ? run.id : run)
  const approvalId = (a) => (a && typeof a === 'object' ? a.id ?? (a.approval && a.approval.id) : a)

  Object.assign(Harness.prototype, {
    /**
     * Calls `tool` with `args` through the nine steps. Resolves to a
     * CallResult; a refused or pending call rejects with a ToolBlocked error
     * (`code`, `step`, `result`) unless `raiseOnRefusal: false`.
     */
    async call(tool, args, options) {
      const o = options || {}
      const p = principalOf(options)
      let result = settle(this, guard(() => this._rt.begin(String(tool), args === undefined ? {} : args, p, o.tenant ?? null,
        o.task ?? null, runId(o.run) ?? null, approvalId(o.approval) ?? null)))
      if (!(result instanceof native.CallResult)) result = await result
      return deliver(result, o.raiseOnRefusal)
    },

    /** Starts a run: its calls share labels, budgets and the run id. */
    run(options) {
      const rt = this._rt
      const o = options || {}
      const harness = this
      // Converted once (a malformed principal fails here rather than at the
      // first call); the run's calls pass the handle while `run.principal` is
      // still this object, so its fields are read when the run starts.
      const given = principalOf(options)
      const handle = guard(() => rt.principalHandle(given))
      const run = {
        id: guard(() => rt.newRun()),
        principal: o.principal,
        tenant: o.tenant ?? null,
        task: o.task ?? null,
        get labels() {
          return guard(() => rt.labels(this.id))
        },
        call(tool, args, callOptions) {
          const principal = run.principal === given ? handle : run.principal
          return harness.call(tool, args, { ...callOptions, principal, tenant: run.tenant, task: run.task, run: run.id })
        },
      }
      return run
    },

    /**
     * Grants approval `id` (the approver must hold the tool's approver role),
     * then runs the approved call; `args` replaces the arguments with the
     * approver's edit, which goes through every step again.
     */
    async approve(id, options) {
      const o = options || {}
      const begun = guard(() => this._rt.approveAndResume(String(approvalId(id)), o.approver, o.args ?? null))
      return deliver(await settle(this, begun), o.raiseOnRefusal)
    },

    /** Grants approval `id` without running the call; returns the approval. */
    grant(id, options) {
      return guard(() => this._rt.grant(String(approvalId(id)), (options || {}).approver))
    },

    /** Denies approval `id`; returns the approval. */
    deny(id, options) {
      const o = options || {}
      return guard(() => this._rt.deny(String(approvalId(id)), o.by, String(o.reason ?? '')))
    },

    /** Approvals waiting for a human, or granted and not yet used. */
    approvals() {
      return guard(() => this._rt.approvals())
    },

    /** Each step's verdict for a call, without running it or changing any state. */
    explain(tool, args, options) {
      const o = options || {}
      const p = principalOf(options)
      return guard(() => this._rt.explain(String(tool), args === undefined ? {} : args, p, o.tenant ?? null, o.task ?? null,
        runId(o.run) ?? null))
    },

    /** The tools as model APIs take them: `openai`, `anthropic` or `mcp`. */
    toolSpecs(format, options) {
      const o = options || {}
      return guard(() => this._rt.toolSpecs(String(format ?? 'openai'), o.principal ?? null, o.tenant ?? null))
    },
  })

  // One gateway call, run as `call` runs it, on this thread; the result goes back to the gateway.
  async function served(h, gw, c) {
    let result = null
    try {
      result = await h.call(c.tool, c.args, { principal: c.principal, tenant: c.tenant, task: c.task, run: c.runId,
        approval: c.approvalId, raiseOnRefusal: false })
    } finally {
      gw.reply(c.id, result)
    }
  }

  /**
   * Serves `h`'s tools over MCP until the stdio client disconnects (HTTP:
   * until the process ends); see `serveMcp` in index.js.
   */
  async function serveMcp(h, options) {
    const o = options || {}
    const gw = guard(() => native.serveMcp(h._rt, o.http ?? null, o.principal ?? null, o.tenant ?? null))
    for (let c = await gw.next(); c !== null; c = await gw.next()) {
      // Not awaited: calls run concurrently, as the gateway takes them.
      served(h, gw, c).catch(() => {})
    }
  }

  return { serveMcp }
}

module.exports = { governed }
