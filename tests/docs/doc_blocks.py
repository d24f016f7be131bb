"""Runs the code blocks of a documentation page, in order, in a fresh directory.

A page opts in with a line ``<!-- test: run -->``. Its fenced blocks are then
handled by their info string (the first word is the language; the rest are
attributes ``key=value`` or bare words):

- any block with ``file=PATH``: its text is written to ``PATH`` (relative to
  the page's directory; parents are made). Nothing runs. A later block with
  the same ``file=`` overwrites it, as a reader editing the file would.
- ``python``: run with the venv's Python as a script.
- ``js``, ``javascript``, ``mjs``: run with ``node`` as an ES module.
- ``sh``, ``bash``, ``shell``, ``console``: run with ``bash -e -o pipefail``;
  a ``console`` block's lines that start with ``$ `` are the commands, the
  other lines are the expected output (compared as a ``text`` block is).
- ``text`` (or ``output``): the expected output (stdout and stderr together)
  of the block run just before it; compared line by line after trailing
  spaces are stripped. A line ``...`` (indented or not) matches any number
  of lines.
- any block with ``skip``: not run, not compared (say why in the prose).
- any block with ``install``: the reader's install step. Run only against
  installed packages (``run_page(..., installed=DIST)``, what ``make
  test-dist`` does, with ``$HW_DIST`` naming the packed artifacts); skipped
  otherwise, where the repository's own builds stand in for it.
- ``exit=N`` on a run block: the exit status it must end with (default 0).
- other languages (``yaml``, ``json``, ``rust``, ``ts`` without ``file=``…):
  shown only.

The directory holds a copy of ``examples/``; ``harnessweaver``, ``python``
and ``pip`` are the venv's, ``node`` resolves ``import ... from
"harnessweaver"`` to ``bindings-node`` and ``npx tsc`` to its TypeScript
devDependency (``npx harnessweaver`` to the npm package's command line), and
``$HW_REPO`` is the repository root. Against installed packages the directory
starts empty and nothing of the repository is on the way: ``.venv/bin`` and
``node_modules/.bin`` of the directory come first on ``PATH`` (what the
install blocks make), the repository's venv and ``HARNESSWEAVER_SANDBOX_WORKER``
are gone, and npm may reach its registry.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- test: run -->"
RUN_LANGS = {"python", "js", "javascript", "mjs", "sh", "bash", "shell", "console"}
OUTPUT_LANGS = {"text", "output"}
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


@dataclasses.dataclass
class Block:
    """One fenced code block of a page."""

    lang: str
    attrs: Dict[str, str]
    text: str
    line: int  # 1-based line of the opening fence

    @property
    def where(self) -> str:
        return f"line {self.line} ({self.lang or 'no language'})"


def opted_in(text: str) -> bool:
    """Whether a page asks for its blocks to be run."""
    return any(line.strip() == MARKER for line in text.splitlines())


def parse_blocks(text: str) -> List[Block]:
    """Every fenced block, in order, with its language and attributes."""
    blocks: List[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent = m.group("fence"), len(m.group("indent"))
        words = m.group("info").split()
        lang = words[0].lower() if words else ""
        attrs: Dict[str, str] = {}
        for word in words[1:]:
            key, _, value = word.partition("=")
            attrs[key] = value
        body: List[str] = []
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence[0] * len(fence)) and lines[j].strip().strip(fence[0]) == ""):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        if j >= len(lines):
            raise ValueError(f"line {i + 1}: code block is never closed")
        blocks.append(Block(lang, attrs, "\n".join(body) + "\n" if body else "", i + 1))
        i = j + 1
    return blocks


def matches(expected: str, actual: str) -> bool:
    """Line-by-line comparison; a line `...` matches any number of lines."""
    want = _lines(expected)
    got = _lines(actual)

    def go(a: int, b: int) -> bool:
        if a == len(want):
            return b == len(got)
        if want[a].strip() == "...":
            return any(go(a + 1, k) for k in range(b, len(got) + 1))
        return b < len(got) and want[a] == got[b] and go(a + 1, b + 1)

    return go(0, 0)


def _lines(text: str) -> List[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def prepare_installed(workdir: Path, dist: Path, python3: Optional[str] = None) -> Dict[str, str]:
    """The environment of a reader's empty project directory on a machine
    where the packages in `dist` are all there is of harnessweaver.
    `python3`: the interpreter `python3` names there (a test of the oldest
    supported one), through a folder next to `workdir`."""
    repo_bins = {str(ROOT / ".venv" / "bin"), str(ROOT / "bindings-node" / "node_modules" / ".bin")}
    if os.environ.get("VIRTUAL_ENV"):
        repo_bins.add(str(Path(os.environ["VIRTUAL_ENV"]) / "bin"))
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p not in repo_bins]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HW_TEST", "npm_", "NPM_"))}
    for name in ("VIRTUAL_ENV", "PYTHONPATH", "HARNESSWEAVER_SANDBOX_WORKER", "CARGO_BUILD_TARGET"):
        env.pop(name, None)
    if python3:
        shims = workdir.parent / f"{workdir.name}.python3"
        shims.mkdir(exist_ok=True)
        if not (shims / "python3").exists():
            (shims / "python3").symlink_to(python3)
        path.insert(0, str(shims))
    env["PATH"] = os.pathsep.join([str(workdir / ".venv" / "bin"), str(workdir / "node_modules" / ".bin"), *path])
    env["HW_DIST"] = str(dist)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["NO_COLOR"] = "1"
    env["npm_config_update_notifier"] = "false"
    env["npm_config_fund"] = "false"
    env["npm_config_audit"] = "false"
    return env


def prepare(workdir: Path) -> Dict[str, str]:
    """Fills `workdir` as a reader's project directory would be, and returns
    the environment the blocks run with."""
    shutil.copytree(ROOT / "examples", workdir / "examples", ignore=shutil.ignore_patterns("__pycache__", "node_modules", ".venv*", "dist"))
    modules = workdir / "node_modules"
    (modules / ".bin").mkdir(parents=True)
    (modules / "harnessweaver").symlink_to(ROOT / "bindings-node")
    # What `npm install harnessweaver` links: `npx harnessweaver` is the npm package's command line.
    (modules / ".bin" / "harnessweaver").symlink_to(ROOT / "bindings-node" / "bin" / "harnessweaver.js")
    typescript = ROOT / "bindings-node" / "node_modules" / "typescript"
    if typescript.exists():
        (modules / "typescript").symlink_to(typescript)
        (modules / ".bin" / "tsc").symlink_to(typescript / "bin" / "tsc")
        # Types of node's own modules for `import ... from "node:fs"`, when installed.
        node_types = ROOT / "bindings-node" / "node_modules" / "@types"
        if node_types.exists():
            (modules / "@types").symlink_to(node_types)
    venv = Path(os.environ.get("VIRTUAL_ENV") or ROOT / ".venv")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HW_TEST"))}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), str(modules / ".bin"), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(venv)
    env["HW_REPO"] = str(ROOT)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["NO_COLOR"] = "1"
    env["npm_config_offline"] = "true"  # npx never reaches the network
    env.pop("PYTHONPATH", None)
    return env


@dataclasses.dataclass
class Failure:
    block: Block
    reason: str

    def __str__(self) -> str:
        return f"{self.block.where}: {self.reason}"


def _command(block: Block, workdir: Path, index: int) -> Tuple[List[str], Optional[str]]:
    """The command that runs a block, and what to give it on stdin."""
    if block.lang == "python":
        script = workdir / f".block{index}.py"
        script.write_text(block.text)
        return ["python", script.name], None
    if block.lang in {"js", "javascript", "mjs"}:
        script = workdir / f".block{index}.mjs"
        script.write_text(block.text)
        return ["node", script.name], None
    if block.lang == "console":
        commands = [line[2:] for line in block.text.splitlines() if line.startswith("$ ")]
        return ["bash", "-e", "-o", "pipefail", "-c", "\n".join(commands)], None
    return ["bash", "-e", "-o", "pipefail", "-s"], block.text


def console_output(block: Block) -> str:
    return "\n".join(line for line in block.text.splitlines() if not line.startswith("$ "))


def run_page(
    page: Path, workdir: Path, timeout: float = 300, installed: Optional[Path] = None, python3: Optional[str] = None
) -> Tuple[List[str], List[Failure]]:
    """Runs every block of `page` in `workdir`. Returns a log of what ran and
    the failures (empty when the page works as written). `installed`: the
    folder of packed artifacts the page's ``install`` blocks install from,
    instead of the repository's builds (see `prepare_installed` for `python3`)."""
    text = page.read_text(encoding="utf-8")
    env = prepare(workdir) if installed is None else prepare_installed(workdir, installed, python3)
    log: List[str] = []
    failures: List[Failure] = []
    last: Optional[Tuple[Block, str]] = None  # the last run block and its output
    for index, block in enumerate(parse_blocks(text)):
        if "skip" in block.attrs or ("install" in block.attrs and installed is None):
            log.append(f"{block.where}: skipped")
            continue
        if "file" in block.attrs:
            target = (workdir / block.attrs["file"]).resolve()
            if workdir.resolve() not in target.parents:
                failures.append(Failure(block, f"file={block.attrs['file']} is outside the page's directory"))
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text)
            log.append(f"{block.where}: wrote {block.attrs['file']}")
            continue
        if block.lang in OUTPUT_LANGS:
            if last is None:
                failures.append(Failure(block, "expected output with no block run before it"))
            elif not matches(block.text, last[1]):
                failures.append(Failure(block, f"output of the block at {last[0].where} differs:\n--- expected\n{block.text}--- actual\n{last[1]}"))
            else:
                log.append(f"{block.where}: output matches")
            last = None  # one output block per run block
            continue
        if block.lang not in RUN_LANGS:
            continue
        command, stdin = _command(block, workdir, index)
        try:
            done = subprocess.run(
                command, cwd=workdir, env=env, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True, timeout=timeout, check=False,
            )
        except subprocess.TimeoutExpired:
            failures.append(Failure(block, f"did not finish in {timeout:.0f} s"))
            break
        want_exit = int(block.attrs.get("exit") or 0)
        log.append(f"{block.where}: {shlex.join(command[:2])} exited {done.returncode}")
        if done.returncode != want_exit:
            failures.append(Failure(block, f"exited {done.returncode}, expected {want_exit}; output:\n{done.stdout}"))
            break  # later blocks build on this one
        last = (block, done.stdout)
        if block.lang == "console" and console_output(block).strip():
            if not matches(console_output(block), done.stdout):
                failures.append(Failure(block, f"output differs:\n--- expected\n{console_output(block)}\n--- actual\n{done.stdout}"))
            last = None
    return log, failures


def main(argv: List[str]) -> int:
    import tempfile

    if not argv:
        print("usage: doc_blocks.py PAGE.md...", file=sys.stderr)
        return 2
    status = 0
    for name in argv:
        with tempfile.TemporaryDirectory(prefix="hw-doc-") as tmp:
            log, failures = run_page(Path(name), Path(tmp))
        for line in log:
            print(f"{name}: {line}")
        for failure in failures:
            print(f"{name}: FAILED {failure}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
