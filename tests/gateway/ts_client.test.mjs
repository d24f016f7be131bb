// `harnessweaver gateway mcp` driven by the official MCP TypeScript SDK client
// (@modelcontextprotocol/sdk, pinned by tests/gateway/package-lock.json), over
// stdio and streamable HTTP, with approvals resolved by `harnessweaver approvals`
// in another process. The harness is tests/gateway/harness (see make_harness.py).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { HERE, HW, envFor, makeHarness, withHttpGateway } from "./gateway_support.mjs";

const FINANCE = '{"id": "fiona", "roles": ["finance"]}';

function approvals(info, ...args) {
  return spawnSync(HW, ["approvals", ...args, "--harness", info.dir], { encoding: "utf8" });
}

async function withStdio(info, body) {
  const transport = new StdioClientTransport({ command: HW, args: ["gateway", "mcp", info.dir, "--stdio"], env: envFor(info), stderr: "ignore" });
  const client = new Client({ name: "hw-ts-test", version: "1.0.0" });
  await client.connect(transport);
  try {
    return await body(client);
  } finally {
    await client.close();
  }
}

async function withHttpClient(url, token, body) {
  const opts = token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : {};
  const client = new Client({ name: "hw-ts-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), opts));
  try {
    return await body(client);
  } finally {
    await client.close();
  }
}

const names = (listed) => listed.tools.map((t) => t.name).sort();

function refused(result) {
  assert.equal(result.isError, true, JSON.stringify(result));
  return result.structuredContent;
}

test("stdio: list hides what the caller may not use; calls run; refusals carry codes", async () => {
  const info = makeHarness();
  await withStdio(info, async (c) => {
    const listed = await c.listTools();
    assert.deepEqual(names(listed), ["add", "calc", "shout"]);
    const add = listed.tools.find((t) => t.name === "add");
    assert.equal(add.description, "Add two integers.");
    assert.deepEqual(add.inputSchema.required, ["a", "b"]);

    const sum = await c.callTool({ name: "add", arguments: { a: 20, b: 22 } });
    assert.equal(sum.isError, false);
    assert.equal(sum.content[0].text, "42");
    const calc = await c.callTool({ name: "calc", arguments: { code: "2 ** 10" } });
    assert.equal(JSON.parse(calc.content[0].text).value, 1024);

    const cases = [
      ["calc", { code: ["not", "a", "string"] }, "invalid_args", "validate"],
      ["calc", { code: "'secret'" }, "policy_denied", "policy"],
      ["payroll", { code: "1" }, "scope_missing", "policy"],
      ["retired", {}, "tool_disabled", "resolve"],
      ["nope", {}, "unknown_tool", "resolve"],
    ];
    for (const [name, args, code, step] of cases) {
      const s = refused(await c.callTool({ name, arguments: args }));
      assert.deepEqual([s.status, s.code, s.step], ["refused", code, step], name);
    }
  });
});

test("stdio: pending approval, approved by `harnessweaver approvals` in another process, then the retried call runs", async () => {
  const info = makeHarness();
  await withStdio(info, async (c) => {
    const pending = refused(await c.callTool({ name: "add", arguments: { a: 101, b: 1 } }));
    assert.equal(pending.status, "pending");
    assert.equal(pending.code, "approval_required");
    const listed = approvals(info, "list", "--json");
    assert.equal(listed.status, 0, listed.stderr);
    assert.ok(JSON.parse(listed.stdout).some((a) => a.id === pending.approval_id && a.state === "pending"));

    // The gateway is still running (this client is connected) while another process decides.
    const ok = approvals(info, "approve", pending.approval_id, "--approver", FINANCE);
    assert.equal(ok.status, 0, ok.stderr);
    const done = await c.callTool({ name: "add", arguments: { a: 101, b: 1 } });
    assert.equal(done.isError, false);
    assert.equal(done.content[0].text, "102");

    const again = refused(await c.callTool({ name: "add", arguments: { a: 150, b: 0 } }));
    const no = approvals(info, "deny", again.approval_id, "--reason", "no", "--approver", FINANCE);
    assert.equal(no.status, 0, no.stderr);
    const denied = refused(
      await c.callTool({ name: "add", arguments: { a: 150, b: 0 }, _meta: { "harnessweaver/approval_id": again.approval_id } }),
    );
    assert.deepEqual([denied.status, denied.code], ["refused", "approval_denied"]);
  });
});

test("http: no token or a wrong one gets 401; keys map to principal, scopes and tenant", async () => {
  const info = makeHarness();
  await withHttpGateway(info, async (url) => {
    for (const auth of [undefined, "Bearer wrong", `Bearer ${info.alice_token}x`]) {
      const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
      if (auth) headers.authorization = auth;
      const r = await fetch(url, {
        method: "POST",
        headers,
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      assert.equal(r.status, 401, String(auth));
      assert.match(r.headers.get("www-authenticate"), /^Bearer/);
    }
    await assert.rejects(withHttpClient(url, null, (c) => c.listTools()));
    await assert.rejects(withHttpClient(url, "wrong", (c) => c.listTools()));

    await withHttpClient(url, info.alice_token, async (c) => {
      assert.deepEqual(names(await c.listTools()), ["add", "calc", "payroll", "shout"]);
      const shout = await c.callTool({ name: "shout", arguments: { text: "governed" } });
      assert.equal(shout.content[0].text, "GOVERNED");
    });
    await withHttpClient(url, info.bob_token, async (c) => {
      assert.deepEqual(names(await c.listTools()), ["add"]);
      assert.equal(refused(await c.callTool({ name: "shout", arguments: { text: "x" } })).code, "tenant_not_enabled");
      const pending = refused(await c.callTool({ name: "add", arguments: { a: 1000, b: 1 } }));
      assert.equal(pending.status, "pending");
      assert.equal(approvals(info, "approve", pending.approval_id, "--approver", FINANCE).status, 0);
      const done = await c.callTool({ name: "add", arguments: { a: 1000, b: 1 } });
      assert.equal(done.content[0].text, "1001");
    });
  });
});

// -- serveMcp: native tools served by the Node host ------------------------

const TS_HOST = join(HERE, "ts_host.mjs");

test("serveMcp over stdio runs the JavaScript handler through the governor", async () => {
  const info = makeHarness();
  const transport = new StdioClientTransport({ command: process.execPath, args: [TS_HOST, info.dir], env: envFor(info), stderr: "ignore" });
  const client = new Client({ name: "hw-ts-test", version: "1.0.0" });
  await client.connect(transport);
  try {
    assert.deepEqual(names(await client.listTools()), ["add", "calc", "greet", "shout"]);
    const hello = await client.callTool({ name: "greet", arguments: { name: "Ada" } });
    assert.equal(hello.isError, false);
    assert.equal(hello.content[0].text, "Hello, Ada!");
    assert.equal(refused(await client.callTool({ name: "greet", arguments: { name: "" } })).code, "invalid_args");
    const boom = refused(await client.callTool({ name: "greet", arguments: { name: "boom" } }));
    assert.deepEqual([boom.code, boom.step], ["handler_error", "invoke"]);
    assert.equal((await client.callTool({ name: "add", arguments: { a: 2, b: 2 } })).content[0].text, "4");
  } finally {
    await client.close();
  }
});

test("serveMcp over HTTP checks the bearer token", async () => {
  const info = makeHarness();
  const proc = spawn(process.execPath, [TS_HOST, info.dir, "--http", "127.0.0.1:0"], { env: envFor(info), stdio: ["ignore", "ignore", "pipe"] });
  const url = await new Promise((resolve, reject) => {
    const seen = [];
    createInterface({ input: proc.stderr }).on("line", (line) => {
      seen.push(line);
      const m = /serving MCP at (http:\/\/\S+\/mcp)/.exec(line);
      if (m) resolve(m[1]);
    });
    proc.on("exit", (code) => reject(new Error(`host exited ${code}:\n${seen.join("\n")}`)));
  });
  try {
    await assert.rejects(withHttpClient(url, null, (c) => c.listTools()));
    await withHttpClient(url, info.bob_token, async (c) => {
      assert.deepEqual(names(await c.listTools()), ["add", "greet"]);
      assert.equal((await c.callTool({ name: "greet", arguments: { name: "Grace" } })).content[0].text, "Hello, Grace!");
    });
  } finally {
    const exited = new Promise((resolve) => proc.on("exit", resolve));
    proc.kill("SIGTERM");
    await exited;
  }
});
