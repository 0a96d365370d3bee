"""Frontend: read the user's recursive function and check that hpu can convert it.

Why this module exists
======================

hpu never asks the user to rewrite their algorithm.  It reads the textbook
recursive function (``inspect.getsource`` + ``ast``) and recognises the four
parts of 004's Algorithm 1 in it::

    def f(a, tmp, lo, hi):
        if hi - lo <= 16:             # 1. base guard(s): `if COND: ...; return [v]`
            insertion_sort(a, lo, hi)
            return
        mid = (lo + hi) // 2          # 2. divide: statements before the calls
        f(a, tmp, lo, mid)            # 3. a >= 2 recursive calls, one after the other
        f(a, tmp, mid, hi)
        merge(a, tmp, lo, mid, hi)    # 4. combine: statements after the calls

Everything the breadth-first conversion (004 Algorithm 2) needs is then a
matter of moving these parts around: the guard conditions decide which tasks
are base cases (the *count* pass), the divide writes the children's
parameters (the *fill* pass), the combine runs bottom-up once the children's
results exist.  :func:`parse` finds the parts and records them in a frozen
:class:`DCSpec`; :func:`resolve` finds the helpers, module constants and
modules the code uses (through the function's ``__globals__``) and checks them
too, producing a :class:`Closure`.  Code generation (:mod:`hpu._codegen`) works
only from these two.

People write the same four parts in many ways (``return f(l) + f(r)``, the
recursion inside ``if hi - lo > 1:``, the base case in an ``else``, a loop of
calls over ``range(4)``); :mod:`hpu._normalise` rewrites each of them into the
shape below first, keeping Python's order of evaluation and the user's line
numbers, so that everything after it sees one shape.  What is refused is
defined once, in :mod:`hpu._subset`.

The shape, precisely
--------------------

* **Guards.**  ``if COND: <statements ending in return>`` (``elif`` chains of
  the same form allowed, no ``else``).  Plain assignments may come before or
  between guards (``n = hi - lo`` then ``if n <= 1: return``); they and the
  conditions are evaluated more than once, so they must be *pure*: no writes
  to arrays, no helpers that write.  At least one guard is required: without
  one the recursion never ends.
* **Divide.**  Any statements between the last guard and the first call
  (helpers may write arrays here, e.g. a quicksort partition); no ``return``.
* **Calls.**  2 to 8 consecutive statements ``f(...)``, ``s = f(...)`` or
  ``x, y = f(...)``, nothing between them.  Array parameters are passed
  through unchanged (same name, same position); scalar parameters may change,
  by expressions over names and constants that do not read arrays or call
  helpers and do not use an earlier call's result (sibling subproblems are
  independent: that is what lets them run in any order, on any device).
* **Combine.**  The statements after the calls; they may use the divide's
  names, the parameters and the children's results, and return a scalar, a
  tuple written out (``return s, lo, hi``) or nothing.  Every ``return`` of
  the function agrees on that.

Which parameters are arrays is decided at call time from the arguments; the
checks that depend on it (an array reassigned or moved to another position)
run then, in :mod:`hpu._codegen`.  Parameters that are indexed in the function
are certainly arrays and are checked here already.

The numeric subset (the same for the function and its helpers): assignments,
``if``, ``while``, ``for ... in range(...)``, ``break``/``continue``/``pass``,
``return``; int/float/bool arithmetic and comparisons; 1-D indexing ``a[i]``;
calls to helpers, ``math``, a few NumPy scalar functions and the builtins
``len min max abs int float bool round range``.  Refused, each with the line
and what to write instead: allocation (``np.empty``, lists, ...), slices with a
step (other slices, ``len``, ``.size`` and ``.shape[0]`` are views, rewritten
before these checks by :mod:`hpu._views`),
``with``/``try``/``raise``/``assert``/``import``/``global``/``print``,
nested functions, lambdas, generators, strings, keyword arguments to helpers,
recursion through or inside helpers, names that contain ``__`` (reserved for
generated code), and globals other than int/float/bool constants.
"""
from __future__ import annotations

import ast
import builtins
import copy
import inspect
import math
import re
import textwrap
import types
from dataclasses import dataclass, field

import numpy as np

from hpu import _functional, _views
from hpu._errors import TranslationError
from hpu._guard import DIGITS
from hpu._iteration import array_loops_indexed
from hpu._normalise import (_is_rec, _rewrite_blocks, children_written_out,
                            named_exprs_hoisted, nested_results_flattened, normalise,
                            unroll_literal_loops, unroll_value_loops)
from hpu._raises import lower_raises, raise_refusal
from hpu._reductions import REDUCE_FIRST, REDUCE_PAIR, reductions_as_loops
from hpu._subset import EXPR_RULES, STMT_RULES, refuse_with
from hpu._unbound import guard_unbound

__all__ = [
    "CallSite", "DCSpec", "Helper", "Closure", "parse", "resolve",
    "check_cost", "MAX_CALLS", "RESERVED_NAMES",
]

#: Most recursive calls one function may make (a).
MAX_CALLS = 8

#: Module-level names used by the generated code; user globals may not use them.
RESERVED_NAMES = frozenset({
    "np", "numpy", "math", "njit", "prange",
    "count_task", "fill_task", "leaf_task", "combine_task", "leaf_task_iter",
    "count_level", "fill_level", "leaf_level", "combine_level", "leaf_level_iter",
    "solve_iter", "hpu__probe",
})

_BUILTINS = frozenset({"range", "len", "min", "max", "abs", "int", "float", "bool", "round"})

#: NumPy names allowed inside the subset: scalar types, scalar functions, constants.
_NUMPY_OK = frozenset({
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "intp", "float32", "float64", "bool_",
    "sqrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "arctan", "floor", "ceil",
    "fabs", "abs", "absolute", "minimum", "maximum", "fmin", "fmax", "isnan", "isinf",
    "isfinite", "sign", "inf", "nan", "pi", "e",
})
_NUMPY_ALLOC = frozenset({
    "empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like",
    "array", "asarray", "ascontiguousarray", "arange", "linspace", "copy", "concatenate",
    "stack", "hstack", "vstack", "sort", "argsort", "cumsum", "where", "unique", "repeat",
    "tile", "append", "resize", "reshape",
})

_COST_RE = re.compile(r"^(1|n|n log n|n\^\d+(\.\d+)?)$")


def check_cost(cost) -> str:
    """Normalise a ``cost=`` string (``"1"``, ``"n"``, ``"n log n"``, ``"n^k"``)."""
    if not isinstance(cost, str):
        raise TypeError(f"cost={cost!r} must be a string: one of '1', 'n', 'n log n', 'n^k' "
                        "(f(n) of T(n) = a·T(n/b) + f(n)); pass e.g. cost='n'")
    text = " ".join(cost.replace("**", "^").split())
    if not _COST_RE.match(text):
        raise ValueError(f"cost={cost!r} is not understood: expected '1', 'n', 'n log n' or "
                         "'n^k' with a number k (e.g. 'n^2'); pass the cost of one divide "
                         "plus combine on n elements")
    return text


# --------------------------------------------------------------------------- results

@dataclass(frozen=True)
class CallSite:
    """One recursive call: its line, one argument per parameter, the names it binds."""

    lineno: int                       #: line in the user's file
    args: tuple[ast.expr, ...]        #: positional, one per parameter (keywords mapped)
    targets: tuple[str, ...]          #: names bound to the result's components; () if discarded


@dataclass(frozen=True)
class DCSpec:
    """A recursive divide-and-conquer function, split into its four parts.

    The statement tuples hold the function's own AST nodes (treat them as
    read-only; code generation deep-copies before transforming).
    """

    name: str
    filename: str
    lineno: int                         #: line of ``def`` in ``filename``
    params: tuple[str, ...]
    source: str                         #: the function's source as written (dedented)
    source_line: int                    #: the file line of ``source``'s first line
    tree: ast.FunctionDef               #: parsed, decorators and docstring removed, file line numbers
    check: tuple[ast.stmt, ...]         #: pure assignments and guard ``if``s (up to the last guard)
    divide: tuple[ast.stmt, ...]        #: statements between the last guard and the first call
    calls: tuple[CallSite, ...]
    combine: tuple[ast.stmt, ...]       #: statements after the calls
    result_arity: int                   #: 0: returns nothing; 1: a scalar; k >= 2: a k-tuple
    passthrough: frozenset[str]         #: parameters every call passes unchanged, never reassigned
    carried: tuple[str, ...]            #: names set before the calls and read after them
    indexed: frozenset[str] = frozenset()  #: parameters indexed (or len()-ed): certainly arrays
    b: float = 2
    cost: str = "n"
    span: tuple[str, str] | None = None
    #: the model's ``n`` only, ``hi - lo`` of these two scalar parameters, where ``span`` cannot
    #: be given: the in-place form of a functional ``f(arr, lo, hi)`` (hpu._functional_dps)
    #: writes its buffer outside ``[lo, hi)``, so its arrays must travel whole
    extent: tuple[str, str] | None = None
    #: (array, offset parameter, length parameter) of each parameter that receives NumPy
    #: slices: the hidden scalars that bound the part of the array a task sees (hpu._views)
    views: tuple[tuple[str, str, str], ...] = ()
    view_info: object = field(default=None, compare=False, repr=False)
    #: (line, code) of array reads / helper calls that normalising moved after a recursive call
    reordered: tuple[tuple[int, str], ...] = ()
    #: (line, code) of recursive calls Python may skip, which hpu always makes
    conditional: tuple[tuple[int, str], ...] = ()
    #: (parameter, expression, its line) of each leading ``if hi is None: hi = len(a)``: the
    #: root's default, evaluated at the call (every recursive call passes the parameter)
    root_defaults: tuple[tuple[str, str, int], ...] = ()
    #: the flag hpu added for recursive calls made only when a test holds (``if p - 1 > lo:
    #: qsort(a, lo, p - 1)``): the last parameter, 1 at the root (:func:`_guarded_calls`)
    go: str | None = None
    #: the nesting of a result written as nested tuples (``return s, (mx, c)``: ``(None,
    #: (None, None))``), which the levels hold flat; None for any other result
    #: (:func:`hpu._normalise.nested_results_flattened`, :func:`hpu._normalise.regrouped`)
    result_shape: tuple | None = None

    @property
    def a(self) -> int:
        """The number of recursive calls (the branching factor of the tree)."""
        return len(self.calls)

    @property
    def result_names(self) -> tuple[str, ...]:
        return tuple(n for c in self.calls for n in c.targets)

    def line(self, lineno: int) -> str:
        """The text of a line of the user's file (for comments in generated code)."""
        lines = self.source.splitlines()
        i = lineno - self.source_line
        return lines[i].strip() if 0 <= i < len(lines) else ""


@dataclass(frozen=True)
class Helper:
    """A plain function called from the divide-and-conquer function (or another helper)."""

    name: str                  #: the name it is called by in the generated module
    source: str                #: checked source, decorators and docstring removed, renamed
    filename: str
    lineno: int
    params: tuple[str, ...]
    writes: frozenset[int]     #: positions of parameters it may write (transitively)
    #: the tree ``source`` is the text of, with the user's file lines (error messages name
    #: the failing line, not the ``def``) and the views' marks (hpu._views.ViewIndex)
    tree: ast.FunctionDef | None = field(default=None, compare=False, repr=False)
    #: the name the user wrote, where hpu renamed the helper (the device form's
    #: ``merge_into`` is ``merge`` to the user: hpu._functional_dps)
    shown: str = field(default="", compare=False)
    #: its code is the function's own (``__hpu_own__``): messages name no helper
    own: bool = field(default=False, compare=False)

    @property
    def display(self) -> str:
        """The helper's name as messages give it: the user's."""
        return self.shown or self.name

    @property
    def context(self) -> str:
        """What a message about its code says before the expression: ``in merge(): ``; nothing
        for code that is the function's own, moved into a helper by hpu (a combine written
        inline, hpu._functional_dps), as for the function's other lines."""
        return "" if self.own else f"in {self.display}(): "


@dataclass(frozen=True)
class Closure:
    """What the function's code refers to besides its parameters and locals."""

    helpers: tuple[Helper, ...]                 #: in the order found (breadth-first)
    constants: tuple[tuple[str, object], ...]   #: module constants (int, float, bool), by name
    modules: tuple[tuple[str, str], ...]        #: alias -> "math" | "numpy"
    imported: tuple[tuple[str, str, str], ...]  #: alias -> (module, attribute), e.g. sqrt from math
    written: frozenset[str]                     #: parameters of the function it may write
    first_write: tuple[tuple[str, int], ...] = ()  #: parameter -> a line that writes it


# --------------------------------------------------------------------------- helpers

class _At:
    """A stand-in node carrying only a line number (for refusals recorded as lines)."""

    def __init__(self, lineno):
        self.lineno = lineno


