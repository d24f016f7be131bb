#!/usr/bin/env python3
"""A process tool (`harnessweaver-process-v1`) that reports progress on stderr
while it runs (issue 22; tests/gateway/test_gateway_progress.py): the lines the
core relays, and lines it must drop or ignore."""

import json
import sys


def report(**fields):
    sys.stderr.write("harnessweaver-progress " + json.dumps(fields) + "\n")
    sys.stderr.flush()


request = json.load(sys.stdin)
pages = request["args"]["pages"]
sys.stderr.write("an ordinary diagnostic line, never relayed\n")
report(progress=1, total=pages, message="fetched page 1 for ann@example.com")
report(progress=1, total=pages, message="page 1 again: not increasing, dropped")
sys.stderr.write("harnessweaver-progress {not json\n")
report(progress="two", total=pages, message="not a number: dropped")
sys.stderr.write("harnessweaver-progress " + json.dumps({"progress": 2, "message": "x" * 5000}) + "\n")
for page in range(2, pages + 1):
    report(progress=page, total=pages, message=f"fetched page {page}")
sys.stderr.flush()
json.dump({"ok": True, "output": {"pages": pages}}, sys.stdout)
