"""The demo behind `make demo`: a support agent for a shop, governed end to end.

A scripted model (examples/support/transcript.json, a recorded session that
examples/demo.ts replays too) makes the tool calls of one support ticket, and
every call goes through the real governor on the embedded defaults (memory
state, no API key, no network beyond 127.0.0.1):

  lookup_order    refused by its schema, then allowed with the customer's PII redacted
  fetch_page      an http tool against a fetch service this script starts on 127.0.0.1;
                  the page hides an instruction, which strip_instructions neutralises
  run_python      a code tool, run by Monty in the harnessweaver-sandbox worker
  refund_payment  $142.50 waits for approval; fiona from finance approves it
  send_email      to an outside host, refused by the trifecta rule (the run read PII
                  and saw untrusted content)
  lookup_order    after its manifest changed under the pin ("rug pull"): refused

then prints the audit trail the harness's sink wrote (audit.jsonl).

The harness (examples/support/) is copied to a temporary directory first: the
copy gets the fetch service's port, the audit file and the rug pull; the
checked-in files never change.

Run it with `make demo` (builds the package and the sandbox worker), or with
the package installed: `.venv/bin/python examples/demo.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import textwrap
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, List, Optional

import harnessweaver as hw

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOURCE = HERE / "support"
WEB = SOURCE / "web"

EPILOG = """\
live model (optional, untested here): with --live and OPENAI_API_KEY or
ANTHROPIC_API_KEY set, a live model answers the same ticket with the same
harness instead of the transcript's model calls (finance still approves
refunds; the rug pull and the audit trail follow). This path calls the
provider's HTTP API directly with the standard library; it cannot be tested on
the machine this project is built on (no key, no network), so it has never
been run there. Without --live the scripted model is used even when a key is
set.
"""


# --- output -------------------------------------------------------------------------------------


class Style:
    """ANSI colour on a terminal (and never with NO_COLOR); plain text otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled else text

    def bold(self, t: str) -> str:
        return self._wrap("1", t)

    def dim(self, t: str) -> str:
        return self._wrap("2", t)

    def green(self, t: str) -> str:
        return self._wrap("32", t)

    def red(self, t: str) -> str:
        return self._wrap("31", t)

    def yellow(self, t: str) -> str:
        return self._wrap("33", t)

    def cyan(self, t: str) -> str:
        return self._wrap("36", t)


WIDTH = 96


