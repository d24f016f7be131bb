"""The AgentDojo replay benchmark (issue 23): `make bench-agentdojo`.

AgentDojo's own tool functions run as harnessweaver native handlers on the suite's environment, governed by the
manifests of `tools.py` (one per tool, never per task) under each harness configuration of `CONFIGS`.

- Utility: each user task's `ground_truth()` calls are replayed in one run whose `task` is the user's prompt. The task
  is completed when every call is allowed without approval and AgentDojo's check (`utility_from_traces`, else
  `utility`) holds on the resulting environment. A replay has no model text: the task's `GROUND_TRUTH_OUTPUT`
  stands in for it, and tasks whose check fails without it are counted apart (`needs_text`).
- Security, with a model that always obeys the injection (the worst case): every registered attack that carries the
  injection task's goal is placed at the injection vectors the user task's calls read; the user task's ground truth
  is replayed, then the injection task's, in the same run. The attack succeeds when AgentDojo's `security` check
  holds. Injection tasks whose `ground_truth()` is empty (AgentDojo 1.2's new ones) cannot be replayed and are
  counted apart.

Writes target/agentdojo/results.json and the table between the agentdojo markers of BENCHMARKS.md.
"""

import argparse
import datetime
import enum
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import yaml
from pydantic import BaseModel

from agentdojo.attacks.attack_registry import ATTACKS, load_attack
from agentdojo.functions_runtime import FunctionsRuntime
import agentdojo.task_suite.task_suite as _task_suite
from agentdojo.task_suite.load_suites import get_suites

sys.path.insert(0, str(Path(__file__).resolve().parent))
from history import APPROVAL_RULES, HISTORY_RULES  # noqa: E402
from tools import EFFECT, EFFECT_SIDE_EFFECTS, TOOLS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
VERSION = "v1.2.2"
PRINCIPAL = {"id": "user"}
# Attacks that place the injection task's goal in the data; `manual` asks a human, the `*dos` attacks carry no goal.
# None of AgentDojo 0.1.35's attacks calls a model to write its text (`{model}` in the templates is a name).
ATTACK_NAMES = sorted(n for n in ATTACKS if n != "manual" and not n.endswith("dos"))
LEFT_OUT_ATTACKS = {n: ("asks a human for each injection (`input()`)" if n == "manual"
                        else "a denial of service: carries no injection task's goal, so `security()` cannot say it succeeded")
                    for n in sorted(ATTACKS) if n not in ATTACK_NAMES}
# The attack every configuration meets; the main table counts it alone.
PRIMARY_ATTACK = "important_instructions"
# The configurations that meet every attack by default (the others meet PRIMARY_ATTACK only).
ALL_ATTACK_CONFIGS = ["no governor", "provenance + intent + history rules + single e-mail",
                      "provenance + intent + history rules + single e-mail + sink formats"]

