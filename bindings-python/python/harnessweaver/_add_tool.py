"""``harnessweaver add tool module:function``: a manifest from a Python function.

The name comes from the function, the description from its docstring's first
paragraph, ``input_schema`` from its parameters and type hints (str, int,
float, bool, None, Optional/Union, list/set/tuple, dict[str, T], Literal,
Enum, TypedDict, dataclasses, pydantic models, Annotated descriptions,
defaults); parameter descriptions come from a Google-style ``Args:`` section
or ``:param x:`` lines. The manifest is written beside the harness (default
``tools/<name>.yaml``), then the core's ``tools add`` puts its directory into
``tools.manifests`` (a text edit that keeps comments) and pins it.

The type mapping lives here rather than in the core because only Python can
read Python type hints; everything after writing the file is the core's.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import inspect
import json
import re
import sys
import typing
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, cast

from . import _native
from ._governor import _resolve, _roots

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2

RISKS, SIDE_EFFECTS = _native.RISKS, _native.SIDE_EFFECTS
# Tools with these side effects get the draft `effect: null` (issue 21): it does not load until reviewed.
CONTRACT_SIDE_EFFECTS: List[str] = _native.request("tables", {})["contractSideEffects"]


def _import_handler(ref: str, base: str) -> Callable[..., Any]:
    """``module:function`` imported as ``load`` imports it (``harnessweaver add tool``)."""
    module, _, attr = ref.partition(":")
    if not module or not attr:
        raise ImportError(f"handler `{ref}` is not `module:function`")
    (fn, *_), origin, modules = _resolve(module, attr.split("."), base)
    refusal = _native.request(
        "handler_refusal", {"text": ref, "origin": origin, "modules_in_path": modules, "base": base, "roots": _roots()}
    )
    if refusal is not None:
        raise ImportError(refusal.removeprefix("ImportError: "))
    return fn  # type: ignore[no-any-return]


HELP = """\
usage: harnessweaver add tool module:function [--risk R] [--side-effect S] [--transport native]
                              [--harness FILE] [--out DIR] [--force] [--json]

Writes a tool manifest from a Python function: the name from the function, the
description from its docstring's first paragraph, input_schema from its
parameters and type hints (str, int, float, bool, None, Optional and unions,
list/set/tuple, dict[str, T], Literal, Enum, TypedDict, dataclasses, pydantic
models, Annotated[T, "description"], defaults → default/required), parameter
descriptions from an `Args:` section or `:param x:` lines. Then adds the
manifest's directory to the harness's tools.manifests (editing harness.yaml's
text, so comments stay; a missing harness.yaml is created) and pins the tool
(`harnessweaver tools add`). The module is imported as `hw.load` imports
handlers: from the harness directory, or an installed package.

options:
  --risk R            low, medium, high or critical (default low)
  --side-effect S     none, read, write_internal, write_external or destructive (default none)
                      (write_external and destructive get the draft `effect: null`, which
                      does not load until you fill it in and run `harnessweaver tools add`)
  --transport T       native (the only transport a Python function can have)
  --harness FILE      the harness (default ./harness.yaml; a directory means its harness.yaml)
  --out DIR           where to write <name>.yaml (default tools/ beside the harness)
  --force             overwrite an existing manifest that differs
  --json              print one JSON document for scripts
  -h, --help          print this help

