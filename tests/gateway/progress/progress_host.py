#!/usr/bin/env python3
"""A host serving a harness with `hw.serve_mcp` over stdio whose native tool
`index_docs` reports progress through the `progress` callable it asks for
(issue 22; tests/gateway/test_gateway_progress.py).

    python progress_host.py HARNESS_DIR
"""

import sys

import harnessweaver as hw


def index_docs(docs: int, progress) -> dict:
    for i in range(1, docs + 1):
        progress(i, docs, f"indexed doc {i} of bob@example.com")
    progress(docs, docs, "the same progress again: dropped")
    return {"indexed": docs}


if __name__ == "__main__":
    hw.serve_mcp(hw.load(sys.argv[1], handlers={"index_docs": index_docs}))
