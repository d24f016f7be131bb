// The approvals console (`harnessweaver console`) in a real browser: Debian's
// Chromium driven by playwright-core (no browser download). An agent in another
// process (the official MCP TypeScript SDK, through `harnessweaver gateway mcp`)
// asks for a refund that needs finance's approval; an approver signs in with a
// gateway bearer key, sees the pending refund with its exact arguments, edits
// the amount, approves; the agent's retried call runs (the shop's MCP server
// logs the amount it refunded); the audit chart counts the new call.
// State (approvals) and the audit trail are SQLite files shared by the processes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { connect } from "node:net";
import { chromium } from "playwright-core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, "..", "..");
const HW = process.env.HW_GATEWAY_BIN ?? join(ROOT, "target", "x86_64-unknown-linux-gnu", "debug", "harnessweaver");
const PYTHON = process.env.HW_GATEWAY_PYTHON ?? "python3";
const CHROMIUM = process.env.HW_CHROMIUM ?? "/usr/bin/chromium";
// Where the screenshot goes (docs/console.png is a copy of one).
const SHOT = process.env.HW_CONSOLE_SCREENSHOT ?? join(ROOT, "target", "console.png");

const sha = (text) => "sha256:" + createHash("sha256").update(text).digest("hex");

function makeHarness(state) {
  const dir = join(mkdtempSync(join(tmpdir(), "hw-console-")), "h");
  mkdirSync(dir, { recursive: true });
  cpSync(join(HERE, "harness"), dir, { recursive: true });
  const finance = "fin-" + randomBytes(16).toString("hex");
  const support = "sup-" + randomBytes(16).toString("hex");
  const agentKey = "agt-" + randomBytes(16).toString("hex");
  const path = join(dir, "harness.yaml");
  const text = readFileSync(path, "utf8")
    .replaceAll("{{PYTHON}}", PYTHON)
    .replaceAll("{{SERVER}}", join(HERE, "refund_server.py"))
    .replace("{{FINANCE_SHA}}", sha(finance))
    .replace("{{SUPPORT_SHA}}", sha(support))
    .replace("{{AGENT_SHA}}", sha(agentKey))
    .replace("state: sqlite:state.db", `state: ${state ?? "sqlite:state.db"}`);
  writeFileSync(path, text);
  const pinned = spawnSync(HW, ["tools", "pin", path], { encoding: "utf8" });
  assert.equal(pinned.status, 0, pinned.stdout + pinned.stderr);
  const env = { ...process.env, HW_REFUND_LOG: join(dir, "refunds.jsonl") };
  return { dir, path, finance, support, agent: agentKey, env };
}

async function startConsole(h) {
  const proc = spawn(HW, ["console", h.path, "--http", "127.0.0.1:0"], { env: h.env, stdio: ["ignore", "ignore", "pipe"] });
  const lines = createInterface({ input: proc.stderr });
  const url = await new Promise((resolve, reject) => {
    const seen = [];
    lines.on("line", (line) => {
      seen.push(line);
      const m = /serving the console at (http:\/\/\S+\/)/.exec(line);
      if (m) resolve(m[1]);
    });
    proc.on("exit", (code) => reject(new Error(`console exited ${code}:\n${seen.join("\n")}`)));
  });
  return { proc, url };
}