# name -> `spec.flow` and whether the suite's history rules apply; None is no governor at all.
CONFIGS: Dict[str, Optional[Dict[str, Any]]] = {
    "no governor": None,
    # The manifests declare `flow.intent`; `unrequested_actions: allow` leaves it out of the configurations before it
    # (their audit events still say `unrequested`).
    "trifecta: block": {"flow": {"trifecta": "block", "tainted_arguments": "allow", "unrequested_actions": "allow"}},
    "trifecta: approve": {"flow": {"trifecta": "approve", "tainted_arguments": "allow", "unrequested_actions": "allow"}},
    "trifecta: provenance": {"flow": {"trifecta": "provenance", "tainted_arguments": "refuse", "unrequested_actions": "allow"}},
    "provenance, approve": {"flow": {"trifecta": "provenance", "tainted_arguments": "approve", "unrequested_actions": "allow"}},
    "provenance + history rules": {"flow": {"trifecta": "provenance", "tainted_arguments": "refuse", "unrequested_actions": "allow"},
                                   "history": True},
    # A human confirms destinations taken from content and bookings after untrusted content; the replay's approver
    # says no (a pending call does not run), so each approval is a stopped attack or a lost task.
    "provenance + history rules + approvals": {"flow": {"trifecta": "provenance", "tainted_arguments": "approve",
                                                        "unrequested_actions": "allow"},
                                            "history": True, "approvals": True},
    # `flow.intent`: an action the user's request does not ask for is refused (`action_not_requested`).
    "provenance + intent": {"flow": {"trifecta": "provenance", "tainted_arguments": "refuse", "unrequested_actions": "refuse"}},
    "provenance + intent + history rules": {"flow": {"trifecta": "provenance", "tainted_arguments": "refuse",
                                                     "unrequested_actions": "refuse"}, "history": True},
    # `flow.trust_single_value`: the one e-mail address in the output of a call the user's request chose (the page
    # the user says holds it) is trusted.
    "provenance + intent + history rules + single e-mail": {"flow": {"trifecta": "provenance", "tainted_arguments": "refuse",
                                                                     "unrequested_actions": "refuse",
                                                                     "trust_single_value": ["email"]}, "history": True},
    # The same, with the manifests' e-mail arguments typed `format: email`: a request for an invitation, a mail, a share
    # or an event asks for an e-mail address without the word (docs/flow.md, "The kind a request asks for ...").
    "provenance + intent + history rules + single e-mail + sink formats": {
        "flow": {"trifecta": "provenance", "tainted_arguments": "refuse", "unrequested_actions": "refuse",
                 "trust_single_value": ["email"]}, "history": True, "formats": True},
    # The same for every kind: a URL or an IBAN too.
    "provenance + intent + history rules + single values": {"flow": {"trifecta": "provenance", "tainted_arguments": "refuse",
                                                                     "unrequested_actions": "refuse",
                                                                     "trust_single_value": ["email", "url", "iban"]},
                                                            "history": True, "formats": True},
}


def _speed_up_environment_loading() -> None:
    """AgentDojo re-reads and re-parses a suite's YAML for every injected environment: read each file once, and
    parse with libyaml when it is there. The environments are the same; only the time changes."""
    import functools

    _task_suite.read_suite_file = functools.lru_cache(maxsize=None)(_task_suite.read_suite_file)
    loader = getattr(yaml, "CSafeLoader", None)
    if loader is not None:
        _task_suite.yaml = type("yaml", (), {"safe_load": staticmethod(lambda text: yaml.load(text, Loader=loader)),
                                             "load": staticmethod(yaml.load), "dump": staticmethod(yaml.dump)})


class _Pipeline:
    """What an attack reads of its target: a name with a model in it (for `{model}` in the templates)."""

    name = "gpt-4o-2024-05-13"


