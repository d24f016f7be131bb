#!/usr/bin/env bash
# The layering rules of ARCHITECTURE.md, checked: the core builds with no
# async runtime, HTTP, MCP, Redis, SQLite or FFI crate, and a binding reaches
# the core only through its host API (`harnessweaver_core::host`).
set -euo pipefail
cd "$(dirname "$0")/../.."
status=0

forbidden='^(tokio|hyper|hyper-util|rmcp|reqwest|rustls|ureq|redis|rusqlite|libsqlite3-sys|pyo3|napi|uniffi|jsonwebtoken) '
if found=$(cargo tree -p harnessweaver-core -e normal --prefix none --no-dedupe | sort -u | grep -E "$forbidden"); then
    echo "harnessweaver-core must not depend on these (move the code to harnessweaver-runtime or a binding):"
    echo "$found" | sed 's/^/  /'
    status=1
fi

if found=$(grep -rnE 'harnessweaver_core::' bindings-python/src bindings-node/src bindings-swift/src | grep -vE 'harnessweaver_core::host(\b|::)'); then
    echo "a binding reaches the core only through harnessweaver_core::host (add what it needs there):"
    echo "$found" | sed 's/^/  /'
    status=1
fi

[ "$status" -eq 0 ] && echo "layers: the core has no world-facing dependency; bindings use the host API only"
exit "$status"
