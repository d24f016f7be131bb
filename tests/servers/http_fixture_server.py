#!/usr/bin/env python3
"""The test HTTP server every language's tests start (standard library only).

Run: python3 tests/servers/http_fixture_server.py [--port N]
It binds 127.0.0.1 (port 0: any free port), prints the port on the first line
of stdout once it listens, and serves until stdin closes or it is killed.
Fixtures write `{{http}}` for its base URL (`http://127.0.0.1:PORT`).

Routes (any method; POST bodies are read as JSON when they parse):
  /echo               200 JSON {"method", "path", "body", "headers": {idempotency-key,
                      content-type, authorization, x-api-key, x-tenant}} (only those present)
  /text               200 text/plain "plain text"
  /json-bad           200 application/json, a body that is not JSON
  /empty              204, no body
  /status/<n>         status <n>, JSON {"error": "status <n>"}
  /slow/<ms>          sleeps <ms> (at most 10000) then 200 JSON {"slept_ms": ms}
  /huge/<bytes>       200 text/plain of <bytes> 'a' (at most 50 MB), streamed
  /redirect/<code>/<path>         <code> to /<path> on the same host
  /redirect-host/<code>/<path>    <code> to http://localhost:PORT/<path> (another host name)
  /redirect-loop      302 to itself
  /redirect-port/<code>/<port>/<path>   <code> to http://127.0.0.1:<port>/<path> (the same host, another port)
  /seen               200 JSON: every request this server got before (method, path, the echoed headers)
  /reflect            200 text/plain: the x-api-key header back, raw and encoded (URL, base64, base64 of
                      a JSON object holding it, JSON-escaped), one per line: a server that echoes a secret
"""
import base64
import json
import socket
import urllib.parse
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ECHOED = ["idempotency-key", "content-type", "authorization", "x-api-key", "x-tenant"]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        # Headers and body go out in separate writes: without this, Nagle and
        # the client's delayed ACK add ~40 ms to every keep-alive request.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _send(self, status, body=b"", ctype="application/json", extra=None):
        self.send_response(status)
        if body or status != 204:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if body:
            self.wfile.write(body)

    def _json(self, status, value, extra=None):
        self._send(status, json.dumps(value, sort_keys=True).encode(), "application/json", extra)

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _route(self):
        body = self._body()
        parts = [p for p in self.path.split("?")[0].split("/") if p]
        head = parts[0] if parts else ""
        if head == "seen":
            with self.server.seen_lock:
                return self._json(200, list(self.server.seen))
        with self.server.seen_lock:
            self.server.seen.append({"method": self.command, "path": self.path,
                                     "headers": {h: self.headers[h] for h in ECHOED if self.headers.get(h) is not None}})
        if head == "echo":
            headers = {h: self.headers[h] for h in ECHOED if self.headers.get(h) is not None}
            return self._json(200, {"method": self.command, "path": self.path, "body": body, "headers": headers})
        if head == "reflect":
            key = self.headers.get("x-api-key") or ""
            lines = [
                f"raw: {key}",
                "url: " + urllib.parse.quote(key, safe=""),
                "base64: " + base64.b64encode(key.encode()).decode(),
                "inside: " + base64.b64encode(json.dumps({"user": "svc", "key": key}).encode()).decode(),
                "json: " + json.dumps({"key": key}),
            ]
            return self._send(200, "\n".join(lines).encode(), "text/plain; charset=utf-8")
        if head == "text":
            return self._send(200, b"plain text", "text/plain; charset=utf-8")
        if head == "json-bad":
            return self._send(200, b"{not json", "application/json")
        if head == "empty":
            return self._send(204)
        if head == "status" and len(parts) == 2:
            n = int(parts[1])
            return self._json(n, {"error": f"status {n}"})
        if head == "slow" and len(parts) == 2:
            ms = min(int(parts[1]), 10_000)
            time.sleep(ms / 1000)
            return self._json(200, {"slept_ms": ms})
        if head == "huge" and len(parts) == 2:
            n = min(int(parts[1]), 50_000_000)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b"a" * 65536
            try:
                while n > 0:
                    self.wfile.write(chunk[:n])
                    n -= len(chunk)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            return None
        if head in ("redirect", "redirect-host") and len(parts) >= 3:
            code = int(parts[1])
            target = "/" + "/".join(parts[2:])
            if head == "redirect-host":
                target = f"http://localhost:{self.server.server_address[1]}{target}"
            return self._send(code, b"", "text/plain", {"Location": target})
        if head == "redirect-port" and len(parts) >= 4:
            code, port = int(parts[1]), int(parts[2])
            target = f"http://127.0.0.1:{port}/" + "/".join(parts[3:])
            return self._send(code, b"", "text/plain", {"Location": target})
        if head == "redirect-loop":
            return self._send(302, b"", "text/plain", {"Location": "/redirect-loop"})
        return self._json(404, {"error": "no such route"})

    do_GET = do_POST = do_PUT = _route


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen = []
        self.seen_lock = threading.Lock()

    def handle_error(self, request, client_address):
        # Clients that hang up early (a capped body, a timeout) are expected.
        pass


def main():
    port = 0
    if "--port" in sys.argv:
        port = int(sys.argv[sys.argv.index("--port") + 1])
    server = Server(("127.0.0.1", port), Handler)
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # Stop when the parent closes our stdin (or dies).
    try:
        sys.stdin.read()
    except KeyboardInterrupt:
        pass
    server.shutdown()


if __name__ == "__main__":
    main()
