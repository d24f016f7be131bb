"""The Python package's API: loading, tool descriptions, value conversion,
errors with codes and problems, the console script and the type stub."""

from __future__ import annotations

import ast
import hashlib
import json
import math
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import pytest

import harnessweaver as hw
from fixture_support import ROOT
from harnessweaver import _native

SHOP = ROOT / "examples" / "shop" / "harness.yaml"
REFUND = ROOT / "examples" / "shop" / "tools" / "refund_payment.yaml"


def reference_digest(name: str, description: str, schema: object) -> str:
    text = json.dumps(
        {"name": name, "description": description, "input_schema": schema},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


# --- loading -------------------------------------------------------------------------------


def test_load_describes_every_tool() -> None:
    harness = hw.load(SHOP)
    assert harness.tools, "the shop example has tools"
    for tool in harness.tools:
        assert isinstance(tool, hw.ToolDescription)
        assert tool.pin in ("pinned", "mismatched", "unpinned")
        assert tool.digest == reference_digest(tool.name, tool.description, tool.input_schema)
        assert tool.digest == hw.definition_digest(tool.name, tool.description, tool.input_schema)
        d = tool.describe()
        for field in ("name", "description", "input_schema", "digest", "pin", "transport", "risk", "timeout"):
            assert field in d, field
            assert getattr(tool, field) == d[field] == tool[field]
        assert harness.tool(tool.name) is tool
    assert harness.tool("no_such_tool") is None


def test_load_accepts_str_and_pathlike() -> None:
    assert [t.name for t in hw.load(str(SHOP)).tools] == [t.name for t in hw.load(SHOP).tools]


def test_tool_description_is_read_only() -> None:
    tool = hw.load(SHOP).tools[0]
    with pytest.raises(AttributeError):
        tool.name = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        tool.no_such_field  # noqa: B018


def test_from_manifest_text_and_dict_agree_with_load() -> None:
    loaded = {t.name: t for t in hw.load(SHOP).tools}
    from_text = hw.ToolDescription.from_manifest(REFUND.read_text(encoding="utf-8"))
    assert from_text.name == "refund_payment"
    assert from_text.digest == loaded["refund_payment"].digest
    assert from_text.pin == loaded["refund_payment"].pin
    as_dict = {
        "apiVersion": "harnessweaver/v1",
        "kind": "Tool",
        "metadata": {"name": "echo"},
        "spec": {
            "transport": "native",
            "handler": "m:echo",
            "description": "Echo.",
            "input_schema": {"type": "object", "properties": {"x": {"type": "number", "minimum": 1.0}}},
        },
    }
    tool = hw.ToolDescription.from_manifest(as_dict)
    assert tool.name == "echo" and tool.pin == "unpinned"
    assert tool.digest == reference_digest(
        "echo", "Echo.", {"type": "object", "properties": {"x": {"type": "number", "minimum": 1}}}
    )
    assert hw.ToolDescription.from_manifest(json.dumps(as_dict)).digest == tool.digest
    assert hw.Tool is hw.ToolDescription


# --- errors ---------------------------------------------------------------------------------


def test_load_error_has_code_and_problems(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "harness.yaml").write_text(
        "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [tools/*.yaml]\n"
    )
    (tmp_path / "tools" / "bad.yaml").write_text(
        "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {name: bad}\n"
        "spec:\n  transport: native\n  description: d\n  input_schema: {type: object}\n  bogus_field: 1\n"
    )
    with pytest.raises(hw.LoadError) as info:
        hw.load(tmp_path / "harness.yaml")
    err = info.value
    assert isinstance(err, hw.HarnessweaverError)
    assert err.problems, "every problem is listed"
    codes = [p.code for p in err.problems]
    assert err.code == (codes[0] if len(codes) == 1 else "load_error")
    for p in err.problems:
        assert isinstance(p, hw.Problem)
        assert set(p.to_dict()) == {"code", "message", "file", "line", "column", "path"}
        assert p.code and p.message
    unknown = [p for p in err.problems if "bogus_field" in p.message or "bogus_field" in p.path]
    assert unknown, codes
    assert unknown[0].file and unknown[0].file.endswith("bad.yaml")
    assert unknown[0].line == 8
    assert "bad.yaml" in str(err)


def test_missing_file_is_a_load_error(tmp_path: Path) -> None:
    with pytest.raises(hw.LoadError) as info:
        hw.load(tmp_path / "missing.yaml")
    assert info.value.problems and info.value.code


def test_from_manifest_errors_list_problems() -> None:
    with pytest.raises(hw.LoadError) as info:
        hw.ToolDescription.from_manifest("apiVersion: harnessweaver/v1\nkind: Tool\nspec: [\n")
    assert info.value.problems
    with pytest.raises(hw.LoadError):
        hw.ToolDescription.from_manifest({"apiVersion": "harnessweaver/v1", "kind": "Tool", "spec": {"nope": 1}})


@pytest.mark.parametrize(
    "value, code",
    [
        (math.nan, "non_finite_number"),
        (math.inf, "non_finite_number"),
        (-math.inf, "non_finite_number"),
        (2**53 + 1, "integer_out_of_range"),
        (-(2**53) - 1, "integer_out_of_range"),
        (10**40, "integer_out_of_range"),
        ({1: "x"}, "non_string_key"),
        ({"a": object()}, "unsupported_type"),
        (b"bytes", "unsupported_type"),
        ({1, 2}, "unsupported_type"),
    ],
)
def test_value_errors_have_codes(value: object, code: str) -> None:
    with pytest.raises(hw.InvalidValueError) as info:
        hw.canonical_json(value)
    assert info.value.code == code
    assert isinstance(info.value, hw.HarnessweaverError)
    with pytest.raises(hw.HarnessweaverError) as info:
        hw.definition_digest("t", "d", {"x": [value]})
    assert info.value.code == code


def test_too_deep_is_refused_not_a_crash() -> None:
    deep: object = 1
    for _ in range(_native.MAX_DEPTH):
        deep = [deep]
    assert hw.canonical_json(deep).startswith("[[")
    with pytest.raises(hw.InvalidValueError) as info:
        hw.canonical_json([deep])
    assert info.value.code == "nesting_too_deep"
    cyclic: list = []
    cyclic.append(cyclic)
    with pytest.raises(hw.InvalidValueError) as info:
        hw.canonical_json(cyclic)
    assert info.value.code == "nesting_too_deep"


def test_conversion_rules() -> None:
    # bool before int; tuples are arrays; 2^53 is the edge; integral floats print as ints.
    assert hw.canonical_json([True, False, 1, (1, 2), 2**53, -(2**53), 1.0, -0.0, 1e-7, 1e16]) == (
        "[true,false,1,[1,2],9007199254740992,-9007199254740992,1,0,1e-07,1e+16]"
    )
    assert hw.canonical_json(OrderedDict([("b", 1), ("a", 2)])) == '{"a":2,"b":1}'
    assert hw.canonical_json({"\uffff": 1, "\U00010000": 2}) == '{"\\uffff":1,"\\ud800\\udc00":2}'

    class MyInt(int):
        pass

    assert hw.canonical_json(MyInt(3)) == "3"
    with pytest.raises(hw.HarnessweaverError):
        hw.canonical_json("\ud800")  # a lone surrogate has no UTF-8 form


# --- packaging -----------------------------------------------------------------------------


def test_console_script_runs_the_core_cli() -> None:
    script = Path(sys.executable).parent / "harnessweaver"
    assert script.exists(), "pip install puts the console script on PATH"
    ok = subprocess.run([str(script), "doctor", str(SHOP)], capture_output=True, text=True, check=False)
    assert ok.returncode in (0, 1), ok.stderr
    usage = subprocess.run([str(script), "no-such-command"], capture_output=True, text=True, check=False)
    assert usage.returncode == 2
    module = subprocess.run([sys.executable, "-m", "harnessweaver", "no-such-command"], capture_output=True, check=False)
    assert module.returncode == 2


def test_type_stub_matches_the_native_module() -> None:
    stub = Path(_native.__file__).with_name("_native.pyi")
    if not stub.exists():
        stub = ROOT / "bindings-python" / "python" / "harnessweaver" / "_native.pyi"
    tree = ast.parse(stub.read_text(encoding="utf-8"))
    declared = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            declared.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            declared.add(node.target.id)
    exported = {n for n in dir(_native) if not n.startswith("_")}
    assert declared == exported, f"stub only: {declared - exported}; module only: {exported - declared}"
    assert (stub.parent / "py.typed").exists()


def test_public_names() -> None:
    for name in hw.__all__:
        assert hasattr(hw, name), name
    assert issubclass(hw.LoadError, hw.HarnessweaverError)
    assert issubclass(hw.InvalidValueError, hw.HarnessweaverError)
    assert hw.LoadError.__module__ == "harnessweaver"
