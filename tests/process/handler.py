#!/usr/bin/python3
"""A process-transport handler for the tests: echoes the request, or makes
the attempt named by `args.attack` and reports whether the OS allowed it.
Started with `--max-memory-mb N` it is a hostile code-transport worker
instead (see `worker`).

Run as argv (`python3 handler.py`), one `harnessweaver-process-v1` request on
stdin, one response on stdout. Every attempt answers `{"allowed": bool,
"detail": ...}`; a denial carries the errno name, never a guess.
"""

import errno
import functools
import json
import os
import socket
import sys
import time


def attempt(fn):
    try:
        detail = fn()
        return {"allowed": True, "detail": detail}
    except OSError as e:
        return {"allowed": False, "detail": errno.errorcode.get(e.errno or 0, str(e.errno))}


def read(path):
    with open(path, "rb") as f:
        return len(f.read(64))


def write(path):
    with open(path, "w") as f:
        f.write("written by the handler\n")
    return "written"


def tcp(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.close()
    return "connected"


def unix(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.close()
    return "connected"


def fork_and_reap():
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def fork_bomb():
    children = 0
    while children < 10000:
        pid = os.fork()
        if pid == 0:
            time.sleep(600)
            os._exit(0)
        children += 1
    return children


def linger(fifo):
    # Both the handler and its child hold the FIFO's write end: the test
    # sees end-of-file only when both are gone.
    fd = os.open(fifo, os.O_WRONLY)
    if os.fork() == 0:
        os.write(fd, b"x")
        time.sleep(600)
        os._exit(0)
    time.sleep(600)


def ptrace_parent():
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(16, os.getppid(), 0, 0) != 0:  # PTRACE_ATTACH
        raise OSError(ctypes.get_errno(), "ptrace")
    return "attached"


def chmod(path):
    os.chmod(path, 0o777)
    return "changed"


def signal_pid(pid):
    os.kill(pid, 15)  # SIGTERM
    return "signalled"


def prlimit_pid(pid):
    import resource

    return list(resource.prlimit(pid, resource.RLIMIT_CORE))


def libc():
    import ctypes

    return ctypes, ctypes.CDLL(None, use_errno=True)


def io_uring():
    ctypes, c = libc()
    params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
    fd = c.syscall(425, 1, params)  # io_uring_setup(1, &params)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "io_uring_setup")
    os.close(fd)
    return "ring"


def sysv_shm():
    ctypes, c = libc()
    shmid = c.shmget(0, 4096, 0o1000 | 0o600)  # IPC_PRIVATE, IPC_CREAT
    if shmid < 0:
        raise OSError(ctypes.get_errno(), "shmget")
    c.shmctl(shmid, 0, None)  # IPC_RMID
    return "segment"


def capability():
    ctypes, c = libc()
    if c.prctl(23, 21, 0, 0, 0) != 1:  # PR_CAPBSET_READ, CAP_SYS_ADMIN
        raise OSError(errno.EPERM, "CAP_SYS_ADMIN is not in the bounding set")
    return "CAP_SYS_ADMIN"


# Attempts that report {"allowed", "detail"}: name -> f(args).
ATTEMPTS = {
    "read": lambda a: read(a["path"]),
    "list": lambda a: len(os.listdir(a["path"])),
    "write": lambda a: write(a["path"]),
    "tcp": lambda a: tcp(a["port"]),
    "unix": lambda a: unix(a["path"]),
    "fork": lambda a: fork_and_reap(),
    "fork_bomb": lambda a: fork_bomb(),
    "linger": lambda a: linger(a["fifo"]),
    "ptrace_parent": lambda a: ptrace_parent(),
    "chmod": lambda a: chmod(a["path"]),
    "signal": lambda a: signal_pid(a["pid"]),
    "prlimit": lambda a: prlimit_pid(a["pid"]),
    "io_uring": lambda a: io_uring(),
    "sysv_shm": lambda a: sysv_shm(),
    "capability": lambda a: capability(),
    "parent_environ": lambda a: read(f"/proc/{os.getppid()}/environ"),
}


def main():
    request = json.loads(sys.stdin.read())
    args = request["args"]
    attack = args.get("attack", "echo")
    if attack in ATTEMPTS:
        out = attempt(lambda: ATTEMPTS[attack](args))
    elif attack == "echo":
        out = {"request": request, "argv": sys.argv[1:], "env": dict(os.environ)}
    elif attack == "sleep":
        time.sleep(600)
        out = None
    elif attack == "flood":
        chunk = b"x" * 65536
        for _ in range(args["mb"] * 16):
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        return
    elif attack == "progress":
        # Issue 22: progress lines on stderr, among an ordinary one.
        sys.stderr.write("an ordinary diagnostic\n")
        for i in range(1, 4):
            sys.stderr.write("harnessweaver-progress " + json.dumps({"progress": i, "total": 3, "message": f"step {i}"}) + "\n")
            sys.stderr.flush()
        out = {"reported": 3}
    elif attack == "exit":
        sys.exit(args["status"])
    elif attack == "garbage":
        sys.stdout.write("this is not json")
        return
    elif attack == "fail":
        out = None
        sys.stdout.write(json.dumps({"ok": False, "error": {"code": "no_such_dataset", "message": "the secret is hunter2"}}))
        return
    else:
        raise SystemExit(f"unknown attack {attack}")
    sys.stdout.write(json.dumps({"ok": True, "output": out}))


def worker():
    """A stand-in for the code transport's worker (harnessweaver-sandbox)
    that a bug in Monty has turned hostile: it speaks the worker's JSON-lines
    protocol, and the `code` of each request is `ATTACK TARGET` (`read
    /etc/passwd`, `tcp 4242`, `fork`, `signal 123`...): it makes the attempt
    and answers it as the value."""
    keys = {"read": "path", "write": "path", "tcp": "port", "signal": "pid"}
    for line in sys.stdin:
        name, _, target = json.loads(line)["code"].partition(" ")
        args = {keys[name]: int(target) if keys[name] in ("port", "pid") else target} if name in keys else {}
        value = attempt(functools.partial(ATTEMPTS[name], args))
        sys.stdout.write(json.dumps({"ok": True, "value": value, "stdout": ""}) + "\n")
        sys.stdout.flush()


# The pool starts its worker as `WORKER --max-memory-mb N`.
if "--max-memory-mb" in sys.argv:
    worker()
else:
    main()