class _Where:
    """Where a piece of source came from, to make errors point at the user's line.

    The ASTs carry file line numbers (:func:`_source_of` rebases them).
    """

    def __init__(self, filename: str, what: str):
        self.filename = filename
        self.what = what                  # "function 'f'" / "helper 'merge'"
        self.hidden = frozenset()         # names hpu._views introduced (they contain '__')

    @staticmethod
    def line(node) -> int | None:
        return getattr(node, "lineno", None)

    def refuse(self, node, construct: str, reason: str, hint: str | None = None):
        raise TranslationError(f"{construct} is not supported: {reason}", filename=self.filename,
                               lineno=self.line(node), construct=construct, hint=_cap(hint))


def _cap(hint: str | None) -> str | None:
    """Hints follow a full stop: start them with a capital letter."""
    return hint[:1].upper() + hint[1:] if hint else hint


def _source_of(fn, kind: str):
    """Dedented source, its first line in the file, the file name, the parsed def.  A
    function hpu rewrote itself (:mod:`hpu._functional_dps`) carries its tree, with the
    user's file and lines, and the user's source text for the comments."""
    given = getattr(fn, "__hpu_tree__", None)
    if given is not None:
        node, filename, text, start = given
        return textwrap.dedent(text), start, filename, copy.deepcopy(node)
    try:
        lines, start = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except (OSError, TypeError):
        raise TranslationError(
            f"a {kind} without source is not supported: the source of {fn.__qualname__!r} "
            "cannot be read (was it typed at an interactive prompt or made with exec?)",
            filename=getattr(getattr(fn, "__code__", None), "co_filename", None),
            construct="function without source",
            hint="Define it in a .py file (or a notebook cell) so that inspect.getsource works",
        ) from None
    text = textwrap.dedent("".join(lines))
    try:
        module = ast.parse(text)
    except SyntaxError as err:  # e.g. a lambda's line, or a def cut out of an expression
        raise TranslationError(
            f"a {kind} whose source cannot be parsed on its own is not supported ({err.msg})",
            filename=filename, lineno=start, construct="unparsable source",
            hint="Define it with a plain `def` statement at module level") from None
    defs = [n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not defs:
        raise TranslationError(f"a {kind} that is not a `def` is not supported",
                               filename=filename, lineno=start, construct="lambda",
                               hint="Write it as `def name(...):` at module level")
    node = defs[0]
    ast.increment_lineno(module, start - 1)  # line numbers are file lines from here on
    _helper_keywords_as_positions(node, getattr(fn, "__globals__", {}), node.name)
    children_written_out(node, getattr(fn, "__globals__", {}))  # for p in parts: f(p); rs[0]
    unroll_value_loops(node, node.name)
    return text, start, filename, node


def _helper_keywords_as_positions(tree, glb: dict, own: str) -> None:
    """``merge(a, tmp, lo=lo, mid=mid, hi=hi)`` -> ``merge(a, tmp, lo, mid, hi)``: a call of
    a module-level helper with keyword arguments, written by position from the helper's
    signature (a parameter left out takes its default, where that is a number, a bool or
    None).  A task's call has one fixed list of arguments; Python binds keywords to the
    same parameters, so the call means the same.  Anything else (``**kw``, a keyword the
    helper does not have, a default of another kind) is left as written: the subset
    checker refuses it with its line.  The recursive call ``own`` maps its keywords later
    (:func:`_map_call_args`)."""
    import types

    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and call.keywords and isinstance(call.func, ast.Name)
                and call.func.id != own):
            continue
        helper = glb.get(call.func.id)
        if not isinstance(helper, types.FunctionType):
            continue
        try:
            params = list(inspect.signature(helper).parameters.values())
        except (TypeError, ValueError):
            continue
        if any(p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params) or any(
                k.arg is None for k in call.keywords) or any(
                isinstance(a, ast.Starred) for a in call.args):
            continue
        given = {k.arg: k.value for k in call.keywords}
        names = [p.name for p in params]
        if (len(call.args) > len(names) or any(k not in names for k in given)
                or any(k in names[:len(call.args)] for k in given)):
            continue
        args = list(call.args)
        for p in params[len(call.args):]:
            if p.name in given:
                args.append(given[p.name])
            elif p.default is not inspect.Parameter.empty and (
                    p.default is None or type(p.default) in (int, float, bool)):
                args.append(ast.copy_location(ast.Constant(p.default), call))
            else:
                break
        else:
            call.args, call.keywords = args, []


class _Plain(ast.NodeTransformer):
    """Drops string statements (docstrings, comment-like strings) and turns ``x: T = v``
    into ``x = v``: generated code carries no annotations and no strings."""

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None
        return node

    def visit_AnnAssign(self, node):
        if node.value is None or not isinstance(node.target, ast.Name):
            return node  # refused later by the subset checker, with its line
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)

    def generic_visit(self, node):
        super().generic_visit(node)
        for name in ("body", "orelse"):
            block = getattr(node, name, None)
            if isinstance(block, list) and not block and name == "body":
                block.append(ast.copy_location(ast.Pass(), node))
        return node


def _strip(node: ast.FunctionDef) -> ast.FunctionDef:
    """A copy without decorators, annotations, docstring and string statements."""
    node = copy.deepcopy(node)
    node.decorator_list = []
    node.returns = None
    for arg in node.args.posonlyargs + node.args.args:
        arg.annotation = None
    node = _Plain().visit(node)
    named_exprs_hoisted(node)  # if (n := len(a)) <= 1: -> n = len(a); if n <= 1:
    ast.fix_missing_locations(node)
    return node


def _check_params(node, where: _Where) -> tuple[str, ...]:
    args = node.args
    if args.vararg is not None:
        where.refuse(node, "*args", "a variable number of parameters cannot be laid out per task",
                     "name every parameter")
    if args.kwarg is not None:
        where.refuse(node, "**kwargs", "keyword-only bundles cannot be laid out per task",
                     "name every parameter")
    if args.kwonlyargs:
        where.refuse(node, "keyword-only parameter",
                     f"{args.kwonlyargs[0].arg!r} comes after `*`", "make it an ordinary parameter")
    params = tuple(a.arg for a in args.posonlyargs + args.args)
    for p in params:
        _check_identifier(p, node, where)
    return params


def _check_identifier(name: str, node, where: _Where) -> None:
    if "__" in name and name not in where.hidden:
        where.refuse(node, f"the name {name!r}",
                     "names containing '__' are reserved for hpu's generated code",
                     f"rename it, e.g. {name.replace('__', '_')!r}")


def stored_names(nodes) -> set[str]:
    """Names assigned (Store context, loop targets) anywhere inside ``nodes``."""
    out = set()
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                out.add(sub.id)
    return out


def loaded_names(nodes) -> list[str]:
    """Names read inside ``nodes``, in order of first appearance."""
    out: dict[str, None] = {}
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                out.setdefault(sub.id, None)
    return list(out)


def _subscripted_params(nodes, params) -> set[str]:
    out = set()
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) \
                    and sub.value.id in params:
                out.add(sub.value.id)
            if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "len"
                    and len(sub.args) == 1 and isinstance(sub.args[0], ast.Name)
                    and sub.args[0].id in params):
                out.add(sub.args[0].id)
    return out


# --------------------------------------------------------------------------- the subset

class _SubsetChecker(ast.NodeVisitor):
    """Refuses syntax outside the numeric subset (names are resolved later, in :func:`resolve`)."""

    def __init__(self, where: _Where, recursive_name: str | None = None):
        self.where = where
        self.recursive_name = recursive_name

    def check(self, stmts):
        for s in stmts:
            self.visit(s)

    def check_all(self, stmts):
        """Check every statement, and refuse them all at once: one TranslationError
        naming each statement that blocks the function (its first construct), with its
        line and rewrite.  Nested blocks are checked statement by statement too."""
        errors: list[TranslationError] = []

        def walk(body):
            for s in body:
                if isinstance(s, (ast.If, ast.While, ast.For)):
                    before = len(errors)
                    try:
                        if isinstance(s, ast.For):
                            self.visit_For(_HeadOnly(s))
                        else:
                            self.visit(s.test)
                    except TranslationError as err:
                        errors.append(err)
                    if len(errors) == before or not isinstance(s, ast.For):
                        walk(s.body)
                        walk(getattr(s, "orelse", []) if isinstance(s, ast.If) else [])
                    continue
                try:
                    self.visit(s)
                except TranslationError as err:
                    errors.append(err)

        walk(stmts)
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise _several(errors, self.where)

    # ---- statements
    def visit_Assign(self, node):
        for t in node.targets:
            self._target(t, node)
        if isinstance(node.value, ast.Tuple):
            if not all(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets):
                self.where.refuse(node, "a tuple value",
                                  "tuples exist only to return several values or to swap",
                                  "assign each value to its own name")
            for e in node.value.elts:
                self.visit(e)
        else:
            self.visit(node.value)

    def _target(self, t, node):
        if isinstance(t, ast.Name):
            _check_identifier(t.id, node, self.where)
        elif isinstance(t, ast.Subscript):
            self.visit(t)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                if isinstance(e, ast.Starred):
                    self.where.refuse(node, "starred assignment", "`*x` collects a list",
                                      "unpack into a fixed number of names")
                self._target(e, node)
        elif isinstance(t, ast.Attribute):
            self.where.refuse(node, "attribute assignment",
                              f"`{_views.display(t)} = ...` changes an object",
                              "only names and array elements can be assigned")
        else:
            self.where.refuse(node, "this assignment target", _views.display(t),
                              "assign to a name or an array element a[i]")

    def visit_AugAssign(self, node):
        self._target(node.target, node)
        if isinstance(node.op, ast.MatMult):
            self.where.refuse(node, "the @ operator", "matrix products are not scalar arithmetic")
        self.visit(node.value)

    def visit_AnnAssign(self, node):
        if node.value is None or not isinstance(node.target, ast.Name):
            self.where.refuse(node, "an annotation without a value",
                              "it declares nothing hpu can use", "write `x = value`")
        self._target(node.target, node)
        self.visit(node.value)

    def visit_Expr(self, node):
        if isinstance(node.value, (ast.Yield, ast.YieldFrom, ast.Await)):
            refuse_with(self.where, node, EXPR_RULES[type(node.value)])
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a string statement, e.g. a comment-like docstring in the middle: no effect
        if not isinstance(node.value, ast.Call):
            self.where.refuse(node, "an expression statement",
                              f"`{_views.display(node.value)}` has no effect",
                              "remove it, or assign its value to a name")
        self.visit(node.value)

    def visit_If(self, node):
        self.visit(node.test)
        self.check(node.body)
        self.check(node.orelse)

    def visit_While(self, node):          # (a loop's else is a flag by now: hpu._iteration)
        self.visit(node.test)
        self.check(node.body)

    def visit_For(self, node):
        if not isinstance(node.target, ast.Name):
            self.where.refuse(node, "this loop target", _views.display(node.target),
                              "loop over one name: `for i in range(lo, hi):`")
        _check_identifier(node.target.id, node, self.where)
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and 1 <= len(it.args) <= 3 and not it.keywords):
            self.where.refuse(node, f"`for ... in {_views.display(it)}`",
                              "only counted loops over range(...) can run on every device",
                              "loop over indices: `for i in range(lo, hi):` and read a[i]")
        for a in it.args:
            self.visit(a)
        self.check(node.body)

    def visit_Return(self, node):
        if node.value is not None:
            if isinstance(node.value, ast.Tuple):
                for e in node.value.elts:
                    if isinstance(e, ast.Starred):
                        self.where.refuse(node, "starred return", "`*x` in a tuple",
                                          "write the values out")
                    self.visit(e)
            else:
                self.visit(node.value)

    def visit_Pass(self, node):
        pass

    def visit_Break(self, node):
        pass

    def visit_Continue(self, node):
        pass

    def _refuse_stmt(self, node, construct, reason, hint):
        self.where.refuse(node, construct, reason, hint)

    def _table(self, node):
        """Statements refused everywhere: the one table in :mod:`hpu._subset`."""
        refuse_with(self.where, node, STMT_RULES[type(node)])

    def visit_Raise(self, node):
        """``raise E(constant...)`` of a built-in class runs on every path (:mod:`hpu._raises`)."""
        why = raise_refusal(node)
        if why is not None:
            shown = getattr(node, "hpu_shown", None) or _views.display(node)
            self.where.refuse(node, f"`{shown}`", why,
                              "raise one of Python's built-in exceptions with a constant "
                              "message, e.g. raise ValueError(\"hi < lo\"), and check the "
                              "arguments before the call for a message that names values")

    visit_With = visit_AsyncWith = visit_Try = visit_Assert = _table
    visit_Import = visit_ImportFrom = visit_Global = visit_Nonlocal = _table
    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_Delete = _table
    visit_Match = visit_AsyncFor = visit_TryStar = _table

    # ---- expressions
    def visit_Constant(self, node):
        v = node.value
        if isinstance(v, (bool, int, float)) or v is None:
            return
        kind = type(v).__name__
        self.where.refuse(node, f"a {kind} constant", f"{node.value!r} is not a number",
                          "use int, float or bool values only")

    def visit_Name(self, node):
        _check_identifier(node.id, node, self.where)

    def visit_Subscript(self, node):
        if not isinstance(node.value, ast.Name):
            self.where.refuse(node, "this indexing", f"`{_views.display(node)}`",
                              "index an array parameter directly: a[i]")
        if isinstance(node.slice, ast.Slice):
            refuse_with(self.where, node, "slice", construct=f"slicing `{_views.display(node)}`")
        if isinstance(node.slice, ast.Tuple):
            self.where.refuse(node, f"multi-dimensional indexing `{_views.display(node)}`",
                              "arrays are 1-D", "flatten the index: a[i * width + j]")
        self.visit(node.slice)

    def visit_Call(self, node):
        f = node.func
        if isinstance(f, ast.Name):
            if f.id == "print":
                refuse_with(self.where, node, "print")
            # a view passed on is (array, offset, length) by now: shown as written
            args = node.args
            if len(args) == 3 and all(isinstance(a, ast.Name) and a.id in self.where.hidden
                                      for a in args[1:]):
                args = args[:1]
            if (f.id == "sum" and args and not node.keywords) or (
                    f.id in ("min", "max") and len(args) == 1 and not node.keywords):
                shown = f"{f.id}({', '.join(_views.display(a) for a in args)})"
                _refuse_reduction(self.where, node, shown)
        elif isinstance(f, ast.Attribute):
            if not isinstance(f.value, ast.Name):
                try:
                    self.where.refuse(node, f"the call `{_views.display(node)}`",
                                      "only functions of math and numpy can be called by "
                                      "attribute", "call a module-level helper instead")
                except TranslationError as err:
                    if isinstance(f.value, ast.Subscript):
                        # a row's method, `M[i].sum()`: Numba compiles it as written, so the
                        # function runs so, on the CPU (hpu._decorator._as_written)
                        err.as_written = f"the call `{_views.display(node)}`"
                    raise
        else:
            self.where.refuse(node, f"the call `{_views.display(node)}`",
                              "only named functions can be called", "call a helper by name")
        if node.keywords and not (isinstance(f, ast.Name) and f.id == self.recursive_name):
            self.where.refuse(node, "keyword arguments",
                              f"`{_views.display(node)}` passes {node.keywords[0].arg}=...",
                              "pass every argument by position")
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.where.refuse(node, "starred arguments", f"`{_views.display(a)}`",
                                  "pass each argument by position")
            self.visit(a)
        for k in node.keywords:
            self.visit(k.value)

    def visit_Attribute(self, node):
        if not isinstance(node.value, ast.Name):
            self.where.refuse(node, f"the attribute `{_views.display(node)}`",
                              "only constants of math and numpy can be read by attribute",
                              "use len(a) for an array's length")

    def visit_Tuple(self, node):
        self.where.refuse(node, "a tuple", f"`{_views.display(node)}` outside a return or a swap",
                          "tuples exist only to return several values (`return x, y`) "
                          "or to unpack them (`x, y = g(...)`)")

    def _expr_table(self, node):
        """Expressions refused everywhere: the one table in :mod:`hpu._subset`."""
        refuse_with(self.where, node, EXPR_RULES[type(node)])

    visit_List = visit_Dict = visit_Set = visit_ListComp = visit_SetComp = _expr_table
    visit_DictComp = visit_GeneratorExp = visit_Lambda = visit_Yield = _expr_table
    visit_YieldFrom = visit_Await = visit_NamedExpr = visit_JoinedStr = _expr_table
    visit_Starred = _expr_table

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.MatMult):
            self.where.refuse(node, "the @ operator", "matrix products are not scalar arithmetic")
        self.generic_visit(node)

    def visit_Slice(self, node):
        refuse_with(self.where, node, "slice")


