'use strict'
// harnessweaver for Node. The Rust core decides every step (the addon's
// `call` runs steps 1-7, its `finish` judges the handler's outcome and runs
// step 9); this file shapes the API, writes values as JSON text, runs a
// handler, races its promise against the deadline (abandoned at it, its late
// result ignored) and maps the addon's errors. The API reference is index.d.ts.

const native = require('./native.js')

const TABLES = JSON.parse(native.request('tables', '{}'))
// Issue 24: the host's own OpenTelemetry API, when it is installed (this one
// check, at load); without it no observer is given and a call pays nothing.
const otel = (() => {
  try {
    return require('@opentelemetry/api')
  } catch {
    return null
  }
})()
// Hosts loaded with an observer (weakly). Each has a switch in the core that
// says whether its observer listens: on while an SDK is behind the API's proxy
// tracer provider, off otherwise (then the core builds no event for it). The
// API's setGlobalTracerProvider and disable are wrapped to flip the switches.
const observed = new Set()
function sdkRegistered() {
  const provider = otel.trace.getTracerProvider()
  return provider.getDelegateTracer ? provider.getDelegateTracer('harnessweaver') !== undefined : true
}
function tellListening(host, listening) {
  host.request('observe', JSON.stringify({ listening }))
}
if (otel) {
  for (const name of ['setGlobalTracerProvider', 'disable']) {
    const original = otel.trace[name]
    otel.trace[name] = function (...args) {
      try {
        return original.apply(this, args)
      } finally {
        const listening = sdkRegistered()
        for (const ref of observed) {
          const host = ref.deref()
          if (host) tellListening(host, listening)
          else observed.delete(ref)
        }
      }
    }
  }
}
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
    throw new (KINDS[err.kind] || HarnessweaverError)(err.message, err.code, JSON.parse(err.problems))
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

// Values cross to the addon as JSON text. `JSON.stringify`'s when it says
// exactly what the value is: finite numbers, well-formed strings, booleans,
// null, arrays without holes and plain objects, no `toJSON` anywhere, nesting
// below serde_json's limit. Anything else is written by `write`, as the core
// reads values: BigInts by the core's integer rule, lone surrogates as U+FFFD,
// own enumerable keys read once; what has no JSON form throws a `Problem`
// (its kind and where it is) for the core to word.
const TEXT_MAX_DEPTH = 100
const { maxDepth: MAX_DEPTH, maxSafeInteger } = TABLES
const MAX_INT = BigInt(maxSafeInteger)

function jsonExact(v, depth) {
  switch (typeof v) {
    case 'string':
      return v.isWellFormed()
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
      for (let i = 0; i < keys.length; i++) if (!jsonExact(v[keys[i]], depth + 1) || !keys[i].isWellFormed()) return false
      return true
    }
    default:
      return false
  }
}

class Problem {
  constructor(kind, detail, path) {
    this.text = JSON.stringify([kind, detail, path])
  }
}

function write(v, depth, path) {
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v.toWellFormed())
    case 'boolean':
      return String(v)
    case 'number':
      if (Number.isFinite(v)) return JSON.stringify(v)
      throw new Problem('number', String(v), path)
    case 'bigint':
      if (v >= -MAX_INT && v <= MAX_INT) return String(v)
      throw new Problem('bigint', String(v), path)
    case 'object': {
      if (v === null) return 'null'
      if (depth >= MAX_DEPTH) throw new Problem('deep', '', path)
      if (Array.isArray(v)) return `[${Array.from({ length: v.length }, (_, i) => write(v[i], depth + 1, [...path, i]))}]`
      const proto = Object.getPrototypeOf(v)
      if (proto !== Object.prototype && proto !== null) throw new Problem('object', '', path)
      return `{${Object.keys(v).map((k) => `${JSON.stringify(k.toWellFormed())}:${write(v[k], depth + 1, [...path, k])}`)}}`
    }
    default:
      throw new Problem(typeof v, '', path)
  }
}

/** The JSON text the core reads for `v` at nesting `depth`, or a `Problem` (`walk`: never `JSON.stringify`'s). */
function encode(v, depth = 0, walk = false) {
  if (!walk && jsonExact(v, depth)) return JSON.stringify(v)
  try {
    return write(v, depth, [])
  } catch (err) {
    if (err instanceof Problem) return err
    throw err
  }
}

/** The JSON text of `v`; throws the core's error for a value with no JSON form. */
function textOf(v, depth, walk) {
  const text = encode(v, depth, walk)
  if (text instanceof Problem) {
    const [kind, detail, path] = JSON.parse(text.text)
    guard(() => native.request('value_error', JSON.stringify({ kind, detail, path })))
  }
  return text
}

