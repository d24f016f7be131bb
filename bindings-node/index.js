'use strict'
// harnessweaver for Node: the Rust core decides; this file only shapes the API
// and turns the addon's errors into HarnessweaverError / LoadError.

const native = require('./native.js')

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
  constructor(fields) {
    Object.assign(this, fields)
    Object.freeze(this)
  }

  /** Parses one `kind: Tool` manifest (an object, or YAML/JSON text). */
  static fromManifest(manifest, origin) {
    try {
      return new ToolDescription(native.describeManifest(manifest, origin))
    } catch (err) {
      return rethrow(err)
    }
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

function load(path, options) {
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    throw new InvalidArgumentError('`options` must be an object like `{ tools }`', 'invalid_options', [])
  }
  const tools = options ? options.tools : undefined
  if (tools !== undefined && (tools === null || typeof tools !== 'object' || Array.isArray(tools))) {
    throw new InvalidArgumentError('`tools` must be an object mapping tool names to functions', 'invalid_tools', [])
  }
  try {
    return new Harness(native.loadHarness(String(path), tools), String(path))
  } catch (err) {
    return rethrow(err)
  }
}

function definitionDigest(name, description, inputSchema) {
  try {
    return native.definitionDigest(name, description, inputSchema)
  } catch (err) {
    return rethrow(err)
  }
}

function canonicalJson(value) {
  try {
    return native.canonicalJson(value)
  } catch (err) {
    return rethrow(err)
  }
}

/** Runs the `harnessweaver` command line; returns its exit code. */
function cliRun(args) {
  return native.cliRun(args.map(String))
}

module.exports = {
  load,
  definitionDigest,
  canonicalJson,
  cliRun,
  Harness,
  ToolDescription,
  HarnessweaverError,
  LoadError,
  InvalidValueError,
  InvalidArgumentError,
}
