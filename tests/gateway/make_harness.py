#!/usr/bin/env python3
"""Copies tests/gateway/harness into DEST and fills it in for one test run.

    python tests/gateway/make_harness.py DEST [--jwt HS256|RS256|ES256]

Prints one JSON object: {"dir", "harness", "env", "alice_token", "bob_token",
"jwt": {"algorithm", "secret" | "private_key_pem"}}. `env` holds the variables
the gateway needs (HW_GATEWAY_TOKEN_ALICE, HW_GATEWAY_JWT_SECRET). Tokens and
keys are fresh random values each run. Used by the Python and Node tests alike.
"""
import argparse
import hashlib
import json
import os
import secrets
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dest")
    ap.add_argument("--jwt", choices=["HS256", "RS256", "ES256"])
    ap.add_argument("--state", default="sqlite:state.db", help="spec.state (default sqlite:state.db)")
    a = ap.parse_args()
    shutil.copytree(os.path.join(HERE, "harness"), a.dest, dirs_exist_ok=True)
    alice, bob = "alice-" + secrets.token_hex(16), "bob-" + secrets.token_hex(16)
    env = {"HW_GATEWAY_TOKEN_ALICE": alice}
    jwt_info = None
    jwt_yaml = ""
    if a.jwt:
        jwt_yaml = (
            "      jwt:\n"
            f"        algorithm: {a.jwt}\n"
            "        issuer: test-idp\n"
            "        audience: harnessweaver\n"
            "        claims: { principal: sub, roles: roles, scopes: scope, tenant: tenant }\n"
        )
        if a.jwt == "HS256":
            secret = secrets.token_hex(32)
            env["HW_GATEWAY_JWT_SECRET"] = secret
            jwt_yaml += "        secret_env: HW_GATEWAY_JWT_SECRET\n"
            jwt_info = {"algorithm": a.jwt, "secret": secret}
        else:
            from cryptography.hazmat.primitives import serialization
            from cryptography.hazmat.primitives.asymmetric import ec, rsa

            key = rsa.generate_private_key(public_exponent=65537, key_size=2048) if a.jwt == "RS256" else ec.generate_private_key(ec.SECP256R1())
            private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
            public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
            os.makedirs(os.path.join(a.dest, "keys"), exist_ok=True)
            with open(os.path.join(a.dest, "keys", "idp.pem"), "wb") as f:
                f.write(public)
            jwt_yaml += "        public_key_file: keys/idp.pem\n"
            jwt_info = {"algorithm": a.jwt, "private_key_pem": private}
    path = os.path.join(a.dest, "harness.yaml")
    with open(path) as f:
        text = f.read()
    text = (
        text.replace("{{PYTHON}}", sys.executable)
        .replace("{{PY_SERVER}}", os.path.join(ROOT, "tests", "mcp", "py_server.py"))
        .replace("sha256:" + "0" * 64, "sha256:" + hashlib.sha256(bob.encode()).hexdigest())
        .replace("      # {{JWT}}\n", jwt_yaml)
        .replace("state: sqlite:state.db", f"state: {a.state}")
    )
    with open(path, "w") as f:
        f.write(text)
    print(json.dumps({"dir": a.dest, "harness": path, "env": env, "alice_token": alice, "bob_token": bob, "jwt": jwt_info}))


if __name__ == "__main__":
    main()
