"""Property test: `hw.definition_digest` equals Python's own hashlib/json
computation on thousands of random JSON values, names and descriptions
(astral characters included), and Node's `definitionDigest` gives the same
digests on the same cases."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
import tempfile
from typing import Any, Dict, List

from hypothesis import HealthCheck, given, settings, strategies as st

import harnessweaver as hw
from fixture_support import ROOT

MAX_SAFE = 2**53
EXAMPLES = int(os.environ.get("HW_PROPERTY_EXAMPLES", "3000"))

# Every code point except surrogates (which have no UTF-8 form), astral planes included.
chars = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=("Cs",))
texts = st.text(chars, max_size=12)
leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_SAFE, max_value=MAX_SAFE)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
json_values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(texts, inner, max_size=5),
    max_leaves=25,
)


def normalise(v: Any) -> Any:
    """Integral floats within ±2^53 become ints, as the canonical form says."""
    if isinstance(v, float) and math.isfinite(v) and v.is_integer() and abs(v) <= MAX_SAFE:
        return int(v)
    if isinstance(v, list):
        return [normalise(x) for x in v]
    if isinstance(v, dict):
        return {k: normalise(x) for k, x in v.items()}
    return v


def reference_digest(name: str, description: str, schema: Any) -> str:
    whole = {"name": name, "description": description, "input_schema": normalise(schema)}
    text = json.dumps(whole, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


# The cases the property test saw, replayed through Node by the next test.
SEEN: List[Dict[str, Any]] = []


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=texts, description=texts, schema=json_values)
def test_digest_matches_python_json_and_hashlib(name: str, description: str, schema: Any) -> None:
    expected = reference_digest(name, description, schema)
    assert hw.definition_digest(name, description, schema) == expected
    assert hw.canonical_json(schema) == json.dumps(normalise(schema), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    SEEN.append({"name": name, "description": description, "input_schema": schema, "digest": expected})


def test_node_digest_matches_on_the_same_cases() -> None:
    assert len(SEEN) >= min(EXAMPLES, 1000), "the property test must run first, with thousands of cases"
    node = shutil.which("node")
    assert node, "node is required for the cross-language property test"
    script = ROOT / "tests" / "node" / "digest_cases.mjs"
    with tempfile.TemporaryDirectory() as tmp:
        cases_path = os.path.join(tmp, "cases.json")
        with open(cases_path, "w", encoding="ascii") as f:
            # ensure_ascii keeps astral characters as surrogate pairs, which JSON.parse joins again.
            json.dump(SEEN, f, ensure_ascii=True)
        out = subprocess.run([node, str(script), cases_path], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert len(got) == len(SEEN)
    mismatches = [(c, g) for c, g in zip(SEEN, got) if g != c["digest"]]
    assert not mismatches, f"{len(mismatches)} of {len(SEEN)} differ in Node, first: {mismatches[0]!r}"