exit codes: 0 clean, 1 problems found (cannot import, a type with no JSON Schema form,
a manifest in the way, a harness that does not load), 2 usage error"""


class MappingError(Exception):
    """A type hint with no JSON Schema form."""


class _Parser(argparse.ArgumentParser):
    def format_help(self) -> str:
        return HELP + "\n"

    def format_usage(self) -> str:
        return HELP.split("\n\n", 1)[0] + "\n"

    def error(self, message: str) -> typing.NoReturn:
        sys.stderr.write(f"harnessweaver add tool: {message}\n\n{HELP}\n")
        raise SystemExit(EXIT_USAGE)


# --- type hints → JSON Schema ---------------------------------------------------------------------

_NONE = type(None)


def _json_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return _json_default(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _json_default(dataclasses.asdict(value))
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, (tuple, list, set, frozenset)):
        return [_json_default(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_default(v) for k, v in value.items()}
    json.dumps(value, allow_nan=False)  # raises for anything else
    return value


def _literal_schema(values: Tuple[Any, ...]) -> Dict[str, Any]:
    values = tuple(_json_default(v) for v in values)
    kinds = {_json_type(v) for v in values}
    schema: Dict[str, Any] = {"enum": list(values)}
    if len(kinds) == 1 and None not in kinds:
        schema = {"type": kinds.pop(), **schema}
    return schema


def _json_type(value: Any) -> Optional[str]:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    return None


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__") and hasattr(tp, "__annotations__")


def _is_pydantic(tp: Any) -> bool:
    return isinstance(tp, type) and hasattr(tp, "model_json_schema") and hasattr(tp, "model_fields")


class _Mapper:
    """Maps type hints to JSON Schema, collecting pydantic ``$defs`` at the root."""

    def __init__(self) -> None:
        self.defs: Dict[str, Any] = {}
        self._seen: List[Any] = []

    def schema(self, tp: Any, where: str) -> Dict[str, Any]:
        if tp is inspect.Parameter.empty or tp is Any or tp is object:
            return {}
        if tp is _NONE or tp is None:
            return {"type": "null"}
        if tp is bool:
            return {"type": "boolean"}
        if tp is int:
            return {"type": "integer"}
        if tp is float:
            return {"type": "number"}
        if tp is str:
            return {"type": "string"}
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if _marker(tp):
            return self.schema(args[0], where)
        if origin is typing.Annotated:
            inner = self.schema(args[0], where)
            notes = [a for a in args[1:] if isinstance(a, str)]
            if notes:
                inner = {**inner, "description": notes[0]}
            return inner
        if origin is typing.Literal:
            return _literal_schema(args)
        if origin is typing.Union or (sys.version_info >= (3, 10) and origin is __import__("types").UnionType):
            options = [a for a in args if a is not _NONE]
            nullable = len(options) < len(args)
            if len(options) == 1:
                inner = self.schema(options[0], where)
                if not nullable:
                    return inner
                if isinstance(inner.get("type"), str) and "enum" not in inner:
                    return {**inner, "type": [inner["type"], "null"]}
                return {"anyOf": [inner, {"type": "null"}]}
            schemas = [self.schema(a, where) for a in options]
            if nullable:
                schemas.append({"type": "null"})
            return {"anyOf": schemas}
        if tp in (list, set, frozenset, tuple) or origin in (list, set, frozenset, tuple) or origin in _SEQUENCES:
            container = origin or tp
            if container is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
                return {
                    "type": "array",
                    "prefixItems": [self.schema(a, where) for a in args],
                    "minItems": len(args),
                    "maxItems": len(args),
                }
            schema: Dict[str, Any] = {"type": "array"}
            if args:
                schema["items"] = self.schema(args[0], where)
            if container in (set, frozenset) or origin in (_abc.Set, _abc.MutableSet):
                schema["uniqueItems"] = True
            return schema
        if tp is dict or origin in (dict, _abc.Mapping, _abc.MutableMapping):
            if args and args[0] is not str:
                raise MappingError(f"{where}: `{_name(tp)}` has keys that are not strings; JSON objects have string keys")
            schema = {"type": "object"}
            if args:
                schema["additionalProperties"] = self.schema(args[1], where)
            return schema
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return _literal_schema(tuple(m.value for m in tp))
        if _is_pydantic(tp):
            return self._pydantic(tp)
        if _is_typeddict(tp):
            hints = typing.get_type_hints(tp, include_extras=True)
            required = set(getattr(tp, "__required_keys__", hints))
            # Under `from __future__ import annotations` the class cannot see
            # Required/NotRequired in its string annotations; the hints can.
            for key, hint in hints.items():
                marker = _marker(hint)
                if marker == "NotRequired":
                    required.discard(key)
                elif marker == "Required":
                    required.add(key)
            return self._fields(tp, where, hints, required, {})
        if dataclasses.is_dataclass(tp) and isinstance(tp, type):
            hints = typing.get_type_hints(tp, include_extras=True)
            required, defaults = set(), {}
            for f in dataclasses.fields(tp):
                if f.default is not dataclasses.MISSING:
                    defaults[f.name] = f.default
                elif f.default_factory is not dataclasses.MISSING:
                    defaults[f.name] = f.default_factory()
                else:
                    required.add(f.name)
            return self._fields(tp, where, {f.name: hints[f.name] for f in dataclasses.fields(tp)}, required, defaults)
        raise MappingError(
            f"{where}: `{_name(tp)}` has no JSON Schema form; annotate it with str, int, float, bool, a list, "
            f"dict[str, T], Literal, an Enum, a TypedDict, a dataclass or a pydantic model, or edit "
            f"`input_schema` in the manifest by hand"
        )

    def _fields(self, tp: Any, where: str, hints: Dict[str, Any], required: Set[str], defaults: Dict[str, Any]) -> Dict[str, Any]:
        if tp in self._seen:
            raise MappingError(f"{where}: `{_name(tp)}` refers to itself; use a pydantic model for recursive types")
        self._seen.append(tp)
        props = {}
        for key, hint in hints.items():
            prop = self.schema(hint, f"{where}.{key}")
            if key in defaults:
                prop = {**prop, "default": _json_default(defaults[key])}
            props[key] = prop
        self._seen.pop()
        schema: Dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
        req = [k for k in hints if k in required]
        if req:
            schema["required"] = req
        return schema

    def _pydantic(self, model: Any) -> Dict[str, Any]:
        schema = _untitled(model.model_json_schema(ref_template="#/$defs/{model}"))
        for name, body in schema.pop("$defs", {}).items():
            self.defs[name] = body
        return cast(Dict[str, Any], schema)


from collections import abc as _abc  # noqa: E402

_SEQUENCES = (_abc.Sequence, _abc.MutableSequence, _abc.Set, _abc.MutableSet, _abc.Iterable, _abc.Collection)


def _untitled(schema: Any) -> Any:
    """pydantic's schema without its generated `title`s (noise for a model; a
    property named `title` is a schema, not a string, and stays)."""
    if isinstance(schema, dict):
        return {k: _untitled(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_untitled(v) for v in schema]
    return schema


def _marker(hint: Any) -> Optional[str]:
    """`Required` or `NotRequired` (from typing or typing_extensions) around a TypedDict key's hint."""
    origin = typing.get_origin(hint)
    name = getattr(origin, "_name", None) or getattr(origin, "__name__", None)
    return name if name in ("Required", "NotRequired") else None


