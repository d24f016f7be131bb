"""harnessweaver: a governor for the tool calls of LLM agents.

The Rust core decides everything; this package converts Python values to the
core's and back, and runs handlers. ``harness = hw.load("harness.yaml")``, then
``harness.call(tool, args, principal=...)``; ``hw.inspect`` only reads.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native, cel_lite
from ._governor import Harness, Run, inline
from ._native import (
    ApprovalDenied,
    ApprovalRequired,
    CallResult,
    DigestMismatch,
    FlowBlocked,
    HandlerOverrun,
    HarnessweaverError,
    InvalidArgumentError,
    InvalidArguments,
    InvalidValueError,
    LimitExceeded,
    LoadError,
    OutputRejected,
    PolicyDenied,
    Principal,
    Problem,
    ToolBlocked,
    ToolFailed,
    ToolNotFound,
    canonical_json,
    definition_digest,
    sanitize,
)
from ._types import JSONObject, JSONValue, PrincipalDict

__all__ = [
    "ApprovalDenied", "ApprovalRequired", "CallResult", "DigestMismatch", "FlowBlocked", "HandlerOverrun", "Harness",
    "HarnessweaverError", "InvalidArgumentError", "InvalidArguments", "InvalidValueError", "JSONObject", "JSONValue",
    "LimitExceeded", "LoadError", "OutputRejected", "PolicyDenied", "Principal", "PrincipalDict", "Problem", "Run", "Tool", "ToolBlocked", "ToolDescription", "ToolFailed",
    "ToolNotFound", "canonical_json", "cel_lite", "definition_digest", "inline", "inspect", "load", "sanitize", "serve_mcp",
]  # fmt: skip


class ToolDescription(Mapping[str, Any]):
    """One tool as loaded from its manifest: every field of ``describe()``
    (name, description, input_schema, digest, pin, …), readable as an attribute or by key
    (a read-only mapping: ``keys()`` in the core's order, ``in``, ``==``)."""

    __slots__ = ("_fields", "_source")

    def __init__(self, fields: Mapping[str, Any], source: Optional[Tuple[Any, Optional[str]]] = None) -> None:
        object.__setattr__(self, "_fields", dict(fields))
        object.__setattr__(self, "_source", source)

    @classmethod
    def from_manifest(cls, manifest: Union[str, Mapping[str, Any]], origin: Optional[str] = None) -> "ToolDescription":
        """Parses one ``kind: Tool`` manifest (a dict, or YAML/JSON text). Raises :class:`LoadError`."""
        source = manifest if isinstance(manifest, str) else dict(manifest)
        return cls(_native.request("describe_manifest", {"manifest": manifest, "origin": origin}), (source, origin))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(f"tool has no field `{name}`") from None

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("tool descriptions are read-only")

    def __dir__(self) -> List[str]:
        return sorted(set(self._fields) | {"describe", "from_manifest", "keys"})

    def __getitem__(self, name: str) -> Any:
        return self._fields[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def describe(self) -> Dict[str, Any]:
        """Every field as a plain dict (a copy)."""
        return dict(self._fields)

    def __hash__(self) -> int:
        return hash((self._fields.get("name"), self._fields.get("digest")))

    def __repr__(self) -> str:
        return f"ToolDescription(name={self._fields.get('name')!r}, pin={self._fields.get('pin')!r})"


Tool = ToolDescription


def load(
    path: Union[str, "os.PathLike[str]"],
    handlers: Optional[Mapping[str, Callable[..., Any]]] = None,
    audit: Optional[Callable[[Dict[str, Any]], Any]] = None,
    on_approval: Optional[Callable[[Dict[str, Any], Dict[str, Any]], Union[bool, Dict[str, str], None]]] = None,
    *,
    tools: Sequence[Any] = (),
    **test: Any,
) -> Harness:
    """Loads ``harness.yaml`` and every manifest it names, ready for calls; each
    native tool's ``handler`` is imported unless ``handlers`` gives a function.
    Raises :class:`LoadError` listing every problem."""
    given = dict(handlers or {})
    code: List[Tuple[Any, Optional[str]]] = []
    for item in tools:
        description, fn = item if isinstance(item, tuple) and len(item) == 2 else (item, None)
        if not isinstance(description, ToolDescription) or description._source is None:
            raise TypeError("`tools` takes ToolDescription.from_manifest() objects or (ToolDescription, function) pairs")
        code.append(description._source)
        if fn is not None:
            given[description.name] = fn
    return Harness(os.fspath(path), given, code, audit, on_approval, **test)


def inspect(path: Union[str, "os.PathLike[str]"]) -> Harness:
    """Loads ``harness.yaml`` and its manifests only to read them (no handlers; no calls)."""
    return Harness(os.fspath(path), {}, (), None, None, inspect_only=True)


def serve_mcp(
    harness: Harness,
    *,
    http: Optional[str] = None,
    principal: Optional[Union[Principal, PrincipalDict]] = None,
    tenant: Optional[str] = None,
) -> None:
    """Serves the harness's tools over MCP, every call governed (docs/gateway.md)."""
    _native.serve_mcp(harness, http, principal, tenant)
