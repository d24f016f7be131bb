"""The API reference is the docstrings: every public name has one.

- Python: every public class, function, method and property of the type stub
  `_native.pyi` and of the package's public modules (the adapters' too) (read with `ast`, so a stub
  and a module are checked alike); every name in `harnessweaver.__all__` is
  defined in one of them.
- TypeScript: every export of `bindings-node/index.d.ts` and every member of
  an exported class, interface or namespace has a TSDoc comment
  (`check_tsdoc.mjs`, using the TypeScript compiler).
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path
from typing import List

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "bindings-python" / "python" / "harnessweaver"
# The public modules: the stub of the native module, the package, its governor, its types and cel-lite.
MODULES = ["_native.pyi", "__init__.py", "_governor.py", "_types.py", "cel_lite.py"]
# The framework adapters' public modules (docs/adapters.md).
ADAPTERS = sorted(p.relative_to(PACKAGE).as_posix() for p in (PACKAGE / "adapters").glob("*.py")
                  if p.name == "__init__.py" or not p.name.startswith("_"))


def undocumented(path: Path) -> List[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    missing: List[str] = []
    if path.suffix == ".py" and not ast.get_docstring(tree):
        missing.append(f"{path.name}: module")

    def public(name: str) -> bool:
        return not name.startswith("_")

    def visit(nodes: List[ast.stmt], prefix: str) -> None:
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and public(node.name):
                name = f"{prefix}{node.name}"
                if not ast.get_docstring(node):
                    missing.append(f"{path.name}:{node.lineno}: {name}")
                if isinstance(node, ast.ClassDef):
                    visit(node.body, f"{name}.")

    visit(tree.body, "")
    return missing


@pytest.mark.parametrize("module", MODULES + ADAPTERS)
def test_every_public_python_name_has_a_docstring(module: str) -> None:
    missing = undocumented(PACKAGE / module)
    assert not missing, "public names without a docstring:\n  " + "\n  ".join(missing)


def test_every_exported_python_name_is_defined_in_a_checked_module() -> None:
    import harnessweaver as hw

    defined = set()
    for module in MODULES:
        tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
        defined |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        # Type aliases count with a docstring below them (`JSONValue = Union[...]` then `"""..."""`).
        for node, after in zip(tree.body, tree.body[1:]):
            documented = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)
            if isinstance(node, ast.Assign) and documented:
                defined |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    # Aliases and submodules: `Tool = ToolDescription`, `cel_lite`.
    aliases = {"Tool": "ToolDescription", "cel_lite": None}
    unchecked = [n for n in hw.__all__ if n not in defined and n not in aliases]
    assert not unchecked, f"harnessweaver.__all__ names defined outside the checked modules: {unchecked}"
    assert hw.Tool is hw.ToolDescription


def test_every_typescript_export_has_tsdoc() -> None:
    done = subprocess.run(
        ["node", str(ROOT / "tests" / "docs" / "check_tsdoc.mjs"), str(ROOT / "bindings-node" / "index.d.ts")],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0, "exports or members without TSDoc:\n" + done.stdout + done.stderr
