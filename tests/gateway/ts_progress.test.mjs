// Progress of a native JavaScript handler (`ctx.progress`) and of a process
// tool (stderr lines) through `serveMcp` (issue 22), driven by the official MCP
// TypeScript SDK client's progress callback: decided by the core (only
// increasing progress, messages sanitized with the tool's output sanitizers),
// sent to the caller of the call only.
import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ProgressNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const PYTHON = process.env.HW_GATEWAY_PYTHON ?? "python3";

function harness() {
  const dir = mkdtempSync(join(tmpdir(), "hw-progress-ts-"));
  mkdirSync(join(dir, "tools"));
  writeFileSync(join(dir, "harness.yaml"), [
    "apiVersion: harnessweaver/v1", "kind: Harness", "metadata: { name: progress-test }", "spec:",
    "  tools: { manifests: [tools/*.yaml] }", "  gateway:", "    stdio:", "      principal: { id: desktop, roles: [support] }", "",
  ].join("\n"));
  const tool = (name, lines) => writeFileSync(join(dir, "tools", `${name}.yaml`), [
    "apiVersion: harnessweaver/v1", "kind: Tool", `metadata: { name: ${name} }`, "spec:", ...lines, "  output: { sanitize: [pii_redact] }", "",
  ].join("\n"));
  tool("index_docs", [
    "  transport: native", '  handler: "progress_host:index_docs"', "  description: Index some documents.",
    "  input_schema: { type: object, properties: { docs: { type: integer } }, required: [docs] }",
  ]);
  tool("crawl", [
    "  transport: process", `  command: ${JSON.stringify(PYTHON)}`, "  args: [crawl.py]", "  description: Crawl some pages.",
    "  input_schema: { type: object, properties: { pages: { type: integer } }, required: [pages] }",
  ]);
  copyFileSync(join(HERE, "progress", "crawl.py"), join(dir, "crawl.py"));
  return dir;
}

test("a JavaScript handler's ctx.progress and a process tool's stderr reports reach the caller through serveMcp, sanitized", async () => {
  const client = new Client({ name: "hw-ts-progress-test", version: "1.0.0" }, { capabilities: {} });
  const transport = new StdioClientTransport({ command: process.execPath, args: [join(HERE, "progress", "progress_host.mjs"), harness()], stderr: "ignore" });
  // The SDK drops a progress notification read in the same chunk as its call's answer (it handles
  // notifications a microtask later, answers at once), so the test records every one itself; the
  // `onprogress` given to each call only makes the client send a progress token.
  const seen = [];
  client.setNotificationHandler(ProgressNotificationSchema, (n) => seen.push(n.params));
  await client.connect(transport);
  const call = async (name, args) => {
    seen.length = 0;
    const result = await client.callTool({ name, arguments: args }, undefined, { onprogress: () => {} });
    const tokens = new Set(seen.map((p) => p.progressToken));
    assert.equal(tokens.size, 1, "one progress token: the call's own");
    return [result, seen.map((p) => [p.progress, p.total, p.message])];
  };
  try {
    const [a, indexed] = await call("index_docs", { docs: 2 });
    assert.equal(a.isError, false);
    assert.deepEqual(JSON.parse(a.content[0].text), { indexed: 2 });
    assert.deepEqual(indexed, [[1, 2, "indexed doc 1 of [EMAIL]"], [2, 2, "indexed doc 2 of [EMAIL]"]]);
    const [b, crawled] = await call("crawl", { pages: 3 });
    assert.equal(b.isError, false);
    assert.deepEqual(crawled, [[1, 3, "fetched page 1 for [EMAIL]"], [2, 3, "fetched page 2"], [3, 3, "fetched page 3"]]);
  } finally {
    await client.close();
  }
});
