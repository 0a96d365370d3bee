"""Hypothesis writes small programs in the subset; Python, Numba and OpenCL must agree.

Each example is one function over two int64 and two float64 parameters with
assignments, if/else, for and while loops, break/continue, and expressions over
the operators and builtins of the subset.  It is written to a module file (so
that its source can be read like a user's), translated, and run over a batch of
inputs on every back end and with Numba.

The Python reference is a second rendering of the same program in which the
operations whose Python meaning differs from Numba's defined meaning call small
helpers (integer // and % by zero give 0, float division by zero gives inf or
nan, mixed int/float comparisons happen in float64, sqrt of a negative is nan)
and every integer result is checked to fit in int64.  A row whose run leaves
int64 is skipped entirely: Numba marks signed arithmetic "no signed wrap", so
its result there is undefined (it may wrap, or be optimised as if it could
not).  Every other row must agree exactly between Python, Numba and the device.
"""
from __future__ import annotations

import importlib.util
import itertools
import math
import os
import tempfile

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from hpu._errors import TranslationError

from hpu._opencl._translate import FLOAT64, INT64
from ocl_support import Differential, backends, same

pytestmark = pytest.mark.skipif(not backends(), reason="no OpenCL back end can run here")

INT_VARS = ("i0", "i1", "i2")
FLOAT_VARS = ("f0", "f1", "f2")
_counter = itertools.count()
_DIR = tempfile.mkdtemp(prefix="hpu-random-programs-")


class _Node:
    """An expression: its plain text, its Python-reference text, and its kind."""

    def __init__(self, plain, checked, kind):
        self.plain, self.checked, self.kind = plain, checked, kind


def _i(plain, checked):
    return _Node(plain, f"_c({checked})", "i")


@st.composite
def int_expr(draw, depth, loop_vars=()):
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        leaf = draw(st.one_of(st.sampled_from(INT_VARS + tuple(loop_vars)),
                              st.integers(-9, 9).map(str),
                              st.sampled_from(["1099511627776", "-7", "63"])))
        return _Node(leaf, leaf, "i")
    kind = draw(st.integers(0, 7))
    sub = int_expr(depth - 1, loop_vars)
    if kind <= 2:
        op = draw(st.sampled_from(["+", "-", "*", "//", "%", "&", "|", "^"]))
        a, b = draw(sub), draw(sub)
        if op in ("//", "%"):
            fn = "_fd" if op == "//" else "_md"
            return _i(f"({a.plain} {op} {b.plain})", f"{fn}({a.checked}, {b.checked})")
        return _i(f"({a.plain} {op} {b.plain})", f"{a.checked} {op} {b.checked}")
    if kind == 3:
        op = draw(st.sampled_from(["<<", ">>"]))
        a, b = draw(sub), draw(sub)
        # counts outside 0..63 are undefined in Numba (LLVM poison; constant-folded ones
        # differ from run-time ones), so generated counts are masked like hpu masks them
        return _i(f"({a.plain} {op} ({b.plain} & 63))", f"{a.checked} {op} ({b.checked} & 63)")
    if kind == 4:
        a = draw(sub)
        un = draw(st.sampled_from(["-", "abs", "pow"]))
        if un == "-":
            return _i(f"(-{a.plain})", f"-{a.checked}")
        if un == "abs":
            return _i(f"abs({a.plain})", f"abs({a.checked})")
        e = draw(st.integers(0, 3))
        return _i(f"({a.plain} ** {e})", f"{a.checked} ** {e}")
    if kind == 5:
        fn = draw(st.sampled_from(["min", "max"]))
        args = [draw(sub) for _ in range(draw(st.integers(2, 3)))]
        return _i(f"{fn}({', '.join(a.plain for a in args)})",
                  f"{fn}({', '.join(a.checked for a in args)})")
    if kind == 6:
        c, a, b = draw(bool_expr(depth - 1, loop_vars)), draw(sub), draw(sub)
        return _i(f"({a.plain} if {c.plain} else {b.plain})",
                  f"{a.checked} if {c.checked} else {b.checked}")
    f = draw(float_expr(depth - 1, loop_vars))
    conv = draw(st.sampled_from(["int", "round", "math.floor", "math.ceil"]))
    # only finite values of moderate size are converted (others are unspecified)
    return _i(f"({conv}({f.plain}) if abs({f.plain}) < 1e6 else 0)",
              f"{conv}({f.checked}) if abs({f.checked}) < 1e6 else 0")


