"""Benchmark (not a test): `harnessweaver.definition_digest` from Python for a
small (~200 B) and a large (~50 KB) tool definition, beside what a Python user
would write instead: ``json.dumps(sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`` + ``hashlib.sha256`` (checked against ours with
``ensure_ascii=True``, which gives the canonical bytes for these inputs). Both sides hash the same
definitions (target/bench-inputs/digest.json, from bench/inputs.py).

    make bench-digest
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any, Dict

import harnessweaver as hw

from benchlib import Results, load_inputs, median_ns, value


def peer_digest(name: str, description: str, schema: Any, ensure_ascii: bool = False) -> str:
    text = json.dumps({"description": description, "input_schema": schema, "name": name},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=ensure_ascii)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def main() -> int:
    inputs: Dict[str, Any] = load_inputs("digest")
    res = Results("digest-python")
    for size in ("small", "large"):
        d = inputs[size]
        name, desc, schema = d["name"], d["description"], d["input_schema"]
        ours = hw.definition_digest(name, desc, schema)
        # The canonical JSON escapes non-ASCII (\u00e9): for these inputs it is sorted-key json.dumps with
        # ensure_ascii=True, byte for byte. The timed peer keeps ensure_ascii=False (UTF-8 text, what a
        # user would write): the same work, other bytes where the text is not ASCII (the large definition).
        assert ours == peer_digest(name, desc, schema, ensure_ascii=True), size
        o = median_ns(lambda: hw.definition_digest(name, desc, schema))
        p = median_ns(lambda: peer_digest(name, desc, schema))
        res.row("digest", f"{size} definition ({d['bytes']:,} B), Python", value("hw.definition_digest", o, "ns"),
                value("json.dumps(sort_keys, ensure_ascii=False) + hashlib.sha256", p, "ns"))
    res.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
