"""`harnessweaver add tool module:function` round-trips a realistic module of
tools (add_tool/shop_tools.py) into manifests that load, pin cleanly and
validate calls: good arguments run the function, bad ones are refused with
`invalid_args` before it runs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

import harnessweaver as hw
from harnessweaver import _add_tool

HERE = Path(__file__).parent
SCRIPT = Path(sys.executable).parent / "harnessweaver"
HARNESS = """# The shop's harness: tools come from `harnessweaver add tool`.
apiVersion: harnessweaver/v1
kind: Harness
spec:
  mode: test
  tools:
    manifests:
      - other/*.yaml   # hand-written ones
  audit: {sink: audit.jsonl}
"""
OTHER = 'apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {name: ping}\nspec:\n  handler: "shop_tools:lookup_order"\n'

# (function, --risk, --side-effect)
TOOLS: List[Tuple[str, str, str]] = [
    ("lookup_order", "low", "read"),
    ("search_products", "low", "read"),
    ("set_order_status", "medium", "write_internal"),
    ("create_shipment", "medium", "write_external"),
    ("refund_payment", "high", "destructive"),
    ("bulk_update_prices", "high", "write_internal"),
    ("apply_discount", "low", "write_internal"),
    ("quote_shipping", "low", "none"),
]

PRINCIPAL = {"id": "agent", "roles": [], "scopes": []}


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("add-tool")
    shutil.copy(HERE / "add_tool" / "shop_tools.py", root / "shop_tools.py")
    (root / "harness.yaml").write_text(HARNESS, encoding="utf-8")
    (root / "other").mkdir()
    (root / "other" / "ping.yaml").write_text(OTHER, encoding="utf-8")
    for name, risk, side in TOOLS:
        done = cli(root, "add", "tool", f"shop_tools:{name}", "--risk", risk, "--side-effect", side)
        if side in ("write_external", "destructive"):
            # Issue 21: a draft `effect: null` that does not load until someone says what the call changes outside.
            draft = root / "tools" / f"{name}.yaml"
            assert done.returncode == 1 and "[effect_contract_missing]" in done.stdout, done.stdout
            assert "is a draft: fill in `spec.effect`" in done.stdout, done.stdout
            assert "\n  effect: null\n" in draft.read_text(encoding="utf-8")
            assert f"tool `{name}` pinned" not in done.stdout
            reviewed = draft.read_text(encoding="utf-8").replace(
                "effect: null", "effect: {kind: external_write, retry_mode: none}"
            )
            draft.write_text(reviewed, encoding="utf-8")
            done = cli(root, "tools", "add", f"tools/{name}.yaml")
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"tool `{name}` pinned at sha256:" in done.stdout, done.stdout
    return root


def test_the_harness_gains_one_glob_and_keeps_its_comments(shop: Path) -> None:
    text = (shop / "harness.yaml").read_text(encoding="utf-8")
    assert text == HARNESS.replace("# hand-written ones\n", '# hand-written ones\n      - "tools/*.yaml"\n')
    assert sorted(p.stem for p in (shop / "tools").glob("*.yaml")) == sorted(t[0] for t in TOOLS)


def test_every_manifest_loads_pinned_and_doctor_is_clean(shop: Path) -> None:
    harness = hw.load(shop / "harness.yaml")
    for name, risk, side in TOOLS:
        t = harness.tool(name)
        assert t.pin == "pinned", name
        assert (t.risk, t.side_effect, t.transport) == (risk, side, "native")
    doctor = cli(shop, "doctor")
    assert doctor.returncode == 0, doctor.stdout
    # The hand-written tool is unpinned; every added one is pinned.
    assert doctor.stdout.count("warning:") == 1 and "`ping` is not pinned" in doctor.stdout, doctor.stdout
    listed = json.loads(cli(shop, "tools", "list", "--json").stdout)
    assert {t["name"]: t["pin"] for t in listed["tools"]} == {**{t[0]: "pinned" for t in TOOLS}, "ping": "unpinned"}


def test_schemas_come_from_the_hints_and_docstrings(shop: Path) -> None:
    harness = hw.load(shop / "harness.yaml")
    search = harness.tool("search_products")
    assert search.description == "Search the catalogue."
    assert search.input_schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words to look for."},
            "limit": {"type": "integer", "description": "At most this many results.", "default": 10},
            "max_price": {
                "type": ["number", "null"],
                "description": "Only products at or under this price (USD).",
                "default": None,
            },
            "in_stock_only": {"type": "boolean", "description": "Leave out products that are sold out.", "default": False},
            "tags": {
                "type": ["array", "null"],
                "items": {"type": "string"},
                "description": "Only products with every one of these tags.",
                "default": None,
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    status = harness.tool("set_order_status").input_schema["properties"]
    assert status["status"] == {"type": "string", "enum": ["pending", "shipped", "cancelled"], "description": "the new status"}
    assert status["note"] == {
        "type": "string",
        "enum": ["customer", "internal"],
        "description": "who sees the change",
        "default": "internal",
    }
    assert status["priority"] == {"type": "integer", "enum": [1, 2, 3], "default": 2}
    shipment = harness.tool("create_shipment").input_schema
    assert shipment["properties"]["address"]["required"] == ["street", "city", "postcode", "country"]
    assert "unit" in shipment["properties"]["address"]["properties"]
    assert shipment["properties"]["items"]["items"]["properties"]["quantity"] == {"type": "integer", "minimum": 1, "maximum": 100}
    assert shipment["properties"]["options"] == {
        "type": ["object", "null"],
        "additionalProperties": {"type": "boolean"},
        "default": None,
    }
    discount = harness.tool("apply_discount").input_schema
    assert discount["properties"]["code"]["description"] == "The discount code, as printed on the voucher."
    assert "LineItem" in discount["$defs"], "pydantic's nested models are hoisted to the root's $defs"
    quote = harness.tool("quote_shipping").input_schema["properties"]
    assert quote["destination"] == {
        "type": "array",
        "prefixItems": [{"type": "string"}, {"type": "string"}],
        "minItems": 2,
        "maxItems": 2,
    }
    assert quote["services"]["uniqueItems"] is True and quote["services"]["default"] == ["standard"]
    assert quote["parcel"]["required"] == ["length_cm", "width_cm", "height_cm"]


GOOD: Dict[str, Dict[str, Any]] = {
    "lookup_order": {"order_id": "A-1001"},
    "search_products": {"query": "mug", "limit": 2, "max_price": None, "tags": ["kitchen"]},
    "set_order_status": {"order_id": "A-1", "status": "shipped", "priority": 3},
    "create_shipment": {
        "order_id": "A-1",
        "address": {"street": "1 Rue", "city": "Paris", "postcode": "75001", "country": "FR"},
        "items": [{"sku": "SKU-1", "quantity": 2}, {"sku": "SKU-22", "quantity": 1, "gift_wrap": True}],
        "options": {"signature": True},
    },
    "refund_payment": {"order_id": "A-1", "amount_usd": 12.5, "reason": "late"},
    "bulk_update_prices": {"updates": {"SKU-1": 9.99, "SKU-2": 19}, "currency": "EUR", "dry_run": False},
    "apply_discount": {
        "code": "SAVE10",
        "customer": {"email": "a@example.com", "loyalty_tier": "gold", "shipping": {"sku": "SKU-9", "quantity": 1}},
    },
    "quote_shipping": {
        "parcel": {"length_cm": 10, "width_cm": 20, "height_cm": 30, "labels": ["x"]},
        "weight_kg": 1.5,
        "destination": ["FR", "75001"],
        "services": ["express", "standard"],
    },
}

BAD: List[Tuple[str, Dict[str, Any]]] = [
    ("lookup_order", {}),  # required missing
    ("lookup_order", {"order_id": 7}),  # wrong type
    ("lookup_order", {"order_id": "A-1", "extra": True}),  # no **kwargs: no extra properties
    ("search_products", {"query": "mug", "limit": "ten"}),
    ("search_products", {"query": "mug", "tags": ["ok", 3]}),  # list[str] items
    ("set_order_status", {"order_id": "A-1", "status": "lost"}),  # Enum values
    ("set_order_status", {"order_id": "A-1", "status": "shipped", "note": "public"}),  # Literal
    ("set_order_status", {"order_id": "A-1", "status": "shipped", "priority": 9}),  # IntEnum
    (
        "create_shipment",
        {"order_id": "A-1", "address": {"street": "x", "city": "y", "postcode": "z"}, "items": []},
    ),  # TypedDict key
    (
        "create_shipment",
        {
            "order_id": "A-1",
            "address": {"street": "x", "city": "y", "postcode": "z", "country": "DE"},
            "items": [{"sku": "bad", "quantity": 1}],
        },
    ),  # pydantic Field(pattern)
    (
        "create_shipment",
        {
            "order_id": "A-1",
            "address": {"street": "x", "city": "y", "postcode": "z", "country": "DE"},
            "items": [{"sku": "SKU-1", "quantity": 0}],
        },
    ),  # pydantic Field(ge)
    ("refund_payment", {"order_id": "A-1", "amount_usd": "12", "reason": "late"}),
    ("bulk_update_prices", {"updates": {"SKU-1": "cheap"}}),  # dict[str, float] values
    ("apply_discount", {"code": "X", "customer": {"loyalty_tier": "gold"}}),  # pydantic required field
    ("apply_discount", {"code": "X", "customer": {"email": "e", "shipping": {"sku": "SKU-1", "quantity": 500}}}),  # $ref'd model
    (
        "quote_shipping",
        {"parcel": {"length_cm": 1, "width_cm": 1, "height_cm": 1}, "weight_kg": 1, "destination": ["FR"]},
    ),  # tuple length
    (
        "quote_shipping",
        {"parcel": {"length_cm": 1, "width_cm": 1}, "weight_kg": 1, "destination": ["FR", "1"]},
    ),  # dataclass field
    (
        "quote_shipping",
        {
            "parcel": {"length_cm": 1, "width_cm": 1, "height_cm": 1},
            "weight_kg": 1,
            "destination": ["FR", "1"],
            "services": ["express", "express"],
        },
    ),  # set: unique items
]


@pytest.mark.parametrize("name", sorted(GOOD))
def test_good_arguments_run_the_function(shop: Path, name: str) -> None:
    sys.path.insert(0, str(shop))
    try:
        import shop_tools

        harness = hw.load(shop / "harness.yaml")
        result = harness.call(name, GOOD[name], principal=PRINCIPAL)
        assert result.allowed, result.to_dict()
        assert result.output == json.loads(json.dumps(getattr(shop_tools, name)(**GOOD[name])))
    finally:
        sys.path.remove(str(shop))


@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_arguments_are_refused_before_the_function_runs(shop: Path, case: int) -> None:
    name, args = BAD[case]
    harness = hw.load(shop / "harness.yaml")
    result = harness.call(name, args, principal=PRINCIPAL, raise_on_refusal=False)
    assert (result.decision, result.code, result.step) == ("refused", "invalid_args", "validate"), (name, args, result.to_dict())


def test_adding_again_changes_nothing(shop: Path) -> None:
    before = {p: p.read_text(encoding="utf-8") for p in [shop / "harness.yaml", *sorted((shop / "tools").glob("*.yaml"))]}
    done = cli(
        shop, "add", "tool", "shop_tools:bulk_update_prices", "--risk", "high", "--side-effect", "write_internal", "--json"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert (report["ok"], report["harness_changed"], report["tool"], report["pin"]) == (
        True,
        False,
        "bulk_update_prices",
        "pinned",
    )
    assert {p: p.read_text(encoding="utf-8") for p in before} == before
    # A different risk is a different manifest: refused without --force.
    clash = cli(shop, "add", "tool", "shop_tools:bulk_update_prices", "--risk", "low")
    assert clash.returncode == 1 and "[manifest_exists]" in clash.stdout, clash.stdout
    # A reviewed effect contract is not overwritten by a new draft.
    again = cli(shop, "add", "tool", "shop_tools:refund_payment", "--risk", "high", "--side-effect", "destructive")
    assert again.returncode == 1 and "[manifest_exists]" in again.stdout, again.stdout
    assert {p: p.read_text(encoding="utf-8") for p in before} == before


def test_what_cannot_be_described_is_a_clear_problem(shop: Path) -> None:
    opaque = cli(shop, "add", "tool", "shop_tools:export_report")
    assert opaque.returncode == 1
    assert "parameter `target`: `Opaque` has no JSON Schema form" in opaque.stdout and "[unsupported_type]" in opaque.stdout
    assert not (shop / "tools" / "export_report.yaml").exists()
    missing = cli(shop, "add", "tool", "no_such_module:f")
    assert missing.returncode == 1 and "[import_failed]" in missing.stdout
    assert cli(shop, "add", "tool").returncode == 2
    assert cli(shop, "add", "tool", "shop_tools:lookup_order", "--risk", "extreme").returncode == 2
    widget = cli(shop, "add", "widget")  # the core's command line decides: only a tool can be added
    assert widget.returncode == 3 and "the only thing to add is a tool" in widget.stderr
    helped = cli(shop, "add", "tool", "--help")
    assert helped.returncode == 0 and helped.stdout.startswith("usage: harnessweaver add tool") and "exit codes:" in helped.stdout


def test_positional_only_and_varargs_are_refused() -> None:
    def f(a: int, /) -> None: ...
    def g(*items: int) -> None: ...
    def h(x: int, **more: str) -> None: ...

    for fn in (f, g):
        with pytest.raises(_add_tool.MappingError):
            _add_tool.input_schema(fn)
    assert _add_tool.input_schema(h)["additionalProperties"] == {"type": "string"}
