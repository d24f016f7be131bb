"""Benchmark (not a test): a policy decision from Python, beside `cedarpy`
(Cedar's Rust engine behind PyO3) on an equivalent allow/deny rule set, as a
reference point. Same four requests on both sides, same answers checked first:

    default deny
    allow  lookup_* / search_*  when 'support' in principal.roles
    allow  refund_*             when 'finance' in principal.roles
    deny   refund_*             when args.amount_usd > 1000

Ours is the core's part of a governed call on those tools (``begin``, and
``finish`` with a ``None`` output when allowed: steps 1-9, of which the policy
is one), so it does more than the peer. cedarpy's ``is_authorized`` takes the
policy text and entities on every call (its API); ``is_authorized_batch`` with
100 requests per call shows its per-decision cost with that amortised.

    make bench-policy
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Tuple

import cedarpy

import harnessweaver as hw

from benchlib import Results, median_ns, pkg_version, value

HARNESS = {
    "apiVersion": "harnessweaver/v1", "kind": "Harness", "metadata": {"name": "bench-policy"},
    "spec": {
        "mode": "test", "tools": {"manifests": ["tools/*.json"]}, "audit": {"sink": "none"},
        "policy": {"default": "deny", "rules": [
            {"name": "support-reads", "effect": "allow", "tools": ["lookup_*", "search_*"], "when": "'support' in principal.roles"},
            {"name": "finance-refunds", "effect": "allow", "tools": ["refund_*"], "when": "'finance' in principal.roles"},
            {"name": "no-big-refunds", "effect": "deny", "tools": ["refund_*"], "when": "args.amount_usd > 1000"},
        ]},
    },
}
SCHEMAS = {
    "lookup_order": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
    "refund_payment": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount_usd": {"type": "number"}},
                       "required": ["order_id", "amount_usd"]},
}
CEDAR = """
permit(principal, action == Action::"call", resource)
  when { (context.tool like "lookup_*" || context.tool like "search_*") && principal.roles.contains("support") };
permit(principal, action == Action::"call", resource)
  when { context.tool like "refund_*" && principal.roles.contains("finance") };
forbid(principal, action == Action::"call", resource)
  when { context.tool like "refund_*" && context.args.amount_usd > 1000 };
"""
# (who, roles, tool, args, allowed)
REQUESTS: List[Tuple[str, List[str], str, Dict[str, Any], bool]] = [
    ("fin-1", ["finance"], "refund_payment", {"order_id": "A-1", "amount_usd": 250}, True),
    ("fin-1", ["finance"], "refund_payment", {"order_id": "A-1", "amount_usd": 5000}, False),
    ("sup-1", ["support"], "refund_payment", {"order_id": "A-1", "amount_usd": 250}, False),
    ("sup-1", ["support"], "lookup_order", {"order_id": "A-1"}, True),
]


def cedar_request(who: str, tool: str, args: Dict[str, Any]) -> Dict[str, Any]:
    return {"principal": f'User::"{who}"', "action": 'Action::"call"', "resource": f'Tool::"{tool}"',
            "context": {"tool": tool, "args": args}}


def main() -> int:
    res = Results("policy-python")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "tools").mkdir()
        for name, schema in SCHEMAS.items():
            (root / "tools" / f"{name}.json").write_text(json.dumps({
                "apiVersion": "harnessweaver/v1", "kind": "Tool", "metadata": {"name": name},
                "spec": {"transport": "native", "handler": f"bench:{name}", "description": name, "input_schema": schema}}))
        (root / "harness.yaml").write_text(json.dumps(HARNESS))
        h = hw.load(root / "harness.yaml", handlers={n: (lambda **kw: None) for n in SCHEMAS})
        rt = h  # the native host: begin and finish without the Python wrapper
        principals = {who: hw.Principal(who, roles=roles) for who, roles, *_ in REQUESTS}
        entities = [{"uid": {"__entity": {"type": "User", "id": who}}, "attrs": {"roles": roles}, "parents": []}
                    for who, roles in {(w, tuple(r)) for w, r, *_ in REQUESTS}]
        entities = [{**e, "attrs": {"roles": list(e["attrs"]["roles"])}} for e in entities]
        entities_json = json.dumps(entities)

        def ours(who: str, tool: str, args: Dict[str, Any]) -> bool:
            begun = rt.begin(tool, args, principal=principals[who])
            if isinstance(begun, hw.CallResult):
                return begun.allowed
            return rt.finish(begun, "returned", None).allowed

        def cedar(who: str, tool: str, args: Dict[str, Any]) -> bool:
            return cedarpy.is_authorized(cedar_request(who, tool, args), CEDAR, entities_json).allowed

        batch = [cedar_request(w, t, a) for w, _, t, a, _ in REQUESTS] * 25

        def cedar_batch() -> None:
            for r in cedarpy.is_authorized_batch(batch, CEDAR, entities_json):
                r.allowed

        for who, _, tool, args, allowed in REQUESTS:
            assert ours(who, tool, args) == allowed, ("ours", who, tool, args)
            assert cedar(who, tool, args) == allowed, ("cedarpy", who, tool, args)
        assert [r.allowed for r in cedarpy.is_authorized_batch(batch, CEDAR, entities_json)] == [x[4] for x in REQUESTS] * 25

        def all_ours() -> None:
            for who, _, tool, args, _ in REQUESTS:
                ours(who, tool, args)

        def all_cedar() -> None:
            for who, _, tool, args, _ in REQUESTS:
                cedar(who, tool, args)

        n = len(REQUESTS)
        o = median_ns(all_ours) / n
        p = median_ns(all_cedar) / n
        pb = median_ns(cedar_batch) / len(batch)
        version = pkg_version("cedarpy")
        case = f"{n} requests (2 allowed, 2 denied), mean per decision, Python"
        res.row("policy (reference)", case, value("governed call, steps 1-9 (core part)", o, "ns"),
                value(f"cedarpy {version} is_authorized", p, "ns"))
        res.row("policy (reference)", case.replace("mean per decision", "mean per decision, peer batched x100"),
                value("governed call, steps 1-9 (core part)", o, "ns"),
                value(f"cedarpy {version} is_authorized_batch", pb, "ns"))
    res.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
