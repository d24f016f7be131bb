#!/usr/bin/env python3
"""The OAuth setting of the Node tests (ts_oauth.test.mjs): oauth_support.py's
authorization server on 127.0.0.1 (its /authorize consents at once and
redirects with a code) and a harness under DEST whose gateway trusts it
(`spec.gateway.oauth`, plain HTTP on loopback).

    python tests/gateway/oauth_server.py DEST

Prints one JSON line (make_harness.py's object plus "issuer"), then serves
until its stdin closes.
"""
import json
import sys
from pathlib import Path

from gateway_support import make_harness
from oauth_support import AuthorizationServer, oauth_harness


def main():
    dest = Path(sys.argv[1])
    probe = make_harness(dest / "probe", "--jwt", "RS256")  # the authorization server's key pair
    aserver = AuthorizationServer(probe["jwt"]["private_key_pem"])
    try:
        info = oauth_harness(dest / "h", issuer=aserver.url, scopes_supported=["calc:run"], tls=False)
        Path(info["dir"], "keys", "idp.pem").write_bytes(Path(probe["dir"], "keys", "idp.pem").read_bytes())
        info["jwt"] = probe["jwt"]
        print(json.dumps(info), flush=True)
        sys.stdin.read()
    finally:
        aserver.close()


if __name__ == "__main__":
    main()