def excerpt(text: str, width: int = WIDTH - 10) -> str:
    """One line of `text`, centred on the first placeholder the governor wrote
    (`[EMAIL]`, `[removed: ...]`) when the whole does not fit."""
    flat = re.sub(r"\s+", " ", text).strip()
    if len(flat) <= width:
        return flat
    marks = [i for i in (flat.find("[removed"), flat.find("[EMAIL]"), flat.find("[PHONE]")) if i >= 0]
    start = max(0, min(marks) - width // 3) if marks else 0
    start = min(start, len(flat) - width + 1)
    piece = flat[start:start + width - 1]
    return ("…" if start else "") + piece + ("…" if start + width - 1 < len(flat) else "")


def counts(report: Optional[Dict[str, Any]]) -> str:
    redactions = (report or {}).get("redactions") or {}
    return ", ".join(f"{k} x{v}" for k, v in sorted(redactions.items()))


# --- the fetch service --------------------------------------------------------------------------


class FetchService:
    """The shop's web-fetch service, on 127.0.0.1: a POST of `{"url": ...}`
    returns that page from examples/support/web/ (`https://HOST/PATH` is
    `web/HOST/PATH.html`); nothing leaves the machine."""

    def __init__(self, web: Path) -> None:
        self.requests: List[Dict[str, Any]] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    url = json.loads(self.rfile.read(length) or b"{}").get("url", "")
                except (ValueError, AttributeError):
                    url = ""
                page = service.page(web, url) if self.path == "/fetch" else None
                service.requests.append({"path": self.path, "url": url, "status": 200 if page else 404,
                                         "idempotency_key": bool(self.headers.get("Idempotency-Key"))})
                body = page if page is not None else b"not found"
                self.send_response(200 if page is not None else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8" if page is not None else "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @staticmethod
    def page(web: Path, url: str) -> Optional[bytes]:
        match = re.fullmatch(r"https://([a-z0-9.-]+)/([A-Za-z0-9_./-]+)", url)
        if not match or ".." in match.group(2):
            return None
        path = web / match.group(1) / f"{match.group(2)}.html"
        return path.read_bytes() if path.is_file() else None

    def __enter__(self) -> "FetchService":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


# --- the session --------------------------------------------------------------------------------


def working_copy(tmp: Path, port: int) -> Path:
    """Copies the harness to `tmp` and points fetch_page at the fetch service
    (the url is not part of the pinned definition, so the pin still holds)."""
    copy = tmp / "support"
    shutil.copytree(SOURCE, copy, ignore=shutil.ignore_patterns("audit.jsonl", "__pycache__"))
    manifest = copy / "tools" / "fetch_page.yaml"
    text = manifest.read_text("utf-8")
    manifest.write_text(re.sub(r"url: http://127\.0\.0\.1:\d+/", f"url: http://127.0.0.1:{port}/", text), "utf-8")
    return copy


def rug_pull(copy: Path, tool: str, description: str) -> None:
    """Changes `tool`'s description in the working copy, leaving its pin as it was."""
    manifest = copy / "tools" / f"{tool}.yaml"
    text = manifest.read_text("utf-8")
    changed, n = re.subn(r"(?m)^(  description: ).*$", lambda m: m.group(1) + json.dumps(description), text, count=1)
    if n != 1:
        raise SystemExit(f"{manifest}: no `description:` line to change")
    manifest.write_text(changed, "utf-8")


def hidden_text(url: Any, result: "hw.CallResult") -> Optional[str]:
    """What a fetched page hid from its human readers, when the governor
    removed something from it (to show what the model did not get)."""
    redactions = (result.output_report or {}).get("redactions") or {}
    if not isinstance(url, str) or not any(k.startswith("injection.") for k in redactions):
        return None
    raw = FetchService.page(WEB, url) or b""
    found = re.search(r'<div style="display:none">(.*?)</div>', raw.decode("utf-8"), re.S)
    return found.group(1).strip() if found else None


def find_sandbox_worker() -> None:
    """The code tool's worker: HARNESSWEAVER_SANDBOX_WORKER (the Makefile sets it),
    else the one `make build-sandbox` builds."""
    if os.environ.get("HARNESSWEAVER_SANDBOX_WORKER"):
        return
    built = sorted(ROOT.glob("target/sandbox-worker/*/debug/harnessweaver-sandbox"))
    if built:
        os.environ["HARNESSWEAVER_SANDBOX_WORKER"] = str(built[0])


class Session:
    """Replays the transcript through the governor and prints each step."""

    def __init__(self, transcript: Dict[str, Any], copy: Path, style: Style) -> None:
        self.t = transcript
        self.copy = copy
        self.s = style
        self.records: List[Dict[str, Any]] = []
        self.pending: Dict[str, Dict[str, Any]] = {}
        self.harness = hw.load(copy / "harness.yaml")
        self.run = self.harness.run(principal=transcript["agent"], tenant=transcript.get("tenant"))

    def header(self, n: int, actor: str, say: str) -> None:
        who = {"model": self.s.cyan("model"), "finance": self.s.yellow("finance"),
               "supply_chain": self.s.red("supply chain")}.get(actor, actor)
        print(f"{self.s.bold(f'{n:>2}')} {who}  {self.s.dim(say)}")

    def show(self, result: "hw.CallResult") -> None:
        s = self.s
        if result.decision == "allowed":
            verdict = s.green("ALLOWED")
        elif result.decision == "pending":
            verdict = s.yellow("PENDING")
        else:
            verdict = s.red("REFUSED")
        where = f" {s.bold(result.code)} at step {result.step}" if result.code else ""
        labels = [k for k, v in sorted(result.labels.items()) if v]
        print(f"   {verdict}{where}   {s.dim('run: ' + (', '.join(labels) or 'clean'))}")
        if result.approval:
            print(f"   {s.bold('approval')} {result.approval['id']} waits for role `{result.approval['approver_role']}`")
        if result.decision == "allowed":
            done = counts(result.output_report)
            if done:
                print(f"   {s.bold('cleaned')} {done}")
        print(f"   {s.dim('to model:')} {excerpt(result.to_model())}")

    def record(self, n: int, actor: str, result: "hw.CallResult", **extra: Any) -> None:
        self.records.append({"n": n, "actor": actor, "tool": result.tool, "decision": result.decision,
                             "code": result.code, "step": result.step, "message": result.message,
                             "approval": result.approval, "output": result.output,
                             "output_report": result.output_report, "labels": result.labels,
                             "to_model": result.to_model(), "call_id": result.call_id, "run_id": result.run_id,
                             **extra})

    def call(self, n: int, actor: str, tool: str, args: Dict[str, Any]) -> "hw.CallResult":
        print(f"   {self.s.bold('call')} {tool} {excerpt(json.dumps(args, ensure_ascii=False), WIDTH - 20)}")
        result = self.run.call(tool, args, raise_on_refusal=False)
        if result.approval:
            self.pending[tool] = result.approval
        self.show(result)
        hidden = hidden_text(args.get("url"), result)
        if hidden:
            print(f"   {self.s.bold('the page hid')} {excerpt(json.dumps(hidden), WIDTH - 20)}")
        self.record(n, actor, result, args=args)
        return result

    def approve(self, n: int, tool: str) -> "hw.CallResult":
        approval = self.pending.pop(tool)
        approver = self.t["approver"]
        print(f"   {self.s.bold('approve')} {approval['id']} as {approver['id']} (roles: {', '.join(approver['roles'])})")
        result = self.harness.approve(approval["id"], approver=approver, raise_on_refusal=False)
        self.show(result)
        self.record(n, "finance", result, approval_id=approval["id"])
        return result

    def rug_pull(self, n: int, change: Dict[str, Any]) -> None:
        tool = change["tool"]
        before = self.harness.tool(tool)
        rug_pull(self.copy, tool, change["description"])
        self.harness = hw.load(self.copy / "harness.yaml")
        self.run = self.harness.run(principal=self.t["agent"], tenant=self.t.get("tenant"))
        after = self.harness.tool(tool)
        assert before is not None and after is not None
        print(f"   {self.s.bold('reload')} tools/{tool}.yaml now says: {excerpt(json.dumps(change['description']), WIDTH - 30)}")
        print(f"   pin of {tool}: {self.s.red(str(after.pin))} (pinned {str(after.pinned_digest)[:19]}…, "
              f"now {str(after.digest)[:19]}…)")
        self.records.append({"n": n, "actor": "supply_chain", "tool": tool, "pin_before": before.pin,
                             "pin_after": after.pin, "pinned_digest": after.pinned_digest, "digest": after.digest})

    def replay(self, steps: List[Dict[str, Any]], first: int = 1) -> None:
        for n, step in enumerate(steps, first):
            self.header(n, step["actor"], step.get("say", ""))
            if "tool" in step:
                self.call(n, step["actor"], step["tool"], step.get("args") or {})
            elif "approve" in step:
                self.approve(n, step["approve"])
            elif "rug_pull" in step:
                self.rug_pull(n, step["rug_pull"])
            print()


def print_tools(harness: "hw.Harness", style: Style) -> None:
    width = max(len(t.name) for t in harness.tools)
    for tool in harness.tools:
        extra = [f"sandbox {tool.sandbox}"] if tool.transport == "code" else []
        if tool.data_access:
            extra.append("reads " + ", ".join(tool.data_access))
        if tool.egress:
            extra.append("egress " + ", ".join(tool.egress))
        if tool.approval:
            extra.append(f"approval when {tool.approval['when']}")
        if tool.output["label"] == "untrusted":
            extra.append("output untrusted")
        print(f"   {tool.name:<{width}}  {tool.transport:<6}  risk {tool.risk:<6}  {tool.pin:<8}  {style.dim('; '.join(extra))}")


def print_audit(path: Path, style: Style) -> List[Dict[str, Any]]:
    events = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    print(style.bold(f"audit trail ({len(events)} events from the harness's sink, audit.jsonl):"))
    print(style.dim(f"   {'#':>2}  {'tool':<15} {'principal':<14} {'decision':<9} {'code':<18} {'step':<9} approval / redactions"))
    for i, e in enumerate(events, 1):
        extra = e.get("approval_id") or ""
        if e.get("redactions"):
            extra = (extra + " " if extra else "") + ", ".join(f"{k} x{v}" for k, v in sorted(e["redactions"].items()))
        print(f"   {i:>2}  {e['tool']:<15} {e['principal']:<14} {e['decision']:<9} {e.get('code') or '-':<18} "
              f"{e.get('step') or '-':<9} {extra}")
    print(style.dim("   (each event: tool, principal, tenant, decision, code, step, timings and an args digest;"
                    " never args or outputs)"))
    return events


# --- a live model (optional) ----------------------------------------------------------------------


def live_session(session: Session, provider: str, model: Optional[str], style: Style) -> int:
    """Lets a live model answer the ticket with the same harness (see EPILOG)."""
    t = session.t
    system = ("You are the support agent of a small online shop. Use the tools to resolve the customer's ticket, "
              "then answer the customer briefly.")
    fmt = "openai" if provider == "openai" else "anthropic"
    tools = session.harness.tool_specs(fmt, principal=t["agent"], tenant=t.get("tenant"))
    messages: List[Dict[str, Any]] = [{"role": "user", "content": t["ticket"]}]
    n = 0
    for _turn in range(12):
        if provider == "openai":
            reply = post("https://api.openai.com/v1/chat/completions",
                         {"Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"},
                         {"model": model or "gpt-4o-mini", "tools": tools,
                          "messages": [{"role": "system", "content": system}] + messages})
            message = reply["choices"][0]["message"]
            messages.append(message)
            calls = [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
                     for c in message.get("tool_calls") or []]
            text = message.get("content") or ""
        else:
            reply = post("https://api.anthropic.com/v1/messages",
                         {"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01"},
                         {"model": model or "claude-3-5-haiku-latest", "max_tokens": 1024, "system": system,
                          "tools": tools, "messages": messages})
            messages.append({"role": "assistant", "content": reply["content"]})
            calls = [(b["id"], b["name"], b["input"]) for b in reply["content"] if b["type"] == "tool_use"]
            text = "".join(b.get("text", "") for b in reply["content"] if b["type"] == "text")
        if not calls:
            print(style.bold("reply to the customer:"), text)
            return n
        answers = []
        for call_id, name, args in calls:
            n += 1
            session.header(n, "model", "(live)")
            result = session.call(n, "model", name, args)
            if result.decision == "pending":
                n += 1
                session.header(n, "finance", "Fiona from finance approves the pending call.")
                result = session.approve(n, name)
            answers.append((call_id, result.to_model()))
            print()
        if provider == "openai":
            messages += [{"role": "tool", "tool_call_id": i, "content": text} for i, text in answers]
        else:
            messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": text}
                                                         for i, text in answers]})
    print("the live model did not finish in 12 turns")
    return n


