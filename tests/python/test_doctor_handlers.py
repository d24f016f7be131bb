"""`harnessweaver doctor` imports the manifests' Python handlers in a child
Python (issue 18, item 5) and reports each failure as `load()` does:
`handler_import_failed` at the manifest's `spec.handler`, file:line:column."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest

import harnessweaver as hw

SCRIPT = Path(sys.executable).parent / "harnessweaver"
HARNESS = "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  mode: test\n  tools:\n    manifests: [tools/*.yaml]\n"


def manifest(name: str, handler: str) -> str:
    return (
        f'apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {{name: {name}}}\nspec:\n  description: d\n  handler: "{handler}"\n'
    )


def project(tmp_path: Path, handlers: Dict[str, str], modules: Dict[str, str]) -> Path:
    (tmp_path / "tools").mkdir()
    (tmp_path / "harness.yaml").write_text(HARNESS, encoding="utf-8")
    for name, handler in handlers.items():
        (tmp_path / "tools" / f"{name}.yaml").write_text(manifest(name, handler), encoding="utf-8")
    for module, text in modules.items():
        (tmp_path / f"{module}.py").write_text(text, encoding="utf-8")
    return tmp_path


def doctor(cwd: Path, *args: str, python: Optional[str] = None) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ)
    env.pop("HARNESSWEAVER_PYTHON", None)
    if python is not None:
        env["HARNESSWEAVER_PYTHON"] = python
    return subprocess.run(
        [str(SCRIPT), "doctor", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    return project(
        tmp_path,
        {
            "good": "good_mod:run",
            "missing": "missing_mod:run",
            "syntax": "broken_mod:run",
            "absent": "good_mod:nope",
            "system": "os:system",
        },
        {
            # Printing at import must not confuse the doctor's reading of the child's answer.
            "good_mod": "print('imported good_mod')\n\ndef run(x: int = 0) -> int:\n    return x\n",
            "broken_mod": "def run(:\n    pass\n",
        },
    )


def test_doctor_reports_each_handler_that_does_not_import_where_its_manifest_names_it(broken: Path) -> None:
    done = doctor(broken)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if "[handler_import_failed]" in line]
    by_file = {line.split(":", 2)[1].strip(): line for line in lines}
    assert sorted(by_file) == ["tools/absent.yaml", "tools/missing.yaml", "tools/syntax.yaml", "tools/system.yaml"], done.stdout
    # file:line:column of the `handler` value (line 6), the field, what failed.
    assert by_file["tools/missing.yaml"] == (
        "error: tools/missing.yaml:6:12: spec.handler: cannot import handler `missing_mod:run` of `missing`: "
        "ModuleNotFoundError: No module named 'missing_mod' [handler_import_failed]"
    ), done.stdout
    assert "SyntaxError" in by_file["tools/syntax.yaml"] and "AttributeError" in by_file["tools/absent.yaml"], done.stdout
    assert "tools/good.yaml" not in "".join(lines)
    assert "4 handlers failed to import" in done.stdout, done.stdout
    assert "imported good_mod" not in done.stdout


def test_doctor_reports_what_load_reports(broken: Path) -> None:
    report = json.loads(doctor(broken, "--json").stdout)
    assert report["ok"] is False
    from_doctor = sorted((p["code"], p["file"], p["line"], p["column"], p["message"]) for p in report["problems"])
    with pytest.raises(hw.LoadError) as raised:
        hw.load(broken / "harness.yaml")
    from_load = sorted((p.code, p.file, p.line, p.column, p.message) for p in raised.value.problems)
    assert from_doctor == from_load and len(from_load) == 4, (from_doctor, from_load)


def test_a_doctor_run_without_python_imports_nothing(broken: Path) -> None:
    # The npm CLI and the Rust binary name no Python: a Node project's `handler` is not a module.
    done = doctor(broken, python="")
    assert done.returncode == 0 and "handler_import_failed" not in done.stdout, done.stdout
    # A Python that cannot run the check is a warning, not a problem of the harness.
    gone = doctor(broken, python=str(broken / "no-such-python"))
    assert gone.returncode == 0, gone.stdout
    assert "warning: the Python handlers were not checked: cannot run" in gone.stdout, gone.stdout


def test_handlers_that_import_leave_doctor_clean(tmp_path: Path) -> None:
    good = project(tmp_path, {"ok": "pkg.mod:Api.run"}, {})
    (good / "pkg").mkdir()
    (good / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (good / "pkg" / "mod.py").write_text(
        "class Api:\n    @staticmethod\n    def run() -> None:\n        pass\n", encoding="utf-8"
    )
    done = doctor(good)
    assert done.returncode == 0, done.stdout
    problems: List[str] = [line for line in done.stdout.splitlines() if line.startswith("error")]
    assert problems == [], done.stdout