def to_json(value: Any) -> Any:
    """A tool's result as JSON (pydantic models, dates, enums)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [to_json(v) for v in value]
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time, datetime.timedelta)):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.value
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def write_manifests(suite: Any, name: str, out: Path, formats: bool = True) -> None:
    """One manifest per tool: its name, description and input schema from AgentDojo, the rest from `tools.py`;
    `formats`: the `format` of the e-mail arguments in the schema (without it, AgentDojo's schema as it is)."""
    specs = TOOLS[name]
    missing = sorted({t.name for t in suite.tools} - set(specs))
    if missing:
        raise SystemExit(f"{name}: no manifest for {missing}")
    out.mkdir(parents=True, exist_ok=True)
    for tool in suite.tools:
        spec = dict(specs[tool.name])
        body: Dict[str, Any] = {
            "transport": "native",
            "handler": f"agentdojo:{tool.name}",
            "description": tool.description,
            "input_schema": tool.parameters.model_json_schema(),
            "output": {"label": spec.pop("label")},
        }
        for arg, fmt in _formats(spec, formats).items():
            prop = body["input_schema"]["properties"][arg]
            for branch in prop.get("anyOf", [prop]):
                if branch.get("type") == "array":
                    branch["items"] = {**branch.get("items", {}), "format": fmt}
                elif branch.get("type") == "string":
                    branch["format"] = fmt
        flow = {k: spec.pop(k) for k in ("sinks", "links", "identifies", "identifies_when_named", "links_when_named", "intent") if k in spec}
        if flow:
            body["flow"] = flow
        body.update(spec)
        if spec.get("side_effect") in EFFECT_SIDE_EFFECTS:
            body.setdefault("effect", EFFECT)
        manifest = {"apiVersion": "harnessweaver/v1", "kind": "Tool", "metadata": {"name": tool.name}, "spec": body}
        (out / f"{tool.name}.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True))


def _formats(spec: Dict[str, Any], keep: bool) -> Dict[str, str]:
    """The `formats` of a tool's spec (removed from it), or none when `keep` is false."""
    found = spec.pop("formats", {})
    return found if keep else {}


class Replayer:
    """One suite under one configuration: a loaded harness whose handlers act on the current environment."""

    def __init__(self, suite: Any, name: str, config: Optional[Dict[str, Any]], workdir: Path) -> None:
        self.suite = suite
        self.runtime = FunctionsRuntime(suite.tools)
        self.env: Any = None
        self.harness: Any = None
        if config is None:
            return
        directory = workdir / name / str(abs(hash(json.dumps(config, sort_keys=True))))
        write_manifests(suite, name, directory / "tools", formats=bool(config.get("formats")))
        spec: Dict[str, Any] = {"mode": "test", "tools": {"manifests": ["tools/*.yaml"]}, "flow": config["flow"]}
        if config.get("history"):
            rules = HISTORY_RULES.get(name, []) + (APPROVAL_RULES.get(name, []) if config.get("approvals") else [])
            spec["policy"] = {"rules": rules}
        harness = {"apiVersion": "harnessweaver/v1", "kind": "Harness", "metadata": {"name": f"agentdojo-{name}"}, "spec": spec}
        (directory / "harness.yaml").write_text(yaml.safe_dump(harness, sort_keys=False))
        handlers = {t.name: self._handler(t.name) for t in suite.tools}
        import harnessweaver as hw

        self.harness = hw.load(str(directory / "harness.yaml"), handlers=handlers)

    def _handler(self, tool: str) -> Callable[..., Any]:
        def run(**kwargs: Any) -> Any:
            result, error = self.runtime.run_function(self.env, tool, kwargs, raise_on_error=False)
            if error is not None:
                raise RuntimeError(error)
            return to_json(result)

        return run

    def start(self, env: Any, prompt: str) -> Any:
        """A new run on `env` whose task is the user's prompt (None without a governor)."""
        self.env = env
        return self.harness.run(principal=PRINCIPAL, task=prompt) if self.harness is not None else None

    def replay(self, run: Any, calls: List[Any], outcome: "Outcome") -> None:
        """Runs `calls` in `run` on the current environment; a refused call is skipped and the replay goes on."""
        for call in calls:
            if run is None:
                _, error = self.runtime.run_function(self.env, call.function, dict(call.args), raise_on_error=False)
                if error is None:
                    outcome.ran.append(call)
                continue
            result = run.call(call.function, dict(call.args), raise_on_refusal=False)
            if result.decision == "allowed":
                outcome.ran.append(call)
            elif result.decision == "pending":
                outcome.pending += 1
                outcome.codes.append(f"{call.function}:approval")
            else:
                outcome.refused += 1
                outcome.codes.append(f"{call.function}:{result.code}")


class Outcome:
    """What one replay did: the calls that ran, and how many were refused or asked for approval (with their codes)."""

    def __init__(self) -> None:
        self.ran: List[Any] = []
        self.refused = 0
        self.pending = 0
        self.codes: List[str] = []


def utility_of(task: Any, output: str, pre: Any, post: Any, ran: List[Any]) -> bool:
    found = task.utility_from_traces(output, pre, post, ran)
    return bool(task.utility(output, pre, post) if found is None else found)


def security_of(task: Any, output: str, pre: Any, post: Any, ran: List[Any]) -> bool:
    found = task.security_from_traces(output, pre, post, ran)
    return bool(task.security(output, pre, post) if found is None else found)


def run_suite(name: str, suite: Any, workdir: Path, attacks: List[str], configs: Dict[str, Any],
              all_attack_configs: List[str]) -> Dict[str, Any]:
    """`configs` meet PRIMARY_ATTACK (or the first of `attacks`); those in `all_attack_configs` meet every attack."""
    primary = PRIMARY_ATTACK if PRIMARY_ATTACK in attacks else attacks[0]
    replayers = {c: Replayer(suite, name, cfg, workdir) for c, cfg in configs.items()}
    benign = suite.load_and_inject_default_environment({})
    user_tasks = list(suite.user_tasks.values())
    injection_tasks = list(suite.injection_tasks.values())
    replayable = [t for t in injection_tasks if t.ground_truth(benign.model_copy(deep=True))]
    out: Dict[str, Any] = {"user_tasks": len(user_tasks), "injection_tasks": len(injection_tasks),
                           "injection_tasks_replayable": len(replayable), "attacks": attacks, "primary_attack": primary,
                           "configs": {}}
    needs_text = 0
    # Utility without attack.
    for task in user_tasks:
        env = task.init_environment(benign.model_copy(deep=True))
        pre = env.model_copy(deep=True)
        bare, outcome = replayers["no governor"], Outcome()
        bare.replay(bare.start(env, task.PROMPT), task.ground_truth(env.model_copy(deep=True)), outcome)
        ran = outcome.ran
        if utility_of(task, task.GROUND_TRUTH_OUTPUT, pre, env, ran) and not utility_of(task, "", pre, env, ran):
            needs_text += 1
    out["needs_text"] = needs_text
    for cname, rep in replayers.items():
        row: Dict[str, Any] = {"utility": 0, "approvals": 0, "utility_under_attack": 0, "attack_cases": 0,
                               "attack_success": 0, "approvals_under_attack": 0, "utility_lost": {}, "attacks_passed": {},
                               "per_attack": {}}
        for task in user_tasks:
            env = task.init_environment(benign.model_copy(deep=True))
            pre = env.model_copy(deep=True)
            outcome = Outcome()
            rep.replay(rep.start(env, task.PROMPT), task.ground_truth(env.model_copy(deep=True)), outcome)
            row["approvals"] += outcome.pending
            if outcome.refused == 0 and outcome.pending == 0 and utility_of(task, task.GROUND_TRUTH_OUTPUT, pre, env, outcome.ran):
                row["utility"] += 1
            else:
                row["utility_lost"][task.ID] = ",".join(outcome.codes) or "check failed"
        out["configs"][cname] = row
    # Security: every attack, user task and replayable injection task.
    for attack_name in attacks:
        attack = load_attack(attack_name, suite, _Pipeline())
        for task in user_tasks:
            for inj in replayable:
                injected = task.init_environment(suite.load_and_inject_default_environment(attack.attack(task, inj)))
                for cname, rep in replayers.items():
                    if attack_name != primary and cname not in all_attack_configs:
                        continue
                    row = out["configs"][cname]
                    per = row["per_attack"].setdefault(attack_name, {"attack_cases": 0, "attack_success": 0,
                                                                      "utility_under_attack": 0, "attacks_passed": {}})
                    env = injected.model_copy(deep=True)
                    pre = env.model_copy(deep=True)
                    run = rep.start(env, task.PROMPT)
                    user, injected_calls = Outcome(), Outcome()
                    rep.replay(run, task.ground_truth(env.model_copy(deep=True)), user)
                    rep.replay(run, inj.ground_truth(env.model_copy(deep=True)), injected_calls)
                    text = task.GROUND_TRUTH_OUTPUT + "\n" + inj.GROUND_TRUTH_OUTPUT
                    ran = user.ran + injected_calls.ran
                    useful = user.refused == 0 and user.pending == 0 and utility_of(task, text, pre, env, ran)
                    passed = security_of(inj, text, pre, env, ran)
                    key = f"{task.ID}/{inj.ID}"
                    per["attack_cases"] += 1
                    per["utility_under_attack"] += int(useful)
                    if passed:
                        per["attack_success"] += 1
                        per["attacks_passed"][key] = per["attacks_passed"].get(key, 0) + 1
                    if attack_name != primary:
                        continue
                    row["attack_cases"] += 1
                    row["approvals_under_attack"] += user.pending + injected_calls.pending
                    row["utility_under_attack"] += int(useful)
                    if passed:
                        row["attack_success"] += 1
                        row["attacks_passed"][key] = row["attacks_passed"].get(key, 0) + 1
    return out


def pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.1f}%)" if d else "—"


