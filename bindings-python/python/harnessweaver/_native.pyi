# Type stub of the native module (bindings-python/src/lib.rs). Hand-written;
# tests/python/test_api.py fails when it names something the module lacks or misses an export,
# and tests/docs/test_api_docs.py when a public name here has no docstring (this is the API reference).
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union, final, overload

# The module's exports (stubtest checks them against the module's own __all__).
__all__ = [
    "HarnessweaverError",
    "LoadError",
    "InvalidValueError",
    "InvalidArgumentError",
    "MAX_DEPTH",
    "Problem",
    "Harness",
    "load",
    "definition_digest",
    "canonical_json",
    "describe_manifest",
    "cli_run",
    "make_problem",
    "Principal",
    "Ticket",
    "CallResult",
    "Runtime",
    "serve_mcp",
    "CelCompileError",
    "CelUnevaluable",
    "CEL_NAMES",
    "CEL_MAX_LENGTH",
    "CEL_MAX_DEPTH",
    "CelProgram",
    "cel_compile",
    "sanitize",
]

MAX_DEPTH: int
"""The deepest nesting a value may have (512); deeper values raise ``nesting_too_deep``."""

class HarnessweaverError(Exception):
    """Base class of every harnessweaver error. ``code`` is the stable snake_case
    code (the same in Rust, Python, Node and Swift); ``problems`` lists the load
    problems (empty for other errors)."""

    code: str
    problems: List["Problem"]

class LoadError(HarnessweaverError):
    """A harness or manifest failed to load. ``problems`` lists every problem found
    (never only the first); ``code`` is the single problem's code, or ``load_error``
    for several. The codes are in docs/manifest.md."""

class InvalidValueError(HarnessweaverError):
    """A value with no portable JSON form: ``non_finite_number`` (NaN, infinities),
    ``integer_out_of_range`` (beyond ±2^53), ``nesting_too_deep`` (deeper than
    512, or a cycle), ``invalid_string`` (a lone surrogate), ``non_string_key``,
    ``unsupported_type`` (bytes, sets, functions, …)."""

class InvalidArgumentError(HarnessweaverError):
    """A bad argument from the caller: ``invalid_principal``, ``unknown_approval``,
    ``approval_not_pending``, ``approval_expired``, ``approver_not_allowed``,
    ``invalid_format``, ``unknown_sanitizer``, ``invalid_vars``, ``store_unavailable``
    (the codes are in docs/governor.md)."""

@final
class Problem:
    """One load problem: its stable ``code``, a ``message`` safe to show a model,
    and where it is (``file`` relative to the harness directory, 1-based ``line``
    and ``column``, the field ``path``). ``str(problem)`` is
    ``file:line:column: path: message [code]``."""

    code: str
    message: str
    file: Optional[str]
    line: Optional[int]
    column: Optional[int]
    path: str
    def to_dict(self) -> Dict[str, Any]:
        """The problem as a plain dict (``code``, ``message``, ``file``, ``line``,
        ``column``, ``path``; unknown ones are None)."""

@final
class Harness:
    """A loaded harness (native side); :class:`harnessweaver.Harness` wraps it."""

    def describe_tools(self) -> List[Dict[str, Any]]:
        """Every tool's description (the core's ``Tool::describe()``: every manifest
        field with its default, the digest and the pin state), in load order."""

def load(path: Union[str, "os.PathLike[str]"]) -> Harness:
    """Loads ``harness.yaml`` (or the ``harness.yaml`` in a directory) and every
    manifest it names, without handlers. Raises :class:`LoadError` listing every
    problem. Use :func:`harnessweaver.load` for a harness that takes calls."""

def definition_digest(name: str, description: str, input_schema: Any) -> str:
    """``sha256:`` + hex SHA-256 of the canonical JSON of ``{"description",
    "input_schema", "name"}``: what ``definition_digest`` pins. Raises
    :class:`InvalidValueError` for values with no portable JSON form."""

