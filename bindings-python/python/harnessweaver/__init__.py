"""harnessweaver: a governor for the tool calls of LLM agents.

The Rust core decides everything; this package converts Python values to the
core's JSON values and back, and maps the core's errors to exceptions.

    import harnessweaver as hw
    harness = hw.load("harness.yaml")
    for tool in harness.tools:
        print(tool.name, tool.pin, tool.digest)
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union, cast

from . import _native, cel_lite
from ._governor import (
    ApprovalDenied,
    ApprovalRequired,
    CallResult,
    DigestMismatch,
    FlowBlocked,
    GovernedHarness,
    InvalidArguments,
    LimitExceeded,
    OutputRejected,
    PolicyDenied,
    Principal,
    Run,
    ToolBlocked,
    ToolFailed,
    ToolNotFound,
    _NotForCalls,
    inline,
)
from ._native import (
    HarnessweaverError,
    InvalidArgumentError,
    InvalidValueError,
    LoadError,
    Problem,
)

__all__ = [
    "ApprovalDenied",
    "ApprovalRequired",
    "CallResult",
    "DigestMismatch",
    "FlowBlocked",
    "InvalidArguments",
    "LimitExceeded",
    "OutputRejected",
    "PolicyDenied",
    "Principal",
    "Run",
    "ToolBlocked",
    "ToolFailed",
    "ToolNotFound",
    "inspect",
    "Harness",
    "HarnessweaverError",
    "InvalidArgumentError",
    "InvalidValueError",
    "LoadError",
    "Problem",
    "Tool",
    "ToolDescription",
    "canonical_json",
    "cel_lite",
    "definition_digest",
    "inline",
    "load",
    "sanitize",
    "serve_mcp",
]

JSONValue = Any


class ToolDescription:
    """One tool as loaded from its manifest: name, description, input_schema,
    digest, pin (``"pinned"``, ``"mismatched"`` or ``"unpinned"``) and every spec
    field with its default filled in, each readable as an attribute or by key."""

    __slots__ = ("_fields", "_source")

    def __init__(self, fields: Mapping[str, JSONValue]) -> None:
        object.__setattr__(self, "_fields", dict(fields))
        object.__setattr__(self, "_source", None)

    @classmethod
    def from_manifest(cls, manifest: Union[str, Mapping[str, JSONValue]], origin: Optional[str] = None) -> "ToolDescription":
        """Parses one ``kind: Tool`` manifest, given as a dict or as YAML/JSON text,
        and returns its description. Raises :class:`LoadError` listing every problem."""
        tool = cls(_native.describe_manifest(manifest, origin))
        # Kept to register the tool in code: load(path, tools=[(tool, function)]).
        source = manifest if isinstance(manifest, str) else dict(manifest)
        object.__setattr__(tool, "_source", (source, origin or "<code>"))
        return tool

    def _source_manifest(self) -> "tuple[Any, str]":
        if self._source is None:
            raise TypeError(f"tool `{self.name}` was not made by ToolDescription.from_manifest(); only those can be registered")
        return cast(Tuple[Any, str], self._source)

    def __getattr__(self, name: str) -> JSONValue:
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(f"tool has no field `{name}`") from None

    def __dir__(self) -> List[str]:
        return sorted(set(self._fields) | {"describe", "from_manifest", "keys"})

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("tool descriptions are read-only")

    def __getitem__(self, name: str) -> JSONValue:
        return self._fields[name]

    def __contains__(self, name: object) -> bool:
        return name in self._fields

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def keys(self) -> List[str]:
        """The field names, in the core's order (as ``describe()``)."""
        return list(self._fields)

    def describe(self) -> Dict[str, JSONValue]:
        """Every field as a plain dict (a copy)."""
        return dict(self._fields)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolDescription) and other._fields == self._fields

    def __hash__(self) -> int:
        return hash((self._fields.get("name"), self._fields.get("digest")))

    def __repr__(self) -> str:
        return f"ToolDescription(name={self._fields.get('name')!r}, pin={self._fields.get('pin')!r})"


Tool = ToolDescription


