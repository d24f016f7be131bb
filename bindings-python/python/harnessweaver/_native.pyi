# Type stub of the native module (bindings-python/src/lib.rs). Hand-written;
# tests/python/test_api.py fails when it names something the module lacks or misses an export,
# and tests/docs/test_api_docs.py when a public name here has no docstring (this is the API reference).
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union, final, overload

from typing_extensions import disjoint_base

from harnessweaver._types import JSONObject, JSONValue, PrincipalDict

# The module's exports (stubtest checks them against the module's own __all__).
__all__ = [
    "HarnessweaverError",
    "LoadError",
    "InvalidValueError",
    "InvalidArgumentError",
    "HandlerOverrun",
    "ToolBlocked",
    "ToolNotFound",
    "InvalidArguments",
    "DigestMismatch",
    "PolicyDenied",
    "LimitExceeded",
    "FlowBlocked",
    "ApprovalRequired",
    "ApprovalDenied",
    "ToolFailed",
    "OutputRejected",
    "MAX_DEPTH",
    "RISKS",
    "SIDE_EFFECTS",
    "Problem",
    "request",
    "definition_digest",
    "canonical_json",
    "sanitize",
    "cli_run",
    "Principal",
    "Ticket",
    "CallResult",
    "Host",
    "serve_mcp",
    "CelCompileError",
    "CelUnevaluable",
    "CEL_NAMES",
    "CEL_MAX_LENGTH",
    "CEL_MAX_DEPTH",
    "CelProgram",
    "cel_compile",
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

    @property
    def code(self) -> str:
        """The stable snake_case code (docs/manifest.md)."""
    @property
    def message(self) -> str:
        """What is wrong, safe to show a model."""
    @property
    def file(self) -> Optional[str]:
        """The file, relative to the harness directory; None when not known."""
    @property
    def line(self) -> Optional[int]:
        """The 1-based line; None when not known."""
    @property
    def column(self) -> Optional[int]:
        """The 1-based column; None when not known."""
    @property
    def path(self) -> str:
        """The field path, for example ``spec.rate_limit.per_principal`` (empty when none)."""
    def to_dict(self) -> Dict[str, Any]:
        """The problem as a plain dict (``code``, ``message``, ``file``, ``line``,
        ``column``, ``path``; unknown ones are None)."""

class HandlerOverrun(BaseException):
    """Raised inside a sync handler that overran its timeout (at its next
    bytecode; a handler blocked in C code sees it when that returns). The call
    ends ``timeout`` whether or not the handler lets it through."""

RISKS: List[str]
"""The values of a manifest's ``spec.risk``, in order."""
SIDE_EFFECTS: List[str]
"""The values of a manifest's ``spec.side_effect``, in order."""

class ToolBlocked(HarnessweaverError):
    """A call that did not run (refused, or waiting for approval); ``code`` and
    ``step`` are the core's, ``result`` is the whole :class:`CallResult`. The
    classes below are built from the core's table (one per step)."""

    result: "CallResult"
    step: Optional[str]
    def __init__(self, result: "CallResult") -> None: ...
    def to_model(self) -> str:
        """The text to hand back to the model."""

class ToolNotFound(ToolBlocked):
    """Step 1 (resolve): unknown tool, no manifest, disabled, tenant not enabled."""

class InvalidArguments(ToolBlocked):
    """Step 2 (validate): the arguments fail the schema or a payload constraint."""

class DigestMismatch(ToolBlocked):
    """Step 3 (pin): the tool changed since it was pinned."""

class PolicyDenied(ToolBlocked):
    """Step 4 (policy): a scope is missing or a policy rule denies."""

class LimitExceeded(ToolBlocked):
    """Step 5 (limits): a run budget is spent or a rate limit hit."""

    @property
    def retry_after_ms(self) -> Optional[int]:
        """For ``rate_limited``: when the call may be retried, in ms; None for ``budget_exhausted``."""

class FlowBlocked(ToolBlocked):
    """Step 6 (flow): the lethal-trifecta rule."""

class ApprovalRequired(ToolBlocked):
    """Step 7: the call waits for a human; ``approval`` is the pending approval."""

    @property
    def approval(self) -> JSONObject:
        """The pending approval ``{id, tool, args_digest, approver_role, reasons, expires_ms, …}``."""

class ApprovalDenied(ToolBlocked):
    """Step 7: the approval was denied, or is not pending."""

class ToolFailed(ToolBlocked):
    """Step 8 (invoke): the handler raised, timed out or returned no JSON."""

class OutputRejected(ToolBlocked):
    """Step 9 (output): the output fails the tool's output constraints."""

def request(method: str, args: Mapping[str, Any]) -> Any:
    """Runs the core's host method ``method`` that needs no harness with its named
    ``args``: ``tables``, ``describe_manifest`` (``manifest``, ``origin``: the
    tool's description; raises :class:`LoadError`), ``sanitize``, ``principal``,
    ``handler_refusal`` (``text``, ``origin``, ``modules_in_path``, ``base``,
    ``roots``: why the core refuses a resolved handler ref, or None)."""

def definition_digest(name: str, description: str, input_schema: Any, output_schema: Any = None) -> str:
    """``sha256:`` + hex SHA-256 of the canonical JSON of ``{"description",
    "input_schema", "name"}`` (with ``"output_schema"`` when one is given):
    what ``definition_digest`` pins. Raises
    :class:`InvalidValueError` for values with no portable JSON form."""

def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value`` (sorted keys, no spaces, ASCII only,
    integral floats as integers): byte-identical in every language. Raises
    :class:`InvalidValueError` for values with no portable JSON form."""

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

# --- the governor (bindings-python/src/host.rs) ---

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
    def attrs(self) -> JSONObject:
        """Anything else policy rules may read."""
    def to_dict(self) -> JSONObject:
        """The principal as a plain dict (what cel-lite sees as ``principal``)."""

@final
class Ticket:
    """A call that passed steps 1–7: the host runs its handler, then hands the
    outcome to one ``Host.finish_*`` method. A ticket finishes once."""

    tool: str
    route: str
    """``sync``, ``inline``, ``async`` (a host handler) or ``transport`` (the core runs it)."""
    @property
    def remaining(self) -> float:
        """Seconds left before the call's deadline."""
    def kwargs(self) -> Dict[str, Any]:
        """The handler's keyword arguments (with ``idempotency_key``, ``progress`` if it takes them)."""

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
    def output(self) -> JSONValue:
        """The cleaned output (allowed calls): sanitized, cut to ``max_bytes``; None otherwise."""
    @property
    def output_report(self) -> Optional[JSONObject]:
        """What the output policy did (allowed calls): ``{truncated, redactions, label}``, and ``content``
        (``{parts, dropped}``) when an MCP tool answered content parts."""
    @property
    def approval(self) -> Optional[JSONObject]:
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
    def would_refuse(self) -> List[JSONObject]:
        """What policy rules in shadow mode would have refused (the call went on):
        ``{code, step, layer, rule}`` each."""
    def to_model(self) -> str:
        """The text to hand back to the model: the output's compact JSON (or its
        text), or ``[tool call refused: CODE] message``."""
    def to_dict(self) -> JSONObject:
        """The whole result as a plain dict (the core's JSON form)."""
    def to_json(self) -> str:
        """The core's JSON text of the result (what the fixtures compare across languages)."""

@disjoint_base
class Host:
    """A loaded harness (native side): :class:`harnessweaver.Harness` extends it."""

    def __new__(
        cls,
        path: str,
        handlers: Mapping[str, Tuple[Callable[..., Any], str, bool, bool]],
        tools: Sequence[Tuple[Any, Optional[str]]],
        audit: Optional[Callable[[Dict[str, Any]], Any]],
        on_approval: Optional[Callable[[Dict[str, Any], Dict[str, Any]], Any]],
        resolve: Optional[Callable[[str, List[str], Any], Tuple[Callable[..., Any], Optional[str], List[str], str, bool, bool]]],
        roots: Sequence[str],
        runner: Callable[[Callable[..., Any], Dict[str, Any], float], Tuple[str, Any]],
        clock_ms: Optional[int] = None,
        sequential_ids: bool = False,
        sandbox_worker: Optional[str] = None,
        inspect: bool = False,
        observe: Optional[Callable[[Dict[str, Any]], Any]] = None,
    ) -> "Host": ...
    def request(self, method: str, args: Mapping[str, Any]) -> Any:
        """Runs the core's host method ``method`` with its named ``args``; the methods
        below that only pass their arguments on are made from the core's table of them
        (``host::bind_method`` binds their arguments: an unknown, repeated or extra one raises
        :class:`InvalidArgumentError` ``invalid_argument``, as does an unknown keyword of
        ``call``, ``begin`` or ``explain``). An ``id`` or ``run`` is an id, or a mapping or
        object holding one (a :class:`Run`, a pending result, an :class:`ApprovalRequired`)."""
    def describe_tools(self) -> List[Dict[str, Any]]:
        """Every tool's description (every manifest field with its default, the digest and pin), in load order."""
    def call(
        self,
        tool: str,
        args: Optional[Mapping[str, Any]] = None,
        *,
        principal: Union[Principal, PrincipalDict],
        tenant: Optional[str] = None,
        task: Optional[str] = None,
        run: Any = None,
        approval: Any = None,
        raise_on_refusal: bool = True,
    ) -> CallResult:
        """Calls ``tool`` through the nine steps and returns the :class:`CallResult`. A
        refused or pending call raises a :class:`ToolBlocked` subclass unless
        ``raise_on_refusal=False``. A sync handler runs on the calling thread under the
        tool's timeout (see :class:`HandlerOverrun`); an async one in its own event loop
        on a daemon thread. ``principal`` is a :class:`Principal` or a mapping; ``run`` a
        ``Run`` or run id; ``approval`` the id of an approval granted for this call."""
    def begin(
        self,
        tool: str,
        args: Optional[Mapping[str, Any]] = None,
        *,
        principal: Union[Principal, PrincipalDict],
        tenant: Optional[str] = None,
        task: Optional[str] = None,
        run: Any = None,
        approval: Any = None,
    ) -> Union[Ticket, CallResult]:
        """Steps 1–7: a :class:`Ticket` to run, or the result of a refused or pending call."""
    def handler(self, ticket: Ticket) -> Any:
        """The function of a ticket's tool (None for a transport's)."""
    def finish(self, ticket: Ticket, how: str, value: Any = None) -> CallResult:
        """Steps 8 and 9 for a handler's outcome: ``returned`` (``value``; after the deadline:
        ``timeout``), ``failed`` (``value``: the exception class name) or ``timeout`` (abandoned)."""
    def finish_transport(self, ticket: Ticket) -> CallResult:
        """Steps 8 and 9 through the core's transports (http, code, mcp), without the GIL."""
    @staticmethod
    def deliver(result: CallResult, raise_on_refusal: bool = True) -> CallResult:
        """Raises the :class:`ToolBlocked` subclass of a refused or pending ``result`` when asked."""
    def approve(
        self,
        id: Any,
        *,
        approver: Union[Principal, PrincipalDict],
        args: Optional[Mapping[str, Any]] = None,
        raise_on_refusal: bool = True,
    ) -> CallResult:
        """Grants approval ``id`` (``approver`` must hold the approver role) and runs the
        approved call (with the approver's edited ``args``, checked from step 1 again).
        Raises :class:`InvalidArgumentError` (``unknown_approval``, ``approval_not_pending``,
        ``approval_expired``, ``approver_not_allowed``)."""
    def approve_and_begin(
        self, id: Any, *, approver: Union[Principal, PrincipalDict], args: Optional[Mapping[str, Any]] = None
    ) -> Union[Ticket, CallResult]:
        """Grants approval ``id`` and begins the approved call (steps 1–7)."""
    def grant(self, id: Any, *, approver: Union[Principal, PrincipalDict]) -> JSONObject:
        """Grants approval ``id`` without running the call; returns the approval."""
    def deny(self, id: Any, reason: str = "", *, by: Union[Principal, PrincipalDict]) -> JSONObject:
        """Denies approval ``id``; returns it."""
    def approvals(self) -> List[JSONObject]:
        """Approvals waiting for a human, or granted and not yet used."""
    def explain(
        self,
        tool: str,
        args: Optional[Mapping[str, Any]] = None,
        *,
        principal: Union[Principal, PrincipalDict],
        tenant: Optional[str] = None,
        task: Optional[str] = None,
        run: Any = None,
    ) -> JSONObject:
        """Each step's verdict for this call without running it or changing state; ``"text"`` is a readable form."""
    def tool_specs(
        self, format: str = "openai", principal: Optional[Union[Principal, PrincipalDict]] = None, tenant: Optional[str] = None
    ) -> List[JSONObject]:
        """The tools as model APIs take them (``openai``, ``anthropic``, ``mcp``), leaving out tools
        ``principal`` in ``tenant`` can never call. Raises ``invalid_format``."""
    def new_run(self, source: str = "api", principal: Optional[Union[Principal, PrincipalDict]] = None) -> str:
        """A new run id, admitted from ``source`` for ``principal`` (``run_not_admitted`` otherwise)."""
    def labels(self, run_id: str) -> Dict[str, bool]:
        """The labels of run ``run_id``: ``{"private": bool, "untrusted": bool}``."""
    def advance_ms(self, ms: int) -> None:
        """Moves a test clock forward (``no_test_clock`` otherwise)."""
    def effects(self, state: Optional[str] = None) -> List[JSONObject]:
        """The effect journal's entries, oldest first (only those in ``state``: ``unknown``,
        ``succeeded`` or ``failed``, when given)."""
    def resolve_effect(self, call_id: str, applied: bool, *, by: Union[Principal, PrincipalDict, str]) -> JSONObject:
        """Records what an ``unknown`` effect did (``applied``: whether the write happened); returns
        the entry. Raises ``unknown_effect`` or ``effect_not_resolvable``."""
    def compensate(
        self,
        call_id: str,
        *,
        principal: Union[Principal, PrincipalDict],
        tenant: Optional[str] = None,
        task: Optional[str] = None,
        run: Any = None,
    ) -> JSONObject:
        """Runs the compensation tool of succeeded call ``call_id`` through the nine steps with
        ``principal``'s own authority; returns its result's JSON form (refused calls included).
        Raises ``unknown_effect`` or ``effect_not_resolvable``."""
    def accept_candidate(self, id: Any, candidate: str, *, approver: Union[Principal, PrincipalDict]) -> JSONObject:
        """Grants approval ``id`` of a built-in tool and writes its permission ``candidate`` to the
        permission file: ``{"state", "candidate"}``."""
    def approve_in_band(self, id: Any, *, by: Union[Principal, PrincipalDict], tenant: Optional[str] = None) -> JSONObject:
        """The caller ``by`` confirms its own waiting call of an ``approval.by: caller`` tool
        (issue 22): ``{"state", "decided_by"}``. Raises ``approval_not_in_band`` for a ``role``
        tool or an approval something besides ``approval.when`` asked for, ``approver_not_allowed``
        for another principal's call."""
    def decline_in_band(self, id: Any, *, by: Union[Principal, PrincipalDict], tenant: Optional[str] = None) -> JSONObject:
        """The caller ``by`` declines its own waiting call in band (the call is then refused
        ``approval_denied``): ``{"state", "decided_by"}``; the same rule as ``approve_in_band``."""
    def relay_decision(self, tool: str, kind: str, *, run: Any, include_context: Optional[str] = None) -> JSONObject:
        """Whether ``tool``, running in ``run``, may send a ``kind`` (``sampling`` or
        ``elicitation``) request to the caller's client: ``{"decision": "allowed"}`` or
        ``{"decision": "denied", "code": "relay_denied", "step", "message", "reasons"}``."""
    def progress_decision(self, tool: str, reports: Any, *, secrets: Optional[Sequence[str]] = None) -> JSONObject:
        """Issue 22: which of a running call's progress ``reports`` (``{"progress", "total"?,
        "message"?}``, or ``"end"`` where the call ends) reach its caller, given the ``secrets``
        handed out for the call: ``{"events": [{"relayed": {...}} | {"dropped": code} | {"ended": True}]}``."""

def serve_mcp(
    host: Host,
    http: Optional[str] = None,
    principal: Optional[Union[Principal, PrincipalDict]] = None,
    tenant: Optional[str] = None,
) -> None:
    """Serves the harness over MCP (blocking): stdio, or streamable HTTP at ``http``.
    Raises :class:`InvalidArgumentError` (``invalid_argument``, ``gateway_failed``)."""