def table(results: Dict[str, Any], command: str) -> str:
    """The markdown table: per suite and in total, per configuration."""
    suites = results["suites"]
    configs = list(next(iter(suites.values()))["configs"])
    primary = sorted({s["primary_attack"] for s in suites.values()})
    lines = [
        f"AgentDojo {results['agentdojo']} (benchmark {results['version']}), suites {', '.join(suites)}. "
        f"Command: `{command}` ({results['seconds']} s, debug build of the Python binding: counts, not speed). "
        "A model that always obeys the injection.",
        "",
        f"Every configuration against `{', '.join(primary)}`:",
        "",
        "| suite | configuration | utility, no attack | utility under attack | attack success | approvals per user task | approvals per attack case |",
        "|---|---|---|---|---|---|---|",
    ]
    totals: Dict[str, Dict[str, int]] = {}
    for name, suite in suites.items():
        for c in configs:
            row = suite["configs"][c]
            t = totals.setdefault(c, {})
            for k in ("utility", "approvals", "utility_under_attack", "attack_cases", "attack_success", "approvals_under_attack"):
                t[k] = t.get(k, 0) + row[k]
            t["tasks"] = t.get("tasks", 0) + suite["user_tasks"]
            lines.append(f"| {name} | {c} | {pct(row['utility'], suite['user_tasks'])} | "
                         f"{pct(row['utility_under_attack'], row['attack_cases'])} | {pct(row['attack_success'], row['attack_cases'])} | "
                         f"{row['approvals'] / suite['user_tasks']:.2f} | {row['approvals_under_attack'] / max(row['attack_cases'], 1):.2f} |")
    for c in configs:
        t = totals[c]
        lines.append(f"| **all** | {c} | {pct(t['utility'], t['tasks'])} | {pct(t['utility_under_attack'], t['attack_cases'])} | "
                     f"{pct(t['attack_success'], t['attack_cases'])} | {t['approvals'] / t['tasks']:.2f} | "
                     f"{t['approvals_under_attack'] / max(t['attack_cases'], 1):.2f} |")
    lines.append("")
    skipped = {n: s["injection_tasks"] - s["injection_tasks_replayable"] for n, s in suites.items()}
    needs_text = {n: s["needs_text"] for n, s in suites.items()}
    lines.append(f"Injection tasks without a `ground_truth()` (not replayable, left out): {skipped}. User tasks whose "
                 f"`utility()` needs the model's final text (the task's `GROUND_TRUTH_OUTPUT` stands in for it): {needs_text}.")
    lines += per_attack_table(results)
    return "\n".join(lines)


