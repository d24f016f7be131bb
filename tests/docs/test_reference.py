"""The reference pages agree with the core's own definitions.

- docs/governor.md's step table lists the core's `Step` enum in order (number,
  name), and for each step exactly the codes the governor refuses with there
  (`Refusal::new("code", Step::X`, `store_down(Step::X`, shadow
  `would_refuse("code", Step::X`).
- Every code the core can produce (the first argument of the functions that
  make problems, refusals and errors) is in a `| Code | … |` table of a docs
  page (load problems in docs/manifest.md, refusals and API errors in
  docs/governor.md), and every code in those two pages' tables is produced by
  the core or a binding.

(The field tables are checked by the core's own test, core/src/docs_reference.rs.)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Set, Tuple

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "core" / "src"
DOCS = ROOT / "docs"

# Calls whose first string argument is a code, and constants that hold one.
CODE_SITES = [
    r'\breport\(\s*"([a-z][a-z0-9_]*)"',
    r'\bProblem::new\(\s*"([a-z][a-z0-9_]*)"',
    r'\bproblem_at\(\s*"([a-z][a-z0-9_]*)"',
    r'\blocated\(\s*"([a-z][a-z0-9_]*)"',
    r'\bRefusal::new\(\s*"([a-z][a-z0-9_]*)"',
    r'\bwould_refuse\(\s*"([a-z][a-z0-9_]*)"',
    r'\bError::value\(\s*"([a-z][a-z0-9_]*)"',
    r'\bcode:\s*"([a-z][a-z0-9_]*)"',
    r'\bcode:\s*Some\("([a-z][a-z0-9_]*)"',
    r'\bparse_with\(\s*\w+,\s*"([a-z][a-z0-9_]*)"\)',
    r'\bmap_or\("([a-z][a-z0-9_]*)"',
    r'\bfield_for\([^;]*?Some\("([a-z][a-z0-9_]*)"\)\)',
    r'\bCODE_[A-Z_]+: &str = "([a-z][a-z0-9_]*)"',
    r'^\s*Self::Load\(_\) => "([a-z][a-z0-9_]*)"',
]


def _non_test_source(path: Path) -> str:
    """A Rust file without its `#[cfg(test)]` module at the end."""
    text = path.read_text(encoding="utf-8")
    cut = text.find("#[cfg(test)]\nmod tests")
    return text if cut < 0 else text[:cut]


def core_codes() -> Dict[str, Set[str]]:
    """Every code the core's non-test code can produce, with the files."""
    found: Dict[str, Set[str]] = {}
    for path in sorted(CORE.rglob("*.rs")):
        if path.name in {"docs_reference.rs", "stress.rs"}:
            continue
        text = _non_test_source(path)
        for pattern in CODE_SITES:
            for m in re.finditer(pattern, text, re.M):
                found.setdefault(m.group(1), set()).add(path.relative_to(ROOT).as_posix())
    return found


def step_enum() -> List[Tuple[int, str]]:
    """The core's `Step` variants in order, with `as_str()`'s names."""
    text = (CORE / "governor" / "types.rs").read_text(encoding="utf-8")
    body = re.search(r"pub enum Step \{(.*?)\n\}", text, re.S)
    assert body, "pub enum Step not found in core/src/governor/types.rs"
    variants = re.findall(r"^\s*([A-Z][A-Za-z]*),", body.group(1), re.M)
    names = dict(re.findall(r"Self::([A-Z][A-Za-z]*) => \"([a-z_]+)\"", text))
    return [(i + 1, names[v]) for i, v in enumerate(variants)]


def refusals_by_step() -> Dict[str, Set[str]]:
    """The codes the governor refuses with, by step name."""
    text = "".join(_non_test_source(p) for p in sorted((CORE / "governor").rglob("*.rs")))
    names = dict(re.findall(r"Self::([A-Z][A-Za-z]*) => \"([a-z_]+)\"", (CORE / "governor" / "types.rs").read_text()))
    out: Dict[str, Set[str]] = {}
    for pattern in [r'Refusal::new\(\s*"(\w+)",\s*Step::(\w+)', r'would_refuse\(\s*"(\w+)",\s*Step::(\w+)']:
        for code, step in re.findall(pattern, text):
            out.setdefault(names[step], set()).add(code)
    store = re.search(r'fn store_down\(.*?Refusal::new\("(\w+)"', text, re.S)
    assert store, "store_down() not found"
    for step in re.findall(r"store_down\(Step::(\w+)", text):
        out.setdefault(names[step], set()).add(store.group(1))
    return out


