"""Reference canonical JSON and definition digest, from DESIGN.md alone:
Python's json.dumps(sort_keys, compact, ensure_ascii) after integral floats
within ±2^53 become ints; NaN, infinities, integers beyond ±2^53 and nesting
deeper than 512 are refused (ValueError)."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

LIMIT = 2**53
MAX_DEPTH = 512


def normalise(v: Any, depth: int = 0) -> Any:
    if isinstance(v, (list, dict)):
        if depth >= MAX_DEPTH:
            raise ValueError("nesting_too_deep")
        if isinstance(v, list):
            return [normalise(x, depth + 1) for x in v]
        return {k: normalise(x, depth + 1) for k, x in v.items()}
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        if abs(v) > LIMIT:
            raise ValueError("integer_out_of_range")
        return v
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            raise ValueError("non_finite_number")
        if v == int(v) and abs(v) <= LIMIT:
            return int(v)
        return v
    raise TypeError(type(v).__name__)


def canonical_json(v: Any) -> str:
    return json.dumps(normalise(v), sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def definition_digest(name: str, description: str, input_schema: Any) -> str:
    text = canonical_json({"name": name, "description": description, "input_schema": input_schema})
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()
