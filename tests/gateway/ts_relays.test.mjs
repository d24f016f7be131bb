// Relays and in-band approvals through `harnessweaver gateway mcp` (issue 22),
// driven by the official MCP TypeScript SDK client (its progress callback and
// its sampling, elicitation and logging handlers) against the real upstream
// server tests/gateway/relay/relay_server.py under pinned manifests
// (tests/gateway/relay/make_relay_harness.py).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CreateMessageRequestSchema, ElicitRequestSchema, LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, "..", "..");
const HW = process.env.HW_GATEWAY_BIN ?? join(ROOT, "target", "x86_64-unknown-linux-gnu", "debug", "harnessweaver");
const PYTHON = process.env.HW_GATEWAY_PYTHON ?? "python3";

function relayHarness() {
  const dest = join(mkdtempSync(join(tmpdir(), "hw-relay-ts-")), "h");
  const r = spawnSync(PYTHON, [join(HERE, "relay", "make_relay_harness.py"), dest], { encoding: "utf8", env: { ...process.env, HW_GATEWAY_BIN: HW } });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

// A client that records what it is sent and answers with `answers`, of the
// CLI gateway, or of `host` (a command serving the harness, e.g. ts_host.mjs).
async function withClient(info, answers, body, host = [HW, "gateway", "mcp", info.dir, "--stdio"]) {
  const seen = { logs: [], samplings: [], elicitations: [] };
  const capabilities = {};
  if (answers.sampling) capabilities.sampling = {};
  if (answers.elicitation) capabilities.elicitation = {};
  const client = new Client({ name: "hw-ts-relay-test", version: "1.0.0" }, { capabilities });
  if (answers.sampling) {
    client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
      seen.samplings.push(req.params);
      return { role: "assistant", content: { type: "text", text: answers.sampling }, model: "test-model" };
    });
  }
  if (answers.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      seen.elicitations.push(req.params);
      return answers.elicitation;
    });
  }
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => seen.logs.push([n.params.level, n.params.data]));
  const transport = new StdioClientTransport({ command: host[0], args: host.slice(1), env: { ...process.env, ...info.env }, stderr: "ignore" });
  await client.connect(transport);
  try {
    return { out: await body(client), seen };
  } finally {
    await client.close();
  }
}

const text = (result) => result.content[0].text;

test("progress and log messages of an upstream tool reach its caller", async () => {
  const info = relayHarness();
  const progress = [];
  const { out, seen } = await withClient(info, {}, async (c) => {
    const counted = await c.callTool({ name: "count", arguments: { steps: 3 } }, undefined, { onprogress: (p) => progress.push([p.progress, p.total, p.message]) });
    const chattered = await c.callTool({ name: "chatter", arguments: { tag: "ts" } });
    return [text(counted), text(chattered)];
  });
  assert.deepEqual(out, ["counted 3", "chattered ts"]);
  assert.deepEqual(progress, [[1, 3, "step 1"], [2, 3, "step 2"], [3, 3, "step 3"]]);
  assert.deepEqual(seen.logs, [["debug", "ts debug"], ["info", "ts info"], ["warning", "ts warning"]]);
});

test("serveMcp relays as the CLI gateway does: progress, governed log text, sampling, elicitation", async () => {
  const info = relayHarness();
  const progress = [];
  const answers = { sampling: "forty-two", elicitation: { action: "accept", content: { answer: "green" } } };
  const host = [process.execPath, join(HERE, "ts_host.mjs"), info.dir, "--no-tools"];
  const { out, seen } = await withClient(info, answers, async (c) => {
    const onprogress = (p) => progress.push([p.progress, p.total, p.message]);
    return [
      text(await c.callTool({ name: "count", arguments: { steps: 2 } }, undefined, { onprogress })),
      text(await c.callTool({ name: "chatter", arguments: { tag: "node" } })),
      text(await c.callTool({ name: "gossip", arguments: {} }, undefined, { onprogress })),
      text(await c.callTool({ name: "ask_model", arguments: { prompt: "six times seven?" } })),
      text(await c.callTool({ name: "ask_user", arguments: { question: "Favourite colour?" } })),
    ];
  }, host);
  assert.deepEqual(out, ["counted 2", "chattered node", "gossiped", "model said: forty-two", "user said: green"]);
  // gossip's text went through its output policy, as through the CLI gateway.
  assert.deepEqual(progress.slice(0, 3), [[1, 2, "step 1"], [2, 2, "step 2"], [1, 2, "mailing [EMAIL]"]]);
  assert.equal(progress[3][2], "y".repeat(1024));
  assert.deepEqual(seen.logs.slice(0, 3), [["debug", "node debug"], ["info", "node info"], ["warning", "node warning"]]);
  assert.deepEqual(seen.logs.slice(3), [
    ["info", "[removed: instruction]"],
    ["warning", { contact: "Write to [EMAIL]", note: "handed [SECRET]" }],
    ["error", "x".repeat(4096)],
  ]);
  assert.equal(seen.samplings[0].messages[0].content.text, "six times seven?");
  assert.equal(seen.elicitations[0].message, "Favourite colour?");
});

test("sampling and elicitation are relayed to the caller's client", async () => {
  const info = relayHarness();
  const { out, seen } = await withClient(info, { sampling: "forty-two", elicitation: { action: "accept", content: { answer: "green" } } }, async (c) => [
    text(await c.callTool({ name: "ask_model", arguments: { prompt: "six times seven?" } })),
    text(await c.callTool({ name: "ask_user", arguments: { question: "Favourite colour?" } })),
  ]);
  assert.deepEqual(out, ["model said: forty-two", "user said: green"]);
  assert.equal(seen.samplings[0].messages[0].content.text, "six times seven?");
  assert.equal(seen.elicitations[0].message, "Favourite colour?");
});

test("a sampling request in a private, untrusted run is refused upstream and audited; the client is never asked", async () => {
  const info = relayHarness();
  const { out, seen } = await withClient(info, { sampling: "leak" }, async (c) => text(await c.callTool({ name: "summarise_patient", arguments: { name: "Ann" } })));
  assert.match(out, /^sampling refused:.*relay_denied/);
  assert.deepEqual(seen.samplings, []);
  const events = readFileSync(join(info.dir, "audit.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(events.filter((e) => e.code === "relay_denied" && e.tool === "summarise_patient").length, 1);
});

test("a caller approval is confirmed in band; a role approval is never put to the caller", async () => {
  const info = relayHarness();
  const { out, seen } = await withClient(info, { elicitation: { action: "accept", content: {} } }, async (c) => [
    await c.callTool({ name: "transfer", arguments: { amount: 250 } }),
    await c.callTool({ name: "wipe", arguments: { db: "prod" } }),
  ]);
  assert.equal(out[0].isError, false);
  assert.equal(text(out[0]), "sent 250");
  assert.equal(out[1].isError, true);
  assert.equal(out[1].structuredContent.status, "pending");
  assert.equal(seen.elicitations.length, 1);
  assert.match(seen.elicitations[0].message, /`transfer`/);
});
