"""The Swift binding's UniFFI surface, exercised through UniFFI's Python
bindings generated from the same library (no Swift compiler here), and a
drift check of the committed Swift sources in bindings-swift/generated/.

`make test-swift` sets HW_UNIFFI_BINDGEN and HW_SWIFT_LIB; without them the
tests fail (they are part of the suite, not optional)."""

from __future__ import annotations

import filecmp
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "bindings-swift" / "generated"
SHOP = ROOT / "examples" / "shop" / "harness.yaml"


def env_path(name: str) -> Path:
    value = os.environ.get(name)
    assert value, f"{name} is not set: run these tests with `make test-swift`"
    path = Path(value)
    assert path.exists(), f"{name}={value} does not exist: run `make build-swift`"
    return path


def generate(language: str, out_dir: Path) -> None:
    subprocess.run(
        [str(env_path("HW_UNIFFI_BINDGEN")), "generate", "--language", language, "--no-format",
         "--out-dir", str(out_dir), str(env_path("HW_SWIFT_LIB"))],
        cwd=ROOT, check=True, capture_output=True, text=True,
    )


def test_committed_swift_is_fresh(tmp_path: Path) -> None:
    generate("swift", tmp_path)
    fresh = sorted(p.name for p in tmp_path.iterdir())
    committed = sorted(p.name for p in GENERATED.iterdir())
    assert fresh == committed, "run `make swift-generate` and commit bindings-swift/generated/"
    _, mismatch, errors = filecmp.cmpfiles(tmp_path, GENERATED, fresh, shallow=False)
    assert not mismatch and not errors, f"stale: {mismatch + errors}; run `make swift-generate` and commit"


@pytest.fixture(scope="module")
def uf(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    out = tmp_path_factory.mktemp("uniffi-python")
    generate("python", out)
    shutil.copy(env_path("HW_SWIFT_LIB"), out)
    spec = importlib.util.spec_from_file_location("harnessweaver_swift", out / "harnessweaver_swift.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["harnessweaver_swift"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("harnessweaver_swift", None)


def reference_digest(name: str, description: str, schema: object) -> str:
    text = json.dumps({"name": name, "description": description, "input_schema": schema},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_definition_digest(uf: ModuleType) -> None:
    schema = {"type": "object", "properties": {"é": {"type": "string"}, "\U0001f600": {"minimum": 1e-7}}}
    assert uf.definition_digest("t\U00010000", "d é", json.dumps(schema)) == reference_digest("t\U00010000", "d é", schema)


def has_tag(value: object) -> bool:
    """A fixture value with a tag (`$float`, `$int`, `$nest`): no JSON text carries it."""
    if isinstance(value, dict):
        return any(k.startswith("$") for k in value) or any(has_tag(v) for v in value.values())
    return isinstance(value, list) and any(has_tag(v) for v in value)


# fixtures/digest/ whose values JSON text can carry: a tagged value (NaN, a big integer, deep nesting)
# has no JSON text for this binding to take; the Rust, Python and Node runners run those.
DIGEST_CASES = [p for p in sorted((ROOT / "fixtures" / "digest").glob("*.json")) if not has_tag(json.loads(p.read_text()))]


@pytest.mark.parametrize("path", DIGEST_CASES, ids=lambda p: p.stem)
def test_digest_fixtures(uf: ModuleType, path: Path) -> None:
    case = json.loads(path.read_text())
    output = json.dumps(case["output_schema"]) if "output_schema" in case else None
    digest = uf.definition_digest(case["name"], case["tool_description"], json.dumps(case["input_schema"]), output)
    assert digest == case["expect"]["digest"], path.name


def test_canonical_json(uf: ModuleType) -> None:
    assert uf.canonical_json('{"b":[1.0,-0.0,1e-7],"a":"\\ud800\\udc00"}') == '{"a":"\\ud800\\udc00","b":[1,0,1e-07]}'


def test_value_errors_carry_codes(uf: ModuleType) -> None:
    with pytest.raises(uf.HarnessweaverError.InvalidValue) as info:
        uf.canonical_json("9007199254740993")
    assert info.value.code == "integer_out_of_range"
    with pytest.raises(uf.HarnessweaverError.InvalidValue) as info:
        uf.canonical_json("{not json")
    assert info.value.code == "invalid_json"
    with pytest.raises(uf.HarnessweaverError.InvalidValue) as info:
        uf.definition_digest("t", "d", "[" * 600 + "]" * 600)
    assert info.value.code in ("nesting_too_deep", "invalid_json")


def test_load_lists_tools(uf: ModuleType) -> None:
    harness = uf.load(str(SHOP))
    tools = [json.loads(t) for t in harness.tools_json()]
    assert [t["name"] for t in tools] == harness.tool_names()
    assert tools, "the shop example has tools"
    for tool in tools:
        assert tool["digest"] == reference_digest(tool["name"], tool["description"], tool["input_schema"])
        assert tool["pin"] in ("pinned", "mismatched", "unpinned")


def test_load_error_lists_problems(uf: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "harness.yaml").write_text(
        "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [nothing/*.yaml]\n"
    )
    with pytest.raises(uf.HarnessweaverError.Load) as info:
        uf.load(str(tmp_path / "harness.yaml"))
    problems = info.value.problems
    assert problems, "a load error lists its problems"
    assert all(p.code and p.message for p in problems)
    assert info.value.code == (problems[0].code if len(problems) == 1 else "load_error")


def test_tool_description_from_manifest(uf: ModuleType) -> None:
    text = (ROOT / "examples" / "shop" / "tools" / "refund_payment.yaml").read_text()
    tool = json.loads(uf.tool_description_from_manifest(text))
    assert tool["name"] == "refund_payment"
    assert tool["digest"] == reference_digest(tool["name"], tool["description"], tool["input_schema"])
    with pytest.raises(uf.HarnessweaverError.Load) as info:
        uf.tool_description_from_manifest("apiVersion: harnessweaver/v1\nkind: Tool\nspec: {bogus: 1}\n")
    assert info.value.problems
