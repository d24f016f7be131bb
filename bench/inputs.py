"""Writes the inputs the digest and validation benchmarks share across Rust,
Python and Node, so every language and every peer measures the same data
(deterministic; no timing here):

- target/bench-inputs/digest.json: a small (~200 B) and a large (~50 KB) tool
  definition (name, description, input_schema);
- target/bench-inputs/validation.json: the example shop's tools (their input
  schemas read with harnessweaver.inspect) plus one richer ticket schema, each
  with realistic valid arguments and arguments that fail the schema;
- target/bench-inputs/validation/harness.yaml: those tools as native tools with
  nothing but their schema, for the governed-call side of the comparison.

    python bench/inputs.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parents[1]

TICKET_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 5, "maxLength": 120},
        "priority": {"type": "string", "enum": ["low", "normal", "high", "urgent"]},
        "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z][a-z0-9-]{1,30}$"},
                 "uniqueItems": True, "maxItems": 10},
        "customer": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "pattern": "^cus_[A-Za-z0-9]{8,24}$"},
                "email": {"type": "string", "pattern": "^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$"},
                "tier": {"type": "string", "enum": ["free", "pro", "enterprise"]},
            },
            "required": ["id"],
            "additionalProperties": False,
        },
        "line_items": {
            "type": "array",
            "minItems": 1,
            "maxItems": 50,
            "items": {
                "type": "object",
                "properties": {
                    "sku": {"type": "string", "pattern": "^SKU-[0-9]{6}$"},
                    "qty": {"type": "integer", "minimum": 1, "maximum": 1000},
                    "unit_price_usd": {"type": "number", "minimum": 0},
                },
                "required": ["sku", "qty"],
                "additionalProperties": False,
            },
        },
        "due_date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        "notify": {"type": "boolean"},
    },
    "required": ["title", "priority", "customer", "line_items"],
    "additionalProperties": False,
}

TICKET_VALID = {
    "title": "Refund request for damaged espresso machine",
    "priority": "high",
    "tags": ["refund", "damaged-goods", "eu"],
    "customer": {"id": "cus_8Hq2LmZ04xPa", "email": "jane.doe@example.com", "tier": "pro"},
    "line_items": [
        {"sku": "SKU-104233", "qty": 1, "unit_price_usd": 499.0},
        {"sku": "SKU-200871", "qty": 2, "unit_price_usd": 12.5},
        {"sku": "SKU-300015", "qty": 4, "unit_price_usd": 3.99},
    ],
    "due_date": "2026-12-04",
    "notify": True,
}
# Fails deep inside: the last line item's quantity.
TICKET_INVALID = json.loads(json.dumps(TICKET_VALID))
TICKET_INVALID["line_items"][2]["qty"] = 0

# Realistic arguments for the example shop's tools: valid, and failing the schema.
SHOP_ARGS: Dict[str, Dict[str, Any]] = {
    "lookup_order": {"valid": {"order_id": "A-1001"}, "invalid": {"order_id": "B-17"}},
    "refund_payment": {"valid": {"order_id": "A-1234", "amount_usd": 42.5},
                       "invalid": {"order_id": "A-1234", "amount_usd": -5}},
    "search_catalog": {"valid": {"query": "crème brûlée torch", "limit": 10},
                       "invalid": {"query": "crème brûlée torch", "limit": 500}},
    "notify_customer": {"valid": {"order_id": "A-1001", "message": "Your order has shipped and arrives on Thursday."},
                        "invalid": {"order_id": "A-1001", "message": "x" * 600}},
}


def canonical_size(name: str, description: str, schema: Any) -> int:
    text = json.dumps({"description": description, "input_schema": schema, "name": name},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return len(text.encode("utf-8"))


def large_schema(target_bytes: int = 50_000) -> Dict[str, Any]:
    """A big but plausible schema: many documented properties of every kind, nested objects, non-ASCII text."""
    props: Dict[str, Any] = {}
    kinds = [
        lambda i: {"type": "string", "description": f"Free-text field {i}: the customer's note (café, naïve, 東京).", "maxLength": 500},
        lambda i: {"type": "integer", "description": f"Counter {i}, how many units were affected.", "minimum": 0, "maximum": 100000},
        lambda i: {"type": "number", "description": f"Amount {i} in USD.", "minimum": 0, "multipleOf": 0.01},
        lambda i: {"type": "string", "enum": ["low", "normal", "high", "urgent", f"custom-{i}"], "description": f"Priority {i}."},
        lambda i: {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9-]+$"}, "maxItems": 20,
                   "description": f"Tags for group {i}."},
        lambda i: {"type": "object", "description": f"Address {i}.", "additionalProperties": False,
                   "properties": {"street": {"type": "string"}, "city": {"type": "string"},
                                  "postcode": {"type": "string", "pattern": "^[0-9A-Z -]{3,10}$"},
                                  "country": {"type": "string", "minLength": 2, "maxLength": 2}},
                   "required": ["city", "country"]},
    ]
    i = 0
    while True:
        props[f"field_{i:04d}"] = kinds[i % len(kinds)](i)
        i += 1
        schema = {"type": "object", "properties": props, "required": [f"field_{j:04d}" for j in range(0, i, 7)],
                  "additionalProperties": False}
        if canonical_size("bulk_update_records", "Update many records at once.", schema) >= target_bytes:
            return schema


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("HW_BENCH_INPUTS", str(ROOT / "target" / "bench-inputs")))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    import harnessweaver as hw

    shop = {t.name: t for t in hw.inspect(ROOT / "examples" / "shop" / "harness.yaml").tools}
    refund = shop["refund_payment"]
    small = {"name": refund.name, "description": refund.description, "input_schema": refund.input_schema}
    big_schema = large_schema()
    large = {"name": "bulk_update_records", "description": "Update many records at once.", "input_schema": big_schema}
    for d in (small, large):
        d["bytes"] = canonical_size(d["name"], d["description"], d["input_schema"])
    (out / "digest.json").write_text(json.dumps({"small": small, "large": large}, ensure_ascii=False), encoding="utf-8")

    cases: List[Dict[str, Any]] = []
    for name, a in SHOP_ARGS.items():
        cases.append({"tool": name, "source": "examples/shop", "schema": shop[name].input_schema, **a})
    cases.append({"tool": "create_ticket", "source": "bench/inputs.py", "schema": TICKET_SCHEMA,
                  "valid": TICKET_VALID, "invalid": TICKET_INVALID})
    hdir = out / "validation"
    (hdir / "tools").mkdir(parents=True, exist_ok=True)
    for c in cases:
        manifest = {"apiVersion": "harnessweaver/v1", "kind": "Tool", "metadata": {"name": c["tool"]},
                    "spec": {"transport": "native", "handler": f"bench:{c['tool']}",
                             "description": f"{c['tool']} (schema only)", "input_schema": c["schema"]}}
        (hdir / "tools" / f"{c['tool']}.json").write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
    (hdir / "harness.yaml").write_text(json.dumps({
        "apiVersion": "harnessweaver/v1", "kind": "Harness", "metadata": {"name": "bench-validation"},
        "spec": {"mode": "test", "tools": {"manifests": ["tools/*.json"]}, "audit": {"sink": "none"}}}), encoding="utf-8")
    (out / "validation.json").write_text(json.dumps({"cases": cases, "harness": str(hdir / "harness.yaml")},
                                                    ensure_ascii=False), encoding="utf-8")
    print(f"wrote {out}/digest.json (small {small['bytes']} B, large {large['bytes']} B), "
          f"validation.json ({len(cases)} tools) and validation/harness.yaml")


if __name__ == "__main__":
    main()
