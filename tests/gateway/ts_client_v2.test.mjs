// Issue 22: `harnessweaver gateway mcp --http` driven by the official MCP
// TypeScript SDK v2 client (@modelcontextprotocol/client, pinned by
// tests/gateway/package-lock.json), at both protocol generations on one
// endpoint: `versionNegotiation: legacy` (the 2025-11-25 initialize handshake)
// and `auto` (server/discover, then 2026-07-28 stateless requests).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { makeHarness, withHttpGateway } from "./gateway_support.mjs";

for (const [mode, version] of [["legacy", "2025-11-25"], ["auto", "2026-07-28"]]) {
  test(`TS SDK v2 (${mode}): ${version} on the same endpoint, governed calls and refusals`, async () => {
    const info = makeHarness();
    await withHttpGateway(info, async (url) => {
      const client = new Client({ name: "hw-ts2-test", version: "1.0.0" }, { versionNegotiation: { mode } });
      const headers = { Authorization: `Bearer ${info.alice_token}` };
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
      try {
        assert.equal(client.getNegotiatedProtocolVersion(), version);
        const listed = await client.listTools();
        assert.deepEqual(listed.tools.map((t) => t.name).sort(), ["add", "calc", "payroll", "shout"]);
        // Annotations from the manifests: calc is code with no side effect and no egress.
        const calc = listed.tools.find((t) => t.name === "calc");
        assert.deepEqual(calc.annotations, { readOnlyHint: true, openWorldHint: false });
        const ok = await client.callTool({ name: "shout", arguments: { text: "governed" } });
        assert.equal(ok.isError, false);
        assert.equal(ok.content[0].text, "GOVERNED");
        const refused = await client.callTool({ name: "calc", arguments: { code: "'a secret'" } });
        assert.equal(refused.isError, true);
        assert.equal(refused.structuredContent.code, "policy_denied");
      } finally {
        await client.close();
      }
    });
  });
}

test("TS SDK v2: no token, no MCP at either generation", async () => {
  const info = makeHarness();
  await withHttpGateway(info, async (url) => {
    for (const mode of ["legacy", "auto"]) {
      const client = new Client({ name: "hw-ts2-test", version: "1.0.0" }, { versionNegotiation: { mode } });
      await assert.rejects(client.connect(new StreamableHTTPClientTransport(new URL(url))));
    }
  });
});
