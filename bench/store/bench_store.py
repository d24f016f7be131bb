"""Store throughput: decisions per second with each backend (memory, SQLite,
Redis), from one process and from several, with round trips counted; beside
it, in the same run and on the same redis-server, the same per-tenant limit
done with the Python `limits` package and its Redis storage.

Run by `make bench-store` (a release build of the `harnessweaver` binary,
whose hidden `_stress-limit` worker makes the calls). Prints a Markdown table.

Two figures for harnessweaver: a full governed call (steps 1-9 with a trivial
handler, what an agent pays) and a bare store decision (the rate limit alone,
`Store::acquire`, the same work as `limits`' `hit`). Every worker process
loads, then waits for one start time; throughput is all calls divided by the
slowest worker's loop time. Round trips: our client's counter per decision,
and the server's `total_commands_processed` per decision for both sides.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis
from limits import RateLimitItemPerHour
from limits.storage import RedisStorage
from limits.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter, SlidingWindowCounterRateLimiter

HUGE = 1_000_000_000  # a limit no run reaches: every decision is a full check-and-count


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(workdir: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    for _ in range(200):
        try:
            redis.Redis.from_url(url).ping()
            return proc, url
        except redis.ConnectionError:
            time.sleep(0.02)
    raise SystemExit("redis-server did not start")


def commands(url: str) -> int:
    return int(redis.Redis.from_url(url).info("stats")["total_commands_processed"])


def write_harness(dir: Path, name: str, state: str, limit: str) -> Path:
    (dir / "tools").mkdir(parents=True, exist_ok=True)
    (dir / "harness.yaml").write_text(
        f"apiVersion: harnessweaver/v1\nkind: Harness\nmetadata: {{ name: {name} }}\nspec:\n"
        f"  tools:\n    manifests: [\"tools/*.yaml\"]\n  state: \"{state}\"\n"
    )
    (dir / "tools" / "ping.yaml").write_text(
        "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: { name: ping }\nspec:\n  transport: native\n"
        "  handler: \"bench:ping\"\n  description: Answers pong.\n  input_schema: { type: object }\n"
        f"  side_effect: read\n  output: {{ label: trusted }}\n  rate_limit: {{ per_tenant: \"{limit}\" }}\n"
    )
    return dir / "harness.yaml"


def run_ours(binary: str, harness: Path, procs: int, calls: int, store_only: bool) -> list[dict]:
    start = int(time.time() * 1000) + 1500 + 300 * procs
    cmd = [binary, "_stress-limit", "--harness", str(harness), "--tool", "ping", "--calls", str(calls),
           "--tenant", "acme", "--start-at-ms", str(start)]
    if store_only:
        cmd.append("--store-only")
    workers = [subprocess.Popen(cmd + ["--principal", f"w{i}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(procs)]
    out = []
    for w in workers:
        stdout, stderr = w.communicate()
        if w.returncode != 0:
            raise SystemExit(f"worker failed: {stderr.decode()}")
        out.append(json.loads(stdout))
    return out


def limits_worker(url: str, strategy: str, count: int, calls: int, start: float, queue) -> None:
    # Round trips: every request (a command, or a whole pipeline) goes out
    # through one send_packed_command.
    sent = [0]
    original = redis.connection.AbstractConnection.send_packed_command

    def counting(self, *a, **kw):
        sent[0] += 1
        return original(self, *a, **kw)

    redis.connection.AbstractConnection.send_packed_command = counting
    storage = RedisStorage(url)
    limiter = {"moving": MovingWindowRateLimiter, "fixed": FixedWindowRateLimiter,
               "sliding": SlidingWindowCounterRateLimiter}[strategy](storage)
    item = RateLimitItemPerHour(count)
    limiter.hit(item, "bench-warmup", strategy)  # connect and load scripts before the clock starts
    time.sleep(max(0.0, start - time.time()))
    allowed = 0
    sent[0] = 0
    t0 = time.perf_counter()
    for _ in range(calls):
        if limiter.hit(item, "tenant", f"acme-{strategy}-{count}"):
            allowed += 1
    elapsed_us = int((time.perf_counter() - t0) * 1e6)
    queue.put({"allowed": allowed, "elapsed_us": elapsed_us, "round_trips": sent[0]})


def run_limits(url: str, strategy: str, procs: int, calls: int, count: int = HUGE) -> list[dict]:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    start = time.time() + 2.0 + 0.5 * procs
    ps = [ctx.Process(target=limits_worker, args=(url, strategy, count, calls, start, queue)) for _ in range(procs)]
    for p in ps:
        p.start()
    results = [queue.get() for _ in ps]
    for p in ps:
        p.join()
    return results


def rate(results: list[dict]) -> float:
    calls = sum(r["allowed"] + r.get("rate_limited", 0) + r.get("store_unavailable", 0) + r.get("other", 0)
                if "rate_limited" in r else r["calls"] for r in results)
    return calls / (max(r["elapsed_us"] for r in results) / 1e6)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--calls", type=int, default=20_000, help="calls per process")
    ap.add_argument("--procs", default="1,4")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    procs_list = [int(p) for p in args.procs.split(",")]
    work = Path(tempfile.mkdtemp(prefix="hw-bench-store-"))
    server, url = start_redis(work)
    # Every configuration runs `--repeat` times, interleaved, and the table
    # shows the median: the machine is shared, so single runs are noisy.
    configs = []

    def ours(label: str, state: str, procs: int, store_only: bool):
        def run(rep: int):
            d = work / f"{label}-{procs}-{store_only}-{rep}"
            harness = write_harness(d, f"bench-{label.lower()}-{procs}-{int(store_only)}-{rep}", state, f"{HUGE}/h")
            before = commands(url)
            res = run_ours(args.bin, harness, procs, args.calls, store_only)
            total = procs * args.calls
            assert sum(r["allowed"] for r in res) == total, res
            shutil.rmtree(d, ignore_errors=True)
            if label != "Redis":
                return rate(res), None, None
            return rate(res), sum(r["round_trips"] or 0 for r in res) / total, (commands(url) - before) / total
        what = "store decision (`Store::acquire`)" if store_only else "governed call (steps 1-9)"
        note = " (each process its own memory)" if label == "memory" and procs > 1 else ""
        return (f"harnessweaver {label}{note}", what, procs, run)

    def peer(strategy: str, name: str, procs: int):
        def run(rep: int):
            before = commands(url)
            res = run_limits(url, strategy, procs, args.calls)
            for r in res:
                r["calls"] = args.calls
            total = procs * args.calls
            return rate(res), sum(r["round_trips"] for r in res) / total, (commands(url) - before) / total
        return (f"Python `limits` {limits_version()} {name}, Redis", "`hit`", procs, run)

    for label, state in (("memory", "memory"), ("SQLite", "sqlite:state.db"), ("Redis", url)):
        for procs in procs_list:
            for store_only in (False, True):
                configs.append(ours(label, state, procs, store_only))
    for strategy, name in (("moving", "MovingWindow"), ("sliding", "SlidingWindowCounter"), ("fixed", "FixedWindow")):
        for procs in procs_list:
            configs.append(peer(strategy, name, procs))
    measured = [[] for _ in configs]
    try:
        for rep in range(args.repeat):
            for i, (_, _, _, run) in enumerate(configs):
                measured[i].append(run(rep))
        # Exactness of the peer under the same race our multi-process test runs: 4 processes x 60 hits on 50/h.
        exact = {s: sum(r["allowed"] for r in run_limits(url, s, 4, 60, count=50)) for s in ("moving", "sliding", "fixed")}
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)
    rows = []
    for (name, unit, procs, _), runs in zip(configs, measured):
        rates = sorted(r[0] for r in runs)
        rows.append((name, unit, procs, statistics.median(rates), runs[0][1], runs[0][2]))

    print(f"\nstore throughput, {args.calls} calls per process, median of {args.repeat} interleaved runs, "
          f"limit {HUGE}/h per tenant (never reached), load average {os.getloadavg()[0]:.1f} at the end, "
          f"{os.cpu_count()} CPUs, redis-server {redis_version()}\n")
    print("| Limiter | Unit | Processes | Decisions/s | Round trips/decision (client) | Redis commands/decision (server, inside scripts too) |")
    print("|---|---|---:|---:|---:|---:|")
    for name, unit, procs, r, rts, cmds in rows:
        f = lambda x: "-" if x is None else f"{x:.2f}"
        print(f"| {name} | {unit} | {procs} | {r:,.0f} | {f(rts)} | {f(cmds)} |")
    print(f"\n`limits` under the race of the multi-process test (4 processes x 60 hits on 50/h): allowed {exact} (exact: 50)")
    write_rows(rows, args.repeat, exact)


def write_rows(rows, repeat, exact) -> None:
    """Decisions per second as rows of the one benchmark table (bench/report.py): our Redis store
    decision beside each `limits` strategy on the same Redis, per process count."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
    from benchlib import Results, value

    res = Results("store")
    ours = {(procs, unit): r for name, unit, procs, r, _, _ in rows if name == "harnessweaver Redis"}
    for name, unit, procs, r, _, _ in rows:
        if name.startswith("Python `limits`") and (procs, "store decision (`Store::acquire`)") in ours:
            res.row("store", f"rate-limit decision on Redis, {procs} process(es)",
                    value("Store::acquire (Redis)", ours[(procs, "store decision (`Store::acquire`)")], "decisions/s"),
                    value(name.replace("Python ", "").replace(", Redis", "").replace("`", ""), r, "decisions/s"),
                    better="higher", repeats=repeat)
    for name, unit, procs, r, _, _ in rows:
        if not name.startswith("Python `limits`") and procs == 1:
            res.row("store", f"{name}, {unit}, {procs} process(es)", value(name.replace("harnessweaver ", ""), r, "decisions/s"),
                    better="higher", repeats=repeat)
    res.fact("store", f"`limits` under the race of the multi-process test (4 processes x 60 hits on 50/h) allowed {exact} "
                      "(exact: 50).")
    res.write()


def limits_version() -> str:
    import limits
    return limits.__version__


def redis_version() -> str:
    out = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout
    return next((w.split("=", 1)[1] for w in out.split() if w.startswith("v=")), "?")


if __name__ == "__main__":
    sys.exit(main())