@st.composite
def float_expr(draw, depth, loop_vars=()):
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        leaf = draw(st.one_of(st.sampled_from(FLOAT_VARS),
                              st.sampled_from(["0.5", "-1.25", "3.0", "1e10", "0.1", "-0.0"])))
        return _Node(leaf, leaf, "f")
    kind = draw(st.integers(0, 5))
    sub = float_expr(depth - 1, loop_vars)
    if kind <= 2:
        op = draw(st.sampled_from(["+", "-", "*", "/", "//", "%"]))
        a = draw(sub)
        b = draw(st.one_of(sub, int_expr(depth - 1, loop_vars)))
        if draw(st.booleans()):
            a, b = b, a
        if op in ("/", "//", "%"):
            fn = {"/": "_fdiv", "//": "_ffloordiv", "%": "_fmod"}[op]
            return _Node(f"({a.plain} {op} {b.plain})", f"{fn}({a.checked}, {b.checked})", "f")
        return _Node(f"({a.plain} {op} {b.plain})", f"({a.checked} {op} {b.checked})", "f")
    if kind == 3:
        fn = draw(st.sampled_from(["math.sqrt", "abs", "math.fabs", "float"]))
        a = draw(st.one_of(sub, int_expr(depth - 1, loop_vars))) if fn == "float" else draw(sub)
        ref = "_sqrt" if fn == "math.sqrt" else fn
        return _Node(f"{fn}({a.plain})", f"{ref}({a.checked})", "f")
    if kind == 4:
        fn = draw(st.sampled_from(["min", "max"]))
        a, b = draw(sub), draw(sub)
        return _Node(f"{fn}({a.plain}, {b.plain})", f"{fn}({a.checked}, {b.checked})", "f")
    c, a, b = draw(bool_expr(depth - 1, loop_vars)), draw(sub), draw(sub)
    return _Node(f"({a.plain} if {c.plain} else {b.plain})",
                 f"({a.checked} if {c.checked} else {b.checked})", "f")


@st.composite
def bool_expr(draw, depth, loop_vars=()):
    kind = draw(st.integers(0, 3 if depth > 0 else 1))
    num = st.one_of(int_expr(max(depth - 1, 0), loop_vars), float_expr(max(depth - 1, 0),
                                                                       loop_vars))
    if kind <= 1:
        ops = draw(st.lists(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]),
                            min_size=1, max_size=2))
        terms = [draw(num) for _ in range(len(ops) + 1)]
        plain = terms[0].plain + "".join(f" {o} {t.plain}" for o, t in zip(ops, terms[1:]))
        # Numba compares an int with a float in float64; Python compares exactly
        checked = f"_chain({ops!r}, {', '.join(repr(t.kind) for t in terms)}, " \
                  f"{', '.join(f'lambda: {t.checked}' for t in terms)})"
        return _Node(f"({plain})", checked, "b")
    if kind == 2:
        a = draw(bool_expr(depth - 1, loop_vars))
        return _Node(f"(not {a.plain})", f"(not {a.checked})", "b")
    op = draw(st.sampled_from(["and", "or"]))
    a, b = draw(bool_expr(depth - 1, loop_vars)), draw(bool_expr(depth - 1, loop_vars))
    return _Node(f"({a.plain} {op} {b.plain})", f"({a.checked} {op} {b.checked})", "b")


