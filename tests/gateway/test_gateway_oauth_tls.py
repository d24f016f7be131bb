"""The gateway as an OAuth 2.1 resource server over TLS (issue 22 item 7) and the
approvals console mounted in it (issue 24), driven by the official Python MCP
SDK client and plain HTTP requests, against `gateway mcp --http` on 127.0.0.1
with a certificate from a CA made for the test.

Tokens are RS256 JWTs; the harness (oauth_support.oauth_harness) configures
`spec.gateway.oauth` with no other audience, so a JWT's `aud` must be the
gateway's resource URI, `https://127.0.0.1:PORT/mcp`.
"""
import asyncio
import json
import re
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from gateway_support import HW, approvals, gateway_env, http_gateway, make_harness
from oauth_support import AuthorizationServer, audit_events, make_tls, mint, oauth_harness

ACCEPT = {"Accept": "application/json, text/event-stream"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def call(tool, args):
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": args}}


def client(info, token=None, auth=None):
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return httpx2.AsyncClient(verify=ssl.create_default_context(cafile=info["ca"]), headers=headers, auth=auth, timeout=60)


async def sdk_session(info, url, body, token=None, auth=None):
    async with client(info, token, auth) as http:
        async with streamable_http_client(url, http_client=http) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                return await body(s)


def post(info, url, payload, token=None, **kw):
    headers = dict(ACCEPT, **({"Authorization": f"Bearer {token}"} if token else {}))
    return httpx2.post(url, json=payload, headers=headers, verify=info["ca"], timeout=60, **kw)


def challenge(response):
    """The WWW-Authenticate parameters as a dict (and the scheme)."""
    value = response.headers["www-authenticate"]
    scheme, _, rest = value.partition(" ")
    return scheme, dict(re.findall(r'(\w+)="([^"]*)"', rest))


@pytest.fixture
def oauth(tmp_path):
    return oauth_harness(tmp_path / "h")


def test_https_with_an_audience_bound_jwt_the_sdk_lists_and_calls(oauth):
    with http_gateway(oauth) as url:
        assert url.startswith("https://127.0.0.1:")
        token = mint(oauth, aud=url, scope="calc:run")

        async def body(s):
            return await s.list_tools(), await s.call_tool("calc", {"code": "6 * 7"})

        tools, result = asyncio.run(sdk_session(oauth, url, body, token))
        assert sorted(t.name for t in tools.tools) == ["add", "calc", "shout"]
        assert result.is_error is False and json.loads(result.content[0].text)["value"] == 42
        # TLS is real: a client that does not trust the test CA cannot connect.
        with pytest.raises(httpx2.ConnectError):
            httpx2.post(url, json=LIST, headers=ACCEPT, timeout=30)
        # And plain HTTP on the TLS port is no way around it.
        with pytest.raises(httpx2.HTTPError):
            httpx2.post(url.replace("https://", "http://"), json=LIST, headers=dict(ACCEPT, Authorization=f"Bearer {token}"), timeout=30)


class RecordingUpstream:
    """An HTTP service on 127.0.0.1 that records the headers and body of each
    request it gets and answers `{"ok": true}`."""

    def __init__(self):
        self.requests = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                upstream.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body.decode()))
                data = b'{"ok": true}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_the_callers_bearer_token_never_reaches_an_http_upstream(oauth):
    """No token passthrough: an http tool gets its own configured credential
    (`headers_env`), never the Authorization header the caller sent the gateway."""
    upstream = RecordingUpstream()
    try:
        Path(oauth["dir"], "tools", "notify.yaml").write_text(
            "apiVersion: harnessweaver/v1\n"
            "kind: Tool\n"
            "metadata: { name: notify }\n"
            "spec:\n"
            "  transport: http\n"
            f"  url: {upstream.url}/hook\n"
            "  headers_env: { X-Api-Key: HW_NOTIFY_KEY }\n"
            "  description: Posts a note to the team's hook.\n"
            "  input_schema: { type: object, properties: { note: { type: string } }, required: [note] }\n"
        )
        subprocess.run([HW, "tools", "pin", oauth["dir"]], check=True, capture_output=True, text=True, timeout=60)
        oauth["env"]["HW_NOTIFY_KEY"] = "notify-key-of-the-tool"
        with http_gateway(oauth) as url:
            token = mint(oauth, aud=url, scope="calc:run")

            async def body(s):
                return await s.call_tool("notify", {"note": "deploy done"})

            result = asyncio.run(sdk_session(oauth, url, body, token))
        assert result.is_error is False, result
        assert json.loads(result.content[0].text) == {"ok": True}
        [(path, headers, sent)] = upstream.requests
        assert path == "/hook" and json.loads(sent) == {"note": "deploy done"}
        # The tool's own credential went; the caller's did not, in any header or the body.
        assert headers["x-api-key"] == "notify-key-of-the-tool"
        assert "authorization" not in headers, headers
        _, claims, signature = token.split(".")
        everything = json.dumps(headers) + sent
        assert claims not in everything and signature not in everything, headers
    finally:
        upstream.close()


