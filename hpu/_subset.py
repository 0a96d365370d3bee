"""The accepted subset of Python, defined once: construct -> why refused -> what to write.

Why one table
=============

Three readers need to know what hpu accepts: the frontend
(:mod:`hpu._frontend`, which checks the decorated function and its helpers when
they are decorated), the OpenCL translator (:mod:`hpu._opencl._typeinfer`, which
checks whatever it is handed, generated code included) and the user guide
(``docs/guide.md``).  When each kept its own list they drifted apart in
wording and in content.  Here every refusal is one :class:`Rule` with the
construct's name as the user sees it, the reason, and the rewrite; both checkers
raise through :func:`refuse_with` / :func:`rule_for_node`, and
:func:`refused_table` renders the same rules as the guide's table (a test
checks that the guide contains exactly this table).

:data:`ACCEPTED` lists, the same way, the forms hpu accepts and rewrites
(:mod:`hpu._normalise`), for the guide's table of accepted forms.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from hpu._errors import TranslationError

__all__ = ["Rule", "RULES", "ACCEPTED", "STMT_RULES", "EXPR_RULES", "rule", "refuse_with",
           "rule_for_node", "refused_table", "accepted_table"]


@dataclass(frozen=True)
class Rule:
    """One refused construct."""

    construct: str   #: as the user reads it, e.g. "a try statement"
    reason: str      #: why it cannot run as breadth-first tasks / on a device
    rewrite: str     #: what to write instead (a sentence fragment, no final full stop)
    example: str = ""  #: a short refused example, for the guide
    section: str = "subset"  #: "subset" (any function or helper) or "shape" (the recursion)


_ALLOC = "pass a preallocated array as a parameter (like `tmp` in mergesort)"

RULES: dict[str, Rule] = {
    # ---- statements
    "try": Rule("a try statement", "exceptions cannot be caught inside a task or on a device",
                "check the condition with an if before the operation", "try: ... except: ..."),
    "raise": Rule("a raise of a class of one's own, `raise ... from ...` or a bare `raise`",
                  "a task cannot hold a Python object; Python's built-in exceptions are raised "
                  "on every path (`raise ValueError(\"hi < lo\")`, `assert hi >= lo, "
                  "\"...\"`; a message computed at run time, `f\"bad {x}\"`, by the plain "
                  "function run again)",
                  "raise a built-in exception with a constant message, or check the "
                  "arguments before calling the decorated function",
                  "raise MyError(\"bad\")"),
    "with": Rule("a with statement", "context managers need Python objects at run time",
                 "remove the with block and keep its body", "with lock: ..."),
    "import": Rule("an import statement", "imports run in Python, not inside a task",
                   "import at the top of the module", "import math"),
    "global": Rule("a global statement", "tasks running in parallel cannot share a variable",
                   "pass the value as a parameter, or write it into an array parameter",
                   "global count"),
    "nonlocal": Rule("a nonlocal statement", "tasks running in parallel cannot share a variable",
                     "pass the value as a parameter, or write it into an array parameter",
                     "nonlocal count"),
    "del": Rule("a del statement", "names and array elements cannot be deleted in a task",
                "remove the del statement", "del x"),
    "class": Rule("a class definition", "classes are Python objects",
                  "use scalars and array parameters", "class P: ..."),
    "def": Rule("a nested function definition", "functions cannot be created inside a task",
                "define it at module level as a helper and call it", "def inner(x): ..."),
    "recursive-helper": Rule(
        "a helper that calls itself", "only the decorated function's recursion becomes the "
        "tree of tasks; a helper runs inside one task, where OpenCL C has no recursion",
        "rewrite the helper with a loop (a bitonic merge: a loop over its levels), or write "
        "its recursion into the decorated function", "def bitonic_merge(a, lo, n, up): ... "
        "bitonic_merge(a, lo, n // 2, up)"),
    "async": Rule("async def, async for, async with or await", "coroutines cannot run as tasks",
                  "write a plain function and plain loops", "async for x in xs: ..."),
    "match": Rule("a match statement", "structural pattern matching needs Python objects",
                  "use if/elif on scalar comparisons", "match k: ..."),
    "print": Rule("print", "tasks and kernels cannot print",
                  "remove it, or debug with .py_func, the original function", "print(x)"),
    "alloc": Rule("allocating an array (np.empty, np.zeros, np.array, ...)",
                  "it allocates memory, which tasks cannot", _ALLOC, "t = np.zeros(n)"),
    # ---- expressions
    "list": Rule("a list literal", "it allocates memory, which tasks cannot", _ALLOC, "[0] * n"),
    "dict": Rule("a dict literal", "it allocates memory, which tasks cannot",
                 "return several values as a tuple (`return total, count`: hpu returns "
                 "tuples of numbers), or pass a preallocated array as a parameter (like "
                 "`tmp` in mergesort)", "{}"),
    "set": Rule("a set literal", "it allocates memory, which tasks cannot", _ALLOC, "{1, 2}"),
    "comprehension": Rule("a list, set or dict comprehension",
                          "it allocates memory, which tasks cannot", _ALLOC,
                          "[x * x for x in ...]"),
    "genexp": Rule("a generator expression (but in sum, any, all, max and min)",
                   "it produces values lazily", "write a for loop over range(...)",
                   "list(a[i] for i in range(lo, hi))"),
    "lambda": Rule("a lambda", "functions cannot be created inside a task",
                   "define a helper at module level with def and call it", "lambda v: v + 1"),
    "fstring": Rule("an f-string", "strings are not numbers", "remove it", "f'{x}'"),
    "starred": Rule("a starred expression", "argument and value lists are fixed in a task",
                    "pass each argument explicitly and write the values out", "g(*xs)"),
    "walrus": Rule("an assignment expression (:=) that Python may skip",
                   "one after `and`/`or`, in a branch of `x if c else y`, a later operand of a "
                   "chained comparison, a comprehension or a `while` test assigns only sometimes "
                   "(or again at each test), or one after a call of yours would move past it",
                   "assign in a separate statement before the one that uses it",
                   "if hi > lo and (n := hi - lo) > 1:"),
    "yield": Rule("yield (a generator)", "a generator returns its results lazily, one at a time",
                  "return the result, or write it into an array parameter", "yield x"),
    "slice": Rule("a slice", "a slice makes a new array view, which this part of hpu cannot",
                  "pass the array with the bounds as separate parameters (a, lo, hi) and index "
                  "element by element", "a[lo:hi]"),
    # ---- the recursion's shape (hpu._normalise and hpu._frontend.parse)
    "both-branches": Rule(
        "recursion in both branches of an if",
        "hpu needs one base case and one recursive case to build the tree",
        "write the base case as a guard `if COND: ...; return` and the recursive case after it, "
        "unindented; or end each branch in one `return` (`if c: return f(..) * f(..)` / "
        "`else: return x * f(..) * f(..)` is read as `return ... if c else ...`)",
        "if c: f(..); f(..) else: f(..); f(..)", "shape"),
    "loop-range": Rule(
        "a loop of recursive calls over a non-constant range",
        "the number of calls a task makes is the tree's branching factor and must be known "
        "before the function runs", "loop over range(K) with K an int literal or an int module constant "
        "(e.g. `for i in range(4):`), or write the calls out",
        "for i in range(k): s += f(...)", "shape"),
    "loop-exit": Rule(
        "break, continue or return in a loop of recursive calls",
        "the loop is unrolled into a fixed number of calls",
        "make every trip make its call; combine the results after the loop",
        "for i in range(4): if ...: break", "shape"),
    "store-before-call": Rule(
        "an array store before a recursive call in the combine",
        "hpu runs all the recursive calls before the combine, so the store would move after "
        "the calls", "store after the calls, or before the first call (in the divide)",
        "a[mid] = 0; return f(..) + f(..)  (in one block)", "shape"),
    "arg-between": Rule(
        "a recursive call's argument computed between calls",
        "hpu computes every child's parameters before the first call, from the parent's values",
        "compute the children's parameters before the first recursive call",
        "l = f(a, lo, m); m2 = l + 1; r = f(a, m2, hi)", "shape"),
    "reordered": Rule(
        "reading arrays or calling a helper before a recursive call in the same combine "
        "statement",
        "hpu runs the recursive calls first, and this function writes arrays, so the value "
        "read would change", "assign each recursive call's result to a name on its own line "
        "first, then compute the expression", "return a[lo] + f(..) + f(..)", "shape"),
    "conditional": Rule(
        "a recursive call that Python may skip (in `x if c else f(...)` or after `and`/`or`)",
        "hpu makes every call of a task, and this function writes arrays, so the extra call "
        "would change them", "make the calls unconditionally on lines of their own and choose "
        "between the results", "return f(..) or f(..)", "shape"),
    "same-call": Rule(
        "two recursive calls with the same arguments in a function that writes arrays",
        "hpu runs a task's calls side by side, as independent tasks of one level, and these "
        "two write the same part of the arrays, so the second would not see the first's "
        "writes (an order-dependent recursion, such as stooge sort)",
        "make sibling calls work on disjoint parts (mergesort's halves), or run the function "
        "as plain Python (f.py_func)", "f(a, lo, hi - t); f(a, lo + t, hi); f(a, lo, hi - t)",
        "shape"),
}

#: ast node type -> rule key, for statements and expressions refused anywhere.
STMT_RULES: dict[type, str] = {
    ast.Try: "try", ast.Raise: "raise", ast.With: "with",
    ast.AsyncWith: "async", ast.Import: "import", ast.ImportFrom: "import",
    ast.Global: "global", ast.Nonlocal: "nonlocal", ast.Delete: "del",
    ast.ClassDef: "class", ast.FunctionDef: "def", ast.AsyncFunctionDef: "async",
    ast.AsyncFor: "async",
}
if hasattr(ast, "TryStar"):
    STMT_RULES[ast.TryStar] = "try"
if hasattr(ast, "Match"):
    STMT_RULES[ast.Match] = "match"

EXPR_RULES: dict[type, str] = {
    ast.List: "list", ast.Dict: "dict", ast.Set: "set", ast.ListComp: "comprehension",
    ast.SetComp: "comprehension", ast.DictComp: "comprehension", ast.GeneratorExp: "genexp",
    ast.Lambda: "lambda", ast.JoinedStr: "fstring", ast.Starred: "starred",
    ast.NamedExpr: "walrus", ast.Yield: "yield", ast.YieldFrom: "yield", ast.Await: "async",
    ast.Slice: "slice",
}


def rule(key: str) -> Rule:
    return RULES[key]


def rule_for_node(node) -> Rule | None:
    """The rule refusing ``node``'s type anywhere in the subset, or None."""
    key = STMT_RULES.get(type(node)) or EXPR_RULES.get(type(node))
    return RULES[key] if key else None


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def refuse_with(where, node, key: str, *, detail: str | None = None,
                construct: str | None = None):
    """Raise the :class:`TranslationError` of rule ``key`` at ``node``.

    ``where`` is the frontend's ``_Where`` (file name; the AST carries file lines).
    """
    r = RULES[key]
    c = construct or r.construct
    reason = r.reason + (f" ({detail})" if detail else "")
    raise TranslationError(f"{c} is not supported: {reason}", filename=where.filename,
                           lineno=getattr(node, "lineno", None), construct=c,
                           hint=_cap(r.rewrite))


