"""The packages a user installs, installed as a user would, outside the tree:
the wheel into a fresh virtual environment and the npm tarballs into a fresh
npm project, each in a temporary directory where nothing of the repository is
on PATH and HARNESSWEAVER_SANDBOX_WORKER is unset. The getting-started pages
then run there block by block, their install steps included, so a file missing
from a package (the worker, a .js file, the types) fails here first.

`make test-dist` packs the artifacts (tools/dist/package.py) into $HW_DIST
and runs this file; `make dist` makes the release ones the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "docs"))
import doc_blocks  # noqa: E402

DIST = Path(os.environ["HW_DIST"]) if os.environ.get("HW_DIST") else None
pytestmark = pytest.mark.skipif(DIST is None, reason="HW_DIST names no packed artifacts: run `make test-dist`")


def oldest_python() -> Optional[str]:
    """The oldest Python the wheel declares (requires-python, its abi3 floor),
    where the machine has one (pyenv's 3.9 here); else None, the default python3."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    for candidate in [*sorted(map(str, pyenv.glob("versions/3.9*/bin/python3.9"))), shutil.which("python3.9")]:
        if candidate:
            done = subprocess.run(
                [candidate, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True, check=False
            )
            if done.returncode == 0:
                return done.stdout.strip()
    return None


OLDEST_PYTHON = oldest_python()


def run(cmd: List[str], cwd: Path, env: Dict[str, str], ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600, check=False
    )
    if ok:
        assert done.returncode == 0, f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout}"
    return done


def reader_env(workdir: Path) -> Dict[str, str]:
    assert DIST is not None
    return doc_blocks.prepare_installed(workdir, DIST, OLDEST_PYTHON)


def test_artifacts_are_packed() -> None:
    assert DIST is not None
    names = sorted(p.name for p in DIST.iterdir())
    assert [n for n in names if n.endswith(".whl") and "-cp39-abi3-" in n], names
    version = json.loads((ROOT / "bindings-node" / "package.json").read_text(encoding="utf-8"))["version"]
    assert f"harnessweaver-{version}.tgz" in names and f"harnessweaver-linux-x64-gnu-{version}.tgz" in names, names


def test_python_page_runs_against_the_installed_wheel(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    env = reader_env(work)
    log, failures = doc_blocks.run_page(ROOT / "docs" / "getting-started-python.md", work, installed=DIST, python3=OLDEST_PYTHON)
    assert not failures, "\n\n".join(str(f) for f in failures)
    assert not [line for line in log if "skipped" in line], log  # the install block ran too
    python = work / ".venv" / "bin" / "python"
    # What ran was the installed package, not the repository's.
    where = run(
        [str(python), "-c", "import harnessweaver, sys; print(harnessweaver.__file__); print(sys.version_info[:2])"], work, env
    )
    assert str(work / ".venv") in where.stdout and str(ROOT) not in where.stdout, where.stdout
    if OLDEST_PYTHON:
        assert "(3, 9)" in where.stdout, where.stdout
    # The metadata a registry shows.
    meta = run(
        [
            str(python),
            "-c",
            "import importlib.metadata as m; d = m.metadata('harnessweaver'); print(d['License-Expression']); print(d.get_all('Project-URL')); print(len(d.get_payload() or ''))",
        ],
        work,
        env,
    )
    lines = meta.stdout.splitlines()
    assert lines[0] == "Apache-2.0" and "Repository" in lines[1] and int(lines[2]) > 1000, meta.stdout
    worker = next((work / ".venv" / "lib").glob("python3*/site-packages/harnessweaver/bin/harnessweaver-sandbox"))
    # The confinement launcher ships beside the worker: a process tool that
    # always takes bubblewrap's namespaces (and so the launcher) runs, and
    # without the launcher it is refused, not run unconfined.
    confined = work / "confined"
    (confined / "tools").mkdir(parents=True)
    (confined / "harness.yaml").write_text(
        'apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: ["tools/*.yaml"]\n'
    )
    (confined / "h.sh").write_text('read -r request\nprintf \'{"ok": true, "output": 1}\'\n')
    (confined / "tools" / "t.yaml").write_text(
        "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata:\n  name: t\nspec:\n  transport: process\n"
        "  command: /bin/sh\n  args: [h.sh]\n  sandbox:\n    required: true\n    profile: namespaces\n"
    )
    call = (
        "import harnessweaver as hw\ntry:\n    r = hw.load('harness.yaml').call('t', {}, principal={'id': 'u'})\n"
        "    print(r.decision, r.output)\nexcept hw.ToolBlocked as e:\n    print('refused', e.code)\n"
    )
    assert run([str(python), "-c", call], confined, env).stdout.split() == ["allowed", "1"]
    (worker.parent / "harnessweaver-confine").unlink()
    assert run([str(python), "-c", call], confined, env).stdout.split() == ["refused", "sandbox_unavailable"]
    # Without its worker, doctor fails on the code tool (not a warning).
    worker.unlink()
    done = run(["harnessweaver", "doctor"], work, env, ok=False)
    assert done.returncode == 1 and "sandbox worker `harnessweaver-sandbox` was not found" in done.stdout, done.stdout


def test_typescript_page_runs_against_the_installed_tarballs(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    env = reader_env(work)
    log, failures = doc_blocks.run_page(
        ROOT / "docs" / "getting-started-typescript.md", work, installed=DIST, python3=OLDEST_PYTHON
    )
    assert not failures, "\n\n".join(str(f) for f in failures)
    assert not [line for line in log if "skipped" in line], log
    # Installed copies (npm unpacks tarballs; a link into the repository would be a symlink).
    for name in ("harnessweaver", "harnessweaver-linux-x64-gnu"):
        assert not (work / "node_modules" / name).is_symlink(), name
    for binary in ("harnessweaver-sandbox", "harnessweaver-confine"):
        assert (work / "node_modules" / "harnessweaver-linux-x64-gnu" / "bin" / binary).is_file(), binary
    # The CLI the main package links.
    done = run(["npx", "--no-install", "harnessweaver", "doctor"], work, env)
    assert "2 tools loaded" in done.stdout, done.stdout
    # `add tool` with the TypeScript the page installed (npm's latest: 7, the native compiler).
    typescript = json.loads((work / "node_modules" / "typescript" / "package.json").read_text(encoding="utf-8"))
    (work / "quote.ts").write_text(
        "/** Quote a price. */\nexport function quote(args: {\n  /** The SKU. */\n  sku: string\n  qty?: number\n}) {\n"
        "  return { sku: args.sku, qty: args.qty ?? 1 }\n}\n",
        encoding="utf-8",
    )
    added = run(["npx", "--no-install", "harnessweaver", "add", "tool", "./quote.ts#quote"], work, env)
    assert "tool `quote` pinned at sha256:" in added.stdout, (typescript["version"], added.stdout)
    manifest = json.loads((work / "tools" / "quote.json").read_text(encoding="utf-8"))
    assert manifest["spec"]["input_schema"]["properties"]["sku"] == {"type": "string", "description": "The SKU."}, manifest


def test_npm_without_the_platform_package_says_so(tmp_path: Path) -> None:
    """What a platform with no binary sees: npm installs no platform package
    (as it does for a platform it has none for), and loading says why."""
    assert DIST is not None
    work = tmp_path / "project"
    work.mkdir()
    env = doc_blocks.prepare_installed(work, DIST)
    run(["npm", "init", "-y"], work, env)
    main = next(p for p in DIST.glob("harnessweaver-*.tgz") if "-linux-" not in p.name)
    run(["npm", "install", "--omit=optional", "--no-audit", "--no-fund", str(main)], work, env)
    assert not (work / "node_modules" / "harnessweaver-linux-x64-gnu").exists()
    done = run(["node", "-e", "require('harnessweaver')"], work, env, ok=False)
    assert done.returncode != 0
    assert "harnessweaver: no native binary is installed for this platform" in done.stdout, done.stdout
    assert "ERR_HARNESSWEAVER_NO_BINARY" in done.stdout, done.stdout
