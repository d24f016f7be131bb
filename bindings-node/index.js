'use strict'
// harnessweaver for Node. The Rust core decides every step (the addon's
// `call` runs steps 1-7, the handler and step 9 in one go); this file shapes
// the API, races a handler's promise against its deadline (abandoned at it,
// its late result ignored) and maps the addon's errors. The API reference is
// index.d.ts.

const native = require('./native.js')

const { NativeTicket } = native
const TABLES = native.request('tables', {})
const TIMED_OUT = Symbol('timed out')

class HarnessweaverError extends Error {
  constructor(message, code, problems) {
    super(message)
    this.name = new.target.name
    this.code = code
    this.problems = problems || []
  }
}

// Every error class from the core's tables: one per kind of addon error,
// and the refusal classes (base first), which a refused or pending call
// raises by the class its result names.
const classes = { HarnessweaverError }
const KINDS = {}
function named(Cls, name) {
  Object.defineProperty(Cls, 'name', { value: name })
  classes[name] = Cls
  return Cls
}
for (const [kind, name] of TABLES.errorClasses) KINDS[kind] = named(class extends HarnessweaverError {}, name)
for (const c of TABLES.refusalClasses) {
  const Cls = named(c.parent === null
    ? class extends HarnessweaverError {
      constructor(result) {
        super(result.message, result.code, [])
        this.step = result.step
        this.result = result
      }

      toModel() {
        return this.result.toModel()
      }
    }
    : class extends classes[c.parent] {}, c.name)
  for (const x of c.extras) {
    Object.defineProperty(Cls.prototype, x.replace(/_(.)/g, (_, l) => l.toUpperCase()), { get() { return this.result[x] } })
  }
}
// Named one by one (not spread into module.exports) so that Node's ESM loader
// sees them: `import { ApprovalRequired } from 'harnessweaver'` works.
const { LoadError, InvalidValueError, InvalidArgumentError, ToolBlocked, ToolNotFound, InvalidArguments, DigestMismatch, PolicyDenied,
  LimitExceeded, FlowBlocked, ApprovalRequired, ApprovalDenied, ToolFailed, OutputRejected } = classes

function rethrow(err) {
  if (err && typeof err === 'object' && typeof err.kind === 'string' && typeof err.code === 'string') {
    throw new (KINDS[err.kind] || HarnessweaverError)(err.message, err.code, err.problems)
  }
  throw err
}

/** Runs `fn`, mapping the addon's errors. */
function guard(fn) {
  try {
    return fn()
  } catch (err) {
    return rethrow(err)
  }
}

function invalid(message, code) {
  return new InvalidArgumentError(message, code, [])
}

/** What a call ended with; every field is the core's, converted when read. */
class CallResult {
  #r
  constructor(inner) {
    this.#r = inner
  }

