"""The reference pages name only things that exist.

The step table and the code tables of docs/governor.md and docs/manifest.md
are checked against the core's code enums (`Step`, `RefusalCode`,
`ProblemCode`, `ArgumentCode`, `ValueCode` in core/src/codes.rs) by the core's
own test, core/src/docs_reference.rs, as are the field tables.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_threat_model_names_only_tests_and_fixtures_that_exist() -> None:
    text = (DOCS / "threat-model.md").read_text(encoding="utf-8")
    refs = [r for r in re.findall(r"`([^`\s]+)`", text) if r.split("/")[0] in {"fixtures", "tests", "core", "fuzz"}]
    assert len(refs) > 20, refs
    missing = []
    for ref in refs:
        path, _, name = ref.partition("::")
        file = ROOT / path
        if not file.exists():
            missing.append(ref)
        elif name and not re.search(rf"\b(def|fn) {re.escape(name)}\b", file.read_text(encoding="utf-8")):
            missing.append(ref)
    assert not missing, f"docs/threat-model.md names tests or fixtures that do not exist: {missing}"