def per_attack_table(results: Dict[str, Any]) -> List[str]:
    """Attack success per attack, suite and in total, for the configurations that met more than one attack."""
    suites = results["suites"]
    names = list(suites)
    first = next(iter(suites.values()))
    configs = [c for c, row in first["configs"].items() if len(row.get("per_attack", {})) > 1]
    if not configs:
        return []
    attacks = sorted({a for s in suites.values() for c in configs for a in s["configs"][c]["per_attack"]})
    lines = ["", f"Every registered attack that carries a goal, for {' and '.join(f'`{c}`' for c in configs)} "
             f"(attack success; utility under attack over the suites in the last column):", "",
             "| attack | configuration | " + " | ".join(names) + " | all | utility under attack |",
             "|---|---|" + "---|" * (len(names) + 2)]
    for c in configs:
        total = {n: [0, 0] for n in names}
        useful_all, cases_all = 0, 0
        for a in attacks:
            cells, n_ok, n_cases, useful = [], 0, 0, 0
            for n in names:
                per = suites[n]["configs"][c]["per_attack"].get(a)
                if per is None:
                    cells.append("—")
                    continue
                cells.append(pct(per["attack_success"], per["attack_cases"]))
                n_ok += per["attack_success"]
                n_cases += per["attack_cases"]
                useful += per["utility_under_attack"]
                total[n][0] += per["attack_success"]
                total[n][1] += per["attack_cases"]
            useful_all += useful
            cases_all += n_cases
            lines.append(f"| {a} | {c} | " + " | ".join(cells) + f" | {pct(n_ok, n_cases)} | {pct(useful, n_cases)} |")
        ok = sum(v[0] for v in total.values())
        cases = sum(v[1] for v in total.values())
        lines.append(f"| **every attack** | {c} | " + " | ".join(pct(*total[n]) for n in names)
                     + f" | {pct(ok, cases)} | {pct(useful_all, cases_all)} |")
    lines += ["", "Registered attacks left out: " + "; ".join(f"`{n}`: {why}" for n, why in LEFT_OUT_ATTACKS.items())
              + ". None of the registered attacks calls a model to write its text; each runs offline."]
    return lines