def _name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


# --- docstrings -----------------------------------------------------------------------------------


def _doc_parts(fn: Callable[..., Any]) -> Tuple[str, Dict[str, str]]:
    """The docstring's summary (first paragraph, one line) and per-parameter
    descriptions (Google `Args:` sections and Sphinx `:param x:` lines)."""
    doc = inspect.getdoc(fn) or ""
    paragraphs = doc.split("\n\n")
    first = paragraphs[0] if paragraphs else ""
    summary = " ".join(line.strip() for line in first.splitlines() if line.strip())
    if summary.lower().startswith(("args:", "arguments:", "parameters:", ":param")):
        summary = ""
    params: Dict[str, str] = {}
    lines = doc.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith(":param "):
            head, _, text = line[len(":param ") :].partition(":")
            params[head.split()[-1]] = text.strip()
        elif line.lower() in ("args:", "arguments:", "parameters:"):
            indent = None
            i += 1
            current = None
            while i < len(lines):
                raw = lines[i]
                if not raw.strip():
                    i += 1
                    continue
                depth = len(raw) - len(raw.lstrip())
                if indent is None:
                    indent = depth
                if depth < indent or (depth == 0 and raw.strip().endswith(":")):
                    break
                if depth == indent and ":" in raw:
                    head, _, text = raw.strip().partition(":")
                    current = head.split("(")[0].strip().lstrip("*")
                    params[current] = text.strip()
                elif current:
                    params[current] = (params[current] + " " + raw.strip()).strip()
                i += 1
            continue
        i += 1
    return summary, params