def tables(page: Path, first_header: str) -> List[List[str]]:
    """The rows (cells) of every table of `page` whose first header cell is `first_header`."""
    rows: List[List[str]] = []
    inside = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if not line.lstrip().startswith("|"):
            inside = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == first_header:
            inside = True
        elif inside and not cells[0].startswith("---"):
            rows.append(cells)
    return rows


def ticked(cell: str) -> List[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_governor_steps_match_the_step_enum() -> None:
    rows = tables(DOCS / "governor.md", "Step")
    documented = [(int(r[0]), ticked(r[1])[0]) for r in rows]
    assert documented == step_enum(), "docs/governor.md's steps differ from core/src/governor/types.rs's Step enum"


def test_governor_codes_match_the_refusals_of_each_step() -> None:
    rows = tables(DOCS / "governor.md", "Step")
    documented = {ticked(r[1])[0]: set(ticked(r[3])) for r in rows}
    actual = refusals_by_step()
    for _, step in step_enum():
        assert documented.get(step, set()) == actual.get(step, set()), (
            f"step `{step}`: docs/governor.md lists {sorted(documented.get(step, set()))}, "
            f"the governor refuses with {sorted(actual.get(step, set()))}"
        )


# The pages whose code tables must name only codes that exist (the reference
# pages); every other page's `| Code | … |` tables count as documentation too.
REFERENCE_PAGES = ["manifest.md", "governor.md"]


def documented_codes(pages: "List[str] | None" = None) -> Dict[str, str]:
    """Codes in the first column of `| Code | … |` tables (and governor.md's step table)."""
    codes: Dict[str, str] = {}
    names = pages if pages is not None else sorted(p.name for p in DOCS.glob("*.md"))
    for page in names:
        for row in tables(DOCS / page, "Code"):
            for code in ticked(row[0]):
                codes.setdefault(code, page)
        if page == "governor.md":
            for row in tables(DOCS / page, "Step"):
                for code in ticked(row[3]):
                    codes.setdefault(code, page)
    return codes


def test_every_core_code_is_documented() -> None:
    found = core_codes()
    assert len(found) > 40, f"the code scan found too little ({len(found)}): has the source's shape changed?"
    documented = documented_codes()
    missing = {c: sorted(files) for c, files in found.items() if c not in documented}
    assert not missing, (
        f"codes the core produces that no `| Code | … |` table of docs/*.md documents: {missing}. "
        "Load problems belong in docs/manifest.md, refusals and API errors in docs/governor.md, "
        "a feature's own codes in a `| Code | Meaning |` table of its page."
    )


def binding_sources() -> str:
    parts = []
    for folder in ["bindings-python/src", "bindings-python/python", "bindings-node/src", "bindings-swift/src"]:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in {".rs", ".py"}:
                parts.append(path.read_text(encoding="utf-8"))
    for name in ["index.js", "governor.js", "cel_lite.js"]:
        parts.append((ROOT / "bindings-node" / name).read_text(encoding="utf-8"))
    return "\n".join(parts)


def test_every_documented_code_exists() -> None:
    core = set(core_codes())
    bindings = binding_sources()
    stale = [
        f"{code} ({page})"
        for code, page in documented_codes(REFERENCE_PAGES).items()
        if code not in core and f'"{code}"' not in bindings and f"'{code}'" not in bindings
    ]
    assert not stale, f"documented codes that neither the core nor a binding produces: {stale}"


def test_the_code_scan_sees_known_sites() -> None:
    # The scan must see each kind of site, or the checks above prove little.
    found = core_codes()
    for code in ["unknown_field", "yaml_syntax", "cel_syntax", "trifecta", "invalid_principal", "load_error", "integer_out_of_range"]:
        assert code in found, code


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
