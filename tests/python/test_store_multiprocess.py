"""Python and Node worker processes, mixed, hammer one per-tenant limit of
50/h through their bindings, sharing a SQLite file or a real redis-server
(started here on a free port of 127.0.0.1, stopped after): exactly 50 calls
are allowed in all, none is lost to a store error. The Rust-only version
(runtime/tests/store_multiprocess.rs) runs the `harnessweaver` binary."""

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COUNT, CALLS = 50, 30
WORKERS = [("python", 0), ("node", 1), ("python", 2), ("node", 3)]


def write_harness(dir: Path, state: str) -> Path:
    (dir / "tools").mkdir(parents=True)
    (dir / "harness.yaml").write_text(
        "apiVersion: harnessweaver/v1\nkind: Harness\nmetadata: { name: mixed }\nspec:\n"
        f'  tools:\n    manifests: ["tools/*.yaml"]\n  state: "{state}"\n'
    )
    (dir / "tools" / "ping.yaml").write_text(
        "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: { name: ping }\nspec:\n  transport: native\n"
        '  handler: "workers:ping"\n  description: Answers pong.\n  input_schema: { type: object }\n'
        f'  side_effect: read\n  output: {{ label: trusted }}\n  rate_limit: {{ per_tenant: "{COUNT}/h" }}\n'
    )
    return dir / "harness.yaml"


@pytest.fixture
def redis_url(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(250):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2) as c:
                    c.sendall(b"PING\r\n")
                    if c.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                time.sleep(0.02)
        else:
            pytest.fail("redis-server did not start")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.kill()
        server.wait()


def hammer(harness: Path) -> list:
    start = int(time.time() * 1000) + 4000
    procs = []
    for lang, i in WORKERS:
        cmd = (
            [sys.executable, str(ROOT / "tests/python/store_worker.py")]
            if lang == "python"
            else ["node", str(ROOT / "tests/node/store_worker.mjs")]
        )
        procs.append(
            subprocess.Popen(
                cmd + [str(harness), str(CALLS), str(start), f"{lang}-{i}"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results.append(json.loads(out))
    return results


def check(results: list) -> None:
    total = lambda k: sum(r.get(k, 0) for r in results)  # noqa: E731
    assert total("allowed") == COUNT, results
    assert total("rate_limited") == len(WORKERS) * CALLS - COUNT, results
    # Every worker got a share of the traffic, from both languages.
    assert all(sum(r.values()) == CALLS for r in results), results


def test_sqlite_python_and_node_processes_share_one_limit_exactly(tmp_path):
    check(hammer(write_harness(tmp_path / "h", "sqlite:state.db")))


def test_redis_python_and_node_processes_share_one_limit_exactly(tmp_path, redis_url):
    check(hammer(write_harness(tmp_path / "h", redis_url)))
