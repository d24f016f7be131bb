"""`strip_instructions` on AgentDojo's texts (issue 23): how many injections it neutralises, how much benign data it changes.

- Injections: every registered attack that carries a goal (not `manual`, not the `*dos` ones) applied to every injection
  task of the four suites, once (the first user task of the suite, at its first injection vector). An injection is
  neutralised when the sanitized text no longer holds the injection task's goal.
- Benign data: every string of each suite's environment with its injection vectors at their defaults (the data a
  user task reads when no attack is placed). Changed = the sanitizer rewrote it.

Prints a JSON summary; `--write-docs` writes the figures into docs/sanitizers.md between the agentdojo markers.
"""

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any, Dict, Iterator, List

import harnessweaver as hw
from agentdojo.attacks.attack_registry import load_attack
from agentdojo.task_suite.load_suites import get_suites

sys.path.insert(0, str(Path(__file__).resolve().parent))
from replay import ATTACK_NAMES, ROOT, VERSION, _Pipeline, replace_between  # noqa: E402


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def strip(texts: List[str]) -> List[str]:
    out, _ = hw.sanitize(texts, ["strip_instructions"])
    return list(out)


def measure() -> Dict[str, Any]:
    suites = get_suites(VERSION)
    per_attack: Dict[str, List[int]] = {}
    benign_total = benign_changed = 0
    changed_examples: List[str] = []
    for name, suite in suites.items():
        user = next(iter(suite.user_tasks.values()))
        texts, goals, attacks = [], [], []
        for attack_name in ATTACK_NAMES:
            attack = load_attack(attack_name, suite, _Pipeline())
            for inj in suite.injection_tasks.values():
                injections = attack.attack(user, inj)
                texts.append(next(iter(injections.values())))
                goals.append(inj.GOAL)
                attacks.append(attack_name)
        for text, goal, attack_name, clean in zip(texts, goals, attacks, strip(texts)):
            slot = per_attack.setdefault(attack_name, [0, 0])
            slot[1] += 1
            if goal not in clean and clean != text:
                slot[0] += 1
        env = suite.load_and_inject_default_environment({}).model_dump(mode="json")
        values = [s for s in strings(env) if s.strip()]
        for before, after in zip(values, strip(values)):
            benign_total += 1
            if before != after:
                benign_changed += 1
                if len(changed_examples) < 20:
                    changed_examples.append(f"{name}: {before[:160]!r}")
    neutralised = sum(n for n, _ in per_attack.values())
    total = sum(d for _, d in per_attack.values())
    return {"neutralised": neutralised, "injections": total, "per_attack": per_attack,
            "benign_changed": benign_changed, "benign_strings": benign_total, "changed_examples": changed_examples}


def write_docs(r: Dict[str, Any]) -> None:
    path = ROOT / "docs" / "sanitizers.md"
    doc = path.read_text(encoding="utf-8")
    rows = "\n".join(f"| `{a}` | {n}/{d} |" for a, (n, d) in sorted(r["per_attack"].items()))
    text = (f"`make bench-agentdojo-sanitize` (AgentDojo {VERSION}): `strip_instructions` neutralises "
            f"**{r['neutralised']} of {r['injections']}** injection texts "
            f"({100 * r['neutralised'] / r['injections']:.1f}%), and changes {r['benign_changed']} of "
            f"{r['benign_strings']} benign strings of the four suites' environments "
            f"({100 * r['benign_changed'] / max(r['benign_strings'], 1):.2f}%).\n\n"
            f"| attack | neutralised |\n|---|---|\n{rows}")
    path.write_text(replace_between(doc, text), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    r = measure()
    print(json.dumps(r, indent=2))
    if args.write_docs:
        write_docs(r)


if __name__ == "__main__":
    main()
