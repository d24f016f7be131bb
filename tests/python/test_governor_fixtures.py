"""Runs every scenario of fixtures/governor/ and fixtures/builtins/ through the Python binding, as
runtime/tests/fixtures_governor.rs does through the core: the same handler
behaviours, a manual clock, deterministic ids, and subset compares of each
step's expectation against the result's JSON and of the audit events."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest

import harnessweaver as hw
from fixture_support import FIXTURES, ROOT

# fixtures/builtins/ (issue 20) and fixtures/effects/ (issue 21: the effect journal, compensation, secret
# handles) have the same shape.
SCENARIOS = [p for area in ("governor", "builtins", "effects") for p in sorted((FIXTURES / area).glob("*.json"))]

# Scenarios that fail today, each with the reason. Kept empty when possible.
EXPECTED_FAILURES: Dict[str, str] = {}


def handler_for(behaviour: Dict[str, Any]) -> Callable[..., Any]:
    def handler(idempotency_key: str = "", secrets: Optional[Dict[str, str]] = None, **args: Any) -> Any:
        if "uses_secrets" in behaviour:
            # What the handler received (`secrets_delivery: native`); step 9 masks the values.
            return {"lengths": {k: len(v) for k, v in (secrets or {}).items()}, "echo": secrets}
        if "sleeps_ms" in behaviour or "sleep_ms" in behaviour:
            time.sleep(behaviour.get("sleeps_ms", behaviour.get("sleep_ms", 0)) / 1000.0)
        if "raises" in behaviour:
            raise type(behaviour["raises"], (Exception,), {})("fixture failure")
        if "unserializable" in behaviour:
            return object()
        if "echo" in behaviour:
            return {"args": args}
        if "returns_key" in behaviour:
            return {"idempotency_key": idempotency_key}
        if "returns_repeat" in behaviour:
            r = behaviour["returns_repeat"]
            return r["text"] * r["times"]
        return behaviour.get("returns")

    return handler


class HttpServer:
    """tests/servers/http_fixture_server.py on a free port (the server every runner starts)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "servers" / "http_fixture_server.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline().strip())}"

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def sandbox_worker() -> str:
    """The `harnessweaver-sandbox` worker, as runtime/tests/transport_support finds or builds it."""
    explicit = os.environ.get("HARNESSWEAVER_SANDBOX_WORKER")
    if explicit:
        return explicit
    target = ROOT / "target" / "sandbox-worker"
    triple = os.environ.get("CARGO_BUILD_TARGET")
    candidates = ([target / triple / "debug" / "harnessweaver-sandbox"] if triple else []) + [
        target / "debug" / "harnessweaver-sandbox"
    ]
    if not any(c.is_file() for c in candidates):
        subprocess.run(
            ["cargo", "build", "--quiet", "--manifest-path", str(ROOT / "sandbox" / "Cargo.toml"), "--target-dir", str(target)],
            check=True,
        )
    return str(next(c for c in candidates if c.is_file()))


def matches(want: Any, got: Any) -> bool:
    """Objects by the keys of ``want`` (recursively), lists item by item with the same length, else equal."""
    if isinstance(want, dict) and isinstance(got, dict):
        return all(matches(v, got.get(k)) for k, v in want.items())
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(matches(a, b) for a, b in zip(want, got))
    return bool(want == got)


def check_subset(want: Dict[str, Any], got: Dict[str, Any], what: str) -> None:
    for key, value in want.items():
        assert got.get(key) == value, f"{what}: `{key}` differs; got {json.dumps(got)}"


def run_scenario(path: Path, tmp: Path) -> None:
    case = json.loads(path.read_text(encoding="utf-8"))
    http = HttpServer() if "http" in case.get("servers", {}) else None
    try:
        run_case(path, case, tmp, http)
    finally:
        if http is not None:
            http.close()


