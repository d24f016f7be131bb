"""Runs `make demo`'s session (examples/demo.py) and `make demo-ts`'s
(examples/.build/demo.js, compiled from examples/demo.ts) and checks that every
event the demo claims to show really happened: the refusal codes and steps,
the approval id from the pending call to the approved call and the audit trail,
the redaction, the neutralised injection, the sandboxed computation, the rug
pull refused by its pin, and an audit trail with one narrow event per call.

`make test-demo` builds what it needs first (the Python package, the npm
package, the sandbox worker, the compiled TypeScript demo)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUPPORT = ROOT / "examples" / "support"
PAGE = (SUPPORT / "web" / "track.parcelco.example" / "A-1001.html").read_text("utf-8")
TS_DEMO = ROOT / "examples" / ".build" / "demo.js"

# (actor, tool, decision, code, step) of every call the transcript makes, in order.
CALLS = [
    ("model", "lookup_order", "refused", "invalid_args", "validate"),
    ("model", "lookup_order", "allowed", None, None),
    ("model", "fetch_page", "allowed", None, None),
    ("model", "run_python", "allowed", None, None),
    ("model", "refund_payment", "pending", "approval_required", "approval"),
    ("finance", "refund_payment", "allowed", None, None),
    ("model", "send_email", "refused", "trifecta", "flow"),
    ("model", "lookup_order", "refused", "digest_mismatch", "pin"),
]


def run_demo(language: str, tmp: Path, *extra: str) -> "tuple[Dict[str, Any], str]":
    report = tmp / f"{language}.json"
    if language == "python":
        command = [sys.executable, str(ROOT / "examples" / "demo.py")]
    else:
        if shutil.which("node") is None or not TS_DEMO.exists():
            pytest.fail(f"{TS_DEMO} is missing: run `make test-demo` (it compiles examples/demo.ts)")
        command = ["node", str(TS_DEMO)]
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR",)}
    done = subprocess.run(command + ["--report", str(report), *extra], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{language} demo failed:\n{done.stdout}\n{done.stderr}"
    return json.loads(report.read_text("utf-8")), done.stdout


@pytest.fixture(scope="module", params=["python", "typescript"])
def demo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> "tuple[Dict[str, Any], str]":
    return run_demo(request.param, tmp_path_factory.mktemp(request.param))


def calls(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [s for s in report["steps"] if "decision" in s]


def test_each_call_is_decided_as_the_demo_says(demo: "tuple[Dict[str, Any], str]") -> None:
    report, _ = demo
    got = [(s["actor"], s["tool"], s["decision"], s["code"], s["step"]) for s in calls(report)]
    assert got == CALLS


def test_the_schema_refusal_names_the_field_but_not_the_value(demo: "tuple[Dict[str, Any], str]") -> None:
    refused = calls(demo[0])[0]
    assert refused["args"] == {"order_id": "1001"}
    assert "/order_id" in refused["message"] and "pattern" in refused["message"]
    assert "1001" not in refused["to_model"]


def test_the_customer_pii_is_redacted_before_the_model_sees_it(demo: "tuple[Dict[str, Any], str]") -> None:
    lookup = calls(demo[0])[1]
    assert lookup["output_report"]["redactions"] == {"EMAIL": 1, "PHONE": 1}
    customer = lookup["output"]["customer"]
    assert (customer["email"], customer["phone"], customer["name"]) == ("[EMAIL]", "[PHONE]", "Jane Doe")
    assert "jane.doe@example.com" not in lookup["to_model"] and "555 2671" not in lookup["to_model"]
    assert lookup["labels"] == {"private": True, "untrusted": False}


def test_the_injection_in_the_fetched_page_is_neutralised(demo: "tuple[Dict[str, Any], str]") -> None:
    report, stdout = demo
    fetch = calls(report)[2]
    assert "ignore all previous instructions" in PAGE  # the page really carries one
    text = fetch["to_model"]
    assert "[removed: hidden text]" in text
    assert "ignore all previous" not in text.lower() and "parcelco-claims" not in text
    assert "damaged in transit" in text  # the visible page is still there
    assert fetch["output_report"]["redactions"] == {"injection.hidden_text": 1}
    assert fetch["output_report"]["label"] == "untrusted"
    assert fetch["labels"] == {"private": True, "untrusted": True}
    # The http transport really fetched it from the demo's loopback service.
    assert report["fetches"] == [{"path": "/fetch", "url": "https://track.parcelco.example/A-1001", "status": 200,
                                  "idempotency_key": True}]
    assert "the page hid" in stdout and "ignore all previous instructions" in stdout


def test_the_code_tool_ran_in_the_sandbox_worker(demo: "tuple[Dict[str, Any], str]") -> None:
    report, _ = demo
    assert report["sandbox_worker"] and Path(report["sandbox_worker"]).name == "harnessweaver-sandbox"
    assert calls(report)[3]["output"] == {"stdout": "", "value": 142.5}


def test_the_refund_waits_for_finance_and_runs_once_approved(demo: "tuple[Dict[str, Any], str]") -> None:
    report, _ = demo
    pending, approved = calls(report)[4], calls(report)[5]
    approval = pending["approval"]
    assert approval["id"] and approval["approver_role"] == "finance" and approval["tool"] == "refund_payment"
    assert approval["id"] in pending["to_model"]  # the model is told which approval it waits for
    assert approved["approval_id"] == approval["id"]
    assert approved["output"]["refunded_usd"] == 142.5 and approved["output"]["status"] == "refunded"
    assert approved["output"]["idempotency_key"]
    assert approved["run_id"] == pending["run_id"]
    audit = [e for e in report["audit"] if e["tool"] == "refund_payment"]
    assert [(e["decision"], e["approval_id"]) for e in audit] == [("pending", approval["id"]), ("allowed", approval["id"])]


def test_the_email_out_of_a_private_untrusted_run_is_refused(demo: "tuple[Dict[str, Any], str]") -> None:
    email = calls(demo[0])[6]
    assert email["args"]["to"].endswith("@parcelco-claims.example")
    assert email["labels"] == {"private": True, "untrusted": True}
    assert email["output"] is None


def test_the_rug_pulled_tool_is_refused_by_its_pin(demo: "tuple[Dict[str, Any], str]") -> None:
    report, _ = demo
    pull = next(s for s in report["steps"] if s["actor"] == "supply_chain")
    assert (pull["tool"], pull["pin_before"], pull["pin_after"]) == ("lookup_order", "pinned", "mismatched")
    assert pull["digest"] != pull["pinned_digest"]
    manifest = (SUPPORT / "tools" / "lookup_order.yaml").read_text("utf-8")
    assert pull["pinned_digest"] in manifest, "the checked-in manifest is untouched"
    last = calls(report)[-1]
    assert last["code"] == "digest_mismatch" and last["labels"] == {"private": False, "untrusted": False}


def test_the_audit_trail_has_one_narrow_event_per_call(demo: "tuple[Dict[str, Any], str]") -> None:
    report, stdout = demo
    audit = report["audit"]
    assert [(e["tool"], e["decision"], e["code"], e["step"]) for e in audit] == [c[1:] for c in CALLS]
    assert all(e["principal"] == "support-agent" and e["tenant"] == "shop" for e in audit)
    assert all(str(e["args_digest"]).startswith("sha256:") for e in audit)
    assert audit[1]["redactions"] == {"EMAIL": 1, "PHONE": 1}
    assert audit[2]["redactions"] == {"injection.hidden_text": 1}
    text = json.dumps(audit)
    for secret in ("jane.doe", "Jane", "A-1001", "parcelco", "142.5"):
        assert secret not in text, secret
    assert not any({"args", "output", "message"} & set(e) for e in audit)
    assert f"audit trail ({len(CALLS)} events" in stdout


def test_the_terminal_shows_each_step_without_colour_off_a_tty(demo: "tuple[Dict[str, Any], str]") -> None:
    _, stdout = demo
    assert "\x1b[" not in stdout
    for line in ("REFUSED invalid_args at step validate", "cleaned EMAIL x1, PHONE x1",
                 "cleaned injection.hidden_text x1", "PENDING approval_required at step approval",
                 "approve apr_", "REFUSED trifecta at step flow", "pin of lookup_order: mismatched",
                 "REFUSED digest_mismatch at step pin"):
        assert line in stdout, line


def test_python_and_typescript_replay_the_same_session(tmp_path: Path) -> None:
    py, _ = run_demo("python", tmp_path)
    ts, _ = run_demo("typescript", tmp_path)
    strip = ("call_id", "run_id", "approval", "approval_id")
    for a, b in zip(py["steps"], ts["steps"], strict=True):
        if a.get("tool") == "refund_payment":  # ids and idempotency keys differ per run
            assert (a["decision"], a["code"]) == (b["decision"], b["code"])
            continue
        assert {k: v for k, v in a.items() if k not in strip} == {k: v for k, v in b.items() if k not in strip}


def on_a_terminal(command: List[str], env: Dict[str, str]) -> str:
    """What `command` prints with its stdout on a pseudo-terminal."""
    import pty

    main, child = pty.openpty()
    with subprocess.Popen(command, cwd=ROOT, env=env, stdout=child, stderr=subprocess.PIPE) as proc:
        os.close(child)
        out = bytearray()
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        proc.wait(timeout=120)
    os.close(main)
    assert proc.returncode == 0, out.decode("utf-8", "replace")
    return out.decode("utf-8", "replace")


@pytest.mark.parametrize("language", ["python", "typescript"])
def test_colour_is_used_on_a_terminal_unless_no_color(language: str, tmp_path: Path) -> None:
    command = [sys.executable, str(ROOT / "examples" / "demo.py")] if language == "python" else ["node", str(TS_DEMO)]
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    assert "\x1b[31mREFUSED\x1b[0m" in on_a_terminal(command, env)
    assert "\x1b[" not in on_a_terminal(command, {**env, "NO_COLOR": "1"})
    _, stdout = run_demo(language, tmp_path, "--color", "always")
    assert "\x1b[31mREFUSED\x1b[0m" in stdout


def test_help_says_the_live_path_is_untested() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "demo.py"), "--help"], capture_output=True,
                          text=True, check=True)
    assert "--live" in done.stdout and "cannot be tested" in done.stdout
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    refused = subprocess.run([sys.executable, str(ROOT / "examples" / "demo.py"), "--live", "openai"], env=env,
                             capture_output=True, text=True, check=False)
    assert refused.returncode == 2 and "OPENAI_API_KEY" in refused.stderr