def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value`` (sorted keys, no spaces, ASCII only,
    integral floats as integers): byte-identical in every language. Raises
    :class:`InvalidValueError` for values with no portable JSON form."""

def describe_manifest(manifest: Any, origin: Optional[str] = None) -> Dict[str, Any]:
    """Parses one ``kind: Tool`` manifest (a dict, or YAML/JSON text) and returns
    its description; ``origin`` names it in problems. Raises :class:`LoadError`."""

def cli_run(args: Sequence[str]) -> int:
    """Runs the ``harnessweaver`` command line with ``args`` (without the program
    name), printing to stdout and stderr; returns the exit code (0 clean, 1
    problems found, 2 usage error)."""

def sanitize(value: Any, sanitizers: Sequence[str]) -> Tuple[Any, Dict[str, int]]:
    """Runs the named sanitizers (``pii_redact``, ``strip_instructions``) in order on
    every string and key of ``value``, as step 9 does; returns the sanitized value
    and the replacements per kind. Raises :class:`InvalidArgumentError`
    (``unknown_sanitizer``) for another name."""

# cel-lite (bindings-python/src/cel_lite.rs); harnessweaver.cel_lite re-exports these.
CEL_NAMES: List[str]
"""The variable names an expression may use: principal, tenant, task, tool, args, labels."""
CEL_MAX_LENGTH: int
"""The longest expression, in bytes (4096)."""
CEL_MAX_DEPTH: int
"""The deepest nesting of an expression (64)."""

class CelCompileError(HarnessweaverError):
    """An expression that does not compile: ``code`` (``cel_syntax``,
    ``cel_unsupported``, ``cel_unknown_name``, ``cel_unknown_function``,
    ``cel_wrong_arguments``, ``cel_bad_regex``, ``cel_too_large``, ``cel_too_deep``),
    ``message`` (without the place), 1-based ``line`` and ``column``; ``str()`` is
    the rendered message with a caret under the spot."""

    message: str
    line: int
    column: int

class CelUnevaluable(HarnessweaverError):
    """A runtime error (missing key, wrong type, division by zero, cost limit)
    stopped an evaluation; ``code`` is ``unevaluable`` and ``reason`` says which
    part failed and why."""

    reason: str

@final
class CelProgram:
    """A compiled cel-lite expression; immutable and shared between threads.
    Made by :func:`cel_compile`."""

    @property
    def source(self) -> str:
        """The expression's text."""
    @property
    def names(self) -> List[str]:
        """The variable names the expression uses, in order of first use."""
    @overload
    def evaluate(self, vars: Optional[Mapping[str, Any]] = None) -> Any:
        """The expression's value for ``vars`` (a mapping of some of the six names
        to JSON-like values; a name left out is unbound). Raises
        :class:`CelUnevaluable` when a runtime error stops it,
        :class:`InvalidArgumentError` (``invalid_vars``) for another key, and
        :class:`InvalidValueError` for values with no JSON form."""
    @overload
    def evaluate(self, vars: Optional[Mapping[str, Any]] = None, *, default: Any) -> Any:
        """As above, but returns ``default`` instead of raising :class:`CelUnevaluable`."""
    def approval_required(self, vars: Optional[Mapping[str, Any]] = None) -> Tuple[bool, Optional[str]]:
        """The approval rule: ``(True, reason)`` when the expression is unevaluable
        or not a bool (fail closed), ``(value, None)`` otherwise. Never raises for
        an unevaluable expression."""

def cel_compile(text: str) -> CelProgram:
    """Compiles a cel-lite expression (at most 4096 bytes, nesting at most 64).
    Raises :class:`CelCompileError` with the code, line and column."""

# --- the governor (bindings-python/src/governor.rs) ---

@final
class Principal:
    """Who makes a call: a non-empty ``id``, ``roles`` (for approvals and policy
    rules), ``scopes`` (a tool's ``scopes`` must all be held) and free ``attrs``
    (``principal.attrs.team`` in policy rules). Anywhere a principal is taken, a
    mapping with these keys works too."""

    def __new__(
        cls,
        id: str,
        roles: Optional[Sequence[str]] = None,
        scopes: Optional[Sequence[str]] = None,
        attrs: Optional[Dict[str, Any]] = None,
    ) -> Principal:
        """Raises :class:`InvalidArgumentError` (``invalid_principal``) for an empty id."""
    @staticmethod
    def from_mapping(mapping: Any) -> "Principal":
        """Reads ``{id, roles, scopes, attrs}``; any other key, or a value of the
        wrong type, raises :class:`InvalidArgumentError` (``invalid_principal``)
        naming the field."""
    @property
    def id(self) -> str:
        """A stable identifier (written to audit events)."""
    @property
    def roles(self) -> List[str]:
        """Roles, for ``approver_role`` and policy rules."""
    @property
    def scopes(self) -> List[str]:
        """Permissions; a tool's ``scopes`` must all be held (step 4)."""
    @property
    def attrs(self) -> Dict[str, Any]:
        """Anything else policy rules may read."""
    def to_dict(self) -> Dict[str, Any]:
        """The principal as a plain dict (what cel-lite sees as ``principal``)."""