class Harness(GovernedHarness):
    """A loaded harness: its tools, in the order their manifests were found,
    and (from :func:`load`) the governor: ``call``, ``acall``, ``run``,
    ``approve``, ``deny``, ``approvals``, ``tool_specs``."""

    __slots__ = ("_native", "path", "tools", "_rt", "_handlers", "_workers")

    def __init__(self, native: "_native.Harness", path: str) -> None:
        self._native = native
        self.path = path
        self.tools: List[ToolDescription] = [ToolDescription(d) for d in native.describe_tools()]

    def tool(self, name: str) -> Optional[ToolDescription]:
        """The tool called ``name``, or None."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None

    def __repr__(self) -> str:
        return f"Harness(path={self.path!r}, tools={[t.name for t in self.tools]!r})"


def load(
    path: Union[str, "os.PathLike[str]"],
    handlers: Optional[Mapping[str, Callable[..., Any]]] = None,
    audit: Optional[Callable[[Dict[str, Any]], Any]] = None,
    on_approval: Optional[Callable[[Dict[str, Any], Dict[str, Any]], Optional[bool]]] = None,
    *,
    tools: Sequence[Any] = (),
) -> Harness:
    """Loads ``harness.yaml`` and every manifest it names, ready for calls.

    Each native tool's ``handler`` (``module:function``) is imported now, with the
    harness directory first on ``sys.path``, unless ``handlers`` maps the tool's
    name to a function. ``tools`` registers tools in code: ``(ToolDescription.from_manifest(...),
    function)`` pairs (``tools.require_manifest`` covers them). ``audit`` receives
    every audit event as a dict; ``on_approval(request, approval)`` may answer an
    approval inline (True approves, False denies, None leaves it pending).

    Raises :class:`LoadError` whose ``.problems`` lists every problem found (file,
    line, column, path, code), including handlers that cannot be imported and
    native tools without one (``handler_not_registered``). To read manifests
    without handlers, use :func:`inspect`."""
    return _load(path, handlers, audit, on_approval, tools)


def _load(
    path: Any,
    handlers: Any,
    audit: Any,
    on_approval: Any,
    tools: Sequence[Any],
    clock_ms: Optional[int] = None,
    sequential_ids: bool = False,
    sandbox_worker: Optional[str] = None,
) -> Harness:
    text = os.fspath(path)
    harness = Harness(_native.load(text), text)
    harness._init_governor(
        text, [t.describe() for t in harness.tools], handlers, tools, audit, on_approval, clock_ms, sequential_ids, sandbox_worker
    )
    return harness


def inspect(path: Union[str, "os.PathLike[str]"]) -> Harness:
    """Loads ``harness.yaml`` and its manifests only to read them (no handlers are
    imported; the harness cannot take calls). Raises :class:`LoadError`."""
    text = os.fspath(path)
    harness = Harness(_native.load(text), text)
    harness._rt = _NotForCalls()  # type: ignore[assignment]
    return harness


def serve_mcp(harness: Harness, *, http: Optional[str] = None, principal: Any = None, tenant: Optional[str] = None) -> None:
    """Serves the harness's tools over MCP, every call governed, until the
    client disconnects (stdio) or the process ends (HTTP).

    Native tools run through this process's handlers, as :meth:`Harness.call`
    runs them; http, code and mcp tools through the core's transports. Without
    ``http`` it speaks MCP on stdin/stdout as ``principal`` (a dict or an id)
    in ``tenant`` (default: ``spec.gateway.stdio`` of harness.yaml). With
    ``http="127.0.0.1:PORT"`` it serves streamable HTTP at ``/mcp``, each
    request authenticated against ``spec.gateway.http`` (bearer keys or JWTs;
    no token, 401), and prints the address on stderr. See docs/gateway.md.
    Raises ``InvalidArgumentError`` (``invalid_argument``, ``gateway_failed``).
    """
    _native.serve_mcp(harness._rt, harness._invoke, http, principal, tenant)


def definition_digest(name: str, description: str, input_schema: JSONValue) -> str:
    """``sha256:`` + hex SHA-256 of the canonical JSON of
    ``{"description", "input_schema", "name"}``. Raises :class:`InvalidValueError`
    for NaN, infinities, integers beyond ±2^53 and nesting deeper than 512."""
    return _native.definition_digest(name, description, input_schema)


def canonical_json(value: JSONValue) -> str:
    """The canonical JSON text of ``value`` (what every language hashes): sorted
    keys, no spaces, ASCII only, integral floats as integers. Raises
    :class:`InvalidValueError` for values with no portable JSON form."""
    return _native.canonical_json(value)


def sanitize(value: JSONValue, sanitizers: Sequence[str]) -> "tuple[JSONValue, Dict[str, int]]":
    """Runs the named sanitizers (``"pii_redact"``, ``"strip_instructions"``), in
    order, on every string value and object key of ``value``, as step 9 does.
    Returns the sanitized value and the number of replacements per kind (never
    what was replaced). Keys that sanitize to one name stay distinct
    (``[EMAIL]``, ``[EMAIL]#2``)."""
    return _native.sanitize(value, list(sanitizers))
