'use strict'
// harnessweaver for Node: the Rust core decides; this file only shapes the API
// and turns the addon's errors into HarnessweaverError and its families.

const native = require('./native.js')
const governor = require('./governor.js')

const TABLES = native.tables()

/** Base class of every harnessweaver error; `code` is its stable snake_case code. */
class HarnessweaverError extends Error {
  constructor(message, code, problems) {
    super(message)
    this.name = new.target.name
    this.code = code
    this.problems = problems || []
  }
}

/** A harness or manifest failed to load; `problems` lists every problem found. */
class LoadError extends HarnessweaverError {}

/** A value with no portable JSON form (NaN, huge integers, nesting too deep). */
class InvalidValueError extends HarnessweaverError {}

/** A bad argument from the caller. */
class InvalidArgumentError extends HarnessweaverError {}

const KINDS = { load: LoadError, value: InvalidValueError, invalid_argument: InvalidArgumentError }

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

// The refusal classes, from the core's table (base first): a refused or
// pending call raises the class its result names.
const classes = {}
for (const c of TABLES.refusalClasses) {
  const Cls = c.parent === null
    ? class extends HarnessweaverError {
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
    : class extends classes[c.parent] {}
  Object.defineProperty(Cls, 'name', { value: c.name })
  for (const x of c.extras) {
    Object.defineProperty(Cls.prototype, x.replace(/_(.)/g, (_, l) => l.toUpperCase()), { get() { return this.result[x] } })
  }
  classes[c.name] = Cls
}
// Named one by one (not spread into module.exports) so that Node's ESM loader
// sees them: `import { ApprovalRequired } from 'harnessweaver'` works.
const { ToolBlocked, ToolNotFound, InvalidArguments, DigestMismatch, PolicyDenied, LimitExceeded, FlowBlocked, ApprovalRequired,
  ApprovalDenied, ToolFailed, OutputRejected } = classes

/** The value every call returns; the fields are the core's (snake_case, as in every language). */
const { CallResult } = native
for (const k of ['decision', 'code', 'step', 'message', 'tool', 'call_id', 'run_id', 'output', 'output_report', 'approval',
  'retry_after_ms', 'reasons', 'labels', 'would_refuse']) {
  Object.defineProperty(CallResult.prototype, k, { get() { return this.field(k) }, enumerable: true })
}

/** One tool as loaded from its manifest; every field of `describe()` is a property. */
class ToolDescription {
  constructor(fields, source) {
    Object.assign(this, fields)
    // The manifest it came from, to register it in code (not a field).
    if (source) Object.defineProperty(this, '_source', { value: source })
    Object.freeze(this)
  }

  /**
   * Parses one `kind: Tool` manifest (an object, or YAML/JSON text). The
   * result can be registered in code: `load(path, { codeTools: [[tool, fn]] })`.
   */
  static fromManifest(manifest, origin) {
    return new ToolDescription(guard(() => native.describeManifest(manifest, origin)), [manifest, origin ?? '<code>'])
  }
}

/** A loaded harness: its tools in the order their manifests were found. */
class Harness {
  constructor(inner, path, tools, handlers) {
    this._rt = inner
    this._handlers = handlers
    this._names = Object.keys(tools || {}).sort()
    this.path = path
    this.tools = inner.describeTools().map((d) => new ToolDescription(d))
  }

  /** The tool called `name`, or undefined. */
  tool(name) {
    return this.tools.find((t) => t.name === name)
  }

  /** The names of the native handlers given to `load`, sorted. */
  get handlerNames() {
    return this._names
  }
}

const gateway = governor.governed(Harness, classes, guard, invalid)

/**
 * Loads `harness.yaml` and every manifest it names, ready for calls. Every
 * native tool needs a function in `tools` (or in `codeTools`, for tools
 * registered in code with `ToolDescription.fromManifest`); `audit(event)`
 * receives each audit event; `onApproval(request, approval)` may answer an
 * approval inline (true approves, false denies, anything else leaves it pending).
 */
function load(path, options) {
  return loadWith(path, options, {})
}

function loadWith(path, options, testing) {
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    throw invalid('`options` must be an object like `{ tools }`', 'invalid_options')
  }
  const o = options || {}
  const tools = o.tools
  if (tools !== undefined && (tools === null || typeof tools !== 'object' || Array.isArray(tools))) {
    throw invalid('`tools` must be an object mapping tool names to functions', 'invalid_tools')
  }
  const codeTools = o.codeTools ?? []
  if (!Array.isArray(codeTools)) throw invalid('`codeTools` must be an array of [ToolDescription, function] pairs', 'invalid_tools')
  for (const key of ['audit', 'onApproval']) {
    if (o[key] != null && typeof o[key] !== 'function') throw invalid(`\`${key}\` must be a function`, 'invalid_options')
  }
  const handlers = new Map()
  for (const [name, fn] of Object.entries(tools || {})) {
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
  const names = [...handlers.keys()]
  const isAsync = (n) => handlers.get(n).constructor.name === 'AsyncFunction'
  const t = testing
  const inner = guard(() => native.loadHost(String(path), names.filter((n) => !isAsync(n)), names.filter(isAsync), sources,
    o.audit ?? null, o.onApproval ?? null, t.clockMs ?? null, t.sequentialIds ?? null, t.sandboxWorker ?? null))
  return new Harness(inner, String(path), tools, handlers)
}

/** Loads `harness.yaml` and its manifests only to read them; the harness cannot take calls. */
function inspect(path) {
  return new Harness(guard(() => native.inspectHost(String(path))), String(path), {}, new Map())
}

/** Test-only hooks (internal, not API): a manual clock and deterministic ids. */
const _testing = {
  load(path, options, { clockMs, sequentialIds = true, sandboxWorker } = {}) {
    return loadWith(path, options, { clockMs, sequentialIds, sandboxWorker })
  },
  advanceMs(harness, ms) {
    guard(() => harness._rt.advanceMs(ms))
  },
}

// The deepest value sent as JSON text; deeper ones take the walk (serde_json
// parses at most 128 levels, and the walk gives the nesting error).
const TEXT_MAX_DEPTH = 100

/**
 * Whether `JSON.stringify(v)` says exactly what the addon's value walk would
 * convert: only finite numbers, strings, booleans, null, arrays without holes
 * and plain objects, and no `toJSON` anywhere (own, inherited or not
 * enumerable). Anything else (undefined, functions, NaN, BigInt, a Date, a Map,
 * a class instance) would be dropped or changed by `JSON.stringify`, so it
 * takes the walk, which refuses it or applies the shared rules.
 */
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

/**
 * `value` as `JSON.stringify` text when that text is exact, else undefined.
 * One string crosses to the addon instead of a walk of N-API calls per
 * property; the core parses it (numbers by the same rule as the walk) and
 * canonicalises it. A getter is read twice (check, then text).
 */
function jsonText(value) {
  return jsonExact(value, 0) ? JSON.stringify(value) : undefined
}

function definitionDigest(name, description, inputSchema) {
  return guard(() => {
    const text = jsonText(inputSchema)
    // null: the text holds what the core cannot take from text (a lone surrogate): walk.
    const digest = text === undefined ? null : native.definitionDigestText(name, description, text)
    return digest ?? native.definitionDigest(name, description, inputSchema)
  })
}

function canonicalJson(value) {
  return guard(() => {
    const text = jsonText(value)
    const canonical = text === undefined ? null : native.canonicalJsonText(text)
    return canonical ?? native.canonicalJson(value)
  })
}

/** Runs the output sanitizers on a value; returns `{ value, counts }`. */
function sanitize(value, sanitizers) {
  return guard(() => native.sanitize(value, Array.from(sanitizers, String)))
}

/**
 * Serves the harness's tools over MCP, every call governed: over stdio
 * (`principal` and `tenant`, else `spec.gateway.stdio` of harness.yaml) or,
 * with `http: '127.0.0.1:PORT'`, streamable HTTP at `/mcp` with callers checked
 * against `spec.gateway.http` (no token, 401). Native tools run through this
 * process's functions as `call` runs them. Resolves when the stdio client
 * disconnects; over HTTP it serves until the process ends. Nothing else may
 * write to stdout while serving stdio. See docs/gateway.md.
 */
function serveMcp(h, options) {
  return gateway.serveMcp(h, options)
}

/** Runs the `harnessweaver` command line; returns its exit code. */
function cliRun(args) {
  return native.cliRun(args.map(String))
}

const celLite = require('./cel_lite.js')(native, HarnessweaverError, rethrow, TABLES.celNames)

module.exports = {
  load, inspect, _testing, CallResult, ToolBlocked, ToolNotFound, InvalidArguments, DigestMismatch, PolicyDenied, LimitExceeded,
  FlowBlocked, ApprovalRequired, ApprovalDenied, ToolFailed, OutputRejected, definitionDigest, canonicalJson, sanitize, cliRun,
  serveMcp, celLite, Harness, ToolDescription, HarnessweaverError, LoadError, InvalidValueError, InvalidArgumentError,
}
