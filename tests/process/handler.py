"""A process-transport handler for the tests: echoes the request, or makes
the attempt named by `args.attack` and reports whether the OS allowed it.

Run as argv (`python3 handler.py`), one `harnessweaver-process-v1` request on
stdin, one response on stdout. Every attempt answers `{"allowed": bool,
"detail": ...}`; a denial carries the errno name, never a guess.
"""

import errno
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


def main():
    request = json.loads(sys.stdin.read())
    args = request["args"]
    attack = args.get("attack", "echo")
    if attack == "echo":
        out = {"request": request, "argv": sys.argv[1:], "env": dict(os.environ)}
    elif attack == "read":
        out = attempt(lambda: read(args["path"]))
    elif attack == "list":
        out = attempt(lambda: len(os.listdir(args["path"])))
    elif attack == "write":
        out = attempt(lambda: write(args["path"]))
    elif attack == "tcp":
        out = attempt(lambda: tcp(args["port"]))
    elif attack == "unix":
        out = attempt(lambda: unix(args["path"]))
    elif attack == "fork":
        out = attempt(fork_and_reap)
    elif attack == "fork_bomb":
        out = attempt(fork_bomb)
    elif attack == "linger":
        out = attempt(lambda: linger(args["fifo"]))
    elif attack == "ptrace_parent":
        out = attempt(ptrace_parent)
    elif attack == "chmod":
        out = attempt(lambda: chmod(args["path"]))
    elif attack == "signal":
        out = attempt(lambda: signal_pid(args["pid"]))
    elif attack == "prlimit":
        out = attempt(lambda: prlimit_pid(args["pid"]))
    elif attack == "io_uring":
        out = attempt(io_uring)
    elif attack == "sysv_shm":
        out = attempt(sysv_shm)
    elif attack == "capability":
        out = attempt(capability)
    elif attack == "parent_environ":
        out = attempt(lambda: read(f"/proc/{os.getppid()}/environ"))
    elif attack == "sleep":
        time.sleep(600)
        out = None
    elif attack == "flood":
        chunk = b"x" * 65536
        for _ in range(args["mb"] * 16):
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        return
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


main()