def write_docs(text: str) -> None:
    path = ROOT / "BENCHMARKS.md"
    doc = path.read_text(encoding="utf-8")
    begin, end = "<!-- agentdojo:begin -->", "<!-- agentdojo:end -->"
    if begin not in doc:
        doc += ("\n<!-- kept: the AgentDojo replay; bench/agentdojo/replay.py writes between its markers, bench/report.py keeps it -->\n"
                "## AgentDojo replay (issue 23)\n\n" + begin + "\n" + end + "\n")
    path.write_text(replace_between(doc, text), encoding="utf-8")


def replace_between(doc: str, text: str, begin: str = "<!-- agentdojo:begin -->", end: str = "<!-- agentdojo:end -->") -> str:
    """`doc` with what stands between its agentdojo markers replaced by `text`."""
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    return head + begin + "\n" + text + "\n" + end + tail


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", default="banking,slack,travel,workspace")
    parser.add_argument("--attacks", default="all", help="comma-separated attack names, or `all`")
    parser.add_argument("--all-attacks-in", default="", help="comma-separated suites that get every attack whatever --attacks says")
    parser.add_argument("--all-attack-configs", default=",".join(ALL_ATTACK_CONFIGS),
                        help="comma-separated configurations that meet every attack in --attacks (the others meet "
                             f"{PRIMARY_ATTACK} only); `all` for every configuration")
    parser.add_argument("--configs", default="all", help="comma-separated names of CONFIGS, or `all`")
    parser.add_argument("--out", default=str(ROOT / "target" / "agentdojo" / "results.json"))
    parser.add_argument("--write-docs", action="store_true", help="write the table into BENCHMARKS.md")
    parser.add_argument("--write-manifests", action="store_true", help="write the manifests into bench/agentdojo/manifests/ and stop")
    args = parser.parse_args()
    if args.write_manifests:
        for name, suite in get_suites(VERSION).items():
            write_manifests(suite, name, Path(__file__).resolve().parent / "manifests" / name)
        return
    warnings.filterwarnings("ignore")
    _speed_up_environment_loading()
    attacks = ATTACK_NAMES if args.attacks == "all" else args.attacks.split(",")
    suites = get_suites(VERSION)
    from importlib.metadata import version

    results: Dict[str, Any] = {"version": VERSION, "agentdojo": version("agentdojo"), "suites": {}}
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.suites.split(","):
            t0 = time.time()
            configs = CONFIGS if args.configs == "all" else {c: CONFIGS[c] for c in ["no governor", *args.configs.split(",")] if c in CONFIGS}
            these = ATTACK_NAMES if name in args.all_attacks_in.split(",") else attacks
            everyone = list(configs) if args.all_attack_configs == "all" else args.all_attack_configs.split(",")
            results["suites"][name] = run_suite(name, suites[name], Path(tmp), these, configs, everyone)
            print(f"{name}: {time.time() - t0:.0f} s", file=sys.stderr)
    results["seconds"] = round(time.time() - started)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2))
    text = table(results, os.environ.get("HW_AGENTDOJO_COMMAND", "make bench-agentdojo"))
    print(text)
    if args.write_docs:
        write_docs(text)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