@st.composite
def statements(draw, depth, indent, loop_vars=(), in_loop=False):
    out_plain, out_checked = [], []
    pad = "    " * indent
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 6 if depth > 0 else 2))
        if kind == 0:
            v, e = draw(st.sampled_from(INT_VARS)), draw(int_expr(2, loop_vars))
            op = draw(st.sampled_from(["=", "+=", "-=", "//=", "^="]))
            out_plain.append(f"{pad}{v} {op} {e.plain}")
            ref = {"=": "{e}", "+=": "_c({v} + {e})", "-=": "_c({v} - {e})",
                   "//=": "_fd({v}, {e})", "^=": "{v} ^ {e}"}[op]
            out_checked.append(f"{pad}{v} = " + ref.format(v=v, e=e.checked))
        elif kind <= 2:
            v, e = draw(st.sampled_from(FLOAT_VARS)), draw(float_expr(2, loop_vars))
            op = draw(st.sampled_from(["=", "+=", "*="]))
            out_plain.append(f"{pad}{v} {op} {e.plain}")
            out_checked.append(f"{pad}{v} {op} {e.checked}")
        elif kind == 3:
            c = draw(bool_expr(1, loop_vars))
            body = draw(statements(depth - 1, indent + 1, loop_vars, in_loop))
            other = draw(statements(depth - 1, indent + 1, loop_vars, in_loop))
            out_plain += [f"{pad}if {c.plain}:", *body[0], f"{pad}else:", *other[0]]
            out_checked += [f"{pad}if {c.checked}:", *body[1], f"{pad}else:", *other[1]]
        elif kind == 4:
            k = f"k{len(loop_vars)}"
            a, b = draw(st.integers(-3, 3)), draw(st.integers(-3, 6))
            s = draw(st.sampled_from([1, 2, -1, -2, 3]))
            body = draw(statements(depth - 1, indent + 1, loop_vars + (k,), True))
            head = f"{pad}for {k} in range({a}, {b}, {s}):"
            out_plain += [head, *body[0]]
            out_checked += [head, *body[1]]
        elif kind == 5:
            w = f"w{indent}"
            c = draw(bool_expr(1, loop_vars))
            body = draw(statements(depth - 1, indent + 1, loop_vars, True))
            head = [f"{pad}{w} = 0", f"{pad}while {w} < 3 and {{c}}:", f"{pad}    {w} += 1"]
            out_plain += [head[0], head[1].format(c=c.plain), head[2], *body[0]]
            out_checked += [head[0], head[1].format(c=c.checked), head[2], *body[1]]
        elif in_loop:
            c = draw(bool_expr(1, loop_vars))
            jump = draw(st.sampled_from(["break", "continue"]))
            out_plain += [f"{pad}if {c.plain}:", f"{pad}    {jump}"]
            out_checked += [f"{pad}if {c.checked}:", f"{pad}    {jump}"]
        else:
            out_plain.append(f"{pad}pass")
            out_checked.append(f"{pad}pass")
    return out_plain, out_checked


_PRELUDE = """import math
import operator

LMIN, LMAX = -(1 << 63), (1 << 63) - 1


class Int64Overflow(Exception):
    pass


def _c(v):
    if not LMIN <= v <= LMAX:
        raise Int64Overflow(v)
    return v


def _fd(a, b):
    return 0 if b == 0 else _c(a // b)


def _md(a, b):
    return 0 if b == 0 else a % b


def _fdiv(a, b):
    if b == 0:
        a = float(a)
        if a == 0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, float(b))
    return a / b


def _ffloordiv(a, b):
    return _fdiv(a, b) if b == 0 else a // b


def _fmod(a, b):
    return math.nan if b == 0 else a % b


def _sqrt(v):
    return math.nan if v < 0 else math.sqrt(v)


_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
        "==": operator.eq, "!=": operator.ne}


def _chain(ops, *args):
    kinds, terms = args[:len(ops) + 1], args[len(ops) + 1:]
    left, lk = terms[0](), kinds[0]
    for op, rk, term in zip(ops, kinds[1:], terms[1:]):
        right = term()
        a, b = (left, right) if lk == rk else (float(left), float(right))
        if not _OPS[op](a, b):
            return False
        left, lk = right, rk
    return True

"""


