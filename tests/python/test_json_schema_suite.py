"""The JSON-Schema-Test-Suite's required draft 2020-12 tests through a real load
and step 2 (issue 17, conformance of validation), as fixtures/json_schema_suite/README.md
says; Rust and Node run the same cases against the same expected_failures.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

import harnessweaver as hw
from fixture_support import FIXTURES

SUITE = FIXTURES / "json_schema_suite"


def suite_cases() -> List[Tuple[str, Any, List[Tuple[str, Any, bool]]]]:
    """Every case: ``(file | description, schema, [(test description, data, valid)])``."""
    out = []
    for file in sorted((SUITE / "draft2020-12").glob("*.json")):
        for case in json.loads(file.read_text(encoding="utf-8")):
            tests = [(t["description"], t["data"], t["valid"]) for t in case["tests"]]
            out.append((f"{file.name} | {case['description']}", case["schema"], tests))
    return out


def manifest(i: int, case_id: str, schema: Any) -> Dict[str, Any]:
    if isinstance(schema, dict) and "$id" not in schema:
        schema = {**schema, "$id": f"urn:harnessweaver:suite:s{i}"}
    input_schema = {"type": "object", "properties": {"value": schema}, "required": ["value"]}
    spec = {"description": case_id, "handler": "suite:ok", "input_schema": input_schema}
    return {"apiVersion": "harnessweaver/v1", "kind": "Tool", "metadata": {"name": f"s{i}"}, "spec": spec}


def test_issue17_conformance_json_schema_test_suite_draft2020_12_through_step_2(tmp_path: Path) -> None:
    cases = suite_cases()
    assert len(cases) > 300
    (tmp_path / "tools").mkdir()
    harness = tmp_path / "harness.yaml"
    harness.write_text(
        'apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  mode: test\n  tools:\n    manifests: ["tools/*.json"]\n',
        encoding="utf-8",
    )
    for i, (case_id, schema, _) in enumerate(cases):
        (tmp_path / "tools" / f"s{i}.json").write_text(json.dumps(manifest(i, case_id, schema)), encoding="utf-8")
    names = {f"s{i}" for i in range(len(cases))}
    failures = set()
    try:
        h = hw.load(harness, handlers={n: (lambda **_: None) for n in names})
    except hw.LoadError as err:
        refused = {p.file for p in err.problems}
        assert all(f and f.startswith("tools/s") for f in refused), err
        for file in refused:
            i = int(file[len("tools/s") : -len(".json")])
            failures.add(cases[i][0])
            (tmp_path / file).unlink()
            names.discard(f"s{i}")
        h = hw.load(harness, handlers={n: (lambda **_: None) for n in names})
    for i, (case_id, _, tests) in enumerate(cases):
        if case_id in failures:
            continue
        for description, data, valid in tests:
            try:
                r = h.call(f"s{i}", {"value": data}, principal={"id": "suite"}, raise_on_refusal=False)
                refused_at_step_2 = r.code == "invalid_args"
            except hw.HarnessweaverError:  # no portable JSON form: not decided by step 2
                refused_at_step_2 = False
            if refused_at_step_2 == valid:
                failures.add(f"{case_id} | {description}")
    expected = json.loads((SUITE / "expected_failures.json").read_text(encoding="utf-8"))
    assert all(isinstance(reason, str) and reason for reason in expected.values())
    assert sorted(failures - set(expected)) == [], "failing but not in expected_failures.json"
    assert sorted(set(expected) - failures) == [], "listed in expected_failures.json but passing"