async function agent(h) {
  const transport = new StdioClientTransport({ command: HW, args: ["gateway", "mcp", h.path, "--stdio"], env: h.env, stderr: "ignore" });
  const client = new Client({ name: "hw-console-agent", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

/** Resolves once something accepts connections on 127.0.0.1:`port` (a server still starting refuses). */
async function listening(port) {
  for (let i = 0; i < 200; i++) {
    const up = await new Promise((resolve) => {
      const sock = connect(port, "127.0.0.1", () => { sock.end(); resolve(true); });
      sock.on("error", () => resolve(false));
    });
    if (up) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nothing listens on port ${port}`);
}

function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

test("sign in, see the pending refund, edit its amount, approve; the agent's retried call runs; the chart counts it", async () => {
  const h = makeHarness();
  const { proc, url } = await startConsole(h);
  const browser = await launch();
  const client = await agent(h);
  try {
    // The agent asks: 500 is over the limit, so the call waits for finance.
    const asked = await client.callTool({ name: "refund", arguments: { order: "A-1001", amount: 500 } });
    assert.equal(asked.isError, true, JSON.stringify(asked));
    assert.equal(asked.structuredContent.status, "pending");
    const first = asked.structuredContent.approval_id;

    const page = await (await browser.newContext({ viewport: { width: 1200, height: 1100 } })).newPage();
    const response = await page.goto(url);
    const csp = response.headers()["content-security-policy"];
    assert.match(csp, /script-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline|https?:/);

    // A wrong token is refused; the finance key signs in.
    await page.fill("#token", "not-a-key");
    await page.click("#signin-form button");
    await page.waitForSelector("#signin-error:has-text('invalid_token')");
    await page.fill("#token", h.finance);
    await page.click("#signin-form button");
    await page.waitForSelector("#who-name:has-text('fiona')");

    // The pending refund, with the exact arguments that will run.
    const card = page.locator(`.approval[data-id="${first}"]`);
    await card.waitFor();
    assert.match(await card.textContent(), /refund/);
    assert.match(await card.textContent(), /agent/);
    const args = card.locator("textarea.args");
    assert.deepEqual(JSON.parse(await args.inputValue()), { order: "A-1001", amount: 500 });
    const chartBefore = Number(await page.locator("#chart").getAttribute("data-total"));
    mkdirSync(dirname(SHOT), { recursive: true });
    await page.screenshot({ path: SHOT.replace(/\.png$/, "-pending.png"), fullPage: true });

    // Edited arguments are checked against the input schema first.
    await args.fill(JSON.stringify({ order: "A-1001", amount: "a lot" }));
    await card.locator("button.approve").click();
    await card.locator(".status:has-text('invalid_args')").waitFor();

    // Edit the amount, approve.
    await args.fill(JSON.stringify({ order: "A-1001", amount: 250 }));
    await card.locator("button.approve").click();
    await page.waitForSelector("text=approved with edited arguments");

    // The agent learns the edited arguments (the approval it is waiting on) and retries; the call runs.
    const listed = JSON.parse(spawnSync(HW, ["approvals", "list", "--json", "--harness", h.path], { encoding: "utf8", env: h.env }).stdout);
    const granted = listed.find((a) => a.tool === "refund" && a.state === "approved");
    assert.deepEqual(granted.args, { order: "A-1001", amount: 250 });
    assert.equal(granted.decided_by, "fiona");
    const retried = await client.callTool({ name: "refund", arguments: granted.args });
    assert.equal(retried.isError, false, JSON.stringify(retried));
    assert.equal(retried.content[0].text, "refunded 250 on A-1001");
    const refunds = readFileSync(h.env.HW_REFUND_LOG, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(refunds, [{ order: "A-1001", amount: 250 }]);

    // The audit view and its chart update: the allowed refund is counted.
    await page.click("#refresh");
    await page.waitForFunction((before) => Number(document.getElementById("chart").dataset.total) > before, chartBefore);
    const series = JSON.parse(await page.locator("#chart").getAttribute("data-series"));
    assert.ok(series.some((s) => s.label === "allowed" && s.data.reduce((a, b) => a + b, 0) >= 1), JSON.stringify(series));
    assert.ok(series.some((s) => s.label === "approval_required"), JSON.stringify(series));
    await page.locator("#audit-table tbody tr.allowed").first().waitFor();
    // Filters: only refused calls.
    await page.selectOption("select[name=decision]", "pending");
    await page.click("#audit-filter button");
    await page.waitForFunction(() => [...document.querySelectorAll("#audit-table tbody tr")].every((r) => r.className === "pending"));
    await page.selectOption("select[name=decision]", "");
    await page.click("#audit-filter button");
    await page.locator("#audit-table tbody tr.allowed").first().waitFor();
    // The chart was drawn by Chart.js (served by the console itself).
    assert.equal(await page.evaluate(() => typeof window.Chart), "function");
    await page.screenshot({ path: SHOT, fullPage: true });
    assert.ok(existsSync(SHOT));
  } finally {
    await client.close().catch(() => {});
    await browser.close();
    proc.kill();
  }
});

test("attacks: no CSRF token, another origin, a role the approver lacks, one's own call", async () => {
  const h = makeHarness();
  const { proc, url } = await startConsole(h);
  const client = await agent(h);
  try {
    const asked = await client.callTool({ name: "refund", arguments: { order: "B-7", amount: 900 } });
    const id = asked.structuredContent.approval_id;
    const login = async (token) => {
      const r = await fetch(url + "api/login", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token }) });
      assert.equal(r.status, 200);
      return { cookie: r.headers.get("set-cookie").split(";")[0], csrf: (await r.json()).csrf };
    };
    const post = (s, path, body, extra = {}) =>
      fetch(url + path, { method: "POST", headers: { "Content-Type": "application/json", Cookie: s.cookie, ...extra }, body: JSON.stringify(body) });
    const fin = await login(h.finance);
    // No token: refused. Another site's origin: refused. Both leave the approval pending.
    assert.equal((await post(fin, `api/approvals/${id}/approve`, {})).status, 403);
    assert.equal((await post(fin, `api/approvals/${id}/approve`, {}, { "X-CSRF-Token": fin.csrf, Origin: "http://evil.example" })).status, 403);
    // Signed out: refused.
    assert.equal((await fetch(url + "api/approvals")).status, 401);
    // Support lacks role finance: sees the approval without its arguments, cannot approve or deny.
    const sup = await login(h.support);
    const seen = await (await fetch(url + "api/approvals", { headers: { Cookie: sup.cookie } })).json();
    const mine = seen.approvals.find((a) => a.id === id);
    assert.equal(mine.entitled, false);
    assert.equal(mine.args, undefined);
    const r = await post(sup, `api/approvals/${id}/approve`, {}, { "X-CSRF-Token": sup.csrf });
    assert.equal(r.status, 403);
    assert.equal((await r.json()).error, "approver_not_allowed");
    assert.equal((await post(sup, `api/approvals/${id}/deny`, { reason: "no" }, { "X-CSRF-Token": sup.csrf })).status, 403);
    // Deny needs a reason; with one, finance denies (the same operation, granted).
    assert.equal((await post(fin, `api/approvals/${id}/deny`, { reason: " " }, { "X-CSRF-Token": fin.csrf })).status, 422);
    const denied = await post(fin, `api/approvals/${id}/deny`, { reason: "too much" }, { "X-CSRF-Token": fin.csrf });
    assert.equal(denied.status, 200);
    assert.equal((await denied.json()).state, "denied");
    // The agent's own key holds role finance, yet may not approve the agent's own call: separation of duties.
    const again = (await client.callTool({ name: "refund", arguments: { order: "C-1", amount: 300 } })).structuredContent.approval_id;
    const own = await login(h.agent);
    const selfApproved = await post(own, `api/approvals/${again}/approve`, {}, { "X-CSRF-Token": own.csrf });
    assert.equal(selfApproved.status, 403);
    assert.match((await selfApproved.json()).message, /their own/);
    assert.equal((await post(fin, `api/approvals/${again}/approve`, {}, { "X-CSRF-Token": fin.csrf })).status, 200);
  } finally {
    await client.close().catch(() => {});
    proc.kill();
  }
});

// Issue 24: the console mounted in the gateway (`gateway mcp --http … --console`),
// at /console/ beside /mcp: the same page under a prefix (relative URLs), the
// gateway's identities; the agent (stdio, another process) waits, the approver
// approves in the browser, the retried call runs.
test("mounted in the gateway at /console/: sign in, approve; the agent's retried call runs", async () => {
  const h = makeHarness();
  const gw = spawn(HW, ["gateway", "mcp", h.path, "--http", "127.0.0.1:0", "--console"], { env: h.env, stdio: ["ignore", "ignore", "pipe"] });
  const url = await new Promise((resolve, reject) => {
    const seen = [];
    createInterface({ input: gw.stderr }).on("line", (line) => {
      seen.push(line);
      const m = /serving the console at (http:\/\/\S+\/console\/)/.exec(line);
      if (m) resolve(m[1]);
    });
    gw.on("exit", (code) => reject(new Error(`gateway exited ${code}:\n${seen.join("\n")}`)));
  });
  const browser = await launch();
  const client = await agent(h);
  try {
    const asked = await client.callTool({ name: "refund", arguments: { order: "G-1", amount: 600 } });
    assert.equal(asked.structuredContent.status, "pending");
    const page = await (await browser.newContext()).newPage();
    const response = await page.goto(url);
    assert.match(response.headers()["content-security-policy"], /script-src 'self'/);
    await page.fill("#token", h.finance);
    await page.click("#signin-form button");
    await page.waitForSelector("#who-name:has-text('fiona')");
    const card = page.locator(`.approval[data-id="${asked.structuredContent.approval_id}"]`);
    await card.waitFor();
    assert.deepEqual(JSON.parse(await card.locator("textarea.args").inputValue()), { order: "G-1", amount: 600 });
    // The page's API calls resolve under the prefix.
    const [decided] = await Promise.all([page.waitForResponse((r) => r.url().endsWith("/approve")), card.locator("button.approve").click()]);
    assert.equal(decided.status(), 200, await decided.text());
    assert.ok(decided.url().startsWith(url + "api/approvals/"), decided.url());
    // Chart.js came from the gateway, under the prefix.
    assert.equal(await page.evaluate(() => typeof window.Chart), "function");
    const retried = await client.callTool({ name: "refund", arguments: { order: "G-1", amount: 600 } });
    assert.equal(retried.isError, false, JSON.stringify(retried));
    assert.equal(retried.content[0].text, "refunded 600 on G-1");
  } finally {
    await client.close().catch(() => {});
    await browser.close();
    gw.kill();
  }
});

// The same decisions against a Redis store (a redis-server this test starts):
// the agent's gateway and the console are two processes sharing only Redis.
test("with a Redis store: the console grants what the agent in another process waits for", { skip: !existsSync("/usr/bin/redis-server") && "no redis-server" }, async () => {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const redis = spawn("/usr/bin/redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
  try {
    const h = makeHarness(`redis://127.0.0.1:${port}/0`);
    await listening(port);
    const { proc, url } = await startConsole(h);
    const client = await agent(h);
    try {
      const id = (await client.callTool({ name: "refund", arguments: { order: "R-1", amount: 700 } })).structuredContent.approval_id;
      const r = await fetch(url + "api/login", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token: h.finance }) });
      const s = { cookie: r.headers.get("set-cookie").split(";")[0], csrf: (await r.json()).csrf };
      const listed = await (await fetch(url + "api/approvals", { headers: { Cookie: s.cookie } })).json();
      assert.deepEqual(listed.approvals.find((a) => a.id === id).args, { order: "R-1", amount: 700 });
      const ok = await fetch(url + `api/approvals/${id}/approve`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Cookie: s.cookie, "X-CSRF-Token": s.csrf },
        body: JSON.stringify({ args: { order: "R-1", amount: 70 } }),
      });
      assert.equal(ok.status, 200, await ok.text());
      const ran = await client.callTool({ name: "refund", arguments: { order: "R-1", amount: 70 } });
      assert.equal(ran.isError, false, JSON.stringify(ran));
      assert.equal(ran.content[0].text, "refunded 70 on R-1");
    } finally {
      await client.close().catch(() => {});
      proc.kill();
    }
  } finally {
    redis.kill();
  }
});