def test_no_token_and_other_audiences_get_401_pointing_at_the_resource_metadata(oauth):
    with http_gateway(oauth) as url:
        metadata_url = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        missing = post(oauth, url, LIST)
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"] == f'Bearer resource_metadata="{metadata_url}"'
        for why, token in {
            "another resource": mint(oauth, aud="https://other.example/mcp"),
            "the gateway's address over http": mint(oauth, aud=url.replace("https://", "http://")),
            "another audience in a list": mint(oauth, aud=["https://other.example/mcp"]),
            "no audience": mint(oauth, aud=None),
            "the right audience, another issuer": mint(oauth, aud=url, iss="https://evil.example"),
        }.items():
            r = post(oauth, url, LIST, token)
            assert r.status_code == 401, (why, r.status_code, r.text)
            scheme, params = challenge(r)
            assert scheme == "Bearer" and params["error"] == "invalid_token", (why, params)
            assert params["resource_metadata"] == metadata_url, why
            assert r.json()["error"] == "invalid_token"
        # Granted: the same request with a token for this resource (alone or among others).
        for aud in (url, [url, "https://other.example/mcp"]):
            ok = post(oauth, url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}, mint(oauth, aud=aud))
            assert ok.status_code == 200, (aud, ok.text)


def test_the_protected_resource_metadata_document(oauth):
    with http_gateway(oauth) as url:
        origin = url.removesuffix("/mcp")
        for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
            r = httpx2.get(origin + path, verify=oauth["ca"], timeout=30)  # no token needed
            assert r.status_code == 200, (path, r.text)
            assert r.headers["content-type"] == "application/json"
            doc = r.json()
            assert doc["resource"] == url
            assert doc["authorization_servers"] == ["https://idp.example"]
            # Every scope a manifest names (none configured in scopes_supported).
            assert doc["scopes_supported"] == ["calc:run", "payroll:admin", "records:admin"]
            assert doc["bearer_methods_supported"] == ["header"]
            assert doc["resource_name"] == "gateway under test"
        assert httpx2.get(origin + "/.well-known/oauth-protected-resource/other", verify=oauth["ca"], timeout=30).status_code == 404


def test_a_call_the_token_lacks_scope_for_is_a_403_challenge_and_audited(oauth):
    with http_gateway(oauth) as url:
        weak = mint(oauth, aud=url, scope="calc:run")
        r = post(oauth, url, call("payroll", {"code": "1 + 1"}), weak)
        assert r.status_code == 403, r.text
        scheme, params = challenge(r)
        assert scheme == "Bearer"
        assert params["error"] == "insufficient_scope"
        assert params["scope"] == "payroll:admin"
        assert params["resource_metadata"] == url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        assert r.json()["error"] == "insufficient_scope"
        # The governor decided it (step 4) and the audit trail has it.
        refused = [e for e in audit_events(oauth) if e.get("tool") == "payroll"]
        assert [(e["decision"], e["code"]) for e in refused] == [("refused", "scope_missing")], refused
        assert refused[0]["principal"] == "carol"
        # A step before the scope check refusing (invalid_args at step 2) is the
        # governor's answer, a tool result, not a challenge.
        invalid = post(oauth, url, call("payroll", {}), weak)
        assert invalid.status_code == 200, invalid.text
        assert invalid.json()["result"]["structuredContent"]["code"] == "invalid_args"
        assert invalid.json()["id"] == 7
        # Granted: the same call with the scope runs.
        strong = mint(oauth, aud=url, scope="calc:run payroll:admin")

        async def body(s):
            return await s.call_tool("payroll", {"code": "1 + 1"})

        result = asyncio.run(sdk_session(oauth, url, body, strong))
        assert result.is_error is False and json.loads(result.content[0].text)["value"] == 2