class _HeadOnly:
    """A for statement without its body: lets check_all check a loop's head alone."""

    def __init__(self, node):
        self.__dict__.update(node.__dict__)
        self.body = []


def _several(errors: list[TranslationError], where: _Where) -> TranslationError:
    """One error naming every refused construct (each with its line and rewrite)."""
    lines = "\n".join(f"  {e}" for e in errors)
    first = errors[0]
    err = TranslationError(
        f"{len(errors)} constructs in {where.what} are not supported:\n{lines}",
        filename=first.filename, lineno=first.lineno, construct=first.construct,
        hint="Each line above says what to write instead")
    err.errors = tuple(errors)
    return err


# --------------------------------------------------------------------------- parse

def _contains_return(node) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(node))


def _recursive_calls(node, name):
    return [n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id == name]


def _call_stmt(stmt, name):
    """(call, targets) when ``stmt`` is exactly one recursive call statement, else None."""
    if isinstance(stmt, ast.Expr):
        value, targets = stmt.value, None
    elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        value, targets = stmt.value, stmt.targets[0]
    else:
        return None
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == name):
        return None
    return value, targets


def _most_calls(stmts, name: str) -> int:
    """The most recursive calls any path through ``stmts`` makes (a loop's body counted
    twice: it may run more than once)."""
    total = 0
    for k, s in enumerate(stmts):
        if isinstance(s, ast.If):
            rest = stmts[k + 1:]

            def branch(block):
                c = _most_calls(block, name)
                ends = bool(block) and isinstance(block[-1], (ast.Return, ast.Raise))
                return c if ends else c + _most_calls(rest, name)

            return (total + len(_recursive_calls(s.test, name))
                    + max(branch(s.body), branch(s.orelse)))
        if isinstance(s, (ast.For, ast.While)):
            head = s.iter if isinstance(s, ast.For) else s.test
            total += len(_recursive_calls(head, name)) + 2 * _most_calls(s.body + s.orelse, name)
            continue
        total += len(_recursive_calls(s, name))
        if isinstance(s, (ast.Return, ast.Raise)):
            return total
    return total


def _guarded_call_hint(node, call, params) -> str | None:
    """For ``if TEST: f(...)`` (the competitive programmer's quicksort: ``if lo < j:
    qsort(a, lo, j)``), the rewrite that runs: the test as the function's own base case, in
    its parameters' names where every name the test reads is one of the call's arguments
    (``j`` is passed as ``hi``), and the calls made unconditionally; else None."""
    # (the body may go on: the normaliser moves what follows an `if` into its branches)
    if not isinstance(node, ast.If):
        return None
    inside = [st for st in node.body if any(n is call for n in ast.walk(st))]
    if not inside:
        return None         # (in the test, or in the else branch)
    if isinstance(inside[0], ast.Return):
        return None         # (branches returning different calls: the generic advice)
    if not (isinstance(inside[0], ast.Expr) and ast.dump(inside[0].value) == ast.dump(call)):
        # `if len(p) > 0: s += f(p)`, `max(f(p) for p in parts if len(p) > 0)`: the value
        # a skipped call leaves is the user's to say
        return ("a call made only when a test holds (a filter, `if len(p) > 0:`): make "
                "the test the function's base case instead, returning the value that "
                "changes nothing where the call's result is used (`if <the test is false, in "
                "the parameters' names>: return 0` for a sum, `float('-inf')` for a "
                "maximum), and make the calls unconditionally")
    own = {}
    for k, arg in enumerate(call.args[:len(params)]):
        if isinstance(arg, ast.Name):
            own.setdefault(arg.id, params[k])
    test = copy.deepcopy(node.test)
    names = [n for n in ast.walk(test) if isinstance(n, ast.Name)]
    if not names or any(n.id not in own for n in names):
        return ("a call made only when a test holds: make the test the function's base "
                "case instead (`if <the test, in the parameters' names> is false: return` "
                "first), and make the calls unconditionally")
    for n in names:
        n.id = own[n.id]
    return (f"make the test the function's base case instead -- begin it with `if not "
            f"({ast.unparse(test)}): return` -- and make each call unconditionally "
            f"(`{ast.unparse(call)}`): a call that would be skipped returns at once")


def _describe_nesting(stmt, call, params=()) -> tuple[str, str]:
    """What encloses ``call`` inside the top-level statement ``stmt``: construct and hint."""
    path = []

    def walk(node, trail):
        if node is call:
            path.extend(trail)
            return True
        for child in ast.iter_child_nodes(node):
            if walk(child, trail + [node]):
                return True
        return False

    walk(stmt, [])
    # a loop or a condition first, wherever it is: naming the calls inside a return that
    # sits in an `if` would leave them in the `if` (the advice would be refused in turn)
    for n in reversed(path):
        if isinstance(n, (ast.For, ast.While)):
            return ("a recursive call inside a loop",
                    "make the calls top-level statements, one per subproblem, or loop over "
                    "range(K) with K an int constant; the number of calls a is fixed (2 to 8)")
        if isinstance(n, (ast.If, ast.IfExp)):
            guarded = _guarded_call_hint(n, call, params)
            if guarded is not None:
                return "a recursive call inside a condition", guarded
            return ("a recursive call inside a condition",
                    "write the base case as a guard `if COND: ...; return` first, then the "
                    "divide and the calls unindented after it; where the branches make the "
                    "same calls, make them once before the `if` (`s1 = f(...)`, "
                    "`s2 = f(...)`) and use the names in each branch")
    for n in reversed(path):
        if isinstance(n, ast.Return):
            return ("a recursive call inside a return",
                    "assign each call's result to a name (`s1 = f(...)`, `s2 = f(...)`) "
                    "and return an expression of the names")
    return ("a recursive call inside an expression",
            "write each call as its own statement: `f(...)`, `s = f(...)` or `x, y = f(...)`")


def _guard_chain(stmt, where: _Where) -> list[ast.If]:
    """The ``if``/``elif`` nodes of a guard statement; refuses anything else that returns."""
    chain = []
    node = stmt
    while True:
        if not isinstance(node, ast.If):
            where.refuse(node, "a return before the recursive calls outside a base-case guard",
                         "returns before the calls must be the last statement of an "
                         "`if COND:` block (the base case)",
                         "write `if COND: <base case>; return [value]` and the divide after it")
        if not _always_returns(node.body):
            where.refuse(node.body[-1] if node.body else node,
                         "a base-case guard that does not end in return",
                         "the guard's block must finish with `return` so that the base "
                         "case never reaches the recursive calls",
                         "end the block with `return` (or `return value`)")
        chain.append(node)
        if not node.orelse:
            return chain
        if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            node = node.orelse[0]
            continue
        where.refuse(node.orelse[0], "an else branch after a base-case guard",
                     "the divide must follow the guard, not sit in its else branch",
                     "remove the `else:` and unindent its statements")


def _check_pure_prefix(stmt, where: _Where):
    """Statements before a guard run more than once: only assignments to names -- and the
    loops a reduction in a guard's test became (``if a.max() == a.min():``,
    :mod:`hpu._reductions`), which assign names only."""
    if isinstance(stmt, (ast.For, ast.If)) and getattr(stmt, "hpu_text", None):
        for sub in stmt.body + stmt.orelse:
            _check_pure_prefix(sub, where)
        return
    if isinstance(stmt, ast.Raise):   # a check of the arguments (hpu._raises): no effect
        return                        # but the exception, whenever it is evaluated
    if isinstance(stmt, ast.If) and _always_raises(stmt.body) and (
            not stmt.orelse or _always_raises(stmt.orelse)):
        for sub in stmt.body + stmt.orelse:
            _check_pure_prefix(sub, where)
        return
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Subscript):
                    where.refuse(stmt, "writing an array before the base-case guard",
                                 f"`{_views.display(stmt)}` runs again each time hpu evaluates "
                                 "the guard", "move it after the last guard (into the divide), "
                                 "and into the base case too where a leaf must make it")
        return
    where.refuse(stmt, f"`{_views.display(stmt).splitlines()[0]}` before the base-case guard",
                 "only assignments to names may come before or between guards (they are "
                 "evaluated again whenever hpu tests whether a task is a base case)",
                 "move it after the last guard, or into the guard's block, where that "
                 "computes the same (a write every task makes before its base case belongs "
                 "in the base case too: write it into both -- unless the calls then repeat "
                 "one another's ranges, as stooge sort's do, whose order hpu cannot keep: "
                 "run such a function as plain Python, f.py_func)")