// Issue 24 with issue 20: a built-in tool's gated call offers "always allow"
// candidates; the approver dismisses one and accepts another in the browser;
// the rule is written to the harness's permission file and the agent's retried
// call runs. Accepting goes through the same session, CSRF and Origin checks,
// and separation of duties, as approving (attacked first, then granted).
test("a built-in tool's candidate: dismissed, accepted in the browser, written to the permission file; the retried call runs", async () => {
  const h = makeHarness();
  // The harness also enables the built-in write_file over ./workspace (writes are gated by default).
  const yaml = readFileSync(h.path, "utf8").replace("  state: sqlite:state.db", "  builtins:\n    workspace: workspace\n    tools: [write_file]\n  state: sqlite:state.db");
  writeFileSync(h.path, yaml);
  mkdirSync(join(h.dir, "workspace", "src"), { recursive: true });
  const { proc, url } = await startConsole(h);
  const browser = await launch();
  const client = await agent(h);
  try {
    const write = { path: "src/notes.md", content: "# notes\n" };
    const asked = await client.callTool({ name: "write_file", arguments: write });
    assert.equal(asked.structuredContent.status, "pending", JSON.stringify(asked));
    const id = asked.structuredContent.approval_id;

    // Attacks on accepting: no CSRF token, another origin, signed out, the caller's own key.
    const login = async (token) => {
      const r = await fetch(url + "api/login", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token }) });
      return { cookie: r.headers.get("set-cookie").split(";")[0], csrf: (await r.json()).csrf };
    };
    const accept = (s, extra = {}) =>
      fetch(url + `api/approvals/${id}/accept_candidate`, {
        method: "POST",
        headers: { "Content-Type": "application/json", ...(s ? { Cookie: s.cookie } : {}), ...extra },
        body: JSON.stringify({ candidate: "c1" }),
      });
    const fin = await login(h.finance);
    assert.equal((await accept(fin)).status, 403, "no CSRF token");
    assert.equal((await accept(fin, { "X-CSRF-Token": fin.csrf, Origin: "http://evil.example" })).status, 403, "another origin");
    assert.equal((await accept(null)).status, 401, "signed out");
    const own = await login(h.agent);
    const selfAccepted = await accept(own, { "X-CSRF-Token": own.csrf });
    assert.equal(selfAccepted.status, 403, "the caller's own approval");
    assert.equal((await selfAccepted.json()).error, "approver_not_allowed");
    assert.ok(!existsSync(join(h.dir, "permissions.yaml")), "nothing written by a refused accept");

    // In the browser: the card offers the candidates; dismiss the first, accept the broader one.
    const page = await (await browser.newContext({ viewport: { width: 1200, height: 1100 } })).newPage();
    await page.goto(url);
    await page.fill("#token", h.finance);
    await page.click("#signin-form button");
    const card = page.locator(`.approval[data-id="${id}"]`);
    await card.waitFor();
    const offered = await card.locator(".candidate .description").allTextContents();
    assert.ok(offered.length >= 2, JSON.stringify(offered));
    assert.ok(offered.some((d) => /src\/notes\.md/.test(d)), JSON.stringify(offered));
    const under = (await card.locator(".candidate").evaluateAll((items) => items.map((i) => [i.dataset.candidate, i.textContent]))).find(([, t]) => /under `?src\/?`?/.test(t));
    assert.ok(under, JSON.stringify(offered));
    const first = await card.locator(".candidate").first().getAttribute("data-candidate");
    assert.notEqual(first, under[0]);
    await card.locator(`.candidate[data-candidate="${first}"] button.dismiss-candidate`).click();
    await card.locator(`.candidate[data-candidate="${first}"]`).waitFor({ state: "detached" });
    // Dismissed for everyone using this console: the listing no longer offers it.
    const again = await (await fetch(url + "api/approvals", { headers: { Cookie: fin.cookie } })).json();
    assert.ok(!again.approvals.find((a) => a.id === id).candidates.some((c) => c.id === first));
    await card.locator(`.candidate[data-candidate="${under[0]}"] button.accept-candidate`).click();
    await card.locator(".status:has-text('accepted')").waitFor();
    await page.screenshot({ path: SHOT.replace(/\.png$/, "-candidate.png"), fullPage: true });

    // The rule is in the permission file, where accept_candidate writes it, with who accepted it for which approval.
    const permissions = readFileSync(join(h.dir, "permissions.yaml"), "utf8");
    assert.match(permissions, /accepted by fiona for approval/);
    assert.match(permissions, new RegExp(id));
    assert.match(permissions, /kind: filesystem\.write/);

    // The agent's retried call runs: the file is written.
    const retried = await client.callTool({ name: "write_file", arguments: write });
    assert.equal(retried.isError, false, JSON.stringify(retried));
    assert.equal(readFileSync(join(h.dir, "workspace", "src", "notes.md"), "utf8"), "# notes\n");
  } finally {
    await client.close().catch(() => {});
    await browser.close();
    proc.kill();
  }
});