def test_under_run_session_a_scope_refused_call_is_in_its_sessions_run(oauth):
    """The 403 path answers a tools/call outside rmcp's handler, through the
    same call path (issue 22): under `run: session` it uses the MCP session's
    run, not a run of its own."""
    path = Path(oauth["harness"])
    path.write_text(path.read_text().replace("  gateway:\n", "  gateway:\n    run: session\n", 1))

    def post_in(url, payload, token, headers):
        headers = dict(ACCEPT, Authorization=f"Bearer {token}", **headers)
        return httpx2.post(url, json=payload, headers=headers, verify=oauth["ca"], timeout=60)

    def session(url, token):
        r = post(oauth, url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}, token)
        sid = r.headers["mcp-session-id"]
        headers = {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
        post_in(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, token, headers)
        return headers

    def run_of(response):
        text = response.text
        body = json.loads(text[text.index("{"):]) if text.lstrip().startswith("{") else json.loads(re.findall(r"^data: (.+)$", text, re.M)[-1])
        return body["result"]["_meta"]["harnessweaver"]["run_id"]

    with http_gateway(oauth) as url:
        weak = mint(oauth, aud=url, scope="calc:run")
        one, two = session(url, weak), session(url, weak)
        run_one = run_of(post_in(url, call("calc", {"code": "1 + 1"}), weak, one))
        assert post_in(url, call("payroll", {"code": "1 + 1"}), weak, one).status_code == 403
        assert post_in(url, call("payroll", {"code": "2 + 2"}), weak, two).status_code == 403
        run_two = run_of(post_in(url, call("calc", {"code": "1 + 1"}), weak, two))
    refused = [e["run_id"] for e in audit_events(oauth) if e.get("tool") == "payroll"]
    assert run_one != run_two and refused == [run_one, run_two]


class MemoryStorage:
    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, info: OAuthClientInformationFull) -> None:
        self.client = info


def test_the_sdk_oauth_client_discovers_the_server_from_the_401_and_steps_up_on_403(tmp_path):
    """The SDK's OAuthClientProvider, given nothing but the MCP URL: the 401's
    resource_metadata leads it to the authorization server; it asks for the
    advertised scope with `resource` = the gateway; payroll's 403 makes it ask
    again with payroll:admin added; each call then runs."""
    probe = make_harness(tmp_path / "probe", "--jwt", "RS256")  # a key pair for the authorization server
    aserver = AuthorizationServer(probe["jwt"]["private_key_pem"])
    try:
        info = oauth_harness(tmp_path / "h", issuer=aserver.url, scopes_supported=["calc:run"])
        Path(info["dir"], "keys", "idp.pem").write_bytes(Path(probe["dir"], "keys", "idp.pem").read_bytes())
        info["jwt"] = probe["jwt"]
        with http_gateway(info) as url:
            pending = {}

            async def redirect(auth_url):
                pending["code"], pending["state"] = aserver.authorize(auth_url)

            async def callback():
                return AuthorizationCodeResult(code=pending["code"], state=pending["state"])

            provider = OAuthClientProvider(
                server_url=url,
                client_metadata=OAuthClientMetadata(client_name="hw test", redirect_uris=["http://127.0.0.1:1/callback"],
                                                    grant_types=["authorization_code"], response_types=["code"],
                                                    token_endpoint_auth_method="none"),
                storage=MemoryStorage(),
                redirect_handler=redirect,
                callback_handler=callback,
            )

            async def body(s):
                return await s.call_tool("calc", {"code": "2 + 3"}), await s.call_tool("payroll", {"code": "10 * 10"})

            calc, payroll = asyncio.run(sdk_session(info, url, body, auth=provider))
        assert calc.is_error is False and json.loads(calc.content[0].text)["value"] == 5
        assert payroll.is_error is False and json.loads(payroll.content[0].text)["value"] == 100
        # First the advertised scope, then the step-up; both tokens bound to the gateway.
        assert aserver.issued == [("calc:run", url), ("calc:run payroll:admin", url)], aserver.issued
    finally:
        aserver.close()


