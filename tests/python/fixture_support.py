"""Shared helpers of the Python fixture runners: where the fixtures are, and
decoding their tagged JSON (see fixtures/README.md) into Python values."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, List

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


def cases(area: str) -> List[Path]:
    """Every case file of an area, sorted (`test_every_area_has_cases` fails on none)."""
    folder = FIXTURES / area
    return sorted(p for p in folder.glob("*.json")) if folder.is_dir() else []


def load_case_dirs() -> List[Path]:
    """Every case directory of fixtures/load/, sorted."""
    folder = FIXTURES / "load"
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def untag(v: Any) -> Any:
    """`{"$float": text}` → float, `{"$int": text}` → int, `{"$nest": {depth, leaf}}` → nested value."""
    if isinstance(v, dict):
        if len(v) == 1 and "$float" in v:
            return float(v["$float"])
        if len(v) == 1 and "$int" in v:
            return int(v["$int"])
        if len(v) == 1 and "$nest" in v:
            spec = v["$nest"]
            out = untag(spec["leaf"])
            for i in range(spec["depth"]):
                out = {"k": out} if i % 2 == 0 else [out]
            return out
        return {k: untag(x) for k, x in v.items()}
    if isinstance(v, list):
        return [untag(x) for x in v]
    return v


def read(path: Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def rel(file: Any, case_dir: Path) -> Any:
    """A problem's file, relative to the case directory (as `expected.json` writes it).
    The core already names files relative to the harness directory; an absolute
    path (a file it could not place) is made relative here."""
    if not isinstance(file, str):
        return file
    p = Path(file)
    if not p.is_absolute():
        return p.as_posix()
    try:
        return Path(os.path.relpath(p, case_dir)).as_posix()
    except ValueError:
        return file
