/**
 * harnessweaver: a governor for the tool calls of LLM agents.
 *
 * The Rust core decides everything; this package converts JavaScript values to
 * the core's JSON values and back. Numbers: integral and within ±2^53 are
 * integers, others doubles; `NaN`/`Infinity` are refused (`non_finite_number`),
 * as is a `BigInt` beyond ±2^53 (`integer_out_of_range`).
 *
 * Hand-written; `tests/node/api.test.mjs` fails when it and the addon's
 * exports drift apart.
 *
 * @packageDocumentation
 */

/** Any value with a JSON form. */
export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | { [key: string]: JsonValue }

/** One load problem, with where it is. */
export interface Problem {
  /** Stable snake_case code, for example `unknown_field`. */
  code: string
  /** What is wrong, safe to show a model. */
  message: string
  /** The file the problem is in, when there is one. */
  file?: string
  /** 1-based line, when known. */
  line?: number
  /** 1-based column, when known. */
  column?: number
  /** The field path, for example `spec.timeout`; absent for a whole file. */
  path?: string
}

/** Base class of every harnessweaver error. */
export declare class HarnessweaverError extends Error {
  /** The stable snake_case code. */
  readonly code: string
  /** The load problems; empty for other errors. */
  readonly problems: Problem[]
}

/** A harness or manifest failed to load; `problems` lists every problem found. */
export declare class LoadError extends HarnessweaverError {}

/** A value with no portable JSON form (NaN, huge integers, nesting too deep, unsupported types). */
export declare class InvalidValueError extends HarnessweaverError {}

/** A bad argument from the caller (for example `tools` that is not an object of functions). */
export declare class InvalidArgumentError extends HarnessweaverError {}

/** Whether a manifest's `definition_digest` matches its current definition. */
export type PinState = 'pinned' | 'mismatched' | 'unpinned'

/**
 * One tool as loaded from its manifest: name, description, input schema,
 * digest, pin state and every spec field with its default filled in.
 */
export declare class ToolDescription {
  readonly name: string
  readonly description: string
  readonly input_schema: { [key: string]: JsonValue }
  /** The digest of the current definition (`sha256:…`). */
  readonly digest: string
  readonly pin: PinState
  /** Every other spec field, as the core describes it. */
  readonly [field: string]: unknown

  /**
   * Parses one `kind: Tool` manifest, given as an object or as YAML/JSON text.
   * @throws {@link LoadError} listing every problem.
   */
  static fromManifest(manifest: string | { [key: string]: JsonValue }, origin?: string): ToolDescription
}

/** A native tool handler. */
export type ToolHandler = (...args: any[]) => unknown

/** Options of {@link load}. */
export interface LoadOptions {
  /** Native tool handlers by tool name. */
  tools?: { [name: string]: ToolHandler }
}

/** A loaded harness. */
export declare class Harness {
  /** The path given to {@link load}. */
  readonly path: string
  /** The tools, in the order their manifests were found. */
  readonly tools: ToolDescription[]
  /** The tool called `name`. */
  tool(name: string): ToolDescription | undefined
  /** The names of the native handlers given to {@link load}, sorted. */
  readonly handlerNames: string[]
}

/**
 * Loads `harness.yaml` and every manifest it names.
 * @throws {@link LoadError} whose `problems` lists every problem (file, line, column, path, code).
 */
export declare function load(path: string, options?: LoadOptions): Harness

/**
 * `sha256:` + hex SHA-256 of the canonical JSON of `{description, input_schema, name}`.
 * @throws {@link InvalidValueError} for values with no portable JSON form.
 */
export declare function definitionDigest(name: string, description: string, inputSchema: JsonValue): string

/** The canonical JSON text of a value (what every language hashes). */
export declare function canonicalJson(value: JsonValue): string

/** Runs the `harnessweaver` command line with `args`; returns its exit code (0 clean, 1 problems, 2 usage). */
export declare function cliRun(args: string[]): number