def test_jwks_file_and_url_pick_the_key_by_kid(tmp_path):
    info = oauth_harness(tmp_path / "h")
    other = make_harness(tmp_path / "o", "--jwt", "RS256")
    from cryptography.hazmat.primitives import serialization
    from jwt.algorithms import RSAAlgorithm

    def jwk(pem_path, kid):
        key = serialization.load_pem_public_key(Path(pem_path).read_bytes())
        return dict(json.loads(RSAAlgorithm.to_jwk(key)), kid=kid, use="sig", alg="RS256")

    jwks = {"keys": [jwk(Path(other["dir"], "keys", "idp.pem"), "old"), jwk(Path(info["dir"], "keys", "idp.pem"), "current")]}
    Path(info["dir"], "keys", "idp.jwks.json").write_text(json.dumps(jwks))
    text = Path(info["harness"]).read_text().replace("public_key_file: keys/idp.pem", "jwks_file: keys/idp.jwks.json")
    Path(info["harness"]).write_text(text)
    with http_gateway(info) as url:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        import jwt as pyjwt
        claims = pyjwt.decode(mint(info, aud=url), options={"verify_signature": False})
        key = info["jwt"]["private_key_pem"]
        assert post(info, url, init, pyjwt.encode(claims, key, algorithm="RS256", headers={"kid": "current"})).status_code == 200
        # Signed by the right key but naming another kid, or an unknown one: refused.
        assert post(info, url, init, pyjwt.encode(claims, key, algorithm="RS256", headers={"kid": "old"})).status_code == 401
        assert post(info, url, init, pyjwt.encode(claims, key, algorithm="RS256", headers={"kid": "nope"})).status_code == 401
        # The old key still verifies its own tokens.
        old = pyjwt.encode(claims, other["jwt"]["private_key_pem"], algorithm="RS256", headers={"kid": "old"})
        assert post(info, url, init, old).status_code == 200
    # The same set from the authorization server's jwks_url, fetched at start.
    aserver = AuthorizationServer(info["jwt"]["private_key_pem"])
    try:
        aserver.jwks = jwks
        Path(info["harness"]).write_text(text.replace("jwks_file: keys/idp.jwks.json", f"jwks_url: {aserver.url}/jwks.json"))
        with http_gateway(info) as url:
            claims = pyjwt.decode(mint(info, aud=url), options={"verify_signature": False})
            key = info["jwt"]["private_key_pem"]
            assert post(info, url, init, pyjwt.encode(claims, key, algorithm="RS256", headers={"kid": "current"})).status_code == 200
            assert post(info, url, init, pyjwt.encode(claims, key, algorithm="RS256", headers={"kid": "old"})).status_code == 401
    finally:
        aserver.close()
    # Only https:// (or http:// to loopback): a key set fetched in the clear could be swapped.
    Path(info["harness"]).write_text(text.replace("jwks_file: keys/idp.jwks.json", "jwks_url: http://idp.example/jwks.json"))
    r = start(info, "--http", "127.0.0.1:0")
    assert r.returncode == 1 and "spec.gateway.http.jwt.jwks_url: `http://idp.example/jwks.json` is not an https:// URL" in r.stderr, r.stderr


def test_a_rotated_jwks_url_key_is_fetched_again_and_made_up_kids_cause_no_fetch_storm(tmp_path):
    """A token naming a `kid` the cached set lacks makes the gateway fetch its
    jwks_url again, so a key the authorization server rotated in is accepted
    without a restart; the re-fetch happens at most once per 30 s, so tokens
    with made-up `kid`s cost the authorization server one fetch, not one each.
    (The 30 s window itself, on a test clock: runtime/tests/gateway_config.rs.)"""
    import jwt as pyjwt

    info = oauth_harness(tmp_path / "h")
    other = make_harness(tmp_path / "o", "--jwt", "RS256")
    from cryptography.hazmat.primitives import serialization
    from jwt.algorithms import RSAAlgorithm

    def jwk(info, kid):
        key = serialization.load_pem_public_key(Path(info["dir"], "keys", "idp.pem").read_bytes())
        return dict(json.loads(RSAAlgorithm.to_jwk(key)), kid=kid, use="sig", alg="RS256")

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    aserver = AuthorizationServer(info["jwt"]["private_key_pem"])
    try:
        aserver.jwks = {"keys": [jwk(info, "2026-01")]}
        text = Path(info["harness"]).read_text().replace("public_key_file: keys/idp.pem", f"jwks_url: {aserver.url}/jwks.json")
        Path(info["harness"]).write_text(text)

        def token(url, signer, kid):
            claims = pyjwt.decode(mint(info, aud=url), options={"verify_signature": False})
            return pyjwt.encode(claims, signer["jwt"]["private_key_pem"], algorithm="RS256", headers={"kid": kid})

        with http_gateway(info) as url:
            assert aserver.jwks_fetches == 1
            assert post(info, url, init, token(url, info, "2026-01")).status_code == 200
            # The authorization server rotates to a new key: its first token makes
            # the gateway fetch the set again, and is accepted.
            aserver.jwks = {"keys": [jwk(other, "2026-02")]}
            assert post(info, url, init, token(url, other, "2026-02")).status_code == 200
            assert aserver.jwks_fetches == 2
            # The retired key's tokens are refused now; and inside the 30 s
            # window no token fetches again: not the retired kid, not made-up ones.
            assert post(info, url, init, token(url, info, "2026-01")).status_code == 401
            for i in range(20):
                assert post(info, url, init, token(url, other, f"made-up-{i}")).status_code == 401
            assert post(info, url, init, token(url, other, "2026-02")).status_code == 200
            assert aserver.jwks_fetches == 2

        # A fresh gateway flooded with made-up kids: one fetch at start, one for the flood.
        with http_gateway(info) as url:
            assert aserver.jwks_fetches == 3
            for i in range(20):
                r = post(info, url, init, token(url, other, f"garbage-{i}"))
                assert r.status_code == 401 and challenge(r)[1]["error"] == "invalid_token"
            assert aserver.jwks_fetches == 4
    finally:
        aserver.close()