/** What a call to the core gives: the JSON text's value. */
function request(rt, method, args) {
  return JSON.parse(guard(() => rt.request(method, textOf(args || {}))))
}

/** What a call ended with; every field is the core's, converted when read. */
class CallResult {
  #r
  constructor(inner) {
    this.#r = inner
  }

  static {
    for (const k of TABLES.resultFields) {
      Object.defineProperty(this.prototype, k, { get() { return JSON.parse(native.resultField(this.#r, k)) }, enumerable: true })
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
    return JSON.parse(native.resultField(this.#r, null))
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
    return new ToolDescription(request(native, 'describe_manifest', { manifest, origin: origin ?? null }), [manifest, origin ?? '<code>'])
  }
}

// What a thrown value is called: an object's `name` when it is a non-empty string, else its type.
function kindOf(err) {
  try {
    if (typeof err === 'object' && err !== null && typeof err.name === 'string' && err.name) return err.name
  } catch {}
  return err === null ? 'object' : typeof err
}

// Hands a handler's outcome to the core: its value's text, or what has no JSON form.
function finish(rt, id, value) {
  const text = value === undefined ? 'null' : encode(value)
  return text instanceof Problem ? rt.finish(id, 'invalid', text.text) : rt.finish(id, 'returned', text)
}

// A handler's promise against its deadline (abandoned at it, its late result ignored), then the core's finish.
async function race(rt, id, pending, ms) {
  let timer
  const timeout = new Promise((resolve) => {
    timer = setTimeout(resolve, ms, TIMED_OUT)
  })
  pending = Promise.resolve(pending)
  // An abandoned handler may still reject later: never an unhandled rejection.
  pending.catch(() => {})
  let value
  try {
    value = await Promise.race([pending, timeout])
  } catch (err) {
    return rt.finish(id, 'threw', kindOf(err))
  } finally {
    clearTimeout(timer)
  }
  return value === TIMED_OUT ? rt.finish(id, 'timeout', null) : finish(rt, id, value)
}

// What the addon's `call` returned, to its end: the core's result, or a promise of it. A handler's
// ticket (`[id, tool, argsText, idempotencyKey, remainingMs, secretsText]`) runs its handler here.
function settle(rt, handlers, begun) {
  if (!Array.isArray(begun)) return begun
  const [id, tool, args, idempotencyKey, ms, secrets] = begun
  let out
  try {
    // `secrets`: the values the core hands a tool declaring `secrets_delivery: native`.
    // `progress(n, total, message)`: to the core, which decides what reaches the caller (issue 22).
    const progress = (n, total, message) => rt.progress(id, Number(n), total == null ? null : Number(total), typeof message === 'string' ? message : null)
    const ctx = secrets == null ? { idempotencyKey, tool, progress } : { idempotencyKey, tool, progress, secrets: JSON.parse(secrets) }
    out = handlers.get(tool)(JSON.parse(args), ctx)
    if (out !== null && (typeof out === 'object' || typeof out === 'function') && typeof out.then === 'function') return race(rt, id, out, ms)
  } catch (err) {
    return rt.finish(id, 'threw', kindOf(err))
  }
  return finish(rt, id, out)
}

function principalOf(options) {
  if (!options || typeof options !== 'object') throw invalid('a call needs options with a `principal`', 'invalid_principal')
  return options.principal
}

// A principal's text: anything with no JSON form is no principal (the core words the refusal).
function principalText(p) {
  const text = encode(p)
  return text instanceof Problem ? 'null' : text
}

const runId = (run) => (run && typeof run === 'object' ? run.id : run) ?? null
const approvalId = (a) => (a && typeof a === 'object' ? a.id ?? (a.approval && a.approval.id) : a)

class Harness {
  constructor(inner, path, handlers, names) {
    this._rt = inner
    this._handlers = handlers
    this._names = names
    this.path = path
    this.tools = this._request('describe_tools').map((d) => new ToolDescription(d))
  }

  _request(method, args) {
    return request(this._rt, method, args)
  }

  tool(name) {
    return this.tools.find((t) => t.name === name)
  }

  get handlerNames() {
    return this._names
  }

  call(tool, args, options) {
    return this._call(tool, args, options, null)
  }

  async _call(tool, args, o, text) {
    const p = text ?? principalText(principalOf(o))
    const rt = this._rt
    const a = textOf(args === undefined ? {} : args)
    let r = guard(() => rt.call(String(tool), a, p, o.tenant ?? null, o.task ?? null, runId(o.run), approvalId(o.approval) ?? null))
    if (Array.isArray(r)) r = settle(rt, this._handlers, r)
    if (r instanceof Promise) r = await r
    return CallResult._deliver(r, o.raiseOnRefusal)
  }

  run(options) {
    const o = options || {}
    const harness = this
    // Read once (a malformed principal fails here rather than at the first
    // call); the run's calls pass its text while `run.principal` is still
    // this object, so its fields are read when the run starts.
    const given = principalOf(options)
    const text = principalText(given)
    request(native, 'principal', { principal: JSON.parse(text) })
    const run = {
      id: this._request('new_run', { source: 'api', principal: JSON.parse(text) }),
      principal: o.principal,
      tenant: o.tenant ?? null,
      task: o.task ?? null,
      get labels() {
        return harness._request('labels', { run_id: this.id })
      },
      call(tool, args, callOptions) {
        const p = run.principal === given ? text : principalText(run.principal)
        return harness._call(tool, args, { ...callOptions, tenant: run.tenant, task: run.task, run: run.id }, p)
      },
    }
    return run
  }

  async approve(id, options) {
    const o = options || {}
    const edited = o.args == null ? null : textOf(o.args)
    const begun = guard(() => this._rt.approveAndResume(String(approvalId(id)), principalText(o.approver ?? null), edited))
    return CallResult._deliver(await settle(this._rt, this._handlers, begun), o.raiseOnRefusal)
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

// The core's other host methods (from its table), camelCased: the arguments before `*` are
// positional, the keyword-only ones come in an options object, an optional one missing is its default.
// Node gives these its own way: `tools`, `run()`, `run.labels`, `_testing.advanceMs`.
const SHAPED = ['describe_tools', 'new_run', 'labels', 'advance_ms']
for (const [name, params] of TABLES.methods) {
  const method = name.replace(/_(.)/g, (_, l) => l.toUpperCase())
  if (method in Harness.prototype || SHAPED.includes(name)) continue
  const star = params.indexOf('*')
  const positional = star < 0 ? params : params.slice(0, star)
  const keywords = star < 0 ? [] : params.slice(star + 1)
  const split = (p) => {
    const [key, dflt] = p.split(/=(.*)/s)
    return [key, dflt === undefined ? null : JSON.parse(dflt)]
  }
  const ids = { id: approvalId, run: runId }
  const put = (args, [key, dflt], v) => {
    args[key] = v === undefined ? dflt : ids[key] ? ids[key](v) : v
  }
  Object.defineProperty(Harness.prototype, method, {
    value(...given) {
      const args = {}
      positional.forEach((p, i) => put(args, split(p), given[i]))
      const o = given[positional.length] || {}
      for (const p of keywords) {
        const key = split(p)
        put(args, key, o[key[0].replace(/_(.)/g, (_, l) => l.toUpperCase())])
      }
      return this._request(name, args)
    },
    writable: true,
    configurable: true,
  })
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
  const declared = [...handlers].map(([name, fn]) => [name, fn.constructor.name === 'AsyncFunction', fn.name || null])
  // The callbacks take the core's JSON text and answer a bool, or the kind of what they threw.
  const audit = o.audit && ((event) => {
    try {
      o.audit(JSON.parse(event))
    } catch (err) {
      return kindOf(err)
    }
  })
  const onApproval = o.onApproval && ((req, approval) => {
    try {
      const answer = o.onApproval(JSON.parse(req), JSON.parse(approval))
      // A bool, or any other answer as `[its JSON text]` for the core to read (`{accept: id}`).
      if (typeof answer === 'boolean') return answer
      const text = answer != null && typeof answer === 'object' ? encode(answer) : null
      return typeof text === 'string' ? [text] : null
    } catch (err) {
      return kindOf(err)
    }
  })
  const loaded = {}
  const inner = guard(() => native.loadHost(String(path), declared, textOf(sources), audit || null, onApproval || null, t.clockMs ?? null,
    t.sequentialIds ?? null, t.sandboxWorker ?? null, otel && observer(loaded)))
  loaded.host = new WeakRef(inner)
  if (otel) {
    for (const ref of observed) if (!ref.deref()) observed.delete(ref)
    observed.add(loaded.host)
    tellListening(inner, sdkRegistered())
  }
  return new Harness(inner, String(path), handlers, Object.keys(tools).sort())
}

// Each call's span, as the core describes it (the `span` host method), handed
// to the host's OpenTelemetry API, and each approval decision's wait recorded
// in the `harnessweaver.approval.wait` histogram; called only while the core's
// switch says an SDK is registered.
function observer(loaded) {
  return (text) => {
    const host = loaded.host && loaded.host.deref()
    if (!host) return
    const event = JSON.parse(text)
    const decided = event.approval_decided
    if (decided) {
      // The API's meter provider has no proxy: asked at each (rare) decision, so a provider set later is used.
      const wait = otel.metrics.getMeter('harnessweaver').createHistogram('harnessweaver.approval.wait', {
        unit: 's',
        description: "how long an approval waited, from the call that asked to the approver's decision",
      })
      wait.record(decided.wait_ms / 1000, { 'gen_ai.tool.name': decided.tool, 'harnessweaver.approval.state': decided.state })
      return
    }
    const tracer = otel.trace.getTracerProvider().getTracer('harnessweaver')
    emitSpan(tracer, JSON.parse(host.request('span', `{"event":${text}}`)))
  }
}

function emitSpan(tracer, span) {
  // [seconds, nanoseconds] of `us` microseconds after the span's start (µs since the epoch fit a double exactly).
  const at = (us) => {
    const t = span.start_ms * 1000 + us
    return [Math.floor(t / 1e6), (t % 1e6) * 1000]
  }
  const parent = tracer.startSpan(span.name, { kind: otel.SpanKind.INTERNAL, attributes: Object.fromEntries(span.attributes), startTime: at(0) })
  const within = otel.trace.setSpan(otel.context.active(), parent)
  for (const phase of span.phases) {
    tracer.startSpan(phase.name, { startTime: at(phase.start_offset_us) }, within).end(at(phase.start_offset_us + phase.duration_us))
  }
  if (span.error !== null) parent.setStatus({ code: otel.SpanStatusCode.ERROR, message: span.error })
  parent.end(at(span.duration_us))
}

function inspect(path) {
  return new Harness(guard(() => native.inspectHost(String(path))), String(path), new Map(), [])
}

/** Test-only hooks (internal, not API): a manual clock and deterministic ids. */
const _testing = {
  load(path, options, { clockMs, sequentialIds = true, sandboxWorker } = {}) {
    return loadWith(path, options, { clockMs, sequentialIds, sandboxWorker })
  },
  advanceMs(harness, ms) {
    harness._request('advance_ms', { ms })
  },
  /** Steps 1–7 of a call whose allowed ticket is held: `{ held: id }`, or the result. */
  begin(harness, tool, args, o) {
    const rt = harness._rt
    const p = principalText(principalOf(o))
    const a = textOf(args === undefined ? {} : args)
    const r = guard(() => rt.call(String(tool), a, p, o.tenant ?? null, o.task ?? null, runId(o.run), approvalId(o.approval) ?? null, true))
    return typeof r === 'number' ? { held: r } : CallResult._deliver(r, o.raiseOnRefusal)
  },
  /** Runs a held call to its result, as `call` would have. */
  async resume(harness, held, o = {}) {
    let r = guard(() => harness._rt.resumeHeld(held))
    if (Array.isArray(r)) r = settle(harness._rt, harness._handlers, r)
    if (r instanceof Promise) r = await r
    return CallResult._deliver(r, o.raiseOnRefusal)
  },
  /** Whether `JSON.stringify(v)` is taken as `v`'s text, and the text the walk writes instead. */
  exact: (v) => jsonExact(v, 0),
  walk: (v) => textOf(v, 0, true),
}

function definitionDigest(name, description, inputSchema, outputSchema) {
  return guard(() => native.definitionDigest(name, description, textOf(inputSchema), outputSchema == null ? null : textOf(outputSchema)))
}

function canonicalJson(value) {
  return guard(() => native.canonicalJson(textOf(value)))
}

function sanitize(value, sanitizers) {
  return request(native, 'sanitize', { value, sanitizers: Array.from(sanitizers, String) })
}

async function serveMcp(h, options) {
  const o = options || {}
  const rt = h._rt
  const p = o.principal == null ? null : principalText(o.principal)
  const gw = guard(() => native.serveMcp(rt, o.http ?? null, p, o.tenant ?? null))
  for (let c = await gw.next(); c !== null; c = await gw.next()) {
    const call = c
    // Run as `call` runs it, on this thread; not awaited: calls run concurrently, as the gateway takes them.
    Promise.resolve().then(() => settle(rt, h._handlers, call.begin(rt))).then((r) => call.reply(r), () => call.reply(null))
  }
}

function cliRun(args) {
  return native.cliRun(args.map(String))
}

const celLite = require('./cel_lite.js')(native, HarnessweaverError, rethrow, TABLES.celNames, textOf)

module.exports = {
  load, inspect, _testing, CallResult, ToolBlocked, ToolNotFound, InvalidArguments, DigestMismatch, PolicyDenied, LimitExceeded,
  FlowBlocked, ApprovalRequired, ApprovalDenied, ToolFailed, OutputRejected, definitionDigest, canonicalJson, sanitize, cliRun,
  serveMcp, celLite, Harness, ToolDescription, HarnessweaverError, LoadError, InvalidValueError, InvalidArgumentError,
}
