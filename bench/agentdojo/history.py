"""History rules (cel-lite's `run`) for the AgentDojo suites: policy rules written per tool from what it does, never
per task, for what argument provenance cannot see (a destination that is trusted but not the one the user meant, a
target that is a small number). They are the `provenance + history rules` configuration of the replay."""

from typing import Any, Dict, List

SAW_UNTRUSTED = "run.calls.exists(c, c.label == 'untrusted')"


def once_per_run(tool: str) -> Dict[str, Any]:
    """A second call of `tool` in one run is refused: one booking per request."""
    return {"name": f"one-{tool}-per-run", "effect": "deny", "tools": [tool],
            "when": f"'{tool}' in run.counts && run.counts['{tool}'] >= 1"}


def not_after_untrusted(tool: str) -> Dict[str, Any]:
    """`tool` is refused once the run has read content others can write."""
    return {"name": f"no-{tool}-after-untrusted-content", "effect": "deny", "tools": [tool], "when": SAW_UNTRUSTED}


def approve_after_untrusted(tool: str) -> Dict[str, Any]:
    """`tool` waits for a human once the run has read content others can write."""
    return {"name": f"confirm-{tool}-after-untrusted-content", "effect": "approve", "tools": [tool], "when": SAW_UNTRUSTED}


# The `provenance + history rules + approvals` configuration adds these to HISTORY_RULES: a booking the model chose after
# reading reviews anyone writes is confirmed by the user (the platform's catalogue makes every hotel a trusted
# destination, so provenance cannot tell the user's booking from an injected one).
APPROVAL_RULES: Dict[str, List[Dict[str, Any]]] = {
    "travel": [approve_after_untrusted("reserve_hotel"), approve_after_untrusted("reserve_car_rental"),
               approve_after_untrusted("reserve_restaurant")],
}

HISTORY_RULES: Dict[str, List[Dict[str, Any]]] = {
    # Provenance already refuses a password, address or IBAN an injection names; a rule refusing `update_password`
    # after untrusted content also refused the user's own password change (user_task_14), so none here.
    "banking": [],
    # Removing someone from the workspace is never what a message or a web page should decide.
    "slack": [not_after_untrusted("remove_user_from_slack"), once_per_run("invite_user_to_slack")],
    "travel": [once_per_run("reserve_hotel"), once_per_run("reserve_car_rental"), once_per_run("reserve_restaurant")],
    # Deleting after reading mail, files or invitations others wrote: their ids are small numbers provenance cannot
    # tell apart.
    "workspace": [not_after_untrusted("delete_file"), not_after_untrusted("delete_email")],
}