def start(info, *args):
    return subprocess.run([HW, "gateway", "mcp", info["dir"], *args], env=gateway_env(info), capture_output=True, text=True, timeout=60)


def test_plain_http_off_loopback_is_refused_unless_opted_out(tmp_path):
    info = make_harness(tmp_path / "h")
    r = start(info, "--http", "0.0.0.0:0")
    assert r.returncode == 1
    assert "refusing to serve bearer tokens over plain HTTP on 0.0.0.0:0" in r.stderr
    assert "--tls-cert" in r.stderr and "--insecure-plain-http" in r.stderr
    # Granted: the explicit opt-out, or a certificate.
    cmd = [HW, "gateway", "mcp", info["dir"], "--http", "0.0.0.0:0", "--insecure-plain-http"]
    with http_gateway(info, cmd) as url:
        assert url.startswith("http://0.0.0.0:")
    ca, cert, key = make_tls(tmp_path / "tls")
    cmd = [HW, "gateway", "mcp", info["dir"], "--http", "0.0.0.0:0", "--tls-cert", cert, "--tls-key", key]
    with http_gateway(info, cmd) as url:
        local = url.replace("0.0.0.0", "127.0.0.1")
        r = httpx2.post(local, json=LIST, headers=dict(ACCEPT, Authorization=f"Bearer {info['alice_token']}"), verify=ca, timeout=30)
        assert r.status_code in (200, 400), r.text  # TLS works; rmcp wants initialize first


def test_tls_and_oauth_settings_fail_with_clear_errors(tmp_path):
    info = make_harness(tmp_path / "h")
    ca, cert, key = make_tls(tmp_path / "tls")
    _, other_cert, _ = make_tls(tmp_path / "other")
    r = start(info, "--http", "127.0.0.1:0", "--tls-cert", cert)
    assert r.returncode == 1 and "--tls-cert and --tls-key go together" in r.stderr
    r = start(info, "--http", "127.0.0.1:0", "--tls-cert", other_cert, "--tls-key", key)
    assert r.returncode == 1 and "the key does not fit the certificate" in r.stderr, r.stderr
    r = start(info, "--http", "127.0.0.1:0", "--tls-cert", str(tmp_path / "missing.pem"), "--tls-key", key)
    assert r.returncode == 1 and "--tls-cert: cannot read certificates" in r.stderr, r.stderr
    r = start(info, "--stdio", "--console")
    assert r.returncode == 2 and "go with `--http`" in r.stderr
    text = Path(info["harness"]).read_text()
    Path(info["harness"]).write_text(text + "    oauth:\n      authorization_servers: []\n    tls: {cert_file: x.pem}\n")
    r = start(info, "--http", "127.0.0.1:0")
    assert r.returncode == 1
    assert "spec.gateway.oauth.authorization_servers" in r.stderr and "names no server" in r.stderr, r.stderr
    assert "spec.gateway.tls.key_file" in r.stderr, r.stderr
    # oauth without a JWT key: nothing could verify the authorization server's tokens.
    Path(info["harness"]).write_text(text + "    oauth:\n      authorization_servers: [https://idp.example]\n")
    r = start(info, "--http", "127.0.0.1:0")
    assert r.returncode == 1 and "`spec.gateway.oauth` needs `spec.gateway.http.jwt`" in r.stderr, r.stderr