def _defaults_passed(tree, fn) -> None:
    """A recursive call that leaves out a parameter with a number as its default (``def
    dsum(a, cut=CUTOFF)`` called as ``dsum(a[:m])``) passes the default, in place: the value
    Python bound when the function was defined (a later ``CUTOFF = 4`` does not change it,
    in Python either), as a keyword.  Other defaults (``hi=None``, computed in the body) are
    left for the call's refusal, which says to pass them."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    defaults = {p.name: p.default for p in sig.parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                and type(p.default) in (int, float, bool)
                and (type(p.default) is not float or math.isfinite(p.default))}
    if not defaults:
        return
    names = list(sig.parameters)
    for c in ast.walk(tree):
        if not (isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                and c.func.id == tree.name) or any(
                isinstance(a, ast.Starred) for a in c.args) or any(
                k.arg is None for k in c.keywords):
            continue
        given = set(names[:len(c.args)]) | {k.arg for k in c.keywords}
        for p in names[len(c.args):]:
            if p not in given and p in defaults:
                c.keywords.append(ast.copy_location(
                    ast.keyword(p, ast.copy_location(ast.Constant(defaults[p]), c)), c))


def _map_call_args(call, params, name, where: _Where) -> tuple[ast.expr, ...]:
    for a in call.args:
        if isinstance(a, ast.Starred):
            where.refuse(call, "starred arguments in a recursive call", f"`{_views.display(a)}`",
                         "pass each parameter explicitly")
    n = len(call.args) + len(call.keywords)
    if n != len(params) or len(call.args) > len(params):
        # (named as the user wrote them: a slice parameter's hidden a__o, a__n left out)
        shown = [p for p in params
                 if not any(p in _views.hidden_names(q) for q in params)]
        where.refuse(call, "a recursive call that does not pass each parameter once",
                     f"{name} takes ({', '.join(shown)}); every call must pass all of them "
                     "(a parameter whose default is a number may be left out)",
                     f"write {name}({', '.join(shown)}) with the child's values")
    args: list = list(call.args) + [None] * (len(params) - len(call.args))
    for k in call.keywords:
        if k.arg is None:
            where.refuse(call, "**kwargs in a recursive call", f"`{_views.display(call)}`",
                         "pass each parameter explicitly")
        if k.arg not in params:
            where.refuse(call, f"the keyword {k.arg}=", f"{name} has no parameter {k.arg!r}",
                         f"use one of {', '.join(params)}")
        i = params.index(k.arg)
        if args[i] is not None:
            where.refuse(call, f"the keyword {k.arg}=", "it is also passed by position",
                         "pass it once")
        args[i] = k.value
    return tuple(args)


def _return_arity(ret: ast.Return) -> int:
    v = ret.value
    if v is None or (isinstance(v, ast.Constant) and v.value is None):
        return 0
    if isinstance(v, ast.Tuple):
        return len(v.elts)
    return 1


def _ends_in(stmts, kinds) -> bool:
    """Every path through the block ends in a statement of ``kinds``."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, kinds):
        return True
    if isinstance(last, ast.If):
        return _ends_in(last.body, kinds) and _ends_in(last.orelse, kinds)
    return False


def _always_raises(stmts) -> bool:
    """The block ends in ``raise`` on every path (an argument check: ``if hi < lo: raise``)."""
    return _ends_in(stmts, ast.Raise)


def _always_returns(stmts) -> bool:
    """The block ends in ``return`` -- or ``raise``, which ends it too -- on every path."""
    return _ends_in(stmts, (ast.Return, ast.Raise))


_ARG_CALLS = frozenset({"min", "max", "abs", "int", "float", "bool", "round", "len"})


def _check_call_arg(expr, where: _Where, results: set[str], call):
    """A child's parameter: arithmetic on names and constants, evaluated once, in the fill pass."""
    # the flag of a call made when a test holds (_guarded_calls): the user's test, as written
    guard = getattr(expr, "hpu_guard", False)
    shown = (f"`{_views.display(expr.test)}`, the test of a call made only when it holds,"
             if guard else f"`{_views.display(expr)}`")
    for n in ast.walk(expr):
        if isinstance(n, ast.Subscript):
            where.refuse(call, "reading an array in a recursive call's argument"
                         if not guard else "reading an array in a recursive call's test",
                         f"{shown} would be read before the earlier siblings ran",
                         "compute it into a name in the divide, before the calls")
        if isinstance(n, ast.Call):
            f = n.func
            if not ((isinstance(f, ast.Name) and f.id in _ARG_CALLS) or isinstance(f, ast.Attribute)):
                where.refuse(call, "a helper call in a recursive call's argument",
                             f"`{_views.display(n)}`",
                             "compute it into a name in the divide, before the calls")
        if isinstance(n, ast.Name) and n.id in results:
            where.refuse(call, "recursive calls that depend on each other",
                         f"`{_views.display(expr)}` uses {n.id!r}, the result of an earlier call; "
                         "sibling subproblems must be independent",
                         "compute the children's parameters from the parent's values only")


def parse(fn, *, b=2, cost="n", span=None) -> DCSpec:
    """Read ``fn``'s source and split it into guard, divide, calls and combine.

    Raises :class:`~hpu.TranslationError` (file, line, construct, fix) for a
    function outside the accepted shape or subset, ``TypeError``/``ValueError``
    for bad options.
    """
    if not isinstance(b, (int, float)) or isinstance(b, bool) or not math.isfinite(b) or b <= 1:
        raise ValueError(f"b={b!r} must be a number > 1 (the factor by which each call's "
                         "size shrinks); pass b=2 when each call gets half")
    cost = check_cost(cost)
    _check_callable(fn)
    text, start, filename, node = _source_of(fn, "function")
    if isinstance(node, ast.AsyncFunctionDef):
        raise TranslationError("async def is not supported: coroutines cannot run as kernels",
                               filename=filename, lineno=start, construct="async def",
                               hint="Write a plain def")
    where = _Where(filename, f"function {fn.__name__!r}")
    name = node.name
    if name in RESERVED_NAMES:
        where.refuse(node, f"the function name {name!r}", "hpu's generated code uses this name",
                     f"rename the function, e.g. {name + '_'!r}")
    _check_identifier(name, node, where)
    params = _check_params(node, where)
    if span is not None:
        if (not isinstance(span, (tuple, list)) or len(span) != 2
                or not all(isinstance(s, str) for s in span)):
            raise TypeError(f"span={span!r} must be a pair of parameter names, e.g. "
                            "span=('lo', 'hi'): the scalars that bound the slice of the "
                            "arrays a task touches")
        for s in span:
            if s not in params:
                raise ValueError(f"span names {s!r}, which is not a parameter of {name}"
                                 f"({', '.join(params)}); pass two of its scalar parameters")
        span = tuple(span)
    tree = _functional.rewrite_values(_strip(node))  # float("inf"), `if not arr`
    result_shape = nested_results_flattened(tree, name)  # return s, (mx, c): flat, regrouped
    _functional.fold_module_constants(tree, fn.__globals__)  # sys.maxsize, np.iinfo(T).max
    _functional.math_in_double(tree, fn.__globals__)  # math.sqrt(x32) in double, as Python
    _functional.pow_as_operator(tree, fn.__globals__)  # pow(x, n): x ** n, checked as it is
    _functional.digits_counted(tree, fn.__globals__)  # len(str(x)): hpu__ndigits(x)
    _functional.array_splits_as_slices(tree, fn.__globals__)  # np.array_split(a, 2): slices
    _defaults_passed(tree, fn)  # f(a[:m]) of def f(a, cut=8): f(a[:m], cut=8), as Python
    guard_unbound(tree)  # a local read before any assignment raises (hpu._unbound)
    lower_raises(tree, fn.__globals__)  # assert -> if/raise; raise E("...") marked
    left = _lower_reductions(tree, fn.__globals__)  # a.sum(), np.max(a) -> loops
    _refusals_at_once(tree, where, name, reductions=left, glb=fn.__globals__)
    root_defaults = _root_defaults(tree, where)  # if hi is None: hi = len(a) -> at the call
    go = _guarded_calls(tree, name)  # if p - 1 > lo: qsort(a, lo, p - 1) -> a flag passed
    unroll_literal_loops(tree, where)  # for part in (a[:m], a[m:]): one copy per value
    looped = _slice_updates_as_loops(tree)  # a[mid:hi] += s -> a loop over its elements
    view_info = _views.rewrite_main(tree, where)  # slices -> (array, offset, length)
    where.hidden = view_info.hidden | looped
    params = tuple(a.arg for a in tree.args.args)
    _SubsetChecker(where, recursive_name=name).check_all(list(tree.body))
    # the ways people write it -> the canonical shape below (user line numbers kept)
    norm = normalise(tree, where, fn.__globals__)
    body = list(tree.body)

    # 3. the recursive calls
    rec = [i for i, s in enumerate(body) if _recursive_calls(s, name)]
    if not rec:
        via = _recursion_through_helper(tree, name, fn.__globals__)
        if via is not None:
            where.refuse(node, "recursion through a helper",
                         f"{name} calls itself only through {via}(), which calls {name}: hpu "
                         "reads the recursive calls in the decorated function itself",
                         f"make the recursive calls in {name} (call {via}() for the combine "
                         "only, on what the calls returned)")
        where.refuse(node, "a function without a recursive call",
                     f"{name} never calls itself, so there is nothing to divide",
                     f"call {name}(...) at least twice on the subproblems (a >= 2)")
    if _most_calls(body, name) == 1:     # a binary search: one call in each branch
        via = _recursion_through_helper(tree, name, fn.__globals__)
        if via is not None:             # mutual recursion: f calls g, g calls f back
            where.refuse(node, "recursion through a helper",
                         f"{name} calls {via}(), which calls {name} back (mutual recursion): "
                         f"hpu reads the recursive calls in the decorated function itself, "
                         f"and sees one",
                         f"make every recursive call in {name} itself (inline {via}'s calls), "
                         "or run the plain function")
        lines = sorted({where.line(c) for i in rec for c in _recursive_calls(body[i], name)})
        where.refuse(_recursive_calls(body[rec[0]], name)[0], "a single recursive call",
                     f"every path through {name} makes at most one recursive call (line"
                     f"{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}): that is "
                     "a loop (a binary search, decrease and conquer), with no independent "
                     "subproblems to run at once",
                     "write it as a loop (`while lo <= hi: ...`), without the decorator")
    first = rec[0]
    calls: list[CallSite] = []
    j = first
    while j < len(body) and (cs := _call_stmt(body[j], name)) is not None:
        call, target = cs
        if any(n is not call for n in _recursive_calls(call, name)):
            where.refuse(call, "a recursive call inside a recursive call's argument",
                         f"`{_views.display(call)}`: the outer call needs the inner one's "
                         "result, and hpu computes every call's arguments before any call "
                         "runs (a level's calls run side by side)",
                         "a nested recursion (McCarthy's 91, Ackermann) is sequential by "
                         "nature: run it as plain Python (f.py_func); where the inner call "
                         "does not need the outer's level, pass it a value computed before "
                         "the calls")
        if target is None:
            targets = ()
        elif isinstance(target, ast.Name):
            targets = (target.id,)
        elif isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name)
                                                               for e in target.elts):
            targets = tuple(e.id for e in target.elts)
        else:
            where.refuse(body[j], "this assignment of a recursive call's result",
                         f"`{_views.display(target)} = ...`",
                         "assign the result to a name, or unpack it into names: x, y = f(...)")
        calls.append(CallSite(where.line(call), _map_call_args(call, params, name, where), targets))
        j += 1
    if first == j:  # the first statement with a recursive call is not a plain call statement
        call = _recursive_calls(body[first], name)[0]
        construct, hint = _describe_nesting(body[first], call, params)
        where.refuse(call, construct, "hpu needs the calls as top-level statements after the "
                     "base-case guard, so that it can run them level by level", hint)
    for i in rec:
        if i >= j:
            call = _recursive_calls(body[i], name)[0]
            if _call_stmt(body[i], name) is not None:
                where.refuse(call, "statements between the recursive calls",
                             f"line {where.line(body[j])} separates this call from the others",
                             "move it before the first call (divide) or after the last (combine)")
            construct, hint = _describe_nesting(body[i], call, params)
            where.refuse(call, construct, "hpu needs the calls as consecutive top-level "
                         "statements", hint)
    if len(calls) < 2:
        where.refuse(body[first], "a single recursive call",
                     "one call is a loop, not a division into subproblems",
                     "write it as a loop, or split into a >= 2 subproblems")
    if len(calls) > MAX_CALLS:
        where.refuse(body[first], f"{len(calls)} recursive calls",
                     f"hpu supports a = 2 to {MAX_CALLS}",
                     f"split into at most {MAX_CALLS} subproblems per step")

    pre, combine = body[:first], body[j:]
    # 1. guards: every statement before the calls that returns must be one
    guard_idx = [i for i, s in enumerate(pre) if _contains_return(s)]
    if not guard_idx:
        where.refuse(node, "a function without a base case",
                     f"{name} has no `if COND: ...; return` before its recursive calls, so the "
                     "recursion never stops", "start with the base case, e.g. "
                     "`if hi - lo <= 1: return`")
    for i in guard_idx:
        _guard_chain(pre[i], where)
    last = guard_idx[-1]
    for i in range(last):
        if i not in guard_idx:
            _check_pure_prefix(pre[i], where)
    check, divide = pre[:last + 1], pre[last + 1:]

    # results: every return agrees
    returns = [r for s in body for r in ast.walk(s) if isinstance(r, ast.Return)]
    _refuse_none_sentinel(returns, name, where)
    _refuse_array_param_returns(returns, _subscripted_params(body, params)
                                | _functional.array_names(tree), name, where)
    arities = {_return_arity(r) for r in returns}
    if not combine:
        arities.add(0)  # falls off the end after the calls
    if len(arities) > 1:
        r0 = returns[0]
        where.refuse(r0, "returns that disagree",
                     f"{name} returns {', '.join(_arity_words(k) for k in sorted(arities))} "
                     "on different paths",
                     "return the same kind of value everywhere (write tuples out: return x, y)")
    result_arity = arities.pop()
    if result_arity and not _always_returns(combine):
        where.refuse(combine[-1] if combine else body[j - 1], "a combine that can end without return",
                     f"{name} returns values, but the statements after the calls can fall "
                     "off the end (returning None)", "end the combine with `return value`")
    for r in returns:
        if isinstance(r.value, ast.Tuple) and result_arity == 1:
            where.refuse(r, "a one-element tuple return", "`return (x,)`", "return x")
    for c in calls:
        if c.targets and result_arity == 0:
            where.refuse(c, "using the result of a call that returns nothing",
                         f"{name} returns nothing, but line {c.lineno} assigns its result",
                         f"call it as a statement: {name}(...)")
        if len(c.targets) > 1 and len(c.targets) != result_arity:
            where.refuse(c, f"unpacking into {len(c.targets)} names",
                         f"{name} returns {_arity_words(result_arity)}",
                         f"unpack into {result_arity} names" if result_arity > 1
                         else "assign the result to one name")
        if len(c.targets) == 1 and result_arity > 1:
            where.refuse(c, "a tuple result assigned to one name",
                         f"{name} returns {result_arity} values; kernels cannot hold tuples",
                         f"unpack them: {', '.join(f'x{k}' for k in range(result_arity))} = "
                         f"{name}(...)")

    # children's arguments
    results = set()
    for c in calls:
        for e in c.args:
            _check_call_arg(e, where, results, c)
        results.update(c.targets)

    path = [s for s in check if not isinstance(s, ast.If)] + divide  # statements every division runs
    assigned_on_path = stored_names(path)
    passthrough = frozenset(
        p for k, p in enumerate(params)
        if p not in assigned_on_path
        and all(isinstance(c.args[k], ast.Name) and c.args[k].id == p for c in calls))
    result_names = {n for c in calls for n in c.targets}
    carried = tuple(n for n in loaded_names(combine)
                    if n in assigned_on_path and n not in result_names)

    spec = DCSpec(
        name=name, filename=filename, lineno=node.lineno, params=params, source=text,
        source_line=start, tree=tree,
        check=tuple(check), divide=tuple(divide), calls=tuple(calls), combine=tuple(combine),
        result_arity=result_arity, passthrough=passthrough, carried=carried,
        indexed=frozenset(_subscripted_params(body, params)),
        b=b, cost=cost, span=span, views=view_info.views, view_info=view_info,
        reordered=tuple((getattr(n, "lineno", None), text) for n, text in norm.reordered),
        conditional=tuple((getattr(n, "lineno", None), text) for n, text in norm.conditional),
        root_defaults=root_defaults, go=go, result_shape=result_shape)
    check_array_params(spec, spec.indexed)
    return spec