@final
class Ticket:
    """A call that passed steps 1–7: the host invokes ``tool`` with ``args``, then
    hands the outcome to one ``Runtime.finish_*`` method. A ticket finishes once."""

    tool: str
    idempotency_key: str
    timeout_ms: int
    @property
    def args(self) -> Dict[str, Any]:
        """The validated arguments (a fresh dict each time)."""

@final
class CallResult:
    """The value every call gives, allowed, refused or pending, with the same
    field names in every language (docs/governor.md)."""

    @property
    def decision(self) -> str:
        """``allowed`` (the tool ran), ``refused`` or ``pending`` (waits for approval)."""
    @property
    def allowed(self) -> bool:
        """Whether the tool ran."""
    @property
    def code(self) -> Optional[str]:
        """The stable code of a refusal or pending approval; None when allowed."""
    @property
    def step(self) -> Optional[str]:
        """The step that refused or asked for approval (``resolve`` … ``output``); None when allowed."""
    @property
    def message(self) -> str:
        """What happened, safe to show a model (never args, secrets or handler internals)."""
    @property
    def tool(self) -> str:
        """The tool called."""
    @property
    def call_id(self) -> str:
        """The call's id (the same as its audit event's)."""
    @property
    def run_id(self) -> str:
        """The run the call belongs to."""
    @property
    def output(self) -> Any:
        """The cleaned output (allowed calls): sanitized, cut to ``max_bytes``; None otherwise."""
    @property
    def output_report(self) -> Optional[Dict[str, Any]]:
        """What the output policy did (allowed calls): ``{truncated, redactions, label}``."""
    @property
    def approval(self) -> Optional[Dict[str, Any]]:
        """The pending approval (pending calls): ``{id, tool, args_digest,
        approver_role, reasons, expires_ms, …}``."""
    @property
    def retry_after_ms(self) -> Optional[int]:
        """For ``rate_limited``: when the call may be retried, in ms."""
    @property
    def reasons(self) -> List[str]:
        """Which rules, fields or expressions decided."""
    @property
    def labels(self) -> Dict[str, bool]:
        """The run's labels after the call: ``{"private": bool, "untrusted": bool}``."""
    @property
    def would_refuse(self) -> List[Dict[str, Any]]:
        """What policy rules in shadow mode would have refused (the call went on):
        ``{code, step, layer, rule}`` each."""
    def to_model(self) -> str:
        """The text to hand back to the model: the output's compact JSON (or its
        text), or ``[tool call refused: CODE] message``."""
    def to_dict(self) -> Dict[str, Any]:
        """The whole result as a plain dict (the core's JSON form)."""
    def to_json(self) -> str:
        """The core's JSON text of the result (what the fixtures compare across languages)."""

