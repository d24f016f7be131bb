// Type-checked (never run) by tests/node/api.test.mjs: the README-style uses of
// the package must compile against index.d.ts under `strict`.
import {
  canonicalJson,
  definitionDigest,
  HarnessweaverError,
  InvalidValueError,
  load,
  LoadError,
  type Harness,
  type PinState,
  type Problem,
  ToolDescription,
} from '../../../bindings-node/index.js'

const harness: Harness = load('examples/shop/harness.yaml', { tools: { refund_payment: (args: unknown) => args } })
for (const tool of harness.tools) {
  const pin: PinState = tool.pin
  const digest: string = tool.digest
  const name: string = tool.name
  const other: unknown = tool.risk
  void [pin, digest, name, other]
}
const found: ToolDescription | undefined = harness.tool('refund_payment')
const names: string[] = harness.handlerNames
const d: string = definitionDigest('t', 'd', { type: 'object', n: 1, big: 5n, list: [null, true, 'x'] })
const c: string = canonicalJson([1, 2.5, 'é'])
const fromText: ToolDescription = ToolDescription.fromManifest('apiVersion: harnessweaver/v1\nkind: Tool\n')
const fromObject: ToolDescription = ToolDescription.fromManifest({ apiVersion: 'harnessweaver/v1' }, 'inline')
void [found, names, d, c, fromText, fromObject]

try {
  load('missing.yaml')
} catch (err) {
  if (err instanceof LoadError) {
    const problems: Problem[] = err.problems
    const code: string = err.code
    const line: number | undefined = problems[0]?.line
    void [code, line]
  } else if (err instanceof InvalidValueError || err instanceof HarnessweaverError) {
    const code: string = err.code
    void code
  }
}

// @ts-expect-error: a schema is a JSON value, not a function
definitionDigest('t', 'd', () => 1)
// @ts-expect-error: tools maps names to functions
load('h.yaml', { tools: { x: 1 } })