#: the flag :func:`_guarded_calls` adds (a function naming it keeps its refusal)
GO = "hpu_go"


def _guarded_calls(tree: ast.FunctionDef, name: str) -> str | None:
    """A procedure whose recursive calls are made only when a test holds -- ``if p - 1 > lo:
    qsort(a, lo, p - 1)`` -- rewritten in place so that every call is made, passing the
    test as a flag that the callee reads first::

        def qsort(a, lo, hi, hpu_go=1):
            if hpu_go == 0:
                return
            ...
            qsort(a, lo, p - 1, 1 if p - 1 > lo else 0)

    A call whose test is false is then a base case that does nothing, as Python's skipped
    call: the same program, with the tree's branching fixed.  Returns the flag's name, or
    None where the function is not such a procedure: it returns a value (what a skipped
    call leaves is the user's to say, and the refusal says how), a guarded call has an
    ``else`` or more statements, or a call's arguments could raise when evaluated under a
    false test (only names, numbers, ``+ - *``, ``//`` by a nonzero constant and slices of
    them are taken)."""
    if any(isinstance(n, ast.Name) and n.id == GO for n in ast.walk(tree)) or any(
            a.arg == GO for a in tree.args.args):
        return None
    if any(isinstance(n, ast.Return) and not _is_none(n.value) for n in ast.walk(tree)):
        return _guarded_value_calls(tree, name)

    def own_call(st):
        return (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call)
                and isinstance(st.value.func, ast.Name) and st.value.func.id == name
                and all(k.arg is not None for k in st.value.keywords)
                and not any(isinstance(a, ast.Starred) for a in st.value.args))

    guarded = []            # the ifs, each holding one call
    for n in ast.walk(tree):
        # (an `if` holding more, `if lo < hi: <the recursion>`, is read as before)
        if (isinstance(n, ast.If) and len(n.body) == 1 and own_call(n.body[0])
                and not n.orelse and not _recursive_calls(n.test, name)):
            call = n.body[0].value
            if not all(_safe_when_skipped(a) for a in call.args + [k.value
                                                                    for k in call.keywords]):
                return None
            guarded.append(n)
    if not guarded:
        return None
    _pass_go_flags(tree, name, {id(n.body[0].value): n.test for n in guarded})

    ifs = {id(g) for g in guarded}

    class Unguard(ast.NodeTransformer):
        def visit_If(self, n):
            self.generic_visit(n)
            return n.body[0] if id(n) in ifs else n

    Unguard().visit(tree)
    return _go_parameter(tree, "")


def _safe_when_skipped(e) -> bool:
    """Whether a guarded call's argument can be evaluated where Python would skip the call
    (its test false) without raising: names, numbers, ``+ - *``, ``//`` and ``%`` by a
    nonzero int constant, and slices of them."""
    if isinstance(e, ast.Name):
        return True
    if isinstance(e, ast.Constant):
        return type(e.value) in (int, float, bool)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        return _safe_when_skipped(e.operand)
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult)):
        return _safe_when_skipped(e.left) and _safe_when_skipped(e.right)
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.FloorDiv, ast.Mod)):
        return (_safe_when_skipped(e.left) and isinstance(e.right, ast.Constant)
                and type(e.right.value) is int and e.right.value != 0)
    if isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Slice) \
            and isinstance(e.value, ast.Name) and e.slice.step is None:
        return all(b is None or _safe_when_skipped(b) for b in (e.slice.lower, e.slice.upper))
    return False


def _pass_go_flags(tree, name: str, tests: dict) -> None:
    """Every recursive call of ``tree`` passes the flag: ``1 if TEST else 0`` for a call
    made only when ``tests[id(call)]`` holds, 1 for the others (in place)."""
    for c in _recursive_calls(tree, name):
        test = tests.get(id(c))
        flag = (ast.IfExp(copy.deepcopy(test), ast.Constant(1), ast.Constant(0))
                if test is not None else ast.Constant(1))
        flag.hpu_guard = test is not None      # (a refusal shows the test as written)
        ast.copy_location(flag, c)
        if c.keywords:      # (after keywords -- a default passed on -- as a keyword too)
            c.keywords.append(ast.copy_location(ast.keyword(GO, flag), c))
        else:
            c.args.append(flag)


def _go_parameter(tree, stand_in: str) -> str:
    """The flag as the last parameter of ``tree`` (default 1), read first: ``if hpu_go ==
    0: return <stand_in>`` (in place); returns its name."""
    tree.args.args.append(ast.copy_location(ast.arg(GO), tree))
    # a default (1) too: the parameters' defaults stay aligned with the names they follow
    tree.args.defaults.append(ast.copy_location(ast.Constant(1), tree))
    first = ast.parse(f"if {GO} == 0:\n    return {stand_in}".rstrip()).body[0]
    for x in ast.walk(first):
        ast.copy_location(x, tree.body[0] if tree.body else tree)
    tree.body.insert(0, first)
    ast.fix_missing_locations(tree)
    return GO


#: the names that hold a guarded call's value (:func:`_guarded_value_calls`)
GUARDED_VALUE = "hpu_rec"

#: what a guarded call's test and the rest of its statement may call: they are evaluated
#: again (the test) or after the call (the rest), so they must not depend on when
_PURE_TEST_CALLS = frozenset({"len", "abs", "min", "max", "int", "float"})


def _pure_scalar_expr(e, hole=None) -> bool:
    """Names, numbers, arithmetic, comparisons, ``and``/``or``/``not``, conditional
    expressions and ``len``/``abs``/``min``/``max``/``int``/``float`` of them: what gives
    the same value evaluated twice, or after a recursive call of a function whose calls
    do not write what it reads (no element reads: an array may be written by the call).
    ``hole``: a node taken as pure (the recursive call the statement makes)."""
    if e is hole or isinstance(e, ast.Name):
        return True
    if isinstance(e, ast.Constant):
        return type(e.value) in (int, float, bool)
    if isinstance(e, ast.UnaryOp):
        return _pure_scalar_expr(e.operand, hole)
    if isinstance(e, ast.BinOp):
        return _pure_scalar_expr(e.left, hole) and _pure_scalar_expr(e.right, hole)
    if isinstance(e, ast.BoolOp):
        return all(_pure_scalar_expr(v, hole) for v in e.values)
    if isinstance(e, ast.Compare):
        return _pure_scalar_expr(e.left, hole) and all(_pure_scalar_expr(c, hole)
                                                     for c in e.comparators)
    if isinstance(e, ast.IfExp):
        return all(_pure_scalar_expr(x, hole) for x in (e.test, e.body, e.orelse))
    if isinstance(e, ast.Call):
        return (isinstance(e.func, ast.Name) and e.func.id in _PURE_TEST_CALLS
                and not e.keywords and all(_pure_scalar_expr(a, hole) for a in e.args))
    return False


def _boolish(e) -> bool:
    """Whether ``e`` is certainly a bool (a comparison, ``not``, ``True``): a skipped call's
    stand-in 0 would make such a result an int."""
    return (isinstance(e, (ast.Compare, ast.BoolOp))
            or (isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not))
            or (isinstance(e, ast.Constant) and type(e.value) is bool))


def _guarded_value_calls(tree: ast.FunctionDef, name: str) -> str | None:
    """:func:`_guarded_calls` for a function that returns values: ``if m > lo: s +=
    f(a, lo, m)`` -- a call made only when a test holds, its value used under the same
    test -- becomes::

        hpu_rec1 = f(a, lo, m, 1 if m > lo else 0)
        if m > lo:
            s += hpu_rec1

    and the callee returns a stand-in at once when its flag is 0 (``if hpu_go == 0: return
    0``, or a tuple of zeros), which nothing reads: the value is used only where the test
    holds, as in Python, and every call is made, so the tree's branching is fixed.  Only
    where that is the same program: the test and the rest of the statement are pure
    (:func:`_pure_scalar_expr`: evaluated again, or after the call), the call's arguments
    could not raise under a false test (:func:`_guarded_calls`'s rule), and each guarded
    ``if`` holds that one statement with one call.  The stand-in is ``False`` for a value
    every ``return`` gives as a comparison or a bool (0 would make it an int), 0 for one
    none does; a value that is a bool in one ``return`` only keeps the refusal.  Returns the
    flag's name, or None (nothing changed)."""
    own = [n for n in ast.walk(tree)]
    returns = [n for n in own if isinstance(n, ast.Return)]
    if any(_is_none(r.value) for r in returns):
        return None
    values = [r.value for r in returns if not _is_rec(r.value, name)]
    arities = {len(v.elts) if isinstance(v, ast.Tuple) else 1 for v in values}
    if len(arities) != 1:
        return None
    arity = arities.pop()
    stand_ins = []      # per value: False where every return's is a bool, 0 where none is
    for k in range(arity):
        kinds = {_boolish(v.elts[k] if isinstance(v, ast.Tuple) else v) for v in values}
        if len(kinds) != 1:
            return None
        stand_ins.append("False" if kinds.pop() else "0")
    if any(isinstance(n, ast.Name) and n.id.startswith(GUARDED_VALUE) for n in own):
        return None

    class Stand(ast.NodeTransformer):
        def __init__(self, call, tmp):
            self.call, self.tmp = call, tmp

        def visit_Call(self, n):
            if n is self.call:
                return ast.copy_location(ast.Name(self.tmp, ast.Load()), n)
            return self.generic_visit(n)

    # names a call's value is stored into: a test reading one depends on an earlier call
    # (the calls then cannot run side by side: the refusal, with its advice)
    from_calls = {t.id for n in own if isinstance(n, (ast.Assign, ast.AugAssign))
                  and _recursive_calls(n.value, name)
                  for tgt in (n.targets if isinstance(n, ast.Assign) else [n.target])
                  for t in ast.walk(tgt) if isinstance(t, ast.Name)}
    guarded = {}        # id(if) -> (call, its stand-in's name)
    tests = {}          # id(call) -> its test
    for n in own:
        if not (isinstance(n, ast.If) and len(n.body) == 1 and not n.orelse
                and not _recursive_calls(n.test, name)):
            continue
        st = n.body[0]
        calls = _recursive_calls(st, name)
        if len(calls) != 1 or not isinstance(st, (ast.Assign, ast.AugAssign, ast.Expr)):
            continue
        call = calls[0]
        if (call.keywords or any(isinstance(a, ast.Starred) for a in call.args)
                or not all(_safe_when_skipped(a) for a in call.args)
                or not _pure_scalar_expr(n.test)
                or any(isinstance(x, ast.Name) and x.id in from_calls
                       for x in ast.walk(n.test))):
            return None
        targets = (st.targets if isinstance(st, ast.Assign) else
                   [st.target] if isinstance(st, ast.AugAssign) else [])
        if not _pure_scalar_expr(st.value, hole=call) or not all(
                isinstance(t, ast.Name) or (isinstance(t, ast.Tuple) and all(
                    isinstance(e, ast.Name) for e in t.elts)) for t in targets):
            return None
        guarded[id(n)] = (call, f"{GUARDED_VALUE}{len(guarded) + 1}")
        tests[id(call)] = n.test
    if not guarded:
        return None
    _pass_go_flags(tree, name, tests)

    class Hoist(ast.NodeTransformer):
        def generic_visit(self, node):
            super().generic_visit(node)
            for field_ in ("body", "orelse"):
                block = getattr(node, field_, None)
                if not (isinstance(block, list) and block and isinstance(block[0], ast.stmt)):
                    continue
                new = []
                for st in block:
                    hit = guarded.get(id(st))
                    if hit is not None:
                        call, tmp = hit
                        new.append(ast.copy_location(
                            ast.Assign([ast.Name(tmp, ast.Store())], call), st))
                        st.body[0] = Stand(call, tmp).visit(st.body[0])
                    new.append(st)
                setattr(node, field_, new)
            return node

    Hoist().visit(tree)
    return _go_parameter(tree, stand_ins[0] if arity == 1 else f"({', '.join(stand_ins)})")


