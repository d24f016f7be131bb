"""Benchmark (not a test): the governor's added cost per call from Python.

A full `h.call` of a trivial native handler (steps 1-9, the handler on the
calling thread under the watchdog that enforces its timeout) beside the same
handler called directly. Also shown: the core's part alone (begin + finish
with the handler called inline), to separate the governor from the thread
hop that the timeout needs.

    make bench-python-call        (builds the package first)
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict

import harnessweaver as hw

from benchlib import REPEATS, SMOKE, Results, max_goal, median_ns, value

MANIFEST = {
    "apiVersion": "harnessweaver/v1",
    "kind": "Tool",
    "metadata": {"name": "lookup_order"},
    "spec": {
        "transport": "native",
        "handler": "bench:lookup_order",
        "description": "Look up an order by its id.",
        "input_schema": {
            "type": "object",
            "properties": {"order_id": {"type": "string", "pattern": "^A-[0-9]{4}$"}},
            "required": ["order_id"],
            "additionalProperties": False,
        },
        "scopes": ["orders:read"],
        "output": {"label": "trusted"},
    },
}


def lookup_order(order_id: str) -> Dict[str, Any]:
    return {"order_id": order_id, "status": "shipped"}


async def alookup_order(order_id: str) -> Dict[str, Any]:
    return {"order_id": order_id, "status": "shipped"}


def per_call_us(fn: Callable[[], Any]) -> float:
    return median_ns(fn) / 1e3


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else (20 if SMOKE else 5000)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "tools").mkdir()
        (root / "tools" / "lookup_order.json").write_text(json.dumps(MANIFEST), encoding="utf-8")
        (root / "harness.yaml").write_text(
            json.dumps({"apiVersion": "harnessweaver/v1", "kind": "Harness", "metadata": {"name": "bench"},
                        "spec": {"mode": "test", "tools": {"manifests": ["tools/*.json"]}}}),
            encoding="utf-8",
        )
        h = hw.load(root / "harness.yaml", handlers={"lookup_order": lookup_order})
        ha = hw.load(root / "harness.yaml", handlers={"lookup_order": alookup_order})
        hi = hw.load(root / "harness.yaml", handlers={"lookup_order": hw.inline(lookup_order)})
        principal = hw.Principal("alice", scopes=["orders:read"])
        args = {"order_id": "A-1001"}
        assert h.call("lookup_order", args, principal=principal).output == lookup_order(**args)

        direct = per_call_us(lambda: lookup_order(**args))
        governed = per_call_us(lambda: h.call("lookup_order", args, principal=principal))
        inlined = per_call_us(lambda: hi.call("lookup_order", args, principal=principal))

        def core_only() -> Any:
            ticket = h.begin("lookup_order", args, principal=principal)
            return h.finish(ticket, "returned", lookup_order(**ticket.kwargs()))

        core = per_call_us(core_only)

        loop = asyncio.new_event_loop()

        async def adirect_n(k: int) -> None:
            for _ in range(k):
                await alookup_order(**args)

        async def agoverned_n(k: int) -> None:
            for _ in range(k):
                await ha.acall("lookup_order", args, principal=principal)

        def timed(coro_fn: Callable[[int], Any]) -> float:
            loop.run_until_complete(coro_fn(min(n, 500)))
            samples = []
            for _ in range(REPEATS):
                start = time.perf_counter()
                loop.run_until_complete(coro_fn(n))
                samples.append((time.perf_counter() - start) / n)
            return sorted(samples)[len(samples) // 2] * 1e6

        adirect = timed(adirect_n)
        agoverned = timed(agoverned_n)
        loop.close()

    print(f"python: median of {REPEATS} samples ({n} calls per async sample)")
    print(f"  handler called directly              {direct:8.2f} us/call")
    print(f"  h.call (sync handler, watchdog)     {governed:8.2f} us/call   added {governed - direct:8.2f} us")
    print(f"  h.call (hw.inline sync handler)      {inlined:8.2f} us/call   added {inlined - direct:8.2f} us")
    print(f"  core only (begin + finish, inline)   {core:8.2f} us/call   added {core - direct:8.2f} us")
    print(f"  async handler awaited directly       {adirect:8.2f} us/call")
    print(f"  await h.acall (async handler)        {agoverned:8.2f} us/call   added {agoverned - adirect:8.2f} us")
    print("  goal: under 10 us added per call")
    res = Results("decision-python")
    goal = max_goal("added", 10_000, "< 10 µs added")
    res.row("decision path", "governed call, trivial sync handler (calling thread, watchdog for its timeout), Python",
            value("h.call", governed * 1e3, "ns"), value("handler called directly", direct * 1e3, "ns"), goal=goal, headline=True)
    res.row("decision path", "governed call, trivial sync handler marked hw.inline (calling thread), Python",
            value("h.call", inlined * 1e3, "ns"), value("handler called directly", direct * 1e3, "ns"), goal=goal,
            note="the same path as the default since the watchdog: inline only changes acall")
    res.row("decision path", "governed call, trivial async handler, Python", value("await h.acall", agoverned * 1e3, "ns"),
            value("handler awaited directly", adirect * 1e3, "ns"), goal=goal, headline=True)
    res.row("decision path", "core part only (begin + finish, handler inline), Python",
            value("h.begin + finish_returned", core * 1e3, "ns"), value("handler called directly", direct * 1e3, "ns"),
            note="what the governor itself adds, without the thread hop or the event loop")
    res.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