@st.composite
def programs(draw):
    plain, checked = draw(statements(2, 1))
    ret = "    return i0, i1, i2, f0, f1, f2"
    head = "(i0, i1, f0, f1):\n    i2 = {}\n    f2 = f0 * 0.5"
    return ("def generated" + head.format("i0 - i1") + "\n" + "\n".join(plain) + "\n" + ret
            + "\n",
            "def checked" + head.format("_c(i0 - i1)") + "\n" + "\n".join(checked) + "\n"
            + ret + "\n")


def _wide_constant(text: str) -> bool:
    """Whether ``text`` holds an int expression of constants alone whose value is outside
    int64 (evaluated as Python does)."""
    import ast

    def constant(n) -> bool:
        return all(isinstance(x, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator,
                                  ast.unaryop, ast.expr_context)) for x in ast.walk(n))

    for n in ast.walk(ast.parse(text)):
        if isinstance(n, (ast.BinOp, ast.UnaryOp)) and constant(n):
            try:
                v = eval(compile(ast.Expression(n), "<constant>", "eval"), {"__builtins__": {}})
            except (ArithmeticError, ValueError):
                continue
            if isinstance(v, int) and not -(1 << 63) <= v < (1 << 63):
                return True
    return False


def _load(text: str):
    name = f"hpu_random_program_{os.getpid()}_{next(_counter)}"
    path = os.path.join(_DIR, name + ".py")
    with open(path, "w") as fh:
        fh.write(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


INPUT_INTS = st.one_of(st.integers(-20, 20), st.sampled_from([0, 1, -1, -(1 << 63),
                                                              (1 << 63) - 1, 1 << 40]))
INPUT_FLOATS = st.one_of(st.floats(-50, 50), st.sampled_from([0.0, -0.0, math.nan, math.inf,
                                                              -math.inf, 1e300]))


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs(), st.lists(st.tuples(INPUT_INTS, INPUT_INTS, INPUT_FLOATS, INPUT_FLOATS),
                            min_size=1, max_size=16))
@example(program=(  # a constant beyond int64 in a branch Python never takes (found in CI)
    "def generated(i0, i1, f0, f1):\n    i2 = i0 - i1\n    f2 = f0 * 0.5\n"
    "    i0 ^= (i0 if (not (i0 < i0)) else (63 << (-6 & 63)))\n"
    "    return i0, i1, i2, f0, f1, f2\n",
    "def checked(i0, i1, f0, f1):\n    i2 = _c(i0 - i1)\n    f2 = f0 * 0.5\n"
    "    i0 = i0 ^ _c(i0 if (not _chain(['<'], 'i', 'i', lambda: i0, lambda: i0)) else "
    "_c(63 << (-6 & 63)))\n    return i0, i1, i2, f0, f1, f2\n"),
    rows=[(0, 0, 0.0, 0.0)])
def test_random_programs_agree(program, rows):
    plain, checked = program
    module = _load(_PRELUDE + plain + "\n\n" + checked)
    defined = []
    for row in rows:
        try:
            defined.append((row, module.checked(*row)))
        except module.Int64Overflow:
            pass                     # Numba's result is undefined on this row
    if not defined:
        return
    try:
        d = Differential(module.generated, (INT64, INT64, FLOAT64, FLOAT64))
    except TranslationError as err:
        # a literal beyond 64 bits (e.g. from a generated constant): Numba cannot type it
        # either, so the program is outside the subset, not a disagreement; nor can it type
        # a constant expression beyond int64 (`63 << (-6 & 63)`) as an int64: it makes it a
        # uint64, and a variable that also holds an int64 a float64, which hpu refuses
        assume("must fit in 64 bits" not in str(err) and not _wide_constant(plain))
        raise
    cols = [list(c) for c in zip(*(r for r, _ in defined))]
    d.check(cols, python=False)      # Numba == every back end, exactly
    for (row, want), ref in zip(defined, d.numba_results(cols)):
        assert same(tuple(want), tuple(ref)), (plain, row, want, ref)


