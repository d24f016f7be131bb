'use strict'
// harnessweaver for Node. The Rust core decides every step; the addon
// (src/*.rs) converts values, runs a sync handler within `call` and throws the
// classes made here from the core's tables. This file shapes the API and races
// a handler's promise against its deadline (abandoned at it, its late result
// ignored). The API reference is index.d.ts.

const native = require('./native.js')

const TABLES = native.request('tables', {})
// Issue 24: spans and approval waits to the host's OpenTelemetry API, when it is installed (else null).
const otel = require('./adapters/opentelemetry.js')
const camel = (name) => name.replace(/_(.)/g, (_, l) => l.toUpperCase())

class HarnessweaverError extends Error {
  constructor(message, code, problems) {
    super(message)
    this.name = new.target.name
    this.code = code
    this.problems = problems || []
  }
}

// Every error class from the core's tables: one per kind of core error, and the refusal classes
// (base first), which the addon throws for a refused or pending call by `RefusalClass::of`.
const classes = { HarnessweaverError }
function named(name, Cls) {
  Object.defineProperty(Cls, 'name', { value: name })
  return (classes[name] = Cls)
}
for (const [, name] of TABLES.errorClasses) named(name, class extends HarnessweaverError {})
for (const c of TABLES.refusalClasses) {
  const Cls = named(c.name, c.parent === null
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
    : class extends classes[c.parent] {})
  for (const x of c.extras) Object.defineProperty(Cls.prototype, camel(x), { get() { return this.result[x] } })
}
// Named one by one (not spread into module.exports) so that Node's ESM loader
// sees them: `import { ApprovalRequired } from 'harnessweaver'` works.
const { LoadError, InvalidValueError, InvalidArgumentError, ToolBlocked, ToolNotFound, InvalidArguments, DigestMismatch, PolicyDenied,
  LimitExceeded, FlowBlocked, ApprovalRequired, ApprovalDenied, ToolFailed, OutputRejected } = classes
const celLite = require('./cel_lite.js')(native, classes, TABLES.celNames)

/** What a call ended with; every property is the core's, converted when read. */
class CallResult {
  #r
  constructor(inner) {
    this.#r = inner
  }