#: Forms hpu accepts, for the guide: (form, example, what hpu does with it).
ACCEPTED: tuple[tuple[str, str, str], ...] = (
    ("calls as statements", "f(a, lo, mid); f(a, mid, hi)", "as written"),
    ("calls assigned to names", "l = f(a, lo, mid); r = f(a, mid, hi)", "as written"),
    ("tuple results unpacked", "s1, p1 = f(a, lo, mid)", "as written"),
    ("calls inside an expression", "return f(a, lo, mid) + f(a, mid, hi)",
     "each call into a temporary, left to right"),
    ("calls as helper arguments", "best = max(f(a, lo, mid), f(a, mid, hi), cross(a, lo, hi))",
     "each call into a temporary, left to right"),
    ("augmented assignment", "s += f(a, lo, mid)", "each call into a temporary"),
    ("calls in an if test", "if f(a, lo, mid) > t:", "each call into a temporary"),
    ("recursion inside an if block", "if hi - lo > 1: <divide; calls; combine>",
     "the other branch (or nothing) becomes the base case"),
    ("if base / else", "if hi - lo == 1: return a[lo]\nelse: ...", "guard + unindented else"),
    ("base case as a conditional expression", "return a[lo] if hi - lo == 1 else f(..) + f(..)",
     "guard + return"),
    ("a return in each branch, both recursing",
     "if n % 2 == 0: return p(x, n // 2) * p(x, n // 2)\nelse: return x * p(x, n // 2) * p(x, n // 2)",
     "read as `return A if c else B` (the second return may follow the if; names assigned once "
     "and read once may come before a return): the calls of both branches are made, as for any "
     "conditional expression (below), and c chooses the result"),
    ("pure scalar code before the guard", "n = hi - lo\nif n <= 1: return", "as written"),
    ("raise and assert with constant messages",
     "if hi < lo: raise ValueError(\"empty range\")\nassert hi >= lo, \"empty range\"",
     "Python's built-in exception with its arguments, on every device, with a note naming "
     "the line"),
    ("a loop of calls over a constant range", "for i in range(4): s += f(a, lo + i * q, ...)",
     "unrolled; the loop variable is replaced by 0, 1, 2, 3"),
    ("a None default computed first", "def f(a, lo=0, hi=None):\n    if hi is None: hi = len(a)",
     "the expression is evaluated for your call, once; every recursive call must pass hi"),
    ("a loop over the children written out", "for part in (a[:m], a[m:]): s += f(part)",
     "unrolled; the loop variable is replaced by each value, evaluated where it is used (a "
     "value may not read a name the loop assigns, nor call anything but len, min, max, abs, "
     "int, float)"),
    ("results as nested tuples", "return s, (mx, c)\ns1, (mx1, c1) = f(a[:m])",
     "held flat by the levels (`return s, mx, c`, `s1, mx1, c1 = f(a[:m])`) and given back "
     "nested, as Python makes it; when every `return` is a tuple of that one nesting (or a "
     "recursive call) and every recursive call is returned or unpacked alike"),
    ("an assignment expression evaluated first",
     "if (n := len(a)) <= 1: return n\nleft = f(a[:(m := n // 2)])",
     "the assignment, written just before the statement (an `if`'s or `elif`'s test, an "
     "assignment, a `return`), then the name: Python's order, when nothing before it in the "
     "statement calls a function of yours or reads the name"),
    ("NumPy's parts", "l, r = np.array_split(a, 2)\nfor part in np.array_split(a, 4): "
     "s += f(part)",
     "the slices NumPy's parts are (views of a: part i starts at i * (n // k) + min(i, n % "
     "k)), each bound to its name, or looped over as above; k a literal from 1 to 16"),
    ("the children named once, then looped over",
     "parts = [a[:t], a[t:2*t], a[2*t:]]\nfor p in parts: best = max(best, f(p))",
     "the values written out in the loop, then unrolled as above, where the name is assigned "
     "once and read only as what loops making recursive calls run over, and its values are "
     "names, numbers, slices, arithmetic and len/min/max/abs/int/float reading no name "
     "assigned after it; else a list, as written (the CPU)"),
    ("max or min of a generator over the children",
     "return max(f(p) for p in (a[:t], a[t:]))",
     "max(f(a[:t]), f(a[t:])): the same comparisons in the same order (one for, no if, no "
     "key= or default=, values as above or range(3) of int constants; a list comprehension "
     "too)"),
    ("the children's results gathered in a list",
     "results = []\nfor p in (a[:h], a[h:]): results.append(f(p))\nreturn results[0] + results[1]",
     "a name per result (results_0 = f(a[:h]), ...), also for rs = [f(l), f(r)] and "
     "[f(p) for p in (...)], where the list is assigned once and read only as rs[k] (k a "
     "constant), l, r = rs, for v in rs, max(rs), min(rs), len(rs) or sum(rs) of two; else "
     "a list, as written (the CPU)"),
    ("a loop over values or arrays in a combine",
     "for part in (z, y, x, w):\n    for v in part: out[m] = v; m += 1",
     "unrolled: the body once per value, reading the value itself where the loop variable is "
     "read only in the body (no alias of an array, which the device forms' views cannot be), "
     "else `part = z; <body>; part = y; ...` as Python assigns it"),
    ("a procedure's call made when a test holds",
     "if lo < j: qsort(a, lo, j)\nif i < hi: qsort(a, i, hi)",
     "every call made, the test passed as a flag that the callee reads first (`if not flag: "
     "return`): a skipped call is a base case that does nothing. For a function returning "
     "nothing, whose guarded call is the if's only statement, with no else, its arguments "
     "names, numbers, + - *, // by a constant and slices of them (evaluated where Python "
     "would skip them)"),
    ("a call whose value is used when a test holds",
     "if mid > lo: s += f(a, lo, mid)\nif hi > mid: best = max(best, f(a, mid, hi))",
     "the call made first, its test passed as the flag (`hpu_rec1 = f(a, lo, mid, 1 if mid > "
     "lo else 0)`), then `if mid > lo: s += hpu_rec1`: a skipped call returns a stand-in "
     "at once (0, or False where every return is a comparison or a bool) that nothing reads. "
     "When the if holds that one statement, with no else, its test and the rest of the "
     "statement are names, numbers, arithmetic, comparisons and len/abs/min/max/int/float "
     "(evaluated again, or after the call), and the arguments are as above; otherwise the "
     "refusal, with its rewrite"),
    ("a helper called with keywords", "merge(a, tmp, lo=lo, mid=mid, hi=hi)",
     "the arguments by position, as Python binds them (a parameter left out: its default, "
     "a number, bool or None)"),
    ("parameters passed on unchanged", "def msort(a, cutoff=8, reverse=False): ... "
     "left = msort(a[:m], cutoff, reverse=reverse)",
     "each task gets the caller's values; a function returning new arrays keeps its device "
     "form (guide §10) when every call passes them on, by position or keyword, and nothing "
     "assigns them"),
    ("Python's types as dtypes", "a.astype(float); c = np.zeros(n, dtype=int)",
     "written np.float64, np.int64, np.bool_, the dtypes NumPy reads them as (Numba refuses "
     "Python's types there; where the name is not your own)"),
    ("a range read backwards", "for i in reversed(range(lo, mid)): s += a[i]",
     "counted down, range(mid - 1, lo - 1, -1): the same indices in the same order (a range "
     "without a step, bounds calling nothing but len, min, max, abs, int)"),
    ("the calls' tuples unpacked at once", "(lo1, hi1), (lo2, hi2) = f(a[:m]), f(a[m:])",
     "one unpacking per call, in order (where no value reads a name an earlier target "
     "assigns)"),
)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def refused_table() -> str:
    """The guide's table of refused constructs (Markdown), from :data:`RULES`."""
    rows = ["| Refused | Example | Why | Write instead |", "|---|---|---|---|"]
    for section in ("subset", "shape"):
        for r in RULES.values():
            if r.section == section:
                rows.append(f"| {_md(r.construct)} | `{_md(r.example)}` | {_md(r.reason)} | "
                            f"{_md(_cap(r.rewrite))} |")
    return "\n".join(rows)


def accepted_table() -> str:
    """The guide's table of accepted forms (Markdown), from :data:`ACCEPTED`."""
    rows = ["| Accepted form | Example | What hpu does |", "|---|---|---|"]
    for form, example, what in ACCEPTED:
        rows.append(f"| {_md(form)} | `{_md(example)}` | {_md(what)} |")
    return "\n".join(rows)