def run_case(path: Path, case: Dict[str, Any], tmp: Path, http: Optional[HttpServer]) -> None:
    # `{{dir}}`: the scenario's directory, absolute (a `host_reads` root, a path in an expectation).
    case = json.loads(json.dumps(case).replace("{{dir}}", str(tmp)))
    # `env`: variables the harness reads (`headers_env`), set before the load.
    os.environ.update(case.get("env", {}))
    for rel, text in case["files"].items():
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if http is not None:
            text = text.replace("{{http}}", http.url)
        target.write_text(text, encoding="utf-8")
    # `symlinks`: link -> target (as written, relative to the link's directory).
    for rel, to in case.get("symlinks", {}).items():
        os.symlink(to, tmp / rel)
    worker = sandbox_worker() if case.get("sandbox") else None
    events: List[Dict[str, Any]] = []
    handlers = {name: handler_for(b) for name, b in case["handlers"].items()}
    if "load_problems" in case:
        with pytest.raises(hw.LoadError) as info:
            hw.load(
                tmp / "harness.yaml",
                handlers,
                events.append,
                clock_ms=case["start_ms"],
                sequential_ids=True,
                sandbox_worker=worker,
            )
        got = [p.to_dict() for p in info.value.problems]
        assert len(got) == len(case["load_problems"]), f"{path.name}: problems {got}"
        for want, problem in zip(case["load_problems"], got):
            check_subset(want, problem, f"{path.name} load problem")
        return
    h = hw.load(
        tmp / "harness.yaml", handlers, events.append, clock_ms=case["start_ms"], sequential_ids=True, sandbox_worker=worker
    )
    principals = case["principals"]
    runs: Dict[str, str] = {}
    last_approval: Optional[str] = None
    last_result: Any = None

    def approval_ref(ref: str) -> Any:
        if ref in ("last", "last_result"):
            assert last_approval is not None, "no approval yet"
            return last_approval if ref == "last" else last_result  # the result itself: the core reads its id
        return ref

    for i, step in enumerate(case["steps"]):
        what = f"{path.name} step {i}"
        if "advance_ms" in step:
            h.advance_ms(step["advance_ms"])
            continue
        if "fs" in step:
            fs_ops(tmp, step["fs"])
            continue
        if "file" in step:
            check_file(tmp / step["file"], step["expect"], what)
            continue
        if "run" in step and "call" not in step:
            # An `api` run for the principal; `expect.error` when it is not admitted.
            try:
                runs[step["run"]] = h.run(principal=principals[step["principal"]]).id
            except hw.HarnessweaverError as err:
                assert step.get("expect", {}).get("error") == err.code, f"{what}: {err}"
                continue
            assert "expect" not in step, f"{what}: the run started; expected {step['expect']}"
            continue
        expect = step["expect"]
        result: Optional[hw.CallResult] = None
        error: Optional[str] = None
        other: Optional[Dict[str, Any]] = None
        if "call" in step and "after_begin" in step:
            result = call_after_begin(h, tmp, step, principals[step["principal"]], runs.get(step.get("run", "")))
        elif "call" in step:
            result = h.call(
                step["call"],
                step["args"],
                principal=principals[step["principal"]],
                tenant=step.get("tenant"),
                task=step.get("task"),
                run=runs[step["run"]] if "run" in step else None,
                approval=approval_ref(step["approval"]) if "approval" in step else None,
                raise_on_refusal=False,
            )
        elif "explain" in step:
            other = h.explain(
                step["explain"],
                step["args"],
                principal=principals[step["principal"]],
                tenant=step.get("tenant"),
                run=runs[step["run"]] if "run" in step else None,
            )
        elif "tool_specs" in step:
            principal = principals[step["principal"]] if "principal" in step else None
            other = {"specs": h.tool_specs(step["tool_specs"], principal=principal, tenant=step.get("tenant"))}
        elif "request" in step:
            args = {k: principals.get(v, v) if k in ("principal", "by") else v for k, v in step["args"].items()}
            try:
                value = getattr(h, step["request"])(**args)
            except hw.HarnessweaverError as err:
                assert expect.get("error") == err.code, f"{what}: expected {expect}, got error {err.code}"
                continue
            assert "error" not in expect and matches(expect["value"], value), f"{what}: expected {expect}, got {value}"
            continue
        elif "approve" in step:
            try:
                result = h.approve(
                    approval_ref(step["approve"]),
                    approver=principals[step["approver"]],
                    args=step.get("args"),
                    raise_on_refusal=False,
                )
            except hw.HarnessweaverError as err:
                error = err.code
        elif "approve_only" in step:
            try:
                other = {"state": h.grant(approval_ref(step["approve_only"]), approver=principals[step["approver"]])["state"]}
            except hw.HarnessweaverError as err:
                error = err.code
        elif "accept" in step:
            try:
                other = h.accept_candidate(approval_ref(step["accept"]), step["candidate"], approver=principals[step["approver"]])
            except hw.HarnessweaverError as err:
                error = err.code
        elif "deny" in step:
            by = principals.get(step["by"], {"id": step["by"]})
            try:
                other = {"state": h.deny(approval_ref(step["deny"]), step["reason"], by=by)["state"]}
            except hw.HarnessweaverError as err:
                error = err.code
        else:
            raise AssertionError(f"{what}: unknown step {step}")
        if result is not None:
            assert "error" not in expect, f"{what}: expected error {expect}, got {result!r}"
            got = json.loads(result.to_json())
            assert got == result.to_dict(), f"{what}: to_dict and to_json disagree"
            if result.approval:
                last_approval, last_result = result.approval["id"], result
            want = dict(expect)
            want_approval = want.pop("approval", None)
            check_subset(want, got, what)
            if want_approval is not None:
                check_subset(want_approval, got["approval"] or {}, what)
        elif other is not None:
            check_subset(expect, other, what)
        else:
            assert expect.get("error") == error, f"{what}: expected {expect}, got error {error}"
    if "audit" in case:
        assert len(events) == len(case["audit"]), f"{path.name}: audit event count {len(events)}"
        for want, event in zip(case["audit"], events):
            check_subset(want, event, f"{path.name} audit")