  static {
    const methods = ['toModel', 'toJSON']
    for (const k of [...TABLES.resultProperties, ...methods]) {
      const read = function () { return native.result(this.#r, k) }
      Object.defineProperty(this.prototype, k, methods.includes(k) ? { value: read } : { get: read, enumerable: true })
    }
  }
}
classes.CallResult = CallResult
// `ctx.progress` of a call nobody listens to (issue 22): the addon hands this one.
classes.noProgress = () => {}
// How the addon calls a native tool's handler: its context object is cheaper made here.
classes.invoke = (f, args, idempotencyKey, tool, progress, secrets) =>
  f(args, secrets === undefined ? { idempotencyKey, tool, progress } : { idempotencyKey, tool, secrets, progress })
native.init(classes)
// A result (an external of the addon), or a promise of one, as a `CallResult`.
const wrap = (r) => (r instanceof Promise ? r.then(wrap) : new CallResult(r))

class ToolDescription {
  constructor(fields, source) {
    Object.assign(this, fields)
    // The manifest it came from, to register it in code (not a field).
    if (source) Object.defineProperty(this, '_source', { value: source })
    Object.freeze(this)
  }

  static fromManifest(manifest, origin) {
    return new ToolDescription(native.request('describe_manifest', { manifest, origin: origin ?? null }), [manifest, origin ?? '<code>'])
  }
}

// A handler's promise (`[promise, remainingMs, ticket]` from the addon) against its deadline, then the core's finish.
// An abandoned handler may still reject later: `settled` handles that, never an unhandled rejection.
async function race(rt, [pending, ms, ticket], raise) {
  let timer
  const timeout = new Promise((resolve) => (timer = setTimeout(resolve, ms, ['timeout', null])))
  const settled = Promise.resolve(pending).then((value) => ['returned', value], (err) => ['threw', err])
  const [how, value] = await Promise.race([settled, timeout])
  clearTimeout(timer)
  return rt.finish(ticket, how, value, raise)
}

// What the addon answered, to its end: a result (or a promise of one), or a handler's promise to race.
const settle = (rt, r, raise) => (Array.isArray(r) ? race(rt, r, raise) : r)
const runId = (run) => (run && typeof run === 'object' ? run.id : run) ?? null
const approvalId = (a) => (a && typeof a === 'object' ? a.id ?? (a.approval && a.approval.id) : a)
const begin = (h, tool, args, o, p, hold) => h._rt.call(String(tool), args === undefined ? {} : args, p, o.tenant ?? null, o.task ?? null,
  runId(o.run), approvalId(o.approval) ?? null, o.raiseOnRefusal !== false, hold)

class Harness {
  constructor(inner, path, names) {
    this._rt = inner
    this._names = names
    this.path = path
    this.tools = this._request('describe_tools').map((d) => new ToolDescription(d))
  }

  _request(method, args) {
    return this._rt.request(method, args ?? {})
  }

  tool(name) {
    return this.tools.find((t) => t.name === name)
  }

  get handlerNames() {
    return this._names
  }

  async call(tool, args, options) {
    const o = options || {}
    return wrap(settle(this._rt, begin(this, tool, args, o, o.principal, false), o.raiseOnRefusal !== false))
  }

  run(options) {
    const o = options || {}
    const harness = this
    // Read once (a malformed principal fails here rather than at the first call); the run's
    // calls pass what the core read while `run.principal` is still this object.
    const given = o.principal
    const read = native.request('principal', { principal: given ?? null })
    const run = {
      id: this._request('new_run', { source: 'api', principal: read }),
      principal: given,
      tenant: o.tenant ?? null,
      task: o.task ?? null,
      get labels() {
        return harness._request('labels', { run_id: this.id })
      },
      async call(tool, args, callOptions) {
        const c = { ...callOptions, tenant: run.tenant, task: run.task, run: run.id }
        const p = run.principal === given ? read : run.principal
        return wrap(settle(harness._rt, begin(harness, tool, args, c, p, false), c.raiseOnRefusal !== false))
      },
    }
    return run
  }

  async approve(id, options) {
    const o = options || {}
    const raise = o.raiseOnRefusal !== false
    return wrap(settle(this._rt, this._rt.approveAndResume(String(approvalId(id)), o.approver ?? null, o.args ?? null, raise), raise))
  }
}

// The core's other host methods (from its table), camelCased: the arguments before `*` are
// positional, the keyword-only ones come in an options object, an optional one missing is its default.
// Node gives these its own way: `tools`, `run()`, `run.labels`, `_testing.advanceMs`; and these
// take their options in the object: `deny(id, { by, reason })`, `toolSpecs(format, { principal, tenant })`.
const SHAPED = ['describe_tools', 'new_run', 'labels', 'advance_ms']
const OPTIONS = { deny: ['id', '*', 'by', 'reason=""'], tool_specs: ['format="openai"', '*', 'principal=null', 'tenant=null'] }
const ids = { id: approvalId, run: runId }
for (const [name, table] of TABLES.methods) {
  const params = OPTIONS[name] ?? table
  if (camel(name) in Harness.prototype || SHAPED.includes(name)) continue
  const star = params.indexOf('*')
  const [positional, keywords] = star < 0 ? [params, []] : [params.slice(0, star), params.slice(star + 1)]
  const split = (p) => p.split(/=(.*)/s)
  const put = (args, p, v) => {
    const [key, dflt] = split(p)
    args[key] = v === undefined ? (dflt === undefined ? null : JSON.parse(dflt)) : ids[key] ? ids[key](v) : v
  }
  Object.defineProperty(Harness.prototype, camel(name), {
    value(...given) {
      const args = {}
      positional.forEach((p, i) => put(args, p, given[i]))
      const o = given[positional.length] || {}
      for (const p of keywords) put(args, p, o[camel(split(p)[0])])
      return this._request(name, args)
    },
    writable: true,
    configurable: true,
  })
}

const load = (path, options) => loadWith(path, options, {})
// Throws the caller's mistake with its code, unless `ok`.
function need(ok, message, code) {
  if (!ok) throw new InvalidArgumentError(message, code, [])
}

function loadWith(path, options, t) {
  need(options === undefined || (options !== null && typeof options === 'object'), '`options` must be an object like `{ tools }`', 'invalid_options')
  const o = options || {}
  const tools = o.tools === undefined ? {} : o.tools
  need(tools !== null && typeof tools === 'object' && !Array.isArray(tools), '`tools` must be an object mapping tool names to functions', 'invalid_tools')
  const codeTools = o.codeTools ?? []
  need(Array.isArray(codeTools), '`codeTools` must be an array of [ToolDescription, function] pairs', 'invalid_tools')
  for (const key of ['audit', 'onApproval']) need(o[key] == null || typeof o[key] === 'function', `\`${key}\` must be a function`, 'invalid_options')
  const handlers = Object.create(null)
  for (const [name, fn] of Object.entries(tools)) {
    need(typeof fn === 'function', `\`tools.${name}\` must be a function`, 'invalid_tools')
    handlers[name] = fn
  }
  const sources = codeTools.map((pair) => {
    const [tool, fn] = Array.isArray(pair) ? pair : [pair, undefined]
    need(tool instanceof ToolDescription && tool._source, '`codeTools` takes [ToolDescription.fromManifest(...), function] pairs', 'invalid_tools')
    need(fn === undefined || typeof fn === 'function', `the handler of \`${tool.name}\` must be a function`, 'invalid_tools')
    if (fn) handlers[tool.name] = fn
    return tool._source
  })
  const loaded = {}
  const inner = native.loadHost(String(path), handlers, sources, o.audit ?? null, o.onApproval ?? null, t.clockMs ?? null,
    t.sequentialIds ?? null, t.sandboxWorker ?? null, otel && otel.observer(loaded))
  if (otel) otel.watch((loaded.host = new WeakRef(inner)))
  return new Harness(inner, String(path), Object.keys(tools).sort())
}

function inspect(path) {
  return new Harness(native.loadHost(String(path), null, []), String(path), [])
}

/** Test-only hooks (internal, not API): a manual clock, deterministic ids, a call held between its steps. */
const _testing = {
  load: (path, options, { clockMs, sequentialIds = true, sandboxWorker } = {}) => loadWith(path, options, { clockMs, sequentialIds, sandboxWorker }),
  advanceMs: (harness, ms) => harness._request('advance_ms', { ms }),
  /** Steps 1–7 of a call whose allowed ticket is held: `{ held }`, or the result. */
  begin(harness, tool, args, o) {
    const r = begin(harness, tool, args, o, o.principal, true)
    return Array.isArray(r) ? { held: r[0] } : new CallResult(r)
  },
  /** Runs a held call to its result, as `call` would have. */
  resume: async (harness, held, o = {}) => wrap(settle(harness._rt, harness._rt.finish(held, 'resume', null, o.raiseOnRefusal !== false), o.raiseOnRefusal !== false)),
}

async function serveMcp(h, options) {
  const o = options || {}
  const rt = h._rt
  const gw = native.serveMcp(rt, o.http ?? null, o.principal ?? null, o.tenant ?? null)
  for (let c = await gw.next(); c !== null; c = await gw.next()) {
    const call = c
    // Run as `call` runs it, on this thread; not awaited: calls run concurrently, as the gateway takes them.
    Promise.resolve().then(() => settle(rt, call.begin(rt), false)).then((r) => call.reply(r), () => call.reply(null))
  }
}

// Whether `JSON.stringify(v)` writes exactly the value the addon would read (plain objects and arrays without
// holes, of finite numbers, strings, bools and null, 128 levels at most): the core then reads that text, which
// is faster than reading the value through N-API. Anything else is read as a value (and may be refused).
const { getPrototypeOf, hasOwn } = Object
function plainJson(v, depth) {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true
  if (typeof v === 'number') return Number.isFinite(v)
  if (typeof v !== 'object' || depth > 128 || typeof v.toJSON === 'function') return false
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!(i in v) || !plainJson(v[i], depth + 1)) return false
    return true
  }
  const proto = getPrototypeOf(v)
  if (proto !== null && getPrototypeOf(proto) !== null) return false
  for (const k in v) if (hasOwn(v, k) && !plainJson(v[k], depth + 1)) return false
  return true
}
const text = (v) => (plainJson(v, 0) ? JSON.stringify(v) : undefined)
function definitionDigest(name, description, inputSchema, outputSchema) {
  const [input, output] = [text(inputSchema), outputSchema == null ? null : text(outputSchema)]
  const fast = typeof name === 'string' && typeof description === 'string' && input !== undefined && output !== undefined &&
    native.request('definition_digest_text', { name, description, input_schema: input, output_schema: output })
  return fast || native.definitionDigest(name, description, inputSchema, outputSchema)
}
function canonicalJson(value) {
  const t = text(value)
  return (t !== undefined && native.request('canonical_text', { text: t })) || native.canonicalJson(value)
}
const sanitize = (value, sanitizers) => native.request('sanitize', { value, sanitizers: Array.from(sanitizers, String) })
const cliRun = (args) => native.cliRun(args.map(String))

// Shorthand names only: Node's ESM loader (cjs-module-lexer) stops reading an
// object literal at the first value that is not a name, and then
// `import { canonicalJson } from 'harnessweaver'` fails.
module.exports = {
  load, inspect, _testing, CallResult, ToolBlocked, ToolNotFound, InvalidArguments, DigestMismatch, PolicyDenied, LimitExceeded,
  FlowBlocked, ApprovalRequired, ApprovalDenied, ToolFailed, OutputRejected, celLite, Harness, ToolDescription, HarnessweaverError,
  LoadError, InvalidValueError, InvalidArgumentError, definitionDigest, canonicalJson, sanitize, cliRun, serveMcp,
}
