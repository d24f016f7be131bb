// Issue 22, authorization: the official MCP TypeScript SDK's OAuth client
// (@modelcontextprotocol/sdk's `OAuthClientProvider` with its
// StreamableHTTPClientTransport), given nothing but the gateway's MCP URL,
// finds the authorization server from the 401's `resource_metadata` (RFC 9728),
// registers, runs the code grant with PKCE and `resource` (RFC 8707) against
// the authorization server of tests/gateway/oauth_support.py (started by
// oauth_server.py), and then calls a tool with the token it got; a call the
// token lacks scope for is a 403 challenge the SDK answers by asking again.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { HERE, PYTHON, withHttpGateway } from "./gateway_support.mjs";

/** Starts oauth_server.py; hands `body` the harness (with `issuer`); stops the server. */
async function withAuthorizationServer(body) {
  const dest = mkdtempSync(join(tmpdir(), "hw-oauth-ts-"));
  const proc = spawn(PYTHON, [join(HERE, "oauth_server.py"), dest], { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  proc.stderr.on("data", (d) => (stderr += d));
  const info = await new Promise((resolve, reject) => {
    createInterface({ input: proc.stdout }).once("line", (line) => resolve(JSON.parse(line)));
    proc.on("exit", (code) => reject(new Error(`oauth_server.py exited ${code}:\n${stderr}`)));
  });
  try {
    return await body(info);
  } finally {
    const exited = new Promise((resolve) => proc.on("exit", resolve));
    proc.stdin.end();
    await exited;
  }
}

/** An in-memory OAuthClientProvider whose "browser" follows the authorization URL and keeps the code. */
class MemoryProvider {
  constructor() {
    this.saved = {};
    this.authorizations = [];
  }
  get redirectUrl() {
    return "http://127.0.0.1:1/callback";
  }
  get clientMetadata() {
    return {
      client_name: "hw ts oauth test",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.saved.client;
  }
  saveClientInformation(client) {
    this.saved.client = client;
  }
  tokens() {
    return this.saved.tokens;
  }
  saveTokens(tokens) {
    this.saved.tokens = tokens;
  }
  saveCodeVerifier(verifier) {
    this.saved.verifier = verifier;
  }
  codeVerifier() {
    return this.saved.verifier;
  }
  async redirectToAuthorization(url) {
    this.authorizations.push(url);
    const r = await fetch(url, { redirect: "manual" });
    assert.equal(r.status, 302);
    const back = new URL(r.headers.get("location"));
    this.code = back.searchParams.get("code");
  }
}

test("TS SDK OAuth client: 401 → protected resource metadata → token from the authorization server → governed calls; 403 → step-up", async () => {
  await withAuthorizationServer(async (info) => {
    await withHttpGateway(info, async (url) => {
      const provider = new MemoryProvider();
      // No token yet: the 401 sends the SDK to the metadata and the authorization server.
      const first = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
      await assert.rejects(new Client({ name: "hw-ts-oauth", version: "1.0.0" }).connect(first), UnauthorizedError);
      assert.equal(provider.authorizations.length, 1);
      const asked = provider.authorizations[0];
      assert.equal(asked.origin, info.issuer);
      assert.equal(asked.searchParams.get("resource"), url);
      assert.equal(asked.searchParams.get("scope"), "calc:run");
      assert.equal(asked.searchParams.get("code_challenge_method"), "S256");
      // The redirect came back with a code: the SDK trades it for a token.
      await first.finishAuth(provider.code);
      assert.equal(provider.saved.tokens.token_type, "Bearer");
      const [, claims] = provider.saved.tokens.access_token.split(".");
      const payload = JSON.parse(Buffer.from(claims, "base64url").toString());
      assert.equal(payload.aud, url);
      assert.equal(payload.iss, info.issuer);

      const client = new Client({ name: "hw-ts-oauth", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
      try {
        const listed = await client.listTools();
        assert.ok(listed.tools.some((t) => t.name === "calc"));
        const result = await client.callTool({ name: "calc", arguments: { code: "6 * 7" } });
        assert.equal(result.isError, false);
        assert.equal(JSON.parse(result.content[0].text).value, 42);
        // Still the governor: the policy rule refuses a calculation mentioning a secret.
        const refused = await client.callTool({ name: "calc", arguments: { code: "'a secret'" } });
        assert.equal(refused.structuredContent.code, "policy_denied");
        assert.equal(provider.authorizations.length, 1, "one authorization, the token reused");

        // payroll needs payroll:admin: the 403 challenge names it, and the SDK asks again for it (step-up).
        await assert.rejects(client.callTool({ name: "payroll", arguments: { code: "1 + 1" } }), UnauthorizedError);
        assert.equal(provider.authorizations.length, 2);
        assert.equal(provider.authorizations[1].searchParams.get("scope"), "payroll:admin");
        await client.transport.finishAuth(provider.code);
        const stepped = await client.callTool({ name: "payroll", arguments: { code: "1 + 1" } });
        assert.equal(stepped.isError, false);
        assert.equal(JSON.parse(stepped.content[0].text).value, 2);
      } finally {
        await client.close();
      }
    });
  });
});