# ---------------------------------------------------------------- divide and conquer forms
#
# Hypothesis writes recursive functions in the forms hpu normalises (issue 10): calls inside
# the return's expression, recursion in an `if` block or in the `else` of the base case,
# a loop of calls over a constant range, `s += f(...)`, and the canonical statement form.
# Each is decorated like a user's function and run on the CPU, the device alone and hybrid;
# every run must return what the plain Python function returns.

_DC_FORMS = ("expr", "assign", "ifblock", "else", "loop", "augassign")


@st.composite
def _combine_expr(draw, names):
    """An int expression using each child result exactly once, in a random order."""
    order = draw(st.permutations(names))
    expr = order[0]
    for n in order[1:]:
        op = draw(st.sampled_from(["+", "-", "max", "min", "+ 2 *"]))
        expr = f"{op}({expr}, {n})" if op in ("max", "min") else f"({expr} {op} {n})"
    return f"({expr}) + {draw(st.sampled_from(['0', 'lo', 'hi - lo', '1']))}"


@st.composite
def dc_programs(draw):
    a = draw(st.integers(2, 4))
    form = draw(st.sampled_from(_DC_FORMS))
    k = draw(st.integers(1, 3))
    name = f"dc_{form}_{next(_counter)}"
    base = [f"s = 0", "for j in range(lo, hi):", f"    s += a[j] * {k}", "return s"]
    divide = [f"q = (hi - lo) // {a}"]

    def child(i):  # the i-th child's call, text; the last child ends at hi
        stop = "hi" if i == a - 1 else f"lo + {i + 1} * q"
        return f"{name}(a, lo + {i} * q, {stop})"

    calls = [child(i) for i in range(a)]
    expr = draw(_combine_expr([f"R{i}" for i in range(a)]))
    inline = expr
    for i in range(a):
        inline = inline.replace(f"R{i}", calls[i])
    test = f"hi - lo < {a}"
    if form == "expr":
        body = ([f"if {test}:"] + ["    " + s for s in base] + divide + [f"return {inline}"])
    elif form == "assign":
        body = ([f"if {test}:"] + ["    " + s for s in base] + divide
                + [f"R{i} = {calls[i]}" for i in range(a)] + [f"return {expr}"])
    elif form == "ifblock":
        body = ([f"if hi - lo >= {a}:"] + ["    " + s for s in divide + [f"return {inline}"]]
                + base)
    elif form == "else":
        body = ([f"if {test}:"] + ["    " + s for s in base] + ["else:"]
                + ["    " + s for s in divide + [f"return {inline}"]])
    elif form == "loop":
        mult = draw(st.sampled_from(["1", "2", "-1"]))
        body = ([f"if {test}:"] + ["    " + s for s in base] + divide
                + ["t = 0", f"for i in range({a}):",
                   f"    stop = lo + (i + 1) * q if i < {a - 1} else hi",
                   f"    t = t * {mult} + {name}(a, lo + i * q, stop)", "return t"])
    else:  # augassign
        body = ([f"if {test}:"] + ["    " + s for s in base] + divide + [f"t = {calls[0]}"]
                + [f"t {draw(st.sampled_from(['+=', '-=']))} {c}" for c in calls[1:]]
                + ["return t"])
    text = (f"import hpu\n\n\n@hpu.divide_and_conquer(b={a}, cost='1', span=('lo', 'hi'))\n"
            f"def {name}(a, lo, hi):\n" + "\n".join("    " + s for s in body) + "\n")
    return name, text


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(dc_programs(), st.lists(st.integers(-50, 50), min_size=1, max_size=600),
       st.sampled_from([{"device": "cpu"}, {"device": "gpu"},
                        {"device": "hybrid", "alpha": 0.5, "y": 2},
                        {"device": "hybrid", "alpha": 0.25, "y": 1}]))
def test_random_divide_and_conquer_forms_agree_with_python(program, values, split):
    import numpy as np

    name, text = program
    fn = getattr(_load(text), name)
    x = np.array(values, dtype=np.int64)
    for n in sorted({1, 2, len(x)}):
        if n > len(x):
            continue
        want = fn.py_func(x, 0, n)
        got = fn.run(x, 0, n, **split).value
        assert got == want, (text, n, split, got, want)