@final
class Runtime:
    """A loaded harness with its governor (native side). :class:`harnessweaver.Harness`
    wraps it and invokes the handlers between :meth:`begin` and ``finish_*``;
    use that rather than this."""

    def __new__(
        cls,
        path: Union[str, "os.PathLike[str]"],
        handlers: Sequence[str],
        tools: Sequence[Any] = ...,
        audit: Optional[Any] = None,
        on_approval: Optional[Any] = None,
        clock_ms: Optional[int] = None,
        sequential_ids: bool = False,
        sandbox_worker: Optional[Union[str, "os.PathLike[str]"]] = None,
    ) -> Runtime:
        """Loads a harness for calls. ``handlers`` names the native tools whose
        handlers the host holds; ``tools`` are manifests of tools registered in
        code; ``audit`` receives each audit event as a dict; ``on_approval(request,
        approval)`` may answer approvals inline; ``clock_ms`` and ``sequential_ids``
        are for tests. Raises :class:`LoadError` (including ``handler_not_registered``
        and ``no_manifest``)."""
    def begin(
        self,
        tool: str,
        args: Any,
        principal: Any,
        tenant: Optional[str] = None,
        task: Optional[str] = None,
        run_id: Optional[str] = None,
        approval_id: Optional[str] = None,
    ) -> Union[CallResult, Ticket]:
        """Steps 1–7: a refused or pending :class:`CallResult`, or a :class:`Ticket`
        to invoke. Raises :class:`InvalidArgumentError` (``invalid_principal``) and
        :class:`InvalidValueError` for bad input."""
    def finish_returned(self, ticket: Ticket, value: Any) -> CallResult:
        """Step 9 for a handler that returned ``value`` (a value with no JSON form
        ends ``handler_error``); writes the audit event."""
    def finish_failed(self, ticket: Ticket, kind: str) -> CallResult:
        """Ends a call whose handler raised ``kind`` (the exception's class name): ``handler_error``."""
    def finish_transport(self, ticket: Ticket) -> CallResult:
        """Steps 8 and 9 for a tool whose transport the core owns (http, code, mcp):
        blocking, bounded by the tool's timeout, without the GIL."""
    def finish_timed_out(self, ticket: Ticket) -> CallResult:
        """Ends a call whose handler overran its timeout and was abandoned: ``timeout``."""
    def new_run(self) -> str:
        """A new run id."""
    def labels(self, run_id: str) -> Dict[str, bool]:
        """The labels of run ``run_id``: ``{"private": bool, "untrusted": bool}``."""
    def approve_and_begin(self, id: str, approver: Any, args: Any = None) -> Union[CallResult, Ticket]:
        """Grants approval ``id`` as ``approver`` (with the args the approver edited,
        if any) and begins the approved call from step 1. Raises
        :class:`InvalidArgumentError` (``unknown_approval``, ``approval_not_pending``,
        ``approval_expired``, ``approver_not_allowed``)."""
    def grant(self, id: str, approver: Any) -> Dict[str, Any]:
        """Grants approval ``id`` without running the call; returns the approval.
        Raises as :meth:`approve_and_begin`."""
    def explain(
        self,
        tool: str,
        args: Any,
        principal: Any,
        tenant: Optional[str] = None,
        task: Optional[str] = None,
        run_id: Optional[str] = None,
    ) -> Tuple[Dict[str, Any], str]:
        """Each step's verdict for a call, without running anything or changing any
        state; returns the explanation and its readable text."""
    def deny(self, id: str, by: Any, reason: str) -> Dict[str, Any]:
        """Denies approval ``id``; returns the approval. Raises
        :class:`InvalidArgumentError` (``unknown_approval``, ``approval_not_pending``)."""
    def approvals(self) -> List[Dict[str, Any]]:
        """Approvals pending, or granted and not yet used, as dicts."""
    def tool_specs(self, format: str, principal: Any = None, tenant: Optional[str] = None) -> List[Dict[str, Any]]:
        """The tools as a model API takes them (``openai``, ``anthropic``, ``mcp``),
        leaving out tools ``principal`` in ``tenant`` can never call. Raises
        :class:`InvalidArgumentError` (``invalid_format``) for another format."""
    def advance_ms(self, ms: int) -> None:
        """Moves a test clock forward (only for runtimes loaded with ``clock_ms``)."""

def make_problem(
    code: str, message: str, file: Optional[str] = None, path: str = ..., line: Optional[int] = None, column: Optional[int] = None
) -> Problem:
    """Builds a load problem (for problems found on the Python side, such as a
    handler that cannot be imported)."""

def serve_mcp(
    runtime: Runtime,
    invoke: Callable[[Ticket], CallResult],
    http: Optional[str] = None,
    principal: Any = None,
    tenant: Optional[str] = None,
) -> None:
    """Serves ``runtime``'s harness over MCP (blocking): stdio, or streamable
    HTTP at ``http``; ``invoke(ticket)`` runs a native tool's handler and
    finishes the ticket. Raises :class:`InvalidArgumentError`
    (``invalid_argument``, ``gateway_failed``)."""
