"""Issue 20: an inline approval callback (`on_approval`) accepts a built-in
tool's "always allow" candidate by answering `{"accept": id}`: the call runs,
the rule is written to the permission file and the same question is not asked
again. The answer is read by the core (`ApprovalAnswer::from_value`), so Node
agrees (tests/node/builtins_callbacks.test.mjs). A candidate the approval does
not offer accepts nothing: the call stays pending and no rule is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import harnessweaver as hw

ALICE = {"id": "alice", "roles": ["developer"]}


def harness(tmp: Path) -> Path:
    (tmp / "ws" / "src").mkdir(parents=True)
    spec = {"mode": "test", "tools": {"manifests": []}, "builtins": {"workspace": "ws", "tools": ["write_file"]}}
    (tmp / "harness.yaml").write_text(json.dumps({"apiVersion": "harnessweaver/v1", "kind": "Harness", "spec": spec}))
    return tmp / "harness.yaml"


def test_the_callback_accepts_a_candidate_and_the_next_write_is_not_asked(tmp_path: Path) -> None:
    asked: List[Dict[str, Any]] = []

    def on_approval(request: Dict[str, Any], approval: Dict[str, Any]) -> Any:
        asked.append(request)
        # "always allow writes under src/" when offered, else the file itself.
        chosen = next((c for c in request["candidates"] if c["paths"] == ["src/**"]), request["candidates"][0])
        return {"accept": chosen["id"]}

    h = hw.load(harness(tmp_path), on_approval=on_approval)
    first = h.call("write_file", {"path": "src/a.py", "content": "a"}, principal=ALICE, raise_on_refusal=False)
    assert first.decision == "allowed", first.to_dict()
    assert (tmp_path / "ws" / "src" / "a.py").read_text() == "a"
    permissions = (tmp_path / "permissions.yaml").read_text()
    assert '"src/**"' in permissions and "accepted by callback" in permissions, permissions
    second = h.call("write_file", {"path": "src/b.py", "content": "b"}, principal=ALICE, raise_on_refusal=False)
    assert second.decision == "allowed", second.to_dict()
    assert len(asked) == 1
    # The rule covers src/ only: a write elsewhere is asked again.
    other = h.call("write_file", {"path": "c.py", "content": "c"}, principal=ALICE, raise_on_refusal=False)
    assert len(asked) == 2 and other.decision == "allowed"


def test_a_candidate_the_approval_does_not_offer_accepts_nothing(tmp_path: Path) -> None:
    h = hw.load(harness(tmp_path), on_approval=lambda request, approval: {"accept": "c99"})
    result = h.call("write_file", {"path": "src/a.py", "content": "a"}, principal=ALICE, raise_on_refusal=False)
    assert result.decision == "pending" and result.code == "approval_required", result.to_dict()
    assert not (tmp_path / "ws" / "src" / "a.py").exists()
    assert not (tmp_path / "permissions.yaml").exists()
    # Anything but a bool or one `{"accept": id}` decides nothing either.
    h2 = hw.load(harness(tmp_path / "again"), on_approval=lambda request, approval: {"accept": "c1", "also": True})
    assert (
        h2.call("write_file", {"path": "src/a.py", "content": "a"}, principal=ALICE, raise_on_refusal=False).decision == "pending"
    )
