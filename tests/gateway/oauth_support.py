"""Helpers of the OAuth/TLS gateway tests: a throwaway CA and server certificate,
a harness with `spec.gateway.oauth` and `tls`, JWTs, and a small OAuth 2.1
authorization server (RFC 8414 metadata, dynamic client registration, the
authorization-code grant with PKCE, RFC 8707 `resource` put into `aud`) that
the official Python SDK's OAuth client talks to."""
import base64
import datetime
import hashlib
import ipaddress
import json
import secrets
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from gateway_support import make_harness


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_tls(dest):
    """A CA and a certificate for 127.0.0.1 and localhost it signed: (ca.pem, server.pem, server.key)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder().subject_name(_name("hw test CA")).issuer_name(_name("hw test CA"))
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                     key_encipherment=False, data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder().subject_name(_name("127.0.0.1")).issuer_name(ca.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                       critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = dest / "ca.pem", dest / "server.pem", dest / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return tuple(str(p) for p in paths)


def oauth_harness(dest, issuer="https://idp.example", scopes_supported=None, tls=True, console=False):
    """tests/gateway/harness with an RS256 JWT key, `spec.gateway.oauth` (audience:
    the gateway's own resource URI only), an audit trail, and TLS from a fresh CA."""
    info = make_harness(dest, "--jwt", "RS256")
    path = Path(info["harness"])
    text = path.read_text()
    # The audience is the resource: no other configured `aud`.
    text = text.replace("        audience: harnessweaver\n", "").replace("        issuer: test-idp\n", f"        issuer: {issuer}\n")
    text = text.replace("  gateway:\n", "  audit:\n    sink: audit.jsonl\n  gateway:\n", 1)
    text += f"    oauth:\n      authorization_servers: [{json.dumps(issuer)}]\n      resource_name: gateway under test\n"
    if scopes_supported is not None:
        text += f"      scopes_supported: {json.dumps(scopes_supported)}\n"
    if tls:
        info["ca"], cert, key = make_tls(Path(info["dir"]) / "tls")
        text += f"    tls:\n      cert_file: {cert}\n      key_file: {key}\n"
    if console:
        text += "    console: true\n"
    path.write_text(text)
    info["issuer"] = issuer
    return info


def mint(info, aud, scope="calc:run", sub="carol", **extra):
    """A JWT from the harness's identity provider key."""
    now = int(time.time())
    claims = {"sub": sub, "roles": ["finance"], "scope": scope, "tenant": "acme", "iss": info["issuer"], "iat": now, "exp": now + 600}
    if aud is not None:
        claims["aud"] = aud
    claims.update(extra)
    return jwt.encode(claims, info["jwt"]["private_key_pem"], algorithm="RS256")


def audit_events(info):
    path = Path(info["dir"]) / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


class AuthorizationServer:
    """An OAuth 2.1 authorization server on 127.0.0.1 that grants every scope
    asked for (the person consenting is the test): its tokens are RS256 JWTs
    with `aud` = the RFC 8707 `resource` of the request."""

    def __init__(self, private_key_pem):
        self.key = private_key_pem
        self.codes = {}
        self.issued = []  # (scope, aud) of each token
        self.jwks = None  # served at /jwks.json when set
        self.jwks_fetches = 0  # GETs of /jwks.json
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _json(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/.well-known/oauth-authorization-server":
                    return self._json(200, server.metadata())
                if self.path.startswith("/authorize?"):
                    # The user's browser, consenting at once: back to the client with a code.
                    q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
                    code, state = server.authorize(self.path)
                    self.send_response(302)
                    back = {"code": code} if state is None else {"code": code, "state": state}
                    self.send_header("Location", q["redirect_uri"] + "?" + urllib.parse.urlencode(back))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
                if self.path == "/jwks.json" and server.jwks is not None:
                    server.jwks_fetches += 1
                    return self._json(200, server.jwks)
                self._json(404, {"error": "not_found"})

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path == "/register":
                    info = json.loads(body)
                    return self._json(201, dict(info, client_id="client-" + secrets.token_hex(4), client_id_issued_at=int(time.time())))
                if self.path == "/token":
                    form = dict(urllib.parse.parse_qsl(body.decode()))
                    grant = server.codes.pop(form.get("code"), None)
                    verifier = form.get("code_verifier", "")
                    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
                    if grant is None or grant["challenge"] != challenge or form.get("resource") != grant["resource"]:
                        return self._json(400, {"error": "invalid_grant"})
                    return self._json(200, server.token(grant["scope"], grant["resource"]))
                self._json(404, {"error": "not_found"})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def metadata(self):
        return {
            "issuer": self.url,
            "authorization_endpoint": self.url + "/authorize",
            "token_endpoint": self.url + "/token",
            "registration_endpoint": self.url + "/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_post"],
        }

    def authorize(self, url):
        """What the user's browser and consent would do: a code for the request in `url`."""
        q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
        code = secrets.token_urlsafe(16)
        self.codes[code] = {"scope": q.get("scope", ""), "resource": q.get("resource"), "challenge": q["code_challenge"]}
        return code, q.get("state")

    def token(self, scope, resource):
        now = int(time.time())
        claims = {"sub": "olivia", "roles": ["finance"], "scope": scope, "tenant": "acme", "iss": self.url, "iat": now, "exp": now + 600}
        if resource:
            claims["aud"] = resource
        self.issued.append((scope, resource))
        return {"access_token": jwt.encode(claims, self.key, algorithm="RS256"), "token_type": "Bearer", "expires_in": 600, "scope": scope}

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
