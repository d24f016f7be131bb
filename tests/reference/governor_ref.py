"""A reference of the governor's step order and decision for a simplified
harness, from DESIGN.md alone (and docs/harness.md for field meanings):
resolve, validate (the `jsonschema` package), pin, policy (scopes, then rules:
deny is authoritative, a deny whose `when` cannot be evaluated denies, an
allow whose `when` cannot be evaluated does not match, `default: deny`
refuses what no allow matches), limits (the run budget: checked at step 5,
spent only by calls that run), flow (the trifecta: private after a `pii:*` tool runs,
untrusted after an output labelled `untrusted`; a tool with egress in a run
that is both is refused), approval (`approval.when` true or unevaluable, or
the risk in `approval_by_risk`), invoke (the handler echoes; always succeeds
here), output (the label).

Not modelled: rate limits, layers, shadow mode, approve rules, payload and
output constraints, transports other than native, approvals being granted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Dict, List, Optional, Tuple

import jsonschema

import canonical
import cel_lite_ref


@dataclass
class RefTool:
    name: str
    description: str
    input_schema: Dict[str, Any]
    risk: str = "low"
    enabled: bool = True
    tenants: List[str] = field(default_factory=list)
    scopes: List[str] = field(default_factory=list)
    data_access: List[str] = field(default_factory=list)
    egress: List[str] = field(default_factory=list)
    label: str = "untrusted"  # docs/harness.md: output.label defaults to untrusted
    approval_when: Optional[str] = None
    pinned_digest: Optional[str] = None


@dataclass
class RefRule:
    name: str
    effect: str  # allow | deny
    tools: List[str]
    when: str = "true"


@dataclass
class RefHarness:
    tools: Dict[str, RefTool]
    rules: List[RefRule]
    default: str = "allow"
    approval_by_risk: List[str] = field(default_factory=list)
    trifecta: str = "block"
    max_tool_calls: Optional[int] = None


@dataclass
class RefRun:
    private: bool = False
    untrusted: bool = False
    calls: int = 0


def cel_vars(tool: RefTool, args: Any, principal: Dict[str, Any], tenant: Optional[str], run: RefRun) -> Dict[str, Any]:
    # `labels` is the map {private, untrusted} (docs/harness.md is silent; the core's shape, see
    # governor::labels_to_value). Beware: `'private' in labels` is then always true.
    labels = {"private": run.private, "untrusted": run.untrusted}
    return {"principal": principal, "tool": {"name": tool.name, "risk": tool.risk}, "args": args, "labels": labels,
            "tenant": tenant, "task": None}


def decide(h: RefHarness, run: RefRun, name: str, args: Any, principal: Dict[str, Any],
           tenant: Optional[str]) -> Tuple[str, Optional[str], Optional[str]]:
    """(decision, code, step) of one call; updates `run` as the call would."""
    # 1. resolve
    tool = h.tools.get(name)
    if tool is None:
        return ("refused", "unknown_tool", "resolve")
    if not tool.enabled:
        return ("refused", "tool_disabled", "resolve")
    if tool.tenants and tenant not in tool.tenants:
        return ("refused", "tenant_not_enabled", "resolve")
    # 2. validate
    if not jsonschema.Draft202012Validator(tool.input_schema).is_valid(args):
        return ("refused", "invalid_args", "validate")
    # 3. pin
    if tool.pinned_digest is not None:
        if tool.pinned_digest != canonical.definition_digest(tool.name, tool.description, tool.input_schema):
            return ("refused", "digest_mismatch", "pin")
    # 4. policy
    if not set(tool.scopes) <= set(principal.get("scopes", [])):
        return ("refused", "scope_missing", "policy")
    variables = cel_vars(tool, args, principal, tenant, run)
    allowed = False
    for rule in h.rules:
        if not any(fnmatchcase(name, g) for g in rule.tools):
            continue
        kind, value = cel_lite_ref.evaluate(rule.when, variables)
        if rule.effect == "deny" and not (kind == "value" and value is False):
            return ("refused", "policy_denied", "policy")
        if rule.effect == "allow" and kind == "value" and value is True:
            allowed = True
    if h.default == "deny" and not allowed:
        return ("refused", "policy_denied", "policy")
    # 5. limits
    if h.max_tool_calls is not None:
        if run.calls >= h.max_tool_calls:
            return ("refused", "budget_exhausted", "limits")
    # 6. flow
    if tool.egress and run.private and run.untrusted and h.trifecta != "off":
        if h.trifecta == "block":
            return ("refused", "trifecta", "flow")
        # "sent to approval": the approval step (7) decides it, with its reason.
        return ("pending", "approval_required", "approval")
    # 7. approval
    if tool.risk in h.approval_by_risk:
        return ("pending", "approval_required", "approval")
    if tool.approval_when is not None:
        kind, value = cel_lite_ref.evaluate(tool.approval_when, variables)
        if not (kind == "value" and value is False):
            return ("pending", "approval_required", "approval")
    # 8. invoke (echo), 9. output. The budget counts calls that run: a call
    # refused or sent to approval after step 5 spends nothing (the core's
    # choice, which DESIGN.md leaves open; found by this differential test).
    run.calls += 1
    if any(d.startswith("pii:") for d in tool.data_access):
        run.private = True
    if tool.label == "untrusted":
        run.untrusted = True
    return ("allowed", None, None)