def _root_defaults(tree: ast.FunctionDef, where: _Where) -> tuple[tuple[str, str, int], ...]:
    """``def f(a, lo=0, hi=None): if hi is None: hi = len(a)``: the leading ``if P is None:
    P = EXPR`` of a parameter whose default is None, taken out of the function (in place)
    and returned as ``(P, EXPR, line)``, which the call evaluates for the root
    (:meth:`hpu.DivideAndConquer._check_args`).  Every recursive call must pass ``P``: a
    child that left it to its default would compute it again, from its own arguments."""
    args = tree.args.posonlyargs + tree.args.args
    defaults = dict(zip([a.arg for a in args][len(args) - len(tree.args.defaults):],
                        tree.args.defaults))
    out = []
    while tree.body:
        st = tree.body[0]
        if not (isinstance(st, ast.If) and not st.orelse and len(st.body) == 1
                and isinstance(st.test, ast.Compare) and len(st.test.ops) == 1
                and isinstance(st.test.ops[0], ast.Is) and isinstance(st.test.left, ast.Name)
                and _is_none(st.test.comparators[0])):
            break
        p = st.test.left.id
        body = st.body[0]
        if not (p in defaults and _is_none(defaults[p]) and isinstance(body, ast.Assign)
                and len(body.targets) == 1 and isinstance(body.targets[0], ast.Name)
                and body.targets[0].id == p):
            break
        position = [a.arg for a in args].index(p)
        for c in ast.walk(tree):
            if (_is_rec(c, tree.name) and len(c.args) <= position
                    and not any(k.arg == p for k in c.keywords)):
                where.refuse(c, f"a recursive call without {p!r}",
                             f"{p} is computed when it is None (line {st.lineno}), once, for "
                             "the call you make; each recursive call must pass it",
                             f"pass {p} to every recursive call")
        out.append((p, _views.display(body.value), body.lineno))
        tree.body.pop(0)
        defaults[p] = ast.Constant(0)       # (one test per parameter)
    return tuple(out)


def _is_none(e) -> bool:
    return e is None or (isinstance(e, ast.Constant) and e.value is None)


#: builtins that reduce their one argument, element by element
_REDUCTIONS = frozenset({"sum", "min", "max", "sorted", "any", "all"})


def _refuse_reduction(where: _Where, node, shown: str) -> None:
    """``sum(a)``, ``min(a)``... of an array: refused with the loop to write."""
    f = node.func.id
    if f == "sum":
        where.refuse(node, f"sum() of an array (`{shown}`)",
                     "it reduces a whole array, which device code cannot do",
                     f"write the loop: s = 0; for i in range(lo, hi): s += {_arg_text(shown)}[i]")
    if f in ("min", "max"):
        where.refuse(node, f"{f}() of a single argument (`{shown}`)",
                     "it reduces a whole array, which device code cannot do; only "
                     f"{f}(x, y, ...) of numbers runs on every device",
                     f"write the loop: m = {_arg_text(shown)}[lo]; for i in range(lo + 1, hi): "
                     f"m = {f}(m, {_arg_text(shown)}[i])")
    where.refuse(node, f"{f}() of an array (`{shown}`)",
                 "it goes through a whole array, which device code cannot do",
                 "write the loop over range(lo, hi)")


def _arg_text(call_text: str) -> str:
    """``a`` of ``sum(a)``; ``a`` of ``sum(a[lo:hi])`` too (the loop indexes ``a``)."""
    inner = call_text[call_text.index("(") + 1:-1]
    return inner.split("[", 1)[0]


def _float_bounds(tree) -> list:
    """``(subscript, bound)`` of slices whose bound is a float whatever the input: made with
    ``/`` (``a[:len(a) / 2]``, or ``mid = len(a) / 2`` then ``a[:mid]``), not inside a call
    (``int(n / 2)`` is an int)."""
    assigned: dict = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    assigned.setdefault(t.id, []).append(n.value)
        elif isinstance(n, (ast.AugAssign, ast.For, ast.AnnAssign)):
            for t in ast.walk(n.target):
                if isinstance(t, ast.Name):
                    assigned.setdefault(t.id, []).append(None)
        elif isinstance(n, ast.arguments):
            for a in n.posonlyargs + n.args + n.kwonlyargs:
                assigned.setdefault(a.arg, []).append(None)

    def floaty(e, seen=frozenset()) -> bool:
        if isinstance(e, ast.BinOp):
            return isinstance(e.op, ast.Div) or floaty(e.left, seen) or floaty(e.right, seen)
        if isinstance(e, ast.UnaryOp):
            return floaty(e.operand, seen)
        if isinstance(e, ast.IfExp):
            return floaty(e.body, seen) and floaty(e.orelse, seen)
        if isinstance(e, ast.Constant):
            return type(e.value) is float
        if isinstance(e, ast.Name) and e.id not in seen:
            values = assigned.get(e.id)
            return bool(values) and all(v is not None and floaty(v, seen | {e.id})
                                        for v in values)
        return False

    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Slice):
            for bound in (n.slice.lower, n.slice.upper, n.slice.step):
                if bound is not None and floaty(bound):
                    out.append((n, bound))
    return out


def _slice_updates_as_loops(tree) -> frozenset:
    """``a[s:e] += v`` (any augmented operator) with a scalar ``v`` -> ``aug__k = v`` then
    ``for aug__k_i in range(<s clamped>, <e clamped>): a[aug__k_i] += aug__k``: NumPy's
    update of each element of the slice, ``v`` evaluated once, first, as NumPy does; the
    bounds clamped as a slice's (negative from the end, then into ``[0, len(a)]``).  Only
    where ``v`` reads no slice and no whole array, and the bounds call nothing (they are
    read twice): an array on the right is NumPy's element-wise update, left to the views'
    refusal.  Returns the names it introduced (hpu's, with ``__``)."""
    arrays = _array_names(tree)
    count = [0]

    def scalar(e) -> bool:
        for n in ast.walk(e):
            if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Slice):
                return False
            if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name)
                                                and n.func.id in ("min", "max", "abs", "len",
                                                                  "int", "float")):
                return False
        # a bare array name (not indexed, not measured) is an array operand
        used = {id(x.value) for x in ast.walk(e) if isinstance(x, ast.Subscript)}
        used |= {id(a) for x in ast.walk(e) if isinstance(x, ast.Call) for a in x.args
                 if isinstance(x.func, ast.Name) and x.func.id == "len"}
        return not any(isinstance(x, ast.Name) and x.id in arrays and id(x) not in used
                       for x in ast.walk(e))

    def plain(b) -> bool:
        return b is None or not any(isinstance(x, ast.Call) and not (
            isinstance(x.func, ast.Name) and x.func.id == "len") for x in ast.walk(b))

    def clamp(b, arr, default):
        if b is None:
            return default
        n = ast.Call(ast.Name("len", ast.Load()), [ast.Name(arr, ast.Load())], [])
        wrapped = ast.IfExp(ast.Compare(copy.deepcopy(b), [ast.GtE()], [ast.Constant(0)]),
                            copy.deepcopy(b), ast.BinOp(copy.deepcopy(b), ast.Add(), n))
        return ast.Call(ast.Name("min", ast.Load()), [ast.Call(
            ast.Name("max", ast.Load()), [wrapped, ast.Constant(0)], []), copy.deepcopy(n)],
            [])

    def rewrite(st, _later):
        t = st.target if isinstance(st, ast.AugAssign) else None
        if not (isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Slice)
                and t.slice.step is None and isinstance(t.value, ast.Name)
                and t.value.id in arrays and scalar(st.value)
                and plain(t.slice.lower) and plain(t.slice.upper)):
            return None
        arr, k = t.value.id, count[0]
        count[0] += 1
        value, index = f"aug__{k}", f"aug__{k}_i"
        n = ast.Call(ast.Name("len", ast.Load()), [ast.Name(arr, ast.Load())], [])
        rng = ast.Call(ast.Name("range", ast.Load()),
                       [clamp(t.slice.lower, arr, ast.Constant(0)),
                        clamp(t.slice.upper, arr, n)], [])
        loop = ast.For(target=ast.Name(index, ast.Store()), iter=rng, body=[ast.AugAssign(
            target=ast.Subscript(ast.Name(arr, ast.Load()), ast.Name(index, ast.Load()),
                                 ast.Store()),
            op=st.op, value=ast.Name(value, ast.Load()))], orelse=[])
        first = ast.Assign(targets=[ast.Name(value, ast.Store())], value=st.value)
        for new in (first, loop):
            for x in ast.walk(new):
                if isinstance(x, (ast.expr, ast.stmt)):
                    ast.copy_location(x, st)
        return [first, loop]

    _rewrite_blocks(tree, rewrite)
    return frozenset(n for k in range(count[0]) for n in (f"aug__{k}", f"aug__{k}_i"))


def _array_names(tree) -> set[str]:
    """The names ``tree`` uses as arrays (indexed, sliced, measured), and the names bound
    to slices of them (views)."""
    from hpu._functional import used_as_arrays

    arrays = used_as_arrays(tree)
    for n in ast.walk(tree):
        if (isinstance(n, ast.Assign) and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Subscript)
                and isinstance(n.value.slice, ast.Slice) and isinstance(n.value.value, ast.Name)
                and n.value.value.id in arrays):
            arrays.add(n.targets[0].id)
    return arrays


def _lower_reductions(tree, glb) -> list:
    """``a.sum()``, ``np.max(a)``, ``min(a)``... -> loops (:mod:`hpu._reductions`), and
    ``for v in a`` -> an index loop (:mod:`hpu._iteration`); returns the reductions Python
    evaluates only under a condition inside an expression, which
    :func:`_refusals_at_once` refuses."""
    arrays = _array_names(tree)
    left = reductions_as_loops(tree, glb, arrays)
    array_loops_indexed(tree, arrays | {a.arg for a in tree.args.args},
                        frozenset(k for k in ("enumerate", "zip") if k in glb))
    return left


def _refuse_conditional_reduction(where: _Where, node) -> None:
    text = _views.display(node)
    where.refuse(node, f"`{text}` inside a condition",
                 "hpu computes a whole-array reduction by a loop before its statement, but "
                 "Python evaluates this one only when the condition around it asks for it "
                 "(a branch of `x if c else y`, after `and`/`or`, in a `while` test)",
                 f"compute it in a statement of its own first: s = {text}")


