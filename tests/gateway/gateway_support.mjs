// Helpers of the gateway's Node tests (ts_client.test.mjs, ts_client_v2.test.mjs):
// the binary, a fresh harness (make_harness.py), a running HTTP gateway.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

export const HERE = dirname(fileURLToPath(import.meta.url));
export const ROOT = join(HERE, "..", "..");
export const HW = process.env.HW_GATEWAY_BIN ?? join(ROOT, "target", "x86_64-unknown-linux-gnu", "debug", "harnessweaver");
export const PYTHON = process.env.HW_GATEWAY_PYTHON ?? "python3";

/** tests/gateway/harness filled in under a fresh directory (see make_harness.py). */
export function makeHarness(...args) {
  const dest = join(mkdtempSync(join(tmpdir(), "hw-gateway-ts-")), "h");
  const r = spawnSync(PYTHON, [join(HERE, "make_harness.py"), dest, ...args], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

/** The environment of a gateway for `info`: ours, plus its tokens and secrets. */
export const envFor = (info) => ({ ...process.env, ...info.env });

/** Runs `gateway mcp --http 127.0.0.1:0`, hands its /mcp URL to `body`, stops it. */
export async function withHttpGateway(info, body) {
  const proc = spawn(HW, ["gateway", "mcp", info.dir, "--http", "127.0.0.1:0"], { env: envFor(info), stdio: ["ignore", "ignore", "pipe"] });
  const lines = createInterface({ input: proc.stderr });
  const url = await new Promise((resolve, reject) => {
    const seen = [];
    lines.on("line", (line) => {
      seen.push(line);
      const m = /serving MCP at (http:\/\/\S+\/mcp)/.exec(line);
      if (m) resolve(m[1]);
    });
    proc.on("exit", (code) => reject(new Error(`gateway exited ${code}:\n${seen.join("\n")}`)));
  });
  try {
    return await body(url);
  } finally {
    const exited = new Promise((resolve) => proc.on("exit", resolve));
    proc.kill("SIGTERM");
    await exited;
  }
}