# --- the manifest ---------------------------------------------------------------------------------


def input_schema(fn: Callable[..., Any]) -> Dict[str, Any]:
    """The JSON Schema of ``fn``'s keyword arguments (raises MappingError)."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # an annotation that does not resolve
        raise MappingError(f"`{fn.__qualname__}`: its type hints do not resolve: {type(exc).__name__}: {exc}") from exc
    _, param_docs = _doc_parts(fn)
    mapper = _Mapper()
    props: Dict[str, Any] = {}
    required: List[str] = []
    extra: Any = False
    for name, p in inspect.signature(fn).parameters.items():
        where = f"parameter `{name}`"
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            raise MappingError(f"{where}: `*{name}` cannot be passed by name; tools are called with named arguments")
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise MappingError(f"{where} is positional-only; tools are called with named arguments")
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            extra = mapper.schema(hints[name], where) if name in hints else True
            continue
        schema = mapper.schema(hints.get(name, inspect.Parameter.empty), where)
        if name in param_docs and "description" not in schema and param_docs[name]:
            schema = {**schema, "description": param_docs[name]}
        if p.default is inspect.Parameter.empty:
            required.append(name)
        else:
            try:
                schema = {**schema, "default": _json_default(p.default)}
            except (TypeError, ValueError) as exc:
                raise MappingError(f"{where}: the default `{p.default!r}` has no JSON form ({exc})") from exc
        props[name] = schema
    out: Dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    out["additionalProperties"] = extra
    if mapper.defs:
        out["$defs"] = mapper.defs
    return out


def _yaml(value: Any, indent: int) -> str:
    """YAML for JSON-like data: block mappings and lists, JSON-quoted strings
    (JSON's escapes are YAML's), flow style for empty containers."""
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return " {}"
        out = ""
        for k, v in value.items():
            key = k if k.replace("_", "").replace("-", "").isalnum() and not k[0].isdigit() else json.dumps(k)
            out += f"\n{pad}{key}:{_yaml(v, indent + 1)}"
        return out
    if isinstance(value, list):
        if not value:
            return " []"
        if all(not isinstance(v, (dict, list)) for v in value):
            return " [" + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + "]"
        out = ""
        for v in value:
            body = _yaml(v, indent + 1)
            lead = "\n" + pad + "  "
            if isinstance(v, dict) and v and body.startswith(lead):
                out += f"\n{pad}- " + body[len(lead) :]
            else:
                out += f"\n{pad}-" + body
        return out
    if isinstance(value, str) and _PLAIN.match(value) and value.lower() not in _YAML_WORDS:
        return " " + value
    return " " + json.dumps(value, ensure_ascii=False)


_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*$")
_YAML_WORDS = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"}


def manifest_text(fn: Callable[..., Any], ref: str, risk: str, side_effect: str) -> str:
    summary, _ = _doc_parts(fn)
    name = fn.__name__
    spec: Dict[str, Any] = {
        "transport": "native",
        "handler": ref,
        "description": summary or f"{name.replace('_', ' ')}.",
        "side_effect": side_effect,
        "risk": risk,
        "input_schema": input_schema(fn),
    }
    head = (
        f"# Written by `harnessweaver add tool {ref}` from its signature and docstring.\n"
        f"# Edit freely; after editing, review and run `harnessweaver tools pin`.\n"
    )
    if side_effect in CONTRACT_SIDE_EFFECTS:
        spec["effect"] = None
        head += (
            "# `effect: null` is a draft: say what a call changes outside (docs/effects.md), then run\n"
            "# `harnessweaver tools add` on this file; until then it does not load.\n"
        )
    body = {"apiVersion": "harnessweaver/v1", "kind": "Tool", "metadata": {"name": name}, "spec": spec}
    return head + _yaml(body, 0).lstrip("\n") + "\n"


def _fail(message: str, as_json: bool, code: str) -> int:
    if as_json:
        print(json.dumps({"ok": False, "problems": [{"code": code, "message": message}]}, indent=2))
    else:
        print(f"error: {message} [{code}]")
    return EXIT_PROBLEMS


def main(argv: List[str]) -> int:
    """``harnessweaver add tool …`` (``argv`` after ``add tool``)."""
    parser = _Parser(prog="harnessweaver add tool", add_help=False)
    parser.add_argument("-h", "--help", action="store_true")
    parser.add_argument("ref", nargs="?")
    parser.add_argument("--risk", choices=RISKS, default="low")
    parser.add_argument("--side-effect", dest="side_effect", choices=SIDE_EFFECTS, default="none")
    parser.add_argument("--transport", choices=["native"], default="native")
    parser.add_argument("--harness", default="harness.yaml")
    parser.add_argument("--out")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.help:
        print(HELP)
        return EXIT_OK
    if not args.ref:
        parser.error("name the function as module:function")
    if ":" not in args.ref:
        parser.error(f"`{args.ref}` is not module:function")
    harness = Path(args.harness)
    if harness.is_dir():
        harness = harness / "harness.yaml"
    base = harness.parent if str(harness.parent) else Path(".")
    try:
        # Imported as `hw.load` will import it: from the harness directory,
        # and only code of the project or an installed package.
        fn = _import_handler(args.ref, str(base.resolve()))
    except Exception as exc:  # noqa: BLE001 - any import failure is reported as import_failed
        return _fail(f"cannot import `{args.ref}`: {type(exc).__name__}: {exc}", args.json, "import_failed")
    try:
        text = manifest_text(fn, args.ref, args.risk, args.side_effect)
    except MappingError as exc:
        return _fail(f"`{args.ref}`: {exc}", args.json, "unsupported_type")
    out_dir = Path(args.out) if args.out else base / "tools"
    target = out_dir / f"{fn.__name__}.yaml"
    if target.exists() and target.read_text(encoding="utf-8") != text and not args.force:
        existing = target.read_text(encoding="utf-8")
        # A pin written by a previous run is not a difference.
        if _without_pin(existing) != _without_pin(text):
            return _fail(f"`{target}` exists and differs; pass --force to overwrite it", args.json, "manifest_exists")
        text = existing
    out_dir.mkdir(parents=True, exist_ok=True)
    previous = target.read_text(encoding="utf-8") if target.exists() else None
    if previous != text:
        target.write_text(text, encoding="utf-8")
    if not args.json:
        print(f"wrote: {target}: tool `{fn.__name__}` from `{args.ref}`")
    sys.stdout.flush()
    core = ["tools", "add", str(target), "--harness", str(harness)] + (["--json"] if args.json else [])
    code = _native.cli_run(core)
    if code != EXIT_OK and args.side_effect in CONTRACT_SIDE_EFFECTS:
        # A draft stays for review; the core said why it does not load yet.
        if not args.json:
            print(f"add tool: `{target}` is a draft: fill in `spec.effect`, then run `harnessweaver tools add {target}`")
    elif code != EXIT_OK and previous != text:
        # The core printed why; leave no manifest behind that the harness's
        # globs would pick up and fail on.
        if previous is None:
            target.unlink()
        else:
            target.write_text(previous, encoding="utf-8")
        if not args.json:
            print(f"add tool: `{target}` was {'removed' if previous is None else 'put back as it was'}")
    return code


def _without_pin(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.strip().startswith("definition_digest:"))