  static {
    for (const k of TABLES.resultFields) {
      Object.defineProperty(this.prototype, k, { get() { return native.resultField(this.#r, k) }, enumerable: true })
    }
  }

  /** Whether the call ran. */
  get allowed() {
    return native.resultRefusal(this.#r) === null
  }

  /** The text to hand back to the model. */
  toModel() {
    return native.resultToModel(this.#r)
  }

  /** The core's JSON form (what `JSON.stringify` prints). */
  toJSON() {
    return native.resultField(this.#r, null)
  }

  static _deliver(inner, raiseOnRefusal) {
    const result = new CallResult(inner)
    const refusal = native.resultRefusal(inner)
    if (refusal !== null && raiseOnRefusal !== false) throw new classes[refusal](result)
    return result
  }
}

class ToolDescription {
  constructor(fields, source) {
    Object.assign(this, fields)
    // The manifest it came from, to register it in code (not a field).
    if (source) Object.defineProperty(this, '_source', { value: source })
    Object.freeze(this)
  }

  static fromManifest(manifest, origin) {
    return new ToolDescription(guard(() => native.request('describe_manifest', { manifest, origin: origin ?? null })), [manifest, origin ?? '<code>'])
  }
}

// A ticket's promise against its deadline, then the core's finish.
async function race(rt, ticket) {
  let timer
  const timeout = new Promise((resolve) => {
    timer = setTimeout(resolve, ticket.remainingMs, TIMED_OUT)
  })
  const pending = Promise.resolve(ticket.pending)
  // An abandoned handler may still reject later: never an unhandled rejection.
  pending.catch(() => {})
  let how = 'returned'
  let value
  try {
    value = await Promise.race([pending, timeout])
  } catch (err) {
    how = 'threw'
    value = err
  } finally {
    clearTimeout(timer)
  }
  return rt.finish(ticket, value, value === TIMED_OUT ? 'timeout' : how)
}

// What the addon's `call` returned, to its end: the core's result, or a promise of it.
function settle(rt, begun) {
  return begun instanceof NativeTicket ? race(rt, begun) : begun
}

function principalOf(options) {
  if (!options || typeof options !== 'object') throw invalid('a call needs options with a `principal`', 'invalid_principal')
  return options.principal
}

const runId = (run) => (run && typeof run === 'object' ? run.id : run) ?? null
const approvalId = (a) => (a && typeof a === 'object' ? a.id ?? (a.approval && a.approval.id) : a)

class Harness {
  constructor(inner, path, names) {
    this._rt = inner
    this._names = names
    this.path = path
    this.tools = this._request('tools').map((d) => new ToolDescription(d))
  }

  _request(method, args) {
    return guard(() => this._rt.request(method, args || {}))
  }

  tool(name) {
    return this.tools.find((t) => t.name === name)
  }

  get handlerNames() {
    return this._names
  }

  async call(tool, args, options) {
    const o = options || {}
    const p = principalOf(options)
    const rt = this._rt
    const a = args === undefined ? {} : args
    let r = guard(() => rt.call(String(tool), a, jsonText(a), p, jsonText(p), o.tenant ?? null, o.task ?? null, runId(o.run),
      approvalId(o.approval) ?? null))
    if (r instanceof NativeTicket || r instanceof Promise) r = await settle(rt, r)
    return CallResult._deliver(r, o.raiseOnRefusal)
  }

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
      id: this._request('new_run'),
      principal: o.principal,
      tenant: o.tenant ?? null,
      task: o.task ?? null,
      get labels() {
        return harness._request('labels', { run: this.id })
      },
      call(tool, args, callOptions) {
        const principal = run.principal === given ? handle : run.principal
        return harness.call(tool, args, { ...callOptions, principal, tenant: run.tenant, task: run.task, run: run.id })
      },
    }
    return run
  }

  async approve(id, options) {
    const o = options || {}
    const begun = guard(() => this._rt.approveAndResume(String(approvalId(id)), o.approver, o.args ?? null))
    return CallResult._deliver(await settle(this._rt, begun), o.raiseOnRefusal)
  }

  grant(id, options) {
    return this._request('grant', { id: String(approvalId(id)), approver: (options || {}).approver ?? null })
  }

  deny(id, options) {
    const o = options || {}
    return this._request('deny', { id: String(approvalId(id)), by: o.by ?? null, reason: String(o.reason ?? '') })
  }

  approvals() {
    return this._request('approvals')
  }

  explain(tool, args, options) {
    const o = options || {}
    const p = principalOf(options)
    return this._request('explain', { tool: String(tool), args: args === undefined ? {} : args, principal: p ?? null, tenant: o.tenant ?? null,
      task: o.task ?? null, run: runId(o.run) })
  }

  toolSpecs(format, options) {
    const o = options || {}
    return this._request('tool_specs', { format: String(format ?? 'openai'), principal: o.principal ?? null, tenant: o.tenant ?? null })
  }
}

function load(path, options) {
  return loadWith(path, options, {})
}

function loadWith(path, options, t) {
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    throw invalid('`options` must be an object like `{ tools }`', 'invalid_options')
  }
  const o = options || {}
  const tools = o.tools === undefined ? {} : o.tools
  if (tools === null || typeof tools !== 'object' || Array.isArray(tools)) {
    throw invalid('`tools` must be an object mapping tool names to functions', 'invalid_tools')
  }
  const codeTools = o.codeTools ?? []
  if (!Array.isArray(codeTools)) throw invalid('`codeTools` must be an array of [ToolDescription, function] pairs', 'invalid_tools')
  for (const key of ['audit', 'onApproval']) {
    if (o[key] != null && typeof o[key] !== 'function') throw invalid(`\`${key}\` must be a function`, 'invalid_options')
  }
  const handlers = new Map()
  for (const [name, fn] of Object.entries(tools)) {
    if (typeof fn !== 'function') throw invalid(`\`tools.${name}\` must be a function`, 'invalid_tools')
    handlers.set(name, fn)
  }
  const sources = []
  for (const pair of codeTools) {
    const [tool, fn] = Array.isArray(pair) ? pair : [pair, undefined]
    if (!(tool instanceof ToolDescription) || !tool._source) {
      throw invalid('`codeTools` takes [ToolDescription.fromManifest(...), function] pairs', 'invalid_tools')
    }
    if (fn !== undefined && typeof fn !== 'function') throw invalid(`the handler of \`${tool.name}\` must be a function`, 'invalid_tools')
    sources.push(tool._source)
    if (fn) handlers.set(tool.name, fn)
  }
  const declared = [...handlers].map(([name, fn]) => [name, fn, fn.constructor.name === 'AsyncFunction'])
  const inner = guard(() => native.loadHost(String(path), declared, sources, o.audit ?? null, o.onApproval ?? null, t.clockMs ?? null,
    t.sequentialIds ?? null, t.sandboxWorker ?? null))
  return new Harness(inner, String(path), Object.keys(tools).sort())
}

function inspect(path) {
  return new Harness(guard(() => native.inspectHost(String(path))), String(path), [])
}

/** Test-only hooks (internal, not API): a manual clock and deterministic ids. */
const _testing = {
  load(path, options, { clockMs, sequentialIds = true, sandboxWorker } = {}) {
    return loadWith(path, options, { clockMs, sequentialIds, sandboxWorker })
  },
  advanceMs(harness, ms) {
    harness._request('advance_ms', { ms })
  },
}

// The deepest value sent as JSON text; deeper ones take the walk (serde_json
// parses at most 128 levels, and the walk gives the nesting error).
const TEXT_MAX_DEPTH = 100

// Whether `JSON.stringify(v)` says exactly what the addon's walk would
// convert: finite numbers, strings, booleans, null, arrays without holes and
// plain objects, and no `toJSON` anywhere (own, inherited or not enumerable).
// Anything else takes the walk, which refuses it or applies the shared rules.
function jsonExact(v, depth) {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return true
    case 'number':
      return Number.isFinite(v)
    case 'object': {
      if (v === null) return true
      if (depth >= TEXT_MAX_DEPTH || v.toJSON !== undefined) return false
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) if (!jsonExact(v[i], depth + 1)) return false
        return true
      }
      const proto = Object.getPrototypeOf(v)
      if (proto !== Object.prototype && proto !== null) return false
      const keys = Object.keys(v)
      for (let i = 0; i < keys.length; i++) if (!jsonExact(v[keys[i]], depth + 1)) return false
      return true
    }
    default:
      return false
  }
}

// `value` as `JSON.stringify` text when that text is exact (one string
// crosses to the addon instead of N-API calls per property; V8 writes it
// faster than the walk reads the value), else null.
function jsonText(value) {
  return jsonExact(value, 0) ? JSON.stringify(value) : null
}

function definitionDigest(name, description, inputSchema) {
  return guard(() => native.definitionDigest(name, description, inputSchema, jsonText(inputSchema)))
}

function canonicalJson(value) {
  return guard(() => native.canonicalJson(value, jsonText(value)))
}

function sanitize(value, sanitizers) {
  return guard(() => native.request('sanitize', { value, sanitizers: Array.from(sanitizers, String) }))
}

async function serveMcp(h, options) {
  const o = options || {}
  const rt = h._rt
  const gw = guard(() => native.serveMcp(rt, o.http ?? null, o.principal ?? null, o.tenant ?? null))
  for (let c = await gw.next(); c !== null; c = await gw.next()) {
    const call = c
    // Run as `call` runs it, on this thread; not awaited: calls run concurrently, as the gateway takes them.
    Promise.resolve().then(() => settle(rt, call.begin(rt))).then((r) => call.reply(r), () => call.reply(null))
  }
}

function cliRun(args) {
  return native.cliRun(args.map(String))
}

const celLite = require('./cel_lite.js')(native, HarnessweaverError, rethrow, TABLES.celNames)

module.exports = {
  load, inspect, _testing, CallResult, ToolBlocked, ToolNotFound, InvalidArguments, DigestMismatch, PolicyDenied, LimitExceeded,
  FlowBlocked, ApprovalRequired, ApprovalDenied, ToolFailed, OutputRejected, definitionDigest, canonicalJson, sanitize, cliRun,
  serveMcp, celLite, Harness, ToolDescription, HarnessweaverError, LoadError, InvalidValueError, InvalidArgumentError,
}
