"""A slow, obviously-correct reference interpreter of the cel-lite subset,
written from DESIGN.md and the CEL language definition, not from the core.

evaluate(text, vars) returns ("value", v) or ("error", reason) or
("compile_error", reason). Values: None, bool, int (CEL int), Uint (CEL uint),
float (CEL double), str, list, CelMap (pairs; keys str/int/Uint/bool).
Every runtime error is an error outcome (the caller treats it as *unevaluable*).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Tuple

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
UINT_MAX = 2**64 - 1
NAMES = ("principal", "tenant", "task", "tool", "args", "labels")


class Uint(int):
    """A CEL uint (Python int subclass so arithmetic is exact; we check ranges)."""

    def __repr__(self) -> str:
        return f"{int(self)}u"


class CelMap:
    """A CEL map as a list of (key, value) pairs: Python dicts would merge
    keys such as `1`, `1u` and `true` that CEL keeps apart."""

    def __init__(self, pairs: List[Tuple[Any, Any]]) -> None:
        self.pairs = pairs

    def __len__(self) -> int:
        return len(self.pairs)

    def keys(self) -> List[Any]:
        return [k for k, _ in self.pairs]

    def __repr__(self) -> str:
        return f"CelMap({self.pairs!r})"


class CelError(Exception):
    pass


class CompileError(Exception):
    pass


# ---------------------------------------------------------------- lexer

TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<double>(?:\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+))
  | (?P<hex>0[xX][0-9a-fA-F]+u?)
  | (?P<int>\d+u?)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>&&|\|\||==|!=|<=|>=|[-+*/%<>!?:.,\[\](){}])
""",
    re.X,
)

ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0", "a": "\a", "b": "\b",
           "f": "\f", "v": "\v", "`": "`", "?": "?"}


def unescape(body: str) -> str:
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        n = body[i + 1]
        if n == "u":
            out.append(chr(int(body[i + 2:i + 6], 16)))
            i += 6
        elif n == "x":
            out.append(chr(int(body[i + 2:i + 4], 16)))
            i += 4
        elif n in ESCAPES:
            out.append(ESCAPES[n])
            i += 2
        else:
            raise CompileError(f"bad escape \\{n}")
    return "".join(out)


def lex(text: str) -> List[Tuple[str, Any]]:
    toks, pos = [], 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise CompileError(f"unexpected character at {pos}")
        pos = m.end()
        kind = m.lastgroup
        s = m.group()
        if kind == "ws":
            continue
        if kind == "double":
            d = float(s)
            if not math.isfinite(d):  # cel-lite: a literal beyond range is a compile error
                raise CompileError(f"double literal {s} is out of range")
            toks.append(("lit", d))
        elif kind in ("int", "hex"):
            u = s.endswith("u")
            digits = s[:-1] if u else s
            v = int(digits, 16) if kind == "hex" else int(digits)
            toks.append(("lit", Uint(v) if u else ("posint", v)))
        elif kind == "str":
            toks.append(("lit", unescape(s[1:-1])))
        elif kind == "ident":
            if s in ("true", "false"):
                toks.append(("lit", s == "true"))
            elif s == "null":
                toks.append(("lit", None))
            elif s == "in":
                toks.append(("op", "in"))
            else:
                toks.append(("ident", s))
        else:
            toks.append(("op", s))
    toks.append(("eof", None))
    return toks


# ---------------------------------------------------------------- parser (AST as tuples)

BINARY = [("||",), ("&&",), ("==", "!=", "<", "<=", ">", ">=", "in"), ("+", "-"), ("*", "/", "%")]
FUNCS = {"size", "int", "double", "string", "has", "uint"}
METHODS = {"startsWith", "endsWith", "contains", "matches", "size", "exists", "all"}


