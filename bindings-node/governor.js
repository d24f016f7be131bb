'use strict'
// The governor for Node: calls through the nine steps. The core decides every
// step (`begin` runs 1-7, `finish*` runs 9 and writes the audit event); this
// file only invokes the JavaScript handler in between, with the tool's timeout
// (Promise.race: an overrunning handler is abandoned, its late result ignored),
// and turns refusals into rejected promises when asked to.

const native = require('./native.js')

/**
 * The value every call returns; the fields are the core's (snake_case, as in
 * every language). Built from the addon's `R<result JSON>\n<model text>`.
 */
class CallResult {
  constructor(text) {
    const nl = text.indexOf('\n')
    const json = text.slice(1, nl)
    Object.assign(this, JSON.parse(json))
    // The core's JSON text of the result, and the text for the model.
    Object.defineProperty(this, '_json', { value: json })
    Object.defineProperty(this, '_model', { value: text.slice(nl + 1) })
  }

  /** Whether the call ran. */
  get allowed() {
    return this.decision === 'allowed'
  }

  /** The text to hand back to the model. */
  toModel() {
    return this._model
  }

  /** The core's JSON form (what `JSON.stringify` prints). */
  toJSON() {
    return JSON.parse(this._json)
  }
}

function makeErrors(HarnessweaverError) {
  /** A call that did not run: refused, or waiting for approval. */
  class ToolBlocked extends HarnessweaverError {
    constructor(result) {
      super(result.message, result.code, [])
      this.step = result.step
      this.result = result
    }

    /** The text to hand back to the model. */
    toModel() {
      return this.result.toModel()
    }
  }
  class ToolNotFound extends ToolBlocked {}
  class InvalidArguments extends ToolBlocked {}
  class DigestMismatch extends ToolBlocked {}
  class PolicyDenied extends ToolBlocked {}
  class LimitExceeded extends ToolBlocked {
    get retryAfterMs() {
      return this.result.retry_after_ms
    }
  }
  class FlowBlocked extends ToolBlocked {}
  class ApprovalRequired extends ToolBlocked {
    get approval() {
      return this.result.approval
    }
  }
  class ApprovalDenied extends ToolBlocked {}
  class ToolFailed extends ToolBlocked {}
  class OutputRejected extends ToolBlocked {}
  return {
    ToolBlocked,
    ToolNotFound,
    InvalidArguments,
    DigestMismatch,
    PolicyDenied,
    LimitExceeded,
    FlowBlocked,
    ApprovalRequired,
    ApprovalDenied,
    ToolFailed,
    OutputRejected,
  }
}

const TIMED_OUT = Symbol('timed out')

function errorKind(err) {
  if (err !== null && typeof err === 'object' && typeof err.name === 'string' && err.name) return err.name
  return typeof err
}

function isThenable(v) {
  return v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function'
}