def _refusals_at_once(tree, where: _Where, name: str, sentinel: bool = True,
                      reductions=(), glb=None) -> None:
    """The constructs that block a function whatever else it does, found in one pass over
    its tree as written (before slices become views): whole-array builtins with no loop
    form (``sorted(a)``, ``any(a)``), ``reductions`` left inside a condition
    (:func:`_lower_reductions`), ``print``, ``a[i, j]``, slice bounds made with ``/`` (a
    float, which Python refuses), ``return None`` beside values (``sentinel``: a
    function's, not a helper's), ``str()`` (the builtin, where ``glb``, the module's names,
    does not define one: said here, before its string's slices read as views).  Two or more
    are refused together, each with its line and fix, so that one edit does not just reveal
    the next (the subset check further on names every construct it refuses at once too, but
    only after slices have become views, and after the shape's checks)."""
    arrays = _array_names(tree)

    def array_like(e) -> bool:
        if isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Slice):
            e = e.value
        return isinstance(e, ast.Name) and e.id in arrays

    found: list[TranslationError] = []

    def collect(check, *args):
        try:
            check(*args)
        except TranslationError as err:
            found.append(err)

    left = {id(n) for n in reductions}       # refused below, as inside a condition
    # `s = str(n)` then `s[:h]` (or `str(n)[:h]`, `str(n)[0]`): a string sliced or
    # indexed, which the views' pass (or the subset's indexing) would refuse as an array's;
    # the str() is what to say (other str() calls: hpu.resolve,
    # with every other builtin of the function and its helpers)
    strs = {t.id: st.value for st in ast.walk(tree) if isinstance(st, ast.Assign)
            and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Name)
            and st.value.func.id == "str" for t in st.targets if isinstance(t, ast.Name)}
    sliced_strs = {id(strs[x.value.id]) if isinstance(x.value, ast.Name) else id(x.value)
                   for x in ast.walk(tree) if isinstance(x, ast.Subscript)
                   and ((isinstance(x.value, ast.Name) and x.value.id in strs)
                        or (isinstance(x.value, ast.Call) and isinstance(x.value.func, ast.Name)
                            and x.value.func.id == "str"))}
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            if (n.func.id in _REDUCTIONS and len(n.args) == 1 and not n.keywords
                    and array_like(n.args[0]) and n.func.id != name and id(n) not in left):
                collect(_refuse_reduction, where, n, ast.unparse(n))
            elif n.func.id == "print":
                collect(refuse_with, where, n, "print")
            elif (n.func.id == "str" and glb is not None and "str" not in glb
                  and "str" not in _function_locals(tree) and id(n) in sliced_strs):
                collect(where.refuse, n, "the builtin str()",
                        f"only {', '.join(sorted(_BUILTINS))} are in the numeric subset",
                        _BUILTIN_HINTS["str"])
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) \
                and n is not tree:
            # a function defined inside (`def rec(x): ...` called by the function): said
            # here, before its slices are read as the decorated function's views -- and
            # tagged `as_written`: Numba compiles an inner function or a lambda that does
            # not escape, so the function runs so, on the CPU (hpu._decorator._as_written)
            before = len(found)
            collect(refuse_with, where, n, "def" if not isinstance(n, ast.Lambda)
                    else "lambda")
            if len(found) > before and _recurses_outside_defs(tree, name):
                found[-1].as_written = (f"def {n.name}" if not isinstance(n, ast.Lambda)
                                        else "lambda")
        elif (isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Tuple)
              and array_like(n.value)):
            # tagged `as_written`: Numba indexes a 2-D array as written, so the function
            # runs so, on the CPU's threads (hpu._decorator._as_written), not refused
            before = len(found)
            collect(where.refuse, n, f"multi-dimensional indexing `{ast.unparse(n)}`",
                    "hpu's arrays are 1-D", "flatten the array and the index: a[i * width + j]")
            if len(found) > before:
                found[-1].as_written = f"multi-dimensional indexing `{ast.unparse(n)}`"

    for n in reductions:
        collect(_refuse_conditional_reduction, where, n)
    for n, bound in _float_bounds(tree):
        collect(where.refuse, bound, f"the slice bound `{ast.unparse(bound)}` in "
                f"`{ast.unparse(n)}`", "`/` always gives a float, and Python raises "
                "TypeError for a float slice bound (slice indices must be integers)",
                "divide with `//`: a[:len(a) // 2]")
    if sentinel:        # a function's; a helper's returns are typed by Numba
        returns = [r for r in ast.walk(tree) if isinstance(r, ast.Return)]
        collect(_refuse_none_sentinel, returns, name, where)
    if len(found) == 1:
        raise found[0]
    if found:
        raise _several(sorted(found, key=lambda e: e.lineno or 0), where)


def _recurses_outside_defs(tree, name) -> bool:
    """Whether the function calls itself outside the functions defined in it: if only a
    nested def recurses (``def rec(x): ... rec(x[:m]) ...; return rec(a)``), the decorated
    function is not the divide and conquer, and the nested def stays refused."""
    def calls(node) -> bool:
        for c in ast.iter_child_nodes(node):
            if isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if (isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                    and c.func.id == name) or calls(c):
                return True
        return False
    return calls(tree)


def _refuse_none_sentinel(returns, name, where: _Where) -> None:
    """`return None` for "no result" beside returns of values: refused with the rewrite."""
    nones = [r for r in returns if r.value is not None and _is_none(r.value)]
    valued = [r for r in returns if not _is_none(r.value)]
    if nones and valued:
        where.refuse(nones[0], "`return None` as a \"no result\" sentinel",
                     f"{name} returns a value on other paths (line {where.line(valued[0])}), "
                     "and a kernel's result has one type: a number or a tuple of numbers",
                     "return a sentinel of the result's type instead, e.g. float('-inf') "
                     "or -1, or a pair (found, value) with found = 0 or 1")
    # `return float("inf"), None, None` (a closest pair not found yet): None in a tuple
    for r in returns:
        if isinstance(r.value, ast.Tuple):
            for k, e in enumerate(r.value.elts):
                if _is_none(e):
                    where.refuse(r, f"`None` as component {k + 1} of the result",
                                 f"{name}'s result is a tuple of numbers, each component of "
                                 "one type on every path (a task's values are numbers)",
                                 "return a number of that component's type instead (-1, "
                                 "0, float('nan') or float('inf') for \"none\"), and test "
                                 "for it where the result is read")


def _refuse_array_param_returns(returns, arrays, name, where: _Where) -> None:
    """`return a` of an array parameter: refused here, at decoration, not at the first
    call when Numba types the result."""
    for r in returns:
        parts = r.value.elts if isinstance(r.value, ast.Tuple) else [r.value]
        for e in parts:
            if isinstance(e, ast.Name) and e.id in arrays:
                where.refuse(r, f"returning the array parameter {e.id!r}",
                             f"{name} would hand back the caller's own array, not a result",
                             f"return a new array ({e.id}.copy()) to make {name} functional "
                             "(see hpu._functional), or return numbers and write the array "
                             "in place")


def _arity_words(k: int) -> str:
    return {0: "nothing", 1: "one value"}.get(k, f"a tuple of {k}")


def check_array_params(spec: DCSpec, arrays) -> None:
    """Array parameters must be passed through unchanged and never reassigned."""
    where = _Where(spec.filename, f"function {spec.name!r}")
    body = spec.tree.body
    for p in spec.params:
        if p not in arrays:
            continue
        for s in body:
            for n in ast.walk(s):
                if isinstance(n, ast.Name) and n.id == p and isinstance(n.ctx, ast.Store):
                    where.refuse(n, f"reassigning the array parameter {p!r}",
                                 "every task of a level must see the same arrays",
                                 f"use another name for the new value; keep {p!r} as passed")
        k = spec.params.index(p)
        for c in spec.calls:
            arg = c.args[k]
            if not (isinstance(arg, ast.Name) and arg.id == p):
                raise TranslationError(
                    f"passing {ast.unparse(arg)!r} as the array parameter {p!r} is not "
                    f"supported: a recursive call must pass the array {p!r} unchanged in "
                    f"position {k + 1}", filename=spec.filename, lineno=c.lineno,
                    construct="array passed in a different position",
                    hint=f"Pass {p!r} itself and describe the subproblem with scalar "
                         "parameters (e.g. lo, hi)")


def _check_callable(fn) -> None:
    if isinstance(fn, (staticmethod, classmethod)):
        raise TranslationError("a static or class method is not supported",
                               construct="method", hint="Define the function at module level")
    if inspect.ismethod(fn):
        raise TranslationError(f"the bound method {fn.__qualname__!r} is not supported",
                               construct="method", hint="Define the function at module level")
    if hasattr(fn, "py_func") and hasattr(fn, "overloads"):  # a Numba dispatcher
        raise TranslationError(
            f"{getattr(fn, '__name__', fn)!r} is already compiled by Numba: decorating a "
            "Numba function is not supported", construct="numba function",
            hint="Remove @njit/@jit: hpu compiles the function with Numba itself")
    if not isinstance(fn, types.FunctionType):
        raise TranslationError(
            f"{fn!r} is not supported: hpu.divide_and_conquer decorates plain Python "
            f"functions, not {type(fn).__name__} objects", construct=type(fn).__name__,
            hint="Decorate a `def` function")
    if fn.__name__ == "<lambda>":
        raise TranslationError("a lambda is not supported: it has no name to recurse by",
                               filename=fn.__code__.co_filename, lineno=fn.__code__.co_firstlineno,
                               construct="lambda", hint="Write it with def")
    parts = fn.__qualname__.split(".")
    qual = fn.__qualname__
    if len(parts) > 1 and parts[-2] != "<locals>":
        raise TranslationError(
            f"the method {qual!r} is not supported: functions defined in a class body "
            "receive self", filename=fn.__code__.co_filename, lineno=fn.__code__.co_firstlineno,
            construct="method", hint="Define the function at module level")
    free = [v for v in fn.__code__.co_freevars if v != fn.__name__]  # its own name may be free
    if free:
        raise TranslationError(
            f"a closure is not supported: {fn.__name__} uses "
            f"{', '.join(free)} from an enclosing function",
            filename=fn.__code__.co_filename, lineno=fn.__code__.co_firstlineno,
            construct="closure", hint="Pass the value as a parameter, or make it a module constant")
    if inspect.isgeneratorfunction(fn) or inspect.iscoroutinefunction(fn):
        kind = "a generator" if inspect.isgeneratorfunction(fn) else "a coroutine"
        raise TranslationError(
            f"{kind} is not supported: {fn.__name__} produces results lazily",
            filename=fn.__code__.co_filename, lineno=fn.__code__.co_firstlineno,
            construct="yield (a generator)",
            hint="Return the result, or write it into an array parameter")


# --------------------------------------------------------------------------- resolve

#: What to write instead of a builtin outside the subset, where there is a usual rewrite.
_BUILTIN_HINTS = {
    "divmod": "write q, r = x // y, x % y (the same values for ints and floats)",
    "pow": "write x ** y (or x ** y % m in a loop for pow(x, y, m))",
    "str": "numbers only: len(str(x)) of an int is its digit count, and is accepted; for "
           "a digit itself, take it with arithmetic (x // 10 ** k % 10)",
    "isinstance": "hpu compiles one type per parameter: write the function for that type",
    "print": "return the value instead, or print after the call",
}


class _Unresolved(TranslationError, NameError):
    """A global name that is not (yet) defined; decoration defers these to the first call.
    A ``NameError`` too, as Python's for the same name (``except NameError`` catches it)."""


_MODULES = {"math": math, "numpy": np}


def _function_locals(node: ast.FunctionDef) -> set[str]:
    params = {a.arg for a in node.args.posonlyargs + node.args.args}
    return params | stored_names(node.body)


