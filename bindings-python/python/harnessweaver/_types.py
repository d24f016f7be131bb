"""The types of values the API takes and gives (issue 18, item 7), for type
checkers: a principal written as a dict, and JSON values (what outputs,
results, approvals and explanations hold). ``harnessweaver`` re-exports them.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Sequence, TypedDict, Union

# (No TypeAlias annotation: Python 3.9 has none, and these are aliases without it.)
JSONValue = Union[None, bool, int, float, str, List["JSONValue"], Dict[str, "JSONValue"]]
"""A JSON value as the core gives it: None, bool, int, float, str, list or dict of these."""

JSONObject = Dict[str, JSONValue]
"""A JSON object: a result's ``to_dict()``, an approval, an explanation, a tool spec."""


class _PrincipalId(TypedDict):
    id: str


class PrincipalDict(_PrincipalId, total=False):
    """A principal written as a dict (``{"id": "bot", "scopes": ["orders:read"]}``):
    ``id`` is required; ``roles``, ``scopes`` and ``attrs`` may be left out."""

    roles: Sequence[str]
    scopes: Sequence[str]
    attrs: Mapping[str, object]
