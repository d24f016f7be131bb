"""Writes fixtures/builtins/*.json: the governed built-in tools (issue 20) as
scenarios every language runs (runtime/tests/fixtures_builtins.rs,
tests/python/test_builtins_fixtures.py, tests/node/builtins_fixtures.test.mjs).

The shape is the governor scenarios' (fixtures/README.md) with three more
steps: `fs` (filesystem changes made between calls, relative to the scenario
directory), `file` (a file's text or absence) and `accept` (an approval's
candidate accepted into the permission file), and `symlinks` created with
`files`. Expectations are written by hand here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "builtins"

PRINCIPALS = {
    "alice": {"id": "alice", "roles": ["developer"], "scopes": [], "attrs": {}},
    "bob": {"id": "bob", "roles": ["reviewer"], "scopes": [], "attrs": {}},
}

ALL_TOOLS = ["read_file", "write_file", "edit_file", "list_dir", "search_files", "run_command", "fetch"]


def harness(builtins: Dict[str, Any], extra: Dict[str, Any] | None = None) -> str:
    spec: Dict[str, Any] = {
        "mode": "test",
        "tools": {"manifests": []},
        "builtins": {"workspace": "ws", "tools": ALL_TOOLS, **builtins},
    }
    spec.update(extra or {})
    return json.dumps(
        {"apiVersion": "harnessweaver/v1", "kind": "Harness", "metadata": {"name": "fixture"}, "spec": spec}, indent=2
    )


def scenario(
    name: str, description: str, files: Dict[str, str], steps: List[Dict[str, Any]], symlinks: Dict[str, str] | None = None
) -> None:
    case: Dict[str, Any] = {
        "description": description,
        "start_ms": 1700000000000,
        "files": files,
        "principals": PRINCIPALS,
        "handlers": {},
        "steps": steps,
    }
    if symlinks:
        case["symlinks"] = symlinks
    (OUT / f"{name}.json").write_text(json.dumps(case, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def call(tool: str, args: Dict[str, Any], expect: Dict[str, Any], **kw: Any) -> Dict[str, Any]:
    return {"call": tool, "args": args, "principal": kw.pop("principal", "alice"), **kw, "expect": expect}


def refused(code: str, step: str) -> Dict[str, Any]:
    return {"decision": "refused", "code": code, "step": step}


PENDING = {"decision": "pending", "code": "approval_required", "step": "approval"}
WS = {"ws/docs/a.md": "alpha\n", "ws/notes/a.md": "one\ntwo\n", "outside/secret": "do not read\n"}

ACCESS = [
    {"effect": "allow", "kind": "filesystem.write", "paths": ["notes/**"]},
    {"effect": "deny", "kind": "filesystem.write", "paths": [".git/**"]},
    {"effect": "deny", "kind": "command.execute", "command": ["rm"]},
    {"effect": "allow", "kind": "command.execute", "command": ["echo"]},
    {"effect": "allow", "kind": "command.execute", "command": ["git", "pu"]},
]


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    base = {"egress": ["https://docs.example.com"], "access": ACCESS}

    bad = json.loads(harness({"workspace": "missing", "tools": ["read_file", "delete_everything"], "egress": ["ftp://x"]}))
    (OUT / "load_problems.json").write_text(
        json.dumps(
            {
                "description": "spec.builtins is checked at load: an unknown tool, an origin that is not http(s), a workspace that is not a directory",
                "start_ms": 1700000000000,
                "files": {"harness.yaml": json.dumps(bad, indent=2)},
                "principals": PRINCIPALS,
                "handlers": {},
                "load_problems": [
                    {"code": "invalid_value", "path": "spec.builtins.tools[1]"},
                    {"code": "invalid_value", "path": "spec.builtins.egress"},
                    {"code": "path_not_found", "path": "spec.builtins.workspace"},
                ],
                "steps": [],
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )

    scenario(
        "preparation_refusals",
        "preparation refuses malformed input, path escapes, invalid regexes, unsupported URLs and commands it cannot parse, before any gate",
        {"harness.yaml": harness(base), **WS},
        [
            call("read_file", {"path": "../outside/secret"}, {**refused("path_escape", "validate")}),
            call("read_file", {"path": "docs/../../outside/secret"}, refused("path_escape", "validate")),
            call("read_file", {"path": "/etc/passwd"}, refused("path_escape", "validate")),
            call("read_file", {"path": ""}, refused("invalid_args", "validate")),
            call("write_file", {"path": "docs/a\u202etxt.md", "content": "x"}, refused("invalid_args", "validate")),
            call("write_file", {"path": "docs/a.md"}, refused("invalid_args", "validate")),
            call("search_files", {"pattern": "(unclosed"}, refused("invalid_args", "validate")),
            call("fetch", {"url": "ftp://docs.example.com/x"}, refused("invalid_args", "validate")),
            call("fetch", {"url": "https://user:pw@docs.example.com/x"}, refused("invalid_args", "validate")),
            call("fetch", {"url": "https://docs.example.com/", "method": "POST"}, refused("invalid_args", "validate")),
            call("run_command", {"command": "echo $HOME"}, refused("invalid_args", "validate")),
            call("run_command", {"command": "echo a && echo b"}, refused("invalid_args", "validate")),
            call("run_command", {"command": "cat < /etc/passwd"}, refused("invalid_args", "validate")),
            call("run_command", {"argv": [""]}, refused("invalid_args", "validate")),
            call("run_command", {"argv": ["sh", "-c", "echo hi"]}, refused("invalid_args", "validate")),
            call("run_command", {"argv": ["echo"], "command": "echo"}, refused("invalid_args", "validate")),
            call("run_command", {"argv": ["echo", "hi"], "cwd": "../outside"}, refused("path_escape", "validate")),
        ],
    )

    scenario(
        "gate_outcomes",
        "the gate: reads allowed, writes under an allow rule allowed, other writes gated with candidates, denied paths and origins refused",
        {"harness.yaml": harness(base), **WS},
        [
            call(
                "read_file",
                {"path": "docs/a.md"},
                {"decision": "allowed", "output": {"path": "docs/a.md", "content": "alpha\n", "complete": True}},
            ),
            call(
                "list_dir",
                {"path": "docs"},
                {
                    "decision": "allowed",
                    "output": {"path": "docs", "entries": [{"name": "a.md", "kind": "file"}], "truncated": False},
                },
            ),
            call(
                "search_files",
                {"pattern": "^tw"},
                {
                    "decision": "allowed",
                    "output": {"path": ".", "matches": [{"path": "notes/a.md", "line": 2, "text": "two"}], "truncated": False},
                },
            ),
            call(
                "write_file",
                {"path": "notes/b.md", "content": "new\n"},
                {"decision": "allowed", "output": {"path": "notes/b.md", "created": True, "bytes": 4}},
            ),
            {"file": "ws/notes/b.md", "expect": {"text": "new\n"}},
            call(
                "write_file",
                {"path": "src/main.rs", "content": "fn main() {}\n"},
                {
                    **PENDING,
                    "reasons": ["filesystem.write needs approval: write `src/main.rs`"],
                    "approval": {
                        "candidates": [
                            {
                                "id": "c1",
                                "kind": "filesystem.write",
                                "description": "always allow writes to `src/main.rs` in this workspace",
                                "paths": ["src/main.rs"],
                            },
                            {
                                "id": "c2",
                                "kind": "filesystem.write",
                                "description": "always allow writes under `src/` in this workspace",
                                "paths": ["src/**"],
                            },
                        ]
                    },
                },
            ),
            {"file": "ws/src/main.rs", "expect": {"exists": False}},
            call(
                "write_file",
                {"path": ".git/config", "content": "x"},
                {
                    **refused("access_denied", "policy"),
                    "reasons": ["harness rule: deny filesystem.write `.git/**` denies write `.git/config`"],
                },
            ),
            call(
                "run_command",
                {"argv": ["echo", "hi"]},
                {"decision": "allowed", "output": {"exit_code": 0, "stdout": "hi\n", "stderr": "", "truncated": False}},
            ),
            call(
                "run_command",
                {"argv": ["ls", "-a"]},
                {
                    **PENDING,
                    "approval": {
                        "candidates": [
                            {
                                "id": "c1",
                                "kind": "command.execute",
                                "description": "always allow `ls` in this workspace",
                                "command": ["ls"],
                            },
                            {
                                "id": "c2",
                                "kind": "command.execute",
                                "description": "always allow exactly `ls -a` in this workspace",
                                "command": ["ls", "-a"],
                            },
                        ]
                    },
                },
            ),
            call(
                "fetch",
                {"url": "https://docs.example.com/guide?token=secret"},
                {
                    **PENDING,
                    "reasons": ["network needs approval: GET from `docs.example.com:443`"],
                    "approval": {
                        "candidates": [
                            {
                                "id": "c1",
                                "kind": "network",
                                "description": "always allow fetches from `https://docs.example.com:443`",
                                "origins": ["https://docs.example.com:443"],
                            }
                        ]
                    },
                },
            ),
            call(
                "fetch",
                {"url": "https://evil.example.com/"},
                {
                    **refused("access_denied", "policy"),
                    "reasons": ["`https://evil.example.com:443` is not in `spec.builtins.egress`"],
                },
            ),
            {
                "explain": "write_file",
                "args": {"path": ".git/config", "content": "x"},
                "principal": "alice",
                "expect": {"decision": "refused", "code": "access_denied", "step": "policy"},
            },
            {
                "explain": "run_command",
                "args": {"argv": ["ls", "-a"]},
                "principal": "alice",
                "expect": {"decision": "pending", "code": "approval_required"},
            },
            {"explain": "read_file", "args": {"path": "docs/a.md"}, "principal": "alice", "expect": {"decision": "allowed"}},
        ],
    )

    scenario(
        "deny_precedence",
        "a deny of harness.yaml or a managed policy layer stands whatever the permission file allows; confusable paths meet the deny",
        {
            "harness.yaml": harness(
                {
                    "access": [
                        {"effect": "deny", "kind": "command.execute", "command": ["rm", "-rf"]},
                        {"effect": "deny", "kind": "filesystem.write", "paths": [".git/**"]},
                    ]
                },
                {"policy": {"layers": [{"name": "managed", "file": "policy/managed.yaml"}]}},
            ),
            "policy/managed.yaml": json.dumps(
                {
                    "apiVersion": "harnessweaver/v1",
                    "kind": "Policy",
                    "metadata": {"name": "managed"},
                    "spec": {
                        "rules": [
                            {
                                "name": "no-secrets",
                                "effect": "deny",
                                "tools": ["write_file", "edit_file"],
                                "when": 'args.path.startsWith("secrets/")',
                            }
                        ]
                    },
                },
                indent=2,
            ),
            "permissions.yaml": 'apiVersion: harnessweaver/v1\nkind: Permissions\nrules:\n  - effect: allow\n    kind: command.execute\n    command: ["rm"]\n  - effect: allow\n    kind: filesystem.write\n    paths: ["**"]\n',
            **WS,
        },
        [
            call("run_command", {"argv": ["rm", "-fr", "docs"]}, refused("access_denied", "policy")),
            call("run_command", {"argv": ["/bin/rm", "-r", "-f", "docs"]}, refused("access_denied", "policy")),
            {"file": "ws/docs/a.md", "expect": {"text": "alpha\n"}},
            call(
                "write_file",
                {"path": "secrets/key", "content": "x"},
                {**refused("policy_denied", "policy"), "reasons": ["layer `managed`: policy rule `no-secrets`"]},
            ),
            call("write_file", {"path": ".git/hooks", "content": "x"}, refused("access_denied", "policy")),
            call("write_file", {"path": ".g\u0456t/hooks", "content": "x"}, refused("access_denied", "policy")),
            call("write_file", {"path": "docs/new.md", "content": "ok\n"}, {"decision": "allowed"}),
            {"file": "ws/docs/new.md", "expect": {"text": "ok\n"}},
        ],
    )

    scenario(
        "candidates_accepted_and_refused",
        "an accepted candidate is written to the permission file and the same question is not asked again; a denied approval accepts nothing; a candidate never widens a deny",
        {
            "harness.yaml": harness({"access": [{"effect": "deny", "kind": "filesystem.write", "paths": ["docs/private/**"]}]}),
            **WS,
            "ws/docs/private/.keep": "",
        },
        [
            {"run": "r1", "principal": "alice"},
            call("run_command", {"argv": ["ls", "-a"]}, PENDING, run="r1"),
            {"accept": "last", "candidate": "c1", "approver": "alice", "expect": {"error": "approver_not_allowed"}},
            {"accept": "last", "candidate": "c9", "approver": "bob", "expect": {"error": "invalid_argument"}},
            {
                "accept": "last",
                "candidate": "c1",
                "approver": "bob",
                "expect": {
                    "state": "approved",
                    "candidate": {
                        "id": "c1",
                        "kind": "command.execute",
                        "description": "always allow `ls` in this workspace",
                        "command": ["ls"],
                    },
                },
            },
            {
                "file": "permissions.yaml",
                "expect": {
                    "contains": [
                        "kind: Permissions",
                        "always allow `ls` in this workspace (accepted by bob for approval apr-",
                        "kind: command.execute",
                        'command: ["ls"]',
                    ]
                },
            },
            call("run_command", {"argv": ["ls", "-a"]}, {"decision": "allowed"}, run="r1", approval="last"),
            call("run_command", {"argv": ["ls", "-1"]}, {"decision": "allowed"}, run="r1"),
            call("run_command", {"argv": ["lsblk"]}, PENDING, run="r1"),
            call("write_file", {"path": "src/x.rs", "content": "x"}, PENDING, run="r1"),
            {"deny": "last", "by": "bob", "reason": "not now", "expect": {"state": "denied"}},
            call("write_file", {"path": "src/x.rs", "content": "x"}, PENDING, run="r1"),
            {"file": "permissions.yaml", "expect": {"lacks": ["src/"]}},
            call("write_file", {"path": "docs/b.md", "content": "b\n"}, PENDING, run="r1"),
            {"accept": "last", "candidate": "c2", "approver": "bob", "expect": {"state": "approved"}},
            call("write_file", {"path": "docs/c.md", "content": "c\n"}, {"decision": "allowed"}, run="r1"),
            call("write_file", {"path": "docs/private/k.md", "content": "k\n"}, refused("access_denied", "policy"), run="r1"),
            {"file": "ws/docs/private/k.md", "expect": {"exists": False}},
        ],
    )

    scenario(
        "command_tokens_and_compounds",
        "command rules match tokens, never text; compound commands are split and every part must pass; flags compare as sets",
        {
            "harness.yaml": harness(
                {
                    "shell": True,
                    "access": [
                        {"effect": "deny", "kind": "command.execute", "command": ["rm"]},
                        {"effect": "allow", "kind": "command.execute", "command": ["echo"]},
                        {"effect": "allow", "kind": "command.execute", "command": ["git", "pu"]},
                        {"effect": "allow", "kind": "command.execute", "command": ["xargs"]},
                        {"effect": "allow", "kind": "command.execute", "command": ["sh"]},
                        {"effect": "allow", "kind": "command.execute", "command": ["timeout"]},
                    ],
                }
            ),
            **WS,
        },
        [
            call("run_command", {"command": "echo ok && rm -rf docs"}, refused("access_denied", "policy")),
            call("run_command", {"command": "echo docs | xargs rm"}, refused("access_denied", "policy")),
            call("run_command", {"command": "echo $(rm -rf docs)"}, refused("access_denied", "policy")),
            call("run_command", {"command": "echo `rm -rf docs`"}, refused("access_denied", "policy")),
            call("run_command", {"command": "sh -c 'echo a; rm -r -f docs'"}, refused("access_denied", "policy")),
            call("run_command", {"command": "timeout 5 rm docs/a.md"}, refused("access_denied", "policy")),
            call("run_command", {"argv": ["env", "rm", "docs/a.md"]}, refused("access_denied", "policy")),
            call("run_command", {"argv": ["nice", "-n", "5", "rm", "-f", "docs/a.md"]}, refused("access_denied", "policy")),
            {"file": "ws/docs/a.md", "expect": {"text": "alpha\n"}},
            call("run_command", {"command": "git push"}, PENDING),
            call(
                "run_command",
                {"command": "echo a && echo b"},
                {"decision": "allowed", "output": {"exit_code": 0, "stdout": "a\nb\n", "stderr": "", "truncated": False}},
            ),
            call(
                "run_command",
                {"command": "echo 'a && rm -rf docs'"},
                {
                    "decision": "allowed",
                    "output": {"exit_code": 0, "stdout": "a && rm -rf docs\n", "stderr": "", "truncated": False},
                },
            ),
        ],
    )

    scenario(
        "path_canonicalisation",
        "links out of the workspace and final-component links are refused; a directory swapped for a link between the request and its approval fails closed",
        {"harness.yaml": harness({}), **WS},
        [
            call(
                "read_file",
                {"path": "docs/../docs/./a.md"},
                {"decision": "allowed", "output": {"path": "docs/a.md", "content": "alpha\n", "complete": True}},
            ),
            call("read_file", {"path": "link"}, refused("path_escape", "validate")),
            call("read_file", {"path": "out/secret"}, refused("path_escape", "validate")),
            call("list_dir", {"path": "out"}, refused("path_escape", "validate")),
            call(
                "list_dir",
                {},
                {
                    "decision": "allowed",
                    "output": {
                        "path": ".",
                        "entries": [
                            {"name": "docs", "kind": "dir"},
                            {"name": "link", "kind": "link"},
                            {"name": "notes", "kind": "dir"},
                            {"name": "out", "kind": "link"},
                        ],
                        "truncated": False,
                    },
                },
            ),
            call("write_file", {"path": "docs/new.md", "content": "x"}, PENDING),
            {"fs": [{"rename": "ws/docs", "to": "ws/docs_old"}, {"symlink": "ws/docs", "to": "../outside"}]},
            {"approve": "last", "approver": "bob", "expect": refused("path_escape", "validate")},
            {"file": "outside/new.md", "expect": {"exists": False}},
        ],
        symlinks={"ws/link": "../outside/secret", "ws/out": "../outside"},
    )

    audit = dict(
        description="the audit event of a built-in call is narrow: its subject is the path, the argv, or the method and host; never content or a query",
        files={"harness.yaml": harness(base, {"audit": {"sink": "callback"}}), **WS},
        steps=[
            call("read_file", {"path": "docs/a.md"}, {"decision": "allowed"}),
            call("write_file", {"path": "notes/new.md", "content": "a secret body\n"}, {"decision": "allowed"}),
            call("run_command", {"argv": ["echo", "hi"]}, {"decision": "allowed"}),
            call("fetch", {"url": "https://docs.example.com/search?q=private+words"}, PENDING),
            call("read_file", {"path": "../outside/secret"}, refused("path_escape", "validate")),
        ],
    )
    scenario("audit_is_narrow", audit["description"], audit["files"], audit["steps"])
    case = json.loads((OUT / "audit_is_narrow.json").read_text(encoding="utf-8"))
    case["audit"] = [
        {"tool": "read_file", "decision": "allowed", "subject": "docs/a.md"},
        {"tool": "write_file", "decision": "allowed", "subject": "notes/new.md"},
        {"tool": "run_command", "decision": "allowed", "subject": "echo hi"},
        {"tool": "fetch", "decision": "pending", "code": "approval_required", "subject": "GET docs.example.com:443"},
        {"tool": "read_file", "decision": "refused", "code": "path_escape", "subject": None},
    ]
    (OUT / "audit_is_narrow.json").write_text(json.dumps(case, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    scenario(
        "stale_writes",
        "a write needs a complete read of the file in the same run, and fails when the file changed since; a command in between voids every observation",
        {"harness.yaml": harness(base), **WS},
        [
            {"run": "r1", "principal": "alice"},
            {"run": "r2", "principal": "alice"},
            call("write_file", {"path": "notes/a.md", "content": "blind\n"}, refused("stale_write", "invoke"), run="r1"),
            call("read_file", {"path": "notes/a.md"}, {"decision": "allowed"}, run="r1"),
            {"fs": [{"write": "ws/notes/a.md", "text": "changed outside\n"}]},
            call("write_file", {"path": "notes/a.md", "content": "mine\n"}, refused("stale_write", "invoke"), run="r1"),
            {"file": "ws/notes/a.md", "expect": {"text": "changed outside\n"}},
            call("read_file", {"path": "notes/a.md"}, {"decision": "allowed"}, run="r1"),
            call(
                "write_file",
                {"path": "notes/a.md", "content": "mine\n"},
                {"decision": "allowed", "output": {"path": "notes/a.md", "created": False, "bytes": 5}},
                run="r1",
            ),
            call(
                "edit_file",
                {"path": "notes/a.md", "old_text": "absent", "new_text": "x"},
                refused("edit_mismatch", "invoke"),
                run="r1",
            ),
            call("edit_file", {"path": "notes/a.md", "old_text": "mine", "new_text": "ours"}, {"decision": "allowed"}, run="r1"),
            {"file": "ws/notes/a.md", "expect": {"text": "ours\n"}},
            call(
                "edit_file",
                {"path": "notes/a.md", "old_text": "ours", "new_text": "theirs"},
                refused("stale_write", "invoke"),
                run="r2",
            ),
            call("read_file", {"path": "notes/a.md"}, {"decision": "allowed"}, run="r2"),
            call("write_file", {"path": "notes/a.md", "content": "r1 wins\n"}, {"decision": "allowed"}, run="r1"),
            call("write_file", {"path": "notes/a.md", "content": "r2 loses\n"}, refused("stale_write", "invoke"), run="r2"),
            call("read_file", {"path": "notes/a.md"}, {"decision": "allowed"}, run="r1"),
            call("run_command", {"argv": ["echo", "between"]}, {"decision": "allowed"}, run="r1"),
            call(
                "edit_file",
                {"path": "notes/a.md", "old_text": "wins", "new_text": "won"},
                refused("stale_write", "invoke"),
                run="r1",
            ),
            {"file": "ws/notes/a.md", "expect": {"text": "r1 wins\n"}},
        ],
    )


if __name__ == "__main__":
    main()