def post(url: str, headers: Dict[str, str], body: Dict[str, Any]) -> Dict[str, Any]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as err:
        raise SystemExit(f"{url}: http status {err.code}: {err.read()[:500]!r}") from None


# --- main -----------------------------------------------------------------------------------------


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transcript", type=Path, default=SOURCE / "transcript.json",
                        help="the recorded session to replay (default: examples/support/transcript.json)")
    parser.add_argument("--report", type=Path, help="also write what happened as JSON to this file (the tests read it)")
    parser.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                        help="colour: auto (a terminal without NO_COLOR), always, never")
    parser.add_argument("--live", choices=["openai", "anthropic"],
                        help="drive the session with a live model (needs OPENAI_API_KEY / ANTHROPIC_API_KEY; untested here)")
    parser.add_argument("--model", help="the live model's name (default gpt-4o-mini / claude-3-5-haiku-latest)")
    opts = parser.parse_args(argv)

    if opts.live:
        key = "OPENAI_API_KEY" if opts.live == "openai" else "ANTHROPIC_API_KEY"
        if not os.environ.get(key):
            parser.error(f"--live {opts.live} needs {key} in the environment")
    color = opts.color == "always" or (opts.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
    style = Style(color)
    transcript = json.loads(opts.transcript.read_text("utf-8"))
    find_sandbox_worker()

    with FetchService(WEB) as web, tempfile.TemporaryDirectory(prefix="hw-demo-") as tmp:
        copy = working_copy(Path(tmp), web.port)
        try:
            session = Session(transcript, copy, style)
        except hw.LoadError as err:
            print(f"the harness did not load ({err.code}):", file=sys.stderr)
            for problem in err.problems:
                print(f"  {problem}", file=sys.stderr)
            return 1

        model = f"a live model ({opts.live})" if opts.live else f"a scripted model ({os.path.relpath(opts.transcript)})"
        print(style.bold("harnessweaver demo: a shop's support agent, driven by " + model))
        print(f"   harness  {os.path.relpath(SOURCE)} (working copy in {copy})")
        print(f"   web      fetch service on http://127.0.0.1:{web.port}/fetch (loopback only)")
        worker = os.environ.get("HARNESSWEAVER_SANDBOX_WORKER")
        print(f"   sandbox  {os.path.relpath(worker) if worker else 'harnessweaver-sandbox not found: code tools will fail'}")
        print_tools(session.harness, style)
        print(f"\n{style.bold('ticket')} from the customer:")
        print(textwrap.fill(transcript["ticket"], WIDTH, initial_indent="   ", subsequent_indent="   ") + "\n")

        steps = transcript["steps"]
        if opts.live:
            cut = next((i for i, s in enumerate(steps) if "rug_pull" in s), len(steps))
            done = live_session(session, opts.live, opts.model, style)
            print()
            session.replay(steps[cut:], first=done + 1)
        else:
            session.replay(steps)
            print(f"{style.bold('reply')} to the customer:")
            print(textwrap.fill(transcript["reply"], WIDTH, initial_indent="   ", subsequent_indent="   ") + "\n")

        events = print_audit(copy / "audit.jsonl", style)
        if opts.report:
            report = {"language": "python", "steps": session.records, "audit": events, "fetches": web.requests,
                      "sandbox_worker": os.environ.get("HARNESSWEAVER_SANDBOX_WORKER")}
            opts.report.write_text(json.dumps(report, indent=1, ensure_ascii=False), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