def call_after_begin(h: Any, tmp: Path, step: Dict[str, Any], principal: Dict[str, Any], run: Optional[str]) -> Any:
    """A call with `after_begin`: filesystem changes and clock moves between steps 1-7 and the invocation."""
    begun = h.begin(step["call"], step["args"], principal=principal, tenant=step.get("tenant"), task=step.get("task"), run=run)
    if isinstance(begun, hw.CallResult):
        return begun
    for op in step["after_begin"]:
        if "advance_ms" in op:
            h.advance_ms(op["advance_ms"])
        else:
            fs_ops(tmp, [op])
    if begun.route == "transport":
        return h.finish_transport(begun)
    try:
        return h.finish(begun, "returned", h.handler(begun)(**begun.kwargs()))
    except Exception as err:  # noqa: BLE001 - a fixture handler's failure is its outcome
        return h.finish(begun, "failed", type(err).__name__)


def fs_ops(base: Path, ops: List[Dict[str, Any]]) -> None:
    """The `fs` step: changes made between calls (paths relative to the scenario directory)."""
    for op in ops:
        if "write" in op:
            (base / op["write"]).write_text(op["text"], encoding="utf-8")
        elif "rename" in op:
            (base / op["rename"]).rename(base / op["to"])
        elif "symlink" in op:
            os.symlink(op["to"], base / op["symlink"])
        elif "remove" in op:
            (base / op["remove"]).unlink()
        else:
            raise AssertionError(f"unknown fs op {op}")


def check_file(path: Path, expect: Dict[str, Any], what: str) -> None:
    """The `file` step: `text` exactly, `exists`, `contains` and `lacks`."""
    text = path.read_text(encoding="utf-8") if path.is_file() else None
    if "exists" in expect:
        assert (text is not None) == expect["exists"], f"{what}: {path} exists"
    if "text" in expect:
        assert text == expect["text"], f"{what}: {path} is {text!r}"
    for part in expect.get("contains", []):
        assert part in (text or ""), f"{what}: {path} lacks {part!r}: {text!r}"
    for part in expect.get("lacks", []):
        assert part not in (text or ""), f"{what}: {path} holds {part!r}"


def test_there_are_scenarios() -> None:
    assert SCENARIOS, "no fixtures in fixtures/governor"


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_governor_scenario(path: Path, tmp_path: Path) -> None:
    if path.stem in EXPECTED_FAILURES:
        with pytest.raises(AssertionError):
            run_scenario(path, tmp_path)
        return
    run_scenario(path, tmp_path)


def test_expected_failures_name_real_scenarios() -> None:
    names = {p.stem for p in SCENARIOS}
    for name in EXPECTED_FAILURES:
        assert name in names, name
