#!/usr/bin/python3
"""A stand-in for the code transport's worker (harnessweaver-sandbox) that
a bug in Monty has turned hostile: it speaks the worker's JSON-lines
protocol, and the `code` of each request names an attempt
(`read /etc/passwd`, `tcp 4242`, `fork`, ...) that it makes and reports
as its value, `{"allowed": bool, "detail": ...}`. The tests start it as
the worker, so it runs under the worker's confinement; run directly, the
same attempts succeed.
"""

import errno
import json
import os
import socket
import sys


def attempt(fn):
    try:
        return {"allowed": True, "detail": fn()}
    except OSError as e:
        return {"allowed": False, "detail": errno.errorcode.get(e.errno or 0, str(e.errno))}


def read(path):
    with open(path, "rb") as f:
        return len(f.read(64))


def write(path):
    with open(path, "w") as f:
        f.write("escaped\n")
    return "written"


def tcp(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(("127.0.0.1", int(port)))
    s.close()
    return "connected"


def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return "forked"


def signal(pid):
    os.kill(int(pid), 15)
    return "signalled"


ATTACKS = {"read": read, "write": write, "tcp": tcp, "fork": lambda _: fork(), "signal": signal}

for line in sys.stdin:
    name, _, target = json.loads(line)["code"].partition(" ")
    value = attempt(lambda: ATTACKS[name](target))
    sys.stdout.write(json.dumps({"ok": True, "value": value, "stdout": ""}) + "\n")
    sys.stdout.flush()
