"""Benchmark (not a test): input validation of realistic tool arguments from
Python, beside `jsonschema` and `fastjsonschema` on the same schemas and
arguments (target/bench-inputs/validation.json: the example shop's tools and a
nested ticket schema).

harnessweaver has no validate-only entry point: validation is step 2 of a
governed call. So "ours" is the core's part of a governed call on a tool whose
manifest holds nothing but the schema:

- valid arguments: ``begin`` (steps 1-7, the arguments converted and
  validated) + ``finish`` with a ``None`` output (step 9), with no thread hop;
- invalid arguments: ``begin`` refused at step 2 (pointer + keyword found).

That is more work than the peers do (they only validate), so the ratios are
a lower bound for validation alone. Peers validate with a precompiled
validator: jsonschema's ``is_valid`` for valid arguments and its first error
(``next(iter_errors)``, what step 2 reports) for invalid ones; fastjsonschema's
compiled function (raising on invalid ones).

    make bench-validate
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, List

import fastjsonschema
import jsonschema

import harnessweaver as hw

from benchlib import Results, load_inputs, median_ns, pkg_version, ratio_goal, value


def main() -> int:
    data = load_inputs("validation")
    cases: List[Dict[str, Any]] = data["cases"]
    handlers = {c["tool"]: (lambda **kw: None) for c in cases}
    h = hw.load(data["harness"], handlers=handlers)
    rt = h  # the native host: begin and finish without the Python wrapper
    principal = hw.Principal("bench")

    def ours_valid(tool: str, args: Any) -> Callable[[], Any]:
        return lambda: rt.finish(rt.begin(tool, args, principal=principal), "returned", None)

    def ours_invalid(tool: str, args: Any) -> Callable[[], Any]:
        return lambda: rt.begin(tool, args, principal=principal)

    per_tool: Dict[str, Dict[str, Callable[[], Any]]] = {}
    for c in cases:
        tool, schema, good, bad = c["tool"], c["schema"], c["valid"], c["invalid"]
        # Every side must agree on every case before anything is timed.
        r = ours_valid(tool, good)()
        assert r.allowed, (tool, r.code, r.message)
        r = ours_invalid(tool, bad)()
        assert isinstance(r, hw.CallResult) and r.step == "validate", (tool, r)
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        v = cls(schema)
        assert v.is_valid(good) and not v.is_valid(bad), tool
        fast = fastjsonschema.compile(schema)
        fast(good)
        try:
            fast(bad)
            raise AssertionError(f"fastjsonschema accepts the invalid {tool} arguments")
        except fastjsonschema.JsonSchemaValueException:
            pass

        def fast_invalid(fast: Any = fast, bad: Any = bad) -> Any:
            try:
                fast(bad)
            except fastjsonschema.JsonSchemaValueException as e:
                return e
            return None

        per_tool[tool] = {
            "ours valid": ours_valid(tool, good),
            "ours invalid": ours_invalid(tool, bad),
            "jsonschema valid": (lambda v=v, good=good: v.is_valid(good)),
            "jsonschema invalid": (lambda v=v, bad=bad: next(v.iter_errors(bad), None)),
            "fastjsonschema valid": (lambda fast=fast, good=good: fast(good)),
            "fastjsonschema invalid": fast_invalid,
        }

    def all_tools(key: str) -> Callable[[], None]:
        fns = [per_tool[c["tool"]][key] for c in cases]

        def run() -> None:
            for f in fns:
                f()
        return run

    res = Results("validate-python")
    n = len(cases)
    ours_name = {"valid": "governed call, steps 1-9 (core part)", "invalid": "governed call refused at step 2"}
    peer_name = {"jsonschema": f"jsonschema {pkg_version('jsonschema')}",
                 "fastjsonschema": f"fastjsonschema {pkg_version('fastjsonschema')}"}
    tools = ", ".join(c["tool"] for c in cases)
    for outcome in ("valid", "invalid"):
        # Ours once per outcome, interleaved with the peers' measurements (the machine is shared).
        ours = median_ns(all_tools(f"ours {outcome}")) / n
        for peer in ("jsonschema", "fastjsonschema"):
            p = median_ns(all_tools(f"{peer} {outcome}")) / n
            res.row("validation", f"{outcome} args, {n} tools (mean per call), Python", value(ours_name[outcome], ours, "ns"),
                    value(peer_name[peer], p, "ns"), goal=ratio_goal(10, "jsonschema") if peer == "jsonschema" else None,
                    headline=peer == "jsonschema" and outcome == "valid", note=f"tools: {tools}")
        t = per_tool["create_ticket"]
        o = median_ns(t[f"ours {outcome}"])
        p = median_ns(t[f"jsonschema {outcome}"])
        res.row("validation", f"{outcome} args, create_ticket (nested, 3 line items), Python",
                value(ours_name[outcome], o, "ns"), value(peer_name["jsonschema"], p, "ns"),
                goal=ratio_goal(10, "jsonschema"))
    res.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