class Parser:
    """Recursive descent, one method per precedence level (CEL's grammar)."""

    def __init__(self, text: str) -> None:
        self.toks = lex(text)
        self.i = 0
        self.bound: List[str] = []  # macro variables in scope

    def peek(self, k: int = 0) -> Tuple[str, Any]:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def take(self) -> Tuple[str, Any]:
        t = self.toks[self.i]
        self.i += 1
        return t

    def expect(self, op: str) -> None:
        t = self.take()
        if t != ("op", op):
            raise CompileError(f"expected {op}, got {t}")

    def parse(self) -> Any:
        e = self.ternary()
        if self.peek()[0] != "eof":
            raise CompileError("trailing input")
        return e

    def ternary(self) -> Any:
        c = self.binary(0)
        if self.peek() == ("op", "?"):
            self.take()
            a = self.binary(0)
            self.expect(":")
            b = self.ternary()
            return ("?:", c, a, b)
        return c

    def binary(self, level: int) -> Any:
        if level == len(BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek()[0] == "op" and self.peek()[1] in BINARY[level]:
            op = self.take()[1]
            right = self.binary(level + 1)
            left = (op, left, right)
        return left

    def unary(self) -> Any:
        t = self.peek()
        if t == ("op", "!"):
            self.take()
            return ("!", self.unary())
        if t == ("op", "-"):
            self.take()
            nxt = self.peek()
            if nxt[0] == "lit" and isinstance(nxt[1], tuple):  # `-` then an int literal: one negative literal
                self.take()
                v = -nxt[1][1]
                if v < INT_MIN:
                    raise CompileError("int literal out of range")
                return self.postfix(("lit", v))
            return ("neg", self.unary())
        return self.postfix(self.primary())

    def primary(self) -> Any:
        kind, v = self.take()
        if kind == "lit":
            if isinstance(v, tuple):
                if v[1] > INT_MAX:
                    raise CompileError("int literal out of range")
                return ("lit", v[1])
            if isinstance(v, Uint) and v > UINT_MAX:
                raise CompileError("uint literal out of range")
            return ("lit", v)
        if kind == "ident":
            if self.peek() == ("op", "("):
                self.take()
                args = self.args(")")
                if v not in FUNCS:
                    raise CompileError(f"unknown function {v}")
                if v == "has":
                    if len(args) != 1 or args[0][0] != "select":
                        raise CompileError("has needs a field selection")
                    return ("has", args[0][1], args[0][2])
                if len(args) != 1:
                    raise CompileError("arity")
                return ("call", v, args)
            if v in self.bound:
                return ("local", v)
            if v not in NAMES:
                raise CompileError(f"unknown name {v}")
            return ("var", v)
        if (kind, v) == ("op", "("):
            e = self.ternary()
            self.expect(")")
            return e
        if (kind, v) == ("op", "["):
            return ("list", self.args("]"))
        if (kind, v) == ("op", "{"):
            entries = []
            while self.peek() != ("op", "}"):
                k = self.ternary()
                self.expect(":")
                entries.append((k, self.ternary()))
                if self.peek() != ("op", ","):
                    break
                self.take()
            self.expect("}")
            return ("map", entries)
        raise CompileError(f"unexpected {kind} {v}")

    def args(self, close: str) -> List[Any]:
        out = []
        while self.peek() != ("op", close):
            out.append(self.ternary())
            if self.peek() != ("op", ","):
                break
            self.take()
        self.expect(close)
        return out

    def postfix(self, e: Any) -> Any:
        while True:
            t = self.peek()
            if t == ("op", "["):
                self.take()
                k = self.ternary()
                self.expect("]")
                e = ("index", e, k)
                continue
            if t != ("op", "."):
                return e
            self.take()
            kind, name = self.take()
            if kind != "ident":
                raise CompileError("expected a field name")
            if self.peek() != ("op", "("):
                e = ("select", e, name)
                continue
            self.take()
            if name in ("exists", "all"):
                kind, var = self.take()
                if kind != "ident" or var in NAMES:
                    raise CompileError("a macro needs a variable name")
                self.expect(",")
                self.bound.append(var)
                pred = self.ternary()
                self.bound.pop()
                self.expect(")")
                e = ("macro", name, e, var, pred)
                continue
            if name not in METHODS:
                raise CompileError(f"unknown method {name}")
            e = ("call", name, [e] + self.args(")"))


def compile_expr(text: str) -> Any:
    return Parser(text).parse()


# ---------------------------------------------------------------- values

def typ(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, Uint):
        return "uint"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "double"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    if isinstance(v, CelMap):
        return "map"
    raise CelError(f"not a CEL value: {v!r}")


NUMERIC = ("int", "uint", "double")


def from_json(v: Any) -> Any:
    """A variable's JSON value as CEL sees it: integral numbers are int (uint
    above the int range), other numbers double."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return Uint(v) if v > INT_MAX else v
    if isinstance(v, float):
        return v
    if isinstance(v, list):
        return [from_json(x) for x in v]
    if isinstance(v, dict):
        return CelMap([(k, from_json(x)) for k, x in v.items()])
    raise CelError("not JSON")


def num_cmp(a: Any, b: Any) -> int:
    """Compares two numbers of any numeric types exactly (CEL heterogeneous
    comparison); NaN makes every comparison false (returns None)."""
    if isinstance(a, float) and math.isnan(a) or isinstance(b, float) and math.isnan(b):
        return None  # type: ignore[return-value]
    from fractions import Fraction
    if isinstance(a, float) and math.isinf(a) or isinstance(b, float) and math.isinf(b):
        if math.isinf(a if isinstance(a, float) else 0.0) and math.isinf(b if isinstance(b, float) else 0.0):
            return (a > b) - (a < b)
        if isinstance(a, float) and math.isinf(a):
            return 1 if a > 0 else -1
        return -1 if b > 0 else 1
    fa, fb = Fraction(a), Fraction(b)  # exact, no rounding
    return (fa > fb) - (fa < fb)


def equal(a: Any, b: Any) -> bool:
    ta, tb = typ(a), typ(b)
    if ta in NUMERIC and tb in NUMERIC:
        return num_cmp(a, b) == 0
    if ta != tb:
        return False
    if ta == "list":
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    if ta == "map":
        if len(a) != len(b):
            return False
        for k, v in a.pairs:
            found = [bv for bk, bv in b.pairs if equal(bk, k)]
            if not found or not equal(v, found[0]):
                return False
        return True
    return a == b


def check_int(v: int) -> int:
    if not INT_MIN <= v <= INT_MAX:
        raise CelError("int overflow")
    return v


def check_uint(v: int) -> Uint:
    if not 0 <= v <= UINT_MAX:
        raise CelError("uint overflow")
    return Uint(v)


def trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def trunc_mod(a: int, b: int) -> int:
    return a - b * trunc_div(a, b)


def finite(d: float) -> float:
    """cel-lite departs from CEL: a NaN or infinity made inside an expression
    makes it unevaluable (canonical JSON has no form for them, and a NaN would
    compare false and skip a deny rule)."""
    if not math.isfinite(d):
        raise CelError("not a finite double (NaN or infinity)")
    return d


def arith(op: str, a: Any, b: Any) -> Any:
    ta, tb = typ(a), typ(b)
    if op == "+" and ta == tb == "string":
        return a + b
    if op == "+" and ta == tb == "list":
        return a + b
    if ta != tb or ta not in NUMERIC:
        raise CelError(f"no overload {ta} {op} {tb}")
    if ta == "double":
        if op == "%":
            raise CelError("no % for double")
        if op == "/":
            if b == 0.0:
                if a == 0.0 or math.isnan(a):
                    return finite(math.nan)
                return finite(math.copysign(math.inf, a) * math.copysign(1.0, b))
            return finite(a / b)
        return finite({"+": a + b, "-": a - b, "*": a * b}[op])
    if op in ("/", "%") and b == 0:
        raise CelError("division by zero")
    if op == "/":
        r = trunc_div(a, b)
    elif op == "%":
        r = trunc_mod(a, b)
        if ta == "int" and a == INT_MIN and b == -1:
            raise CelError("int overflow")  # CEL: INT_MIN % -1 overflows like INT_MIN / -1
    else:
        r = {"+": a + b, "-": a - b, "*": a * b}[op]
    return check_int(r) if ta == "int" else check_uint(r)


def order(op: str, a: Any, b: Any) -> bool:
    ta, tb = typ(a), typ(b)
    if ta in NUMERIC and tb in NUMERIC:
        c = num_cmp(a, b)
        if c is None:
            return False
    elif ta == tb and ta in ("string", "bool"):
        c = (a > b) - (a < b)
    else:
        raise CelError(f"no overload {ta} {op} {tb}")
    return {"<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[op]


def key_of(m: CelMap, k: Any) -> Tuple[bool, Any]:
    if typ(k) not in ("string", "int", "uint", "bool", "double"):
        raise CelError("unsupported key type")
    for mk, mv in m.pairs:
        if equal(mk, k) and (typ(mk) == typ(k) or (typ(mk) in NUMERIC and typ(k) in NUMERIC)):
            return True, mv
    return False, None


# ---------------------------------------------------------------- evaluator

class Env:
    def __init__(self, vars: Dict[str, Any]) -> None:
        self.vars = {k: from_json(v) for k, v in vars.items()}
        self.locals: List[Tuple[str, Any]] = []


def ev(e: Any, env: Env) -> Any:
    kind = e[0]
    if kind == "lit":
        return e[1]
    if kind == "var":
        if e[1] not in env.vars:
            raise CelError(f"{e[1]} is not set")
        return env.vars[e[1]]
    if kind == "local":
        for name, v in reversed(env.locals):
            if name == e[1]:
                return v
        raise CelError("internal: unbound local")
    if kind == "list":
        return [ev(x, env) for x in e[1]]
    if kind == "map":
        out = CelMap([])
        for k, v in e[1]:
            kv = ev(k, env)
            if typ(kv) not in ("string", "int", "uint", "bool"):
                raise CelError("bad map key type")
            if key_of(out, kv)[0]:
                raise CelError("repeated key")
            out.pairs.append((kv, ev(v, env)))
        return out
    if kind == "select":
        base = ev(e[1], env)
        if typ(base) != "map":
            raise CelError("select on a non-map")
        found, v = key_of(base, e[2])
        if not found:
            raise CelError("no such key")
        return v
    if kind == "has":
        base = ev(e[1], env)
        if typ(base) != "map":
            raise CelError("has on a non-map")
        return key_of(base, e[2])[0]
    if kind == "index":
        base, k = ev(e[1], env), ev(e[2], env)
        if typ(base) == "list":
            tk = typ(k)
            if tk in ("int", "uint"):
                i = int(k)
            elif tk == "double" and not math.isnan(k) and not math.isinf(k) and k == int(k):
                i = int(k)
            else:
                raise CelError("bad list index")
            if not 0 <= i < len(base):
                raise CelError("index out of range")
            return base[i]
        if typ(base) == "map":
            found, v = key_of(base, k)
            if not found:
                raise CelError("no such key")
            return v
        raise CelError("index on a non-container")
    if kind == "!":
        v = ev(e[1], env)
        if typ(v) != "bool":
            raise CelError("! needs bool")
        return not v
    if kind == "neg":
        v = ev(e[1], env)
        t = typ(v)
        if t == "int":
            return check_int(-v)
        if t == "double":
            return -v
        raise CelError("no negation")
    if kind in ("&&", "||"):
        stop = kind == "||"  # the value that decides alone
        results = []
        for side in (e[1], e[2]):
            try:
                v = ev(side, env)
                results.append(("ok", v) if typ(v) == "bool" else ("err", None))
            except CelError:
                results.append(("err", None))
        if any(r == ("ok", stop) for r in results):
            return stop
        if any(r[0] == "err" for r in results):
            raise CelError("logic error")
        return not stop
    if kind == "?:":
        c = ev(e[1], env)
        if typ(c) != "bool":
            raise CelError("condition not bool")
        return ev(e[2] if c else e[3], env)
    if kind in ("==", "!="):
        r = equal(ev(e[1], env), ev(e[2], env))
        return r if kind == "==" else not r
    if kind in ("<", "<=", ">", ">="):
        return order(kind, ev(e[1], env), ev(e[2], env))
    if kind in ("+", "-", "*", "/", "%"):
        return arith(kind, ev(e[1], env), ev(e[2], env))
    if kind == "in":
        item, container = ev(e[1], env), ev(e[2], env)
        if typ(container) == "list":
            return any(equal(item, x) for x in container)
        if typ(container) == "map":
            return key_of(container, item)[0]
        raise CelError("in needs a list or map")
    if kind == "call":
        return call(e[1], [ev(a, env) for a in e[2]])
    if kind == "macro":
        _, name, rng, var, pred = e
        r = ev(rng, env)
        if typ(r) == "list":
            items = list(r)
        elif typ(r) == "map":
            items = list(r.keys())
        else:
            raise CelError("macro over a non-container")
        stop = name == "exists"
        error = False
        for item in items:
            env.locals.append((var, item))
            try:
                v = ev(pred, env)
                if typ(v) != "bool":
                    raise CelError("predicate not bool")
            except CelError:
                error = True
                continue
            finally:
                env.locals.pop()
            if v == stop:
                return stop
        if error:
            raise CelError("macro error")
        return not stop
    raise CelError(f"internal: {kind}")


def call(name: str, args: List[Any]) -> Any:
    if name == "size":
        if len(args) != 1:
            raise CelError("arity")
        (a,) = args
        if typ(a) in ("string", "list", "map"):
            return len(a)
        raise CelError("size of what")
    if name in ("startsWith", "endsWith", "contains", "matches"):
        if len(args) != 2 or typ(args[0]) != "string" or typ(args[1]) != "string":
            raise CelError(f"{name} needs strings")
        s, t = args
        if name == "startsWith":
            return s.startswith(t)
        if name == "endsWith":
            return s.endswith(t)
        if name == "contains":
            return t in s
        try:
            return re.search(t, s) is not None
        except re.error:
            raise CelError("bad regex") from None
    (a,) = args
    t = typ(a)
    if name == "int":
        if t == "int":
            return a
        if t == "uint":
            return check_int(int(a))
        if t == "double":
            if math.isnan(a) or math.isinf(a):
                raise CelError("int range")
            return check_int(int(a))  # truncates toward zero
        if t == "string":
            if not re.fullmatch(r"[+-]?\d+", a):
                raise CelError("not an int")
            return check_int(int(a))
        raise CelError("int of what")
    if name == "uint":
        if t == "uint":
            return a
        if t == "int":
            return check_uint(a)
        if t == "double":
            if math.isnan(a) or math.isinf(a):
                raise CelError("uint range")
            return check_uint(int(a))
        if t == "string":
            if not re.fullmatch(r"\+?\d+", a):
                raise CelError("not a uint")
            return check_uint(int(a))
        raise CelError("uint of what")
    if name == "double":
        if t == "double":
            return a
        if t in ("int", "uint"):
            return float(a)
        if t == "string":
            try:
                d = float(a)
            except ValueError:
                raise CelError("not a double") from None
            return finite(d)
        raise CelError("double of what")
    if name == "string":
        if t == "string":
            return a
        if t in ("int", "uint"):
            return str(int(a))
        if t == "bool":
            return "true" if a else "false"
        if t == "double":
            return go_g(a)
        raise CelError("string of what")
    raise CelError(f"unknown function {name}")


def go_g(d: float) -> str:
    """string(double) as CEL's reference implementation (Go's
    strconv.FormatFloat(d, 'g', -1, 64)) prints it: shortest digits, exponent
    form when the decimal exponent is below -4 or at least 6 (two-digit
    exponent at least), `+Inf`, `-Inf`, `NaN`."""
    from decimal import Decimal
    if math.isnan(d):
        return "NaN"
    if math.isinf(d):
        return "+Inf" if d > 0 else "-Inf"
    if d == 0:
        return "-0" if math.copysign(1.0, d) < 0 else "0"
    sign, digits_t, exponent = Decimal(repr(abs(d))).normalize().as_tuple()
    digits = "".join(map(str, digits_t))
    exp = len(digits) - 1 + exponent
    prefix = "-" if d < 0 else ""
    if exp < -4 or exp >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{prefix}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp < 0:
        return prefix + "0." + "0" * (-exp - 1) + digits
    if len(digits) <= exp + 1:
        return prefix + digits + "0" * (exp + 1 - len(digits))
    return prefix + digits[:exp + 1] + "." + digits[exp + 1:]


def evaluate(text: str, vars: Dict[str, Any]) -> Tuple[str, Any]:
    try:
        ast = compile_expr(text)
    except (CompileError, IndexError, ValueError) as exc:
        return ("compile_error", str(exc))
    try:
        return ("value", ev(ast, Env(vars)))
    except (CelError, RecursionError, OverflowError) as exc:
        return ("error", str(exc))


def to_plain(v: Any) -> Any:
    """A result as plain Python data (maps become dicts with their keys as
    JSON text), for comparison with the binding's output."""
    if isinstance(v, CelMap):
        out = {}
        for k, x in v.pairs:
            key = k if isinstance(k, str) else ("true" if k is True else "false" if k is False else str(int(k)))
            if key in out:
                raise CelError("keys collide as JSON text")
            out[key] = to_plain(x)
        return out
    if isinstance(v, list):
        return [to_plain(x) for x in v]
    if isinstance(v, Uint):
        return int(v)
    return v