# -- the approvals console mounted in the gateway (issue 24) ------------------

def test_console_mounted_in_the_gateway_shares_its_identities_store_and_protections(tmp_path):
    """HTTP-level (the browser test, tests/console, drives the standalone
    console; the page and API are the same code, under /console/ here). With a
    memory store: the console decides in the gateway's own process."""
    info = oauth_harness(tmp_path / "h", console=True)
    text = Path(info["harness"]).read_text().replace("state: sqlite:state.db", "state: memory")
    Path(info["harness"]).write_text(text)
    with http_gateway(info) as url:
        origin = url.removesuffix("/mcp")
        console = origin + "/console/"
        page = httpx2.get(console, verify=info["ca"], timeout=30)
        assert page.status_code == 200 and "harnessweaver console" in page.text
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert 'src="static/app.js"' in page.text
        assert httpx2.get(console + "static/app.js", verify=info["ca"], timeout=30).status_code == 200
        moved = httpx2.get(origin + "/console", verify=info["ca"], timeout=30)
        assert moved.status_code == 308 and moved.headers["location"] == "/console/"

        # The agent (alice's bearer key) asks for a payment that waits for finance.
        async def ask(s):
            return await s.call_tool("add", {"a": 150, "b": 1})

        asked = asyncio.run(sdk_session(info, url, ask, info["alice_token"]))
        assert asked.structured_content["status"] == "pending"
        apr = asked.structured_content["approval_id"]

        with httpx2.Client(verify=info["ca"], timeout=30) as browser:
            # Signed out; a wrong token; a JWT for another audience: refused.
            assert browser.get(console + "api/approvals").status_code == 401
            bad = browser.post(console + "api/login", json={"token": "nope"})
            assert bad.status_code == 401
            wrong_aud = browser.post(console + "api/login", json={"token": mint(info, aud="https://other.example/mcp", sub="fiona")})
            assert wrong_aud.status_code == 401
            login = browser.post(console + "api/login", json={"token": mint(info, aud=url, sub="fiona")})
            assert login.status_code == 200, login.text
            cookie = login.headers["set-cookie"]
            assert "Path=/console/" in cookie and "Secure" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
            csrf = login.json()["csrf"]
            listed = browser.get(console + "api/approvals").json()["approvals"]
            assert [a["args"] for a in listed if a["id"] == apr] == [{"a": 150, "b": 1}]
            # No CSRF token, another origin: refused; the approval stays pending.
            assert browser.post(console + f"api/approvals/{apr}/approve", json={}).status_code == 403
            evil = browser.post(console + f"api/approvals/{apr}/approve", json={}, headers={"X-CSRF-Token": csrf, "Origin": "https://evil.example"})
            assert evil.status_code == 403 and evil.json()["error"] == "bad_origin"
            # Granted: same origin, the session's token.
            ok = browser.post(console + f"api/approvals/{apr}/approve", json={}, headers={"X-CSRF-Token": csrf, "Origin": origin})
            assert ok.status_code == 200 and ok.json()["state"] == "approved", ok.text

        async def retry(s):
            return await s.call_tool("add", {"a": 150, "b": 1})

        ran = asyncio.run(sdk_session(info, url, retry, info["alice_token"]))
        assert ran.is_error is False and ran.content[0].text == "151"


def test_console_is_not_served_unless_asked(tmp_path):
    info = make_harness(tmp_path / "h")
    with http_gateway(info) as url:
        assert httpx2.get(url.replace("/mcp", "/console/"), timeout=30).status_code == 404
    cmd = [HW, "gateway", "mcp", info["dir"], "--http", "127.0.0.1:0", "--console"]
    with http_gateway(info, cmd) as url:
        assert httpx2.get(url.replace("/mcp", "/console/"), timeout=30).status_code == 200
    # Without OAuth the 401 is as before (no resource metadata to point at).
    with http_gateway(info) as url:
        r = httpx2.post(url, json=LIST, headers=ACCEPT, timeout=30)
        assert r.status_code == 401 and r.headers["www-authenticate"] == 'Bearer error="invalid_request"'
    assert approvals(info, "list").returncode == 0
