"""Every page that opts in (`<!-- test: run -->`) runs as written; the runner
itself is checked on small pages that must fail."""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import doc_blocks  # noqa: E402

ROOT = doc_blocks.ROOT
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
RUN = [p for p in PAGES if doc_blocks.opted_in(p.read_text(encoding="utf-8"))]

# Pages whose examples must stay runnable: removing the marker fails here.
MUST_RUN = {
    "docs/getting-started-python.md",
    "docs/getting-started-typescript.md",
    "docs/harness.md",
    "docs/manifest.md",
    "docs/governor.md",
    "docs/policy.md",
    "docs/cel-lite.md",
    "docs/cli.md",
    "docs/sanitizers.md",
    "docs/state.md",
    "README.md",
}


def test_pages_that_must_run_opt_in() -> None:
    opted = {p.relative_to(ROOT).as_posix() for p in RUN}
    assert MUST_RUN <= opted, f"these pages lost their `{doc_blocks.MARKER}` marker: {sorted(MUST_RUN - opted)}"


@pytest.mark.parametrize("page", RUN, ids=[p.relative_to(ROOT).as_posix() for p in RUN])
def test_page_runs_as_written(page: Path, tmp_path: Path) -> None:
    log, failures = doc_blocks.run_page(page, tmp_path)
    ran = [line for line in log if "exited" in line or "matches" in line]
    assert ran, f"{page.name} opts in but has no block that runs"
    assert not failures, "\n\n".join(str(f) for f in failures)


def _run(tmp_path: Path, text: str) -> "list[doc_blocks.Failure]":
    base = Path(tempfile.mkdtemp(dir=tmp_path))
    page = base / "page.md"
    page.write_text(doc_blocks.MARKER + "\n" + text)
    work = base / "work"
    work.mkdir()
    return doc_blocks.run_page(page, work)[1]


def test_runner_compares_output(tmp_path: Path) -> None:
    assert _run(tmp_path, "```sh\necho hi\n```\n```text\nhi\n```\n") == []
    failures = _run(tmp_path, "```sh\necho hi\n```\n```text\nho\n```\n")
    assert len(failures) == 1 and "differs" in failures[0].reason


def test_runner_ellipsis_and_console(tmp_path: Path) -> None:
    page = "```console\n$ printf 'a\\nb\\nc\\n'\na\n...\nc\n```\n"
    assert _run(tmp_path, page) == []
    assert len(_run(tmp_path, page.replace("\nc\n```", "\nd\n```"))) == 1


def test_runner_exit_status_and_files(tmp_path: Path) -> None:
    page = "```yaml file=sub/a.txt\nx: 1\n```\n```sh\ncat sub/a.txt\n```\n```text\nx: 1\n```\n"
    assert _run(tmp_path, page) == []
    assert "exited 3, expected 0" in _run(tmp_path, "```sh\nexit 3\n```\n")[0].reason
    assert _run(tmp_path, "```sh exit=3\nexit 3\n```\n") == []
    assert _run(tmp_path, "```python skip\nraise SystemExit(1)\n```\n") == []


def test_runner_python_and_node(tmp_path: Path) -> None:
    page = "```python\nimport harnessweaver as hw\nprint(hw.canonical_json({'b': 1, 'a': 2}))\n```\n```text\n{\"a\":2,\"b\":1}\n```\n"
    page += "```js\nimport { canonicalJson } from 'harnessweaver'\nconsole.log(canonicalJson({ b: 1, a: 2 }))\n```\n```text\n{\"a\":2,\"b\":1}\n```\n"
    assert _run(tmp_path, page) == []


def test_runner_refuses_files_outside(tmp_path: Path) -> None:
    failures = _run(tmp_path, "```text file=../escape.txt\nx\n```\n")
    assert len(failures) == 1 and "outside" in failures[0].reason


def test_index_links_every_page() -> None:
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([^)#]+\.md)", index))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    missing = sorted(pages - linked)
    assert not missing, f"docs/README.md does not link these pages: {missing}"
    broken = sorted(l for l in linked if not (ROOT / "docs" / l).resolve().exists())
    assert not broken, f"docs/README.md links pages that do not exist: {broken}"


def test_readme_links_every_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(docs/([^)#]+\.md)", readme))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    missing = sorted(pages - linked)
    assert not missing, f"README.md's list of docs does not link these pages: {missing}"