/** The governed side of a loaded harness (mixed into `Harness` by index.js). */
function governed(Harness, errors, rethrow, InvalidArgumentError) {
  const byStep = {
    resolve: errors.ToolNotFound,
    validate: errors.InvalidArguments,
    pin: errors.DigestMismatch,
    policy: errors.PolicyDenied,
    limits: errors.LimitExceeded,
    flow: errors.FlowBlocked,
    approval: errors.ApprovalDenied,
    invoke: errors.ToolFailed,
    output: errors.OutputRejected,
  }

  function deliver(text, raiseOnRefusal) {
    const result = new CallResult(text)
    if (raiseOnRefusal !== false && result.decision !== 'allowed') {
      const Cls = result.decision === 'pending' ? errors.ApprovalRequired : byStep[result.step] || errors.ToolBlocked
      throw new Cls(result)
    }
    return result
  }

  function runtime(h) {
    if (!h._rt) {
      throw new InvalidArgumentError('this harness was opened with inspect() and cannot take calls; use load()', 'not_loaded_for_calls', [])
    }
    return h._rt
  }

  function principalOf(options) {
    if (!options || typeof options !== 'object') {
      throw new InvalidArgumentError('a call needs options with a `principal`', 'invalid_principal', [])
    }
    return options.principal
  }

  // `text` is the addon's `T<ticket JSON>`; returns the finished call's `R…` text.
  async function invoke(h, text) {
    const rt = h._rt
    const ticket = JSON.parse(text.slice(1))
    const id = ticket.ticket
    const fn = h._handlers.get(ticket.tool)
    // http, code, mcp: the core's transports, run off the event loop.
    if (fn === undefined) return rt.finishTransport(id)
    let value
    try {
      value = fn(ticket.args, { idempotencyKey: ticket.idempotency_key, tool: ticket.tool })
      if (isThenable(value)) {
        let timer
        const timeout = new Promise((resolve) => {
          timer = setTimeout(resolve, ticket.timeout_ms, TIMED_OUT)
        })
        const pending = Promise.resolve(value)
        // An abandoned handler may still reject later: never an unhandled rejection.
        pending.catch(() => {})
        try {
          value = await Promise.race([pending, timeout])
        } finally {
          clearTimeout(timer)
        }
        if (value === TIMED_OUT) return rt.finishTimedOut(id)
      }
    } catch (err) {
      return rt.finishFailed(id, errorKind(err))
    }
    // A handler that returns nothing returned null, as in Python.
    return rt.finishReturned(id, value === undefined ? null : value)
  }

  function runId(run) {
    return run && typeof run === 'object' ? run.id : run
  }

  function approvalId(approval) {
    if (approval && typeof approval === 'object') return approval.id ?? (approval.approval && approval.approval.id)
    return approval
  }

  Object.assign(Harness.prototype, {
    /**
     * Calls `tool` with `args` through the nine steps. Resolves to a
     * CallResult; a refused or pending call rejects with a ToolBlocked error
     * (`code`, `step`, `result`) unless `raiseOnRefusal: false`.
     */
    async call(tool, args, options) {
      const rt = runtime(this)
      const o = options || {}
      let text
      try {
        text = rt.begin(String(tool), args === undefined ? {} : args, principalOf(options), o.tenant ?? null, o.task ?? null,
          runId(o.run) ?? null, approvalId(o.approval) ?? null)
      } catch (err) {
        rethrow(err)
      }
      if (text.charCodeAt(0) === 84 /* T */) text = await invoke(this, text)
      return deliver(text, o.raiseOnRefusal)
    },

    /** Starts a run: its calls share labels, budgets and the run id. */
    run(options) {
      const rt = runtime(this)
      const o = options || {}
      const harness = this
      // Converted once (a malformed principal fails here rather than at the
      // first call); the run's calls pass the handle while `run.principal` is
      // still this object, so its fields are read when the run starts.
      const given = principalOf(options)
      let handle
      try {
        handle = rt.principalHandle(given)
      } catch (err) {
        rethrow(err)
      }
      const run = {
        id: rt.newRun(),
        principal: o.principal,
        tenant: o.tenant ?? null,
        task: o.task ?? null,
        get labels() {
          return rt.labels(this.id)
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
      const rt = runtime(this)
      const o = options || {}
      let text
      try {
        text = rt.approveAndBegin(String(approvalId(id)), o.approver, o.args ?? null)
      } catch (err) {
        rethrow(err)
      }
      if (text.charCodeAt(0) === 84 /* T */) text = await invoke(this, text)
      return deliver(text, o.raiseOnRefusal)
    },

    /** Grants approval `id` without running the call; returns the approval. */
    grant(id, options) {
      try {
        return runtime(this).grant(String(approvalId(id)), (options || {}).approver)
      } catch (err) {
        return rethrow(err)
      }
    },

    /** Denies approval `id`; returns the approval. */
    deny(id, options) {
      const o = options || {}
      try {
        return runtime(this).deny(String(approvalId(id)), o.by, String(o.reason ?? ''))
      } catch (err) {
        return rethrow(err)
      }
    },

    /** Approvals waiting for a human, or granted and not yet used. */
    approvals() {
      return runtime(this).approvals()
    },

    /** Each step's verdict for a call, without running it or changing any state. */
    explain(tool, args, options) {
      const o = options || {}
      try {
        const [value, text] = runtime(this).explain(String(tool), args === undefined ? {} : args, principalOf(options),
          o.tenant ?? null, o.task ?? null, runId(o.run) ?? null)
        return { ...value, text }
      } catch (err) {
        return rethrow(err)
      }
    },

    /** The tools as model APIs take them: `openai`, `anthropic` or `mcp`. */
    toolSpecs(format, options) {
      const o = options || {}
      try {
        return runtime(this).toolSpecs(String(format ?? 'openai'), o.principal ?? null, o.tenant ?? null)
      } catch (err) {
        return rethrow(err)
      }
    },
  })

  // One gateway call, run as `call` runs it (begin, the handler, finish) on
  // this thread; the finished `R…` text goes back to the gateway.
  async function served(h, gw, call) {
    let text
    try {
      text = runtime(h).begin(String(call.tool), call.args ?? {}, call.principal, call.tenant ?? null, null,
        call.runId ?? null, call.approvalId ?? null)
      if (text.charCodeAt(0) === 84 /* T */) text = await invoke(h, text)
    } catch (err) {
      text = 'E' + errorKind(err)
    }
    gw.reply(call.id, text)
  }

  /**
   * Serves `h`'s tools over MCP until the stdio client disconnects (HTTP:
   * until the process ends); see `serveMcp` in index.js.
   */
  async function serveMcp(h, options) {
    const o = options || {}
    const gw = native.serveMcp(runtime(h), o.http ?? null, o.principal ?? null, o.tenant ?? null)
    for (;;) {
      const text = await gw.next()
      if (text === null) return
      // Not awaited: calls run concurrently, as the gateway takes them.
      served(h, gw, JSON.parse(text))
    }
  }

  return { serveMcp }
}

/**
 * Builds the native runtime: `handlers` is a Map of tool name → function,
 * `codeTools` `[manifest, origin]` pairs of tools registered in code.
 */
function loadRuntime(path, handlers, codeTools, options) {
  const o = options || {}
  return native.loadRuntime(path, [...handlers.keys()].sort(), codeTools, o.audit ?? null, o.onApproval ?? null,
    o.clockMs ?? null, o.sequentialIds ?? null, o.sandboxWorker ?? null)
}

module.exports = { CallResult, makeErrors, governed, loadRuntime }