def resolve(fn, spec: DCSpec) -> Closure:
    """Find and check everything ``spec``'s code refers to through ``fn.__globals__``.

    Helpers are checked against the same subset as the function and may not
    allocate, call the decorated function (recursion through a helper) or call
    themselves.  Called lazily: helpers may be defined after the decorated
    function in their module.
    """
    names: dict[str, object] = {}           # flat namespace of the generated module
    origin: dict[str, str] = {}             # name -> where it was found (for conflict messages)
    helpers: dict[str, Helper] = {}
    helper_nodes: dict[str, ast.FunctionDef] = {}
    helper_where: dict[str, _Where] = {}
    helper_shown: dict[str, str] = {}
    helper_own: dict[str, bool] = {}
    calls_of: dict[str, list[tuple[str, ast.Call]]] = {}
    constants: dict[str, object] = {}
    modules: dict[str, str] = {}
    imported: dict[str, tuple[str, str]] = {}
    order: list[str] = []
    main_where = _Where(spec.filename, f"function {spec.name!r}")
    main_where.hidden = spec.view_info.hidden if spec.view_info else frozenset()
    helper_views = _views.plan_helpers(fn, spec, spec.view_info or _views.ViewInfo(),
                                       _source_of, _strip, _Where)

    def bind(name, obj, where: _Where, node):
        same_module = {"np": np, "numpy": np, "math": math}.get(name)
        if name in RESERVED_NAMES and not (same_module is not None and obj is same_module):
            where.refuse(node, f"the global name {name!r}", "hpu's generated code uses this name",
                         f"rename it, e.g. {name + '_'!r}")
        if name in names and names[name] is not obj:
            where.refuse(node, f"two different globals named {name!r}",
                         f"{origin[name]} and {where.what} see different objects under that "
                         "name, but the generated module has one namespace",
                         "rename one of them")
        names[name] = obj
        origin.setdefault(name, where.what)

    def visit_function(node: ast.FunctionDef, glb: dict, where: _Where, self_name: str,
                       is_main: bool):
        local = _function_locals(node)
        my_calls: list[tuple[str, ast.Call]] = []
        # the class of an accepted raise is Python's own (hpu/_raises.py), not a global
        raised = {id(r.exc.func) for r in ast.walk(node)
                  if isinstance(r, ast.Raise) and raise_refusal(r) is None}
        # every name that blocks the function is refused at once (each with its line), in
        # the order of the lines; a name not yet defined defers decoration at once
        found: list[TranslationError] = []
        for sub in ast.walk(node):
            if id(sub) in raised:
                continue
            if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name)
                    and id(sub.func) not in raised):
                if sub.func.id not in local:
                    my_calls.append((sub.func.id, sub))
            try:
                visit_name(sub, local, glb, where, self_name, is_main)
            except _Unresolved:
                raise
            except TranslationError as err:
                found.extend(getattr(err, "errors", None) or (err,))
        if found:
            found = list({str(e): e for e in found}.values())  # a name used twice, once
            found.sort(key=lambda e: (e.filename != where.filename, e.lineno or 0))
            raise found[0] if len(found) == 1 else _several(found, where)
        calls_of[self_name] = my_calls

    def visit_name(sub, local, glb, where: _Where, self_name, is_main):
        """Refuses ``sub`` (one node of a function's tree) where it is an attribute or a name
        outside what the function may use; binds the helpers, modules and constants it names."""
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
            if sub.value.id in local:
                where.refuse(sub, f"the attribute `{ast.unparse(sub)}`",
                             "attributes and methods of arrays and values are not in the "
                             "numeric subset",
                             "use len(a) for an array's length and loops for reductions")
            check_attribute(sub, glb, where)
        if not (isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)):
            return
        n = sub.id
        if n in local:
            return
        if is_main and n == spec.name:
            return  # the recursion itself (shape checked by parse)
        if not is_main and n == spec.name and glb is fn.__globals__:
            where.refuse(sub, "recursion through a helper",
                         f"{self_name} calls {spec.name}, the decorated function",
                         f"only {spec.name} itself may recurse; move the calls into it")
        if not is_main and n == self_name:
            refuse_with(where, sub, "recursive-helper",
                        detail=f"{self_name} calls itself")
        resolve_name(n, sub, glb, where, self_name)

    def check_attribute(node: ast.Attribute, glb, where: _Where):
        base = node.value.id
        mod = glb.get(base, getattr(builtins, base, None))
        if mod is math:
            if not hasattr(math, node.attr):
                where.refuse(node, f"math.{node.attr}", "math has no such name")
            return
        if mod is np:
            if node.attr in _NUMPY_ALLOC:
                refuse_with(where, node, "alloc", construct=f"{base}.{node.attr}")
            if node.attr not in _NUMPY_OK:
                where.refuse(node, f"{base}.{node.attr}",
                             "only NumPy's scalar types, scalar math functions and constants "
                             "are in the numeric subset", "write the loop out over range(...)")
            return
        where.refuse(node, f"the attribute `{ast.unparse(node)}`",
                     f"{base!r} is not the math or numpy module",
                     "use len(a) for lengths; attributes of arrays and objects are not in "
                     "the numeric subset")

    def resolve_name(n, node, glb, where: _Where, self_name):
        if n in (_views.SLICE_COPY, REDUCE_FIRST, REDUCE_PAIR, DIGITS):
            return  # hpu's own checks (hpu/_views.py, hpu/_reductions.py), in every module
        if n in glb:
            obj = glb[n]
        elif hasattr(builtins, n):
            if n in _BUILTINS:
                return
            where.refuse(node, f"the builtin {n}()",
                         f"only {', '.join(sorted(_BUILTINS))} are in the numeric subset",
                         _BUILTIN_HINTS.get(n, "write the computation with arithmetic and loops"))
        else:
            raise _Unresolved(f"the name {n!r} is not supported: it is not defined in "
                              f"{where.what}'s module", filename=where.filename,
                              lineno=where.line(node), construct=f"undefined name {n!r}",
                              hint="Define it at module level before calling the function")
        if isinstance(obj, types.ModuleType):
            for key, mod in _MODULES.items():
                if obj is mod:
                    bind(n, obj, where, node)
                    modules[n] = key
                    return
            where.refuse(node, f"the module {n!r}", "only math and numpy are usable",
                         "copy the function you need into a helper")
        if type(obj).__name__ == "DivideAndConquer":
            where.refuse(node, f"calling the divide_and_conquer function {n!r}",
                         "a divide-and-conquer function cannot run inside another one's tasks",
                         f"call a plain helper, e.g. {n}.py_func's logic written as a loop")
        if hasattr(obj, "py_func") and hasattr(obj, "overloads"):  # numba dispatcher
            obj = obj.py_func
        if isinstance(obj, types.FunctionType):
            bind(n, obj, where, node)
            if n not in helpers and n not in helper_nodes:
                add_helper(n, obj, where, node)
            return
        if isinstance(obj, (types.BuiltinFunctionType, np.ufunc)):
            for key, mod in _MODULES.items():
                attr = getattr(obj, "__name__", None)
                if attr and getattr(mod, attr, None) is obj and (mod is math or attr in _NUMPY_OK):
                    bind(n, obj, where, node)
                    imported[n] = (key, attr)
                    return
            where.refuse(node, f"the function {n!r}", f"{obj!r} is not a helper written in Python",
                         "write the computation as a module-level Python helper")
        if isinstance(obj, (bool, int, float, np.bool_, np.integer, np.floating)):
            value = obj.item() if isinstance(obj, np.generic) else obj
            if isinstance(value, int) and not isinstance(value, bool) and not \
                    (-2**63 <= value < 2**63):
                where.refuse(node, f"the constant {n} = {value}", "it does not fit in int64",
                             "use a smaller value or a float")
            bind(n, obj, where, node)
            constants[n] = value
            return
        kind = type(obj).__name__
        where.refuse(node, f"the global {n!r} (a {kind})",
                     "only int, float and bool module constants, helpers, math and numpy are "
                     "usable inside the function", "pass arrays and other values as parameters")

    def add_helper(n, obj, caller_where: _Where, node):
        if obj is fn:
            caller_where.refuse(node, "recursion through a helper",
                                f"{n} is the decorated function itself",
                                f"only {spec.name} itself may recurse")
        if obj.__code__.co_freevars:
            caller_where.refuse(node, f"the helper {n!r} (a closure)",
                                f"it uses {', '.join(obj.__code__.co_freevars)} from an "
                                "enclosing function", "define it at module level")
        if inspect.isgeneratorfunction(obj):
            caller_where.refuse(node, f"the helper {n!r} (a generator)",
                                "a generator produces values lazily", "return the value instead")
        text, start, filename, hnode = _source_of(obj, "helper")
        where = _Where(filename, f"helper {getattr(obj, '__hpu_shown__', n)!r}")
        _check_params(hnode, where)
        tree = _functional.rewrite_values(_strip(hnode))
        _functional.fold_module_constants(tree, obj.__globals__)
        _functional.math_in_double(tree, obj.__globals__)
        _functional.pow_as_operator(tree, obj.__globals__)
        _functional.digits_counted(tree, obj.__globals__)
        guard_unbound(tree)
        lower_raises(tree, obj.__globals__)
        left = _lower_reductions(tree, obj.__globals__)
        _refusals_at_once(tree, where, tree.name, sentinel=False, reductions=left,
                          glb=obj.__globals__)
        tree.name = n
        where.hidden = helper_views.rewrite(n, tree, where)  # slices -> (array, offset, length)
        _SubsetChecker(where).check_all(tree.body)
        helper_nodes[n] = tree
        helper_where[n] = where
        helper_shown[n] = getattr(obj, "__hpu_shown__", "")
        helper_own[n] = bool(getattr(obj, "__hpu_own__", False))
        order.append(n)
        visit_function(tree, obj.__globals__, where, n, False)

    visit_function(spec.tree, fn.__globals__, main_where, spec.name, True)

    # cycles among helpers (mutual recursion)
    state: dict[str, int] = {}

    def dfs(h, stack):
        state[h] = 1
        for callee, call in calls_of.get(h, []):
            if callee not in helper_nodes:
                continue
            if state.get(callee) == 1:
                cyc = stack[stack.index(callee):] + [callee] if callee in stack else [h, callee]
                helper_where[h].refuse(call, "recursion among helpers",
                                       f"{' -> '.join(cyc)} calls back", "rewrite them with loops")
            if state.get(callee) is None:
                dfs(callee, stack + [callee])
        state[h] = 2

    for h in order:
        if state.get(h) is None:
            dfs(h, [h])

    # which parameters each function may write (fixed point over the call graph)
    def direct_writes(node):
        params = [a.arg for a in node.args.posonlyargs + node.args.args]
        out = {}
        for sub in ast.walk(node):
            tgt = None
            if isinstance(sub, ast.Assign):
                tgts = [t for x in sub.targets for t in ast.walk(x) if isinstance(t, ast.Subscript)]
            elif isinstance(sub, ast.AugAssign):
                tgts = [sub.target] if isinstance(sub.target, ast.Subscript) else []
            else:
                continue
            for tgt in tgts:
                if isinstance(tgt.value, ast.Name) and tgt.value.id in params:
                    out.setdefault(params.index(tgt.value.id), sub)
        return out

    funcs = {h: helper_nodes[h] for h in order}
    funcs[spec.name] = spec.tree
    writes = {h: direct_writes(node) for h, node in funcs.items()}
    changed = True
    while changed:
        changed = False
        for h, node in funcs.items():
            params = [a.arg for a in node.args.posonlyargs + node.args.args]
            for callee, call in calls_of.get(h, []):
                if callee not in writes or callee == h:
                    continue
                for k in list(writes[callee]):
                    if k < len(call.args) and isinstance(call.args[k], ast.Name) \
                            and call.args[k].id in params:
                        i = params.index(call.args[k].id)
                        if i not in writes[h]:
                            writes[h][i] = call
                            changed = True

    # the guard conditions and the statements before them run more than once: pure helpers only
    for s in spec.check:
        exprs = []
        if isinstance(s, ast.If):
            node = s
            while True:
                exprs.append(node.test)
                if node.orelse and isinstance(node.orelse[0], ast.If):
                    node = node.orelse[0]
                else:
                    break
        else:
            exprs.append(s)
        for e in exprs:
            for sub in ast.walk(e):
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) \
                        and sub.func.id in writes and writes[sub.func.id]:
                    main_where.refuse(sub, f"calling {sub.func.id}, which writes to arrays, in a "
                                      "base-case test",
                                      "hpu evaluates the guard and the assignments before it "
                                      "more than once", "call it after the last guard, in the divide")

    # normalising moved reads and helper calls after recursive calls, and made conditional
    # calls unconditional: the same program only when the calls cannot change any array
    written_any = {spec.params[k] for k in writes[spec.name]}
    if written_any:
        where_w = f"{spec.name} writes {', '.join(sorted(written_any))}"
        for line, text in spec.reordered:
            refuse_with(main_where, _At(line), "reordered",
                        detail=f"`{text}`; {where_w}")
        for line, text in spec.conditional:
            refuse_with(main_where, _At(line), "conditional",
                        detail=f"`{text}`; {where_w}")
        # the same call twice: siblings of one level write the same elements at once
        seen: dict[str, int] = {}
        for c in spec.calls:
            key = ast.dump(ast.Tuple(list(c.args), ast.Load()))
            if key in seen:
                refuse_with(main_where, _At(c.lineno), "same-call",
                            detail=(f"lines {seen[key]} and {c.lineno}" if seen[key] != c.lineno
                                    else f"twice on line {c.lineno}") + f"; {where_w}")
            seen[key] = c.lineno

    out_helpers = []
    for h in order:
        node = helper_nodes[h]
        where = helper_where[h]
        out_helpers.append(Helper(
            name=h, source=ast.unparse(node), filename=where.filename,
            lineno=node.lineno, params=tuple(a.arg for a in node.args.args),
            writes=frozenset(writes[h]), tree=copy.deepcopy(node),
            shown=helper_shown.get(h, ""), own=helper_own.get(h, False)))
    written = {spec.params[k]: node for k, node in writes[spec.name].items()}
    first_write = tuple((p, (main_where.line(n) or spec.lineno)) for p, n in written.items())
    return Closure(
        helpers=tuple(out_helpers),
        constants=tuple(sorted(constants.items())),
        modules=tuple(sorted(modules.items())),
        imported=tuple(sorted((k, m, a) for k, (m, a) in imported.items())),
        written=frozenset(written),
        first_write=first_write,
    )


def _recursion_through_helper(tree, name: str, glb: dict) -> str | None:
    """The helper ``tree`` calls (by name) that calls ``name`` back, directly or through
    its own helpers, else None."""
    import types

    seen: set = set()

    def reaches(fn, depth=0) -> bool:
        if fn in seen or depth > 8:
            return False
        seen.add(fn)
        try:
            src = textwrap.dedent(inspect.getsource(fn))
            t = ast.parse(src)
        except (OSError, TypeError, SyntaxError):
            return False
        for n in ast.walk(t):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                if n.func.id == name:
                    return True
                g = fn.__globals__.get(n.func.id)
                if isinstance(g, types.FunctionType) and reaches(g, depth + 1):
                    return True
        return False

    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id != name:
            g = glb.get(n.func.id)
            if isinstance(g, types.FunctionType) and reaches(g):
                return n.func.id
    return None
