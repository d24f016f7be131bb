'use strict'
// harnessweaver for Node: the Rust core decides; this file only shapes the API
// and turns the addon's errors into HarnessweaverError / LoadError.

const native = require('./native.js')
const governor = require('./governor.js')

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
    const Cls = KINDS[err.kind] || HarnessweaverError
    const wrapped = new Cls(err.message, err.code, err.problems)
    throw wrapped
  }
  throw err
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
    let fields
    try {
      fields = native.describeManifest(manifest, origin)
    } catch (err) {
      return rethrow(err)
    }
    return new ToolDescription(fields, [manifest, origin ?? '<code>'])
  }
}

/** A loaded harness: its tools in the order their manifests were found. */
class Harness {
  constructor(inner, path) {
    this._inner = inner
    this.path = path
    this.tools = inner.describeTools().map((d) => new ToolDescription(d))
  }

  /** The tool called `name`, or undefined. */
  tool(name) {
    return this.tools.find((t) => t.name === name)
  }

  /** The names of the native handlers given to `load`, sorted. */
  get handlerNames() {
    return this._inner.handlerNames()
  }
}

const errors = governor.makeErrors(HarnessweaverError)
// Named one by one (not spread into module.exports) so that Node's ESM loader
// sees them: `import { ApprovalRequired } from 'harnessweaver'` works.
const {
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
} = errors
const { CallResult } = governor
const gateway = governor.governed(Harness, errors, rethrow, InvalidArgumentError)

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
    throw new InvalidArgumentError('`options` must be an object like `{ tools }`', 'invalid_options', [])
  }
  const o = options || {}
  const tools = o.tools
  if (tools !== undefined && (tools === null || typeof tools !== 'object' || Array.isArray(tools))) {
    throw new InvalidArgumentError('`tools` must be an object mapping tool names to functions', 'invalid_tools', [])
  }
  const codeTools = o.codeTools ?? []
  if (!Array.isArray(codeTools)) {
    throw new InvalidArgumentError('`codeTools` must be an array of [ToolDescription, function] pairs', 'invalid_tools', [])
  }
  for (const key of ['audit', 'onApproval']) {
    if (o[key] != null && typeof o[key] !== 'function') {
      throw new InvalidArgumentError(`\`${key}\` must be a function`, 'invalid_options', [])
    }
  }
  let harness
  try {
    harness = new Harness(native.loadHarness(String(path), tools), String(path))
  } catch (err) {
    return rethrow(err)
  }
  const handlers = new Map(Object.entries(tools || {}))
  const sources = []
  for (const pair of codeTools) {
    const [tool, fn] = Array.isArray(pair) ? pair : [pair, undefined]
    if (!(tool instanceof ToolDescription) || !tool._source) {
      throw new InvalidArgumentError('`codeTools` takes [ToolDescription.fromManifest(...), function] pairs', 'invalid_tools', [])
    }
    if (fn !== undefined && typeof fn !== 'function') {
      throw new InvalidArgumentError(`the handler of \`${tool.name}\` must be a function`, 'invalid_tools', [])
    }
    sources.push(tool._source)
    if (fn) handlers.set(tool.name, fn)
  }
  try {
    harness._rt = governor.loadRuntime(String(path), handlers, sources, { ...o, ...testing })
  } catch (err) {
    return rethrow(err)
  }
  harness._handlers = handlers
  return harness
}

/** Loads `harness.yaml` and its manifests only to read them; the harness cannot take calls. */
function inspect(path) {
  try {
    return new Harness(native.loadHarness(String(path)), String(path))
  } catch (err) {
    return rethrow(err)
  }
}

/** Test-only hooks (internal, not API): a manual clock and deterministic ids. */
const _testing = {
  load(path, options, { clockMs, sequentialIds = true, sandboxWorker } = {}) {
    return loadWith(path, options, { clockMs, sequentialIds, sandboxWorker })
  },
  advanceMs(harness, ms) {
    harness._rt.advanceMs(ms)
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
  try {
    const text = jsonText(inputSchema)
    // null: the text holds what the core cannot take from text (a lone surrogate): walk.
    const digest = text === undefined ? null : native.definitionDigestText(name, description, text)
    return digest ?? native.definitionDigest(name, description, inputSchema)
  } catch (err) {
    return rethrow(err)
  }
}

function canonicalJson(value) {
  try {
    const text = jsonText(value)
    const canonical = text === undefined ? null : native.canonicalJsonText(text)
    return canonical ?? native.canonicalJson(value)
  } catch (err) {
    return rethrow(err)
  }
}

/** Runs the output sanitizers on a value; returns `{ value, counts }`. */
function sanitize(value, sanitizers) {
  try {
    return native.sanitize(value, Array.from(sanitizers, String))
  } catch (err) {
    return rethrow(err)
  }
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

const celLite = require('./cel_lite.js')(native, HarnessweaverError, rethrow)

module.exports = {
  load,
  inspect,
  _testing,
  CallResult,
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
  definitionDigest,
  canonicalJson,
  sanitize,
  cliRun,
  serveMcp,
  celLite,
  Harness,
  ToolDescription,
  HarnessweaverError,
  LoadError,
  InvalidValueError,
  InvalidArgumentError,
}
