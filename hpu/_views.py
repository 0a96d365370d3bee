"""NumPy slices and lengths: rewrite array views into (array, offset, length) triples.

Why a source-to-source pass
===========================

People write divide and conquer on NumPy arrays with slices::

    def total(a):
        if len(a) == 1:
            return a[0]
        m = len(a) // 2
        s1 = total(a[:m])
        s2 = total(a[m:])
        return s1 + s2

A slice is a *view*: the same memory, seen from an offset, with its own
length.  Kernels cannot make views (there are no array objects on an OpenCL
device, and a task's parameters must be scalars laid out one per task), but a
1-D view is fully described by three things: the base array, where the view
starts in it, and how long it is.  So this pass rewrites the function, before
anything else looks at it, into one that carries the offset and the length as
ordinary scalar parameters::

    def total(a, a__o, a__n):
        if a__n == 1:
            return a[a__o + 0]
        m = a__n // 2
        s1 = total(a, a__o, <m clamped to [0, a__n]>)
        s2 = total(a, a__o + <m clamped>, a__n - <m clamped>)
        return s1 + s2

After that the rest of hpu (the shape checks, the Numba code, the OpenCL
translator, the breadth-first driver and the hybrid split) sees an ordinary
function: the array is passed through unchanged and the hidden scalars vary
per task like ``lo`` and ``hi`` do.  Names containing ``__`` are reserved for
generated code, so the hidden names cannot clash with the user's.

What is rewritten, exactly as NumPy behaves
-------------------------------------------

* ``a[s:t]`` (either bound may be absent) with step 1 or none: the bounds are
  clamped as Python does (a negative bound counts from the end, then the
  bound is clipped to ``[0, len]``), so the view's length is never negative.
  Views of views (``a[1:][:m]``) compose.
* ``a[i]`` on a view: ``i`` is relative to the view; a negative ``i`` wraps
  against the *view's* length.  Out-of-range indices are not checked (as in
  any compiled path), except in bounds-checked mode: the rewritten subscript
  carries a :class:`ViewIndex` (the attribute ``hpu_view``: the user's text,
  the index before the wrap, the view's length and offset), from which the
  checked CPU module (:class:`hpu._codegen._Checked`) and the device's
  bounds-checked source test ``-n <= i < n`` against the *view's* length ``n``
  and name the view as written (``v[i]``), as NumPy does.  Unchecked code is
  generated from the rewritten subscript alone, exactly as without the mark.
* ``len(a)``, ``a.size`` and ``a.shape[0]``: the view's length (on an
  ordinary array parameter, ``len(a)``).
* A view passed to the function itself or to a helper: the callee's parameter
  becomes a view too (a fixed point over the call graph), and every call of
  that callee passes a triple (a whole array passes ``(x, 0, len(x))``).
* ``b = a[:m]`` (a local name bound to a view, every assignment of ``b`` a
  view of the same array): ``b`` becomes the hidden scalars ``b__o``, ``b__n``.
* ``dst[s:t] = src`` (a slice of an array parameter, a view or a helper's local
  array as the target): a loop that copies ``src`` (a view or an array) element by
  element, or stores a scalar ``src`` in every element.  NumPy's rules hold: the
  lengths must be equal or the source's 1 (broadcast), else ``ValueError`` naming the
  statement (:data:`SLICE_COPY`, checked on every path); overlapping views of one
  array copy as ``memmove`` does.

Refused, with the line and the rewrite: steps other than 1, slicing something
that is not an array parameter or a view of one, a view used any other way
(returned, stored in an array, in arithmetic), reassigning an array parameter
to a view, a slice bound or a view's index that calls a helper (the bound is
evaluated more than once), multi-dimensional indexing.

Cost: one addition per element access, one comparison per access with a
non-constant index (for the negative wrap), and two more int64 parameters per
view in every task's record.  In bounds-checked mode a view's index is checked
once, against the view's length (the base array's check is then redundant on
the CPU; the device keeps it, as the guard of the skipped store).
"""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from hpu._errors import TranslationError
from hpu._functional import used_as_arrays

__all__ = ["ViewInfo", "ViewIndex", "VIEW_INDEX", "SLICE_COPY", "shown_as", "view_index",
           "display", "rewrite_main", "HelperViews", "plan_helpers", "bind", "hidden_names",
           "device_span"]

#: Builtins that may appear in a slice bound or an index that is evaluated more than once.
_PURE_CALLS = frozenset({"min", "max", "abs", "int", "float", "bool", "round", "len"})


def hidden_names(name: str) -> tuple[str, str]:
    """The offset and length parameters (or locals) that stand for the view ``name``."""
    return f"{name}__o", f"{name}__n"


@dataclass(frozen=True)
class ViewInfo:
    """What the pass did to the decorated function.

    ``views``: (array parameter, offset parameter, length parameter) for each
    parameter that became a view, in parameter order.  ``hidden``: every name
    the pass introduced (parameters and locals).  ``helper_calls``: the calls
    to other functions in the rewritten tree, with the argument positions
    already expanded into triples (completed by :func:`plan_helpers`).
    """

    views: tuple[tuple[str, str, str], ...] = ()
    hidden: frozenset = frozenset()
    helper_calls: tuple = ()                    # (callee, ast.Call, frozenset of user positions)
    fixed: set = field(default_factory=set, compare=False)  # (id(call), position) completed


@dataclass(frozen=True)
class ViewIndex:
    """What a rewritten view subscript ``base[offset + wrap(index)]`` was: the mark
    (attribute ``hpu_view``) that bounds-checked code reads.

    ``text``: the subscript as the user wrote it (``v[i]``, ``a[k]`` for a sliced
    parameter ``a``), which error messages name; ``index``: the index before the
    negative wrap; ``length``, ``offset``: the view's, as expressions.  The
    expressions are the rewritten tree's own (hidden names, clamped bounds).
    """

    text: str
    index: ast.expr
    length: ast.expr
    offset: ast.expr


#: the device's marker of a view's index in bounds-checked mode: ``hpu__view_index(i, n)``
#: is ``i`` wrapped against ``n``, which the OpenCL translator checks (hpu._codegen._DeviceViews)
VIEW_INDEX = "hpu__view_index"


#: a slice assignment's check (``dst[s:t] = src``, :meth:`_Rewriter._slice_store`):
#: ``hpu__slice_copy(len(dst), len(src))`` is the number of elements to copy, ``len(dst)``,
#: when NumPy allows the copy (equal lengths, or a source of one element, broadcast), else
#: NumPy's ValueError -- raised by the CPU module (hpu._codegen), recorded by the device in
#: its error channel (hpu._opencl._translate), which then copies nothing
SLICE_COPY = "hpu__slice_copy"


def shown_as(node) -> str | None:
    """The user's statement a node generated for it stands for (a slice assignment's
    check and element copies), else None."""
    return getattr(node, "hpu_text", None)


def view_index(node) -> ViewIndex | None:
    """The :class:`ViewIndex` of a rewritten view subscript, else None."""
    return getattr(node, "hpu_view", None)


class _Display(ast.NodeTransformer):
    def __init__(self, texts):
        self.texts = texts

    def visit_Subscript(self, node):
        mark = view_index(node)
        text = mark.text if mark is not None else shown_as(node) or \
            (self.texts.get(ast.unparse(node)) if self.texts else None)
        if text is not None:
            return ast.Name(id=text, ctx=ast.Load())
        return self.generic_visit(node)

    def visit_Call(self, node):
        text = shown_as(node) or (self.texts.get(ast.unparse(node)) if self.texts else None)
        if text is not None:
            return ast.Name(id=text, ctx=ast.Load())
        return self.generic_visit(node)

    def visit_Name(self, node):
        """A view's hidden length (``v__n``) is what the user measured it with: ``len(v)``;
        a name hpu made for the user's expression (a comprehension's list or loop variable,
        :mod:`hpu._comprehensions`) is that expression."""
        text = shown_as(node) or (self.texts.get(node.id) if self.texts else None)
        if text is not None:
            return ast.Name(id=text, ctx=node.ctx)
        base, sep, tail = node.id.rpartition("__")
        if sep and tail == "n" and base.isidentifier() and "__" not in base:
            return ast.Call(ast.Name("len", ast.Load()), [ast.Name(base, ast.Load())], [])
        return node


def display(node, texts: dict[str, str] | None = None) -> str:
    """``node`` as source, each view subscript in it as the user wrote it (``v[i]``, not
    ``a[v__o + (i + v__n if i < 0 else i)]``): for error messages.

    Marked subscripts are found by their mark; ``texts`` (rewritten text -> user text)
    finds them in code parsed again from generated source, which has no marks.
    """
    if not texts and not any(view_index(n) is not None or shown_as(n) is not None or (
            isinstance(n, ast.Name) and n.id.endswith("__n")) for n in ast.walk(node)):
        return ast.unparse(node)
    return ast.unparse(_Display(texts).visit(copy.deepcopy(node)))


def _located(node, like):
    """``node`` with ``like``'s location wherever it has none (marks are not in the
    tree's fields, so :func:`ast.fix_missing_locations` does not reach them)."""
    for sub in ast.walk(node):
        if "lineno" in sub._attributes and not hasattr(sub, "lineno"):
            ast.copy_location(sub, like)
    return node


# --------------------------------------------------------------------------- classification

def wrapped_index(i, n, as_index=None):
    """A view's index ``i`` wrapped as NumPy does against its length ``n``: ``i`` itself
    for a constant ``k >= 0``, ``n - k`` for ``-k``, else ``i + n if i < 0 else i``; each
    use of ``i`` passed through ``as_index`` (a function name) when given (the CPU
    modules' unsigned index, :class:`hpu._codegen._Checked`)."""
    k = _int_const(i)
    if (k is not None and k >= 0) or getattr(i, "hpu_nonneg", False):
        return i        # (hpu_nonneg: an index hpu wrote, never negative: hpu._reductions)
    if k is not None:
        return _sub(n, _c(-k))

    def use():
        e = copy.deepcopy(i)
        return e if as_index is None else ast.Call(ast.Name(as_index, ast.Load()), [e], [])

    return ast.IfExp(test=ast.Compare(left=use(), ops=[ast.Lt()], comparators=[_c(0)]),
                     body=_add(use(), copy.deepcopy(n)), orelse=use())


def _is_slice(node) -> bool:
    return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice)


def _view_base(node, views: dict[str, str]) -> str | None:
    """The base array of a view expression (a view name or a chain of slices), else None."""
    if isinstance(node, ast.Name):
        return views.get(node.id)
    while _is_slice(node):
        node = node.value
    if isinstance(node, ast.Name):
        return views.get(node.id, node.id)
    return None


def _is_view_expr(node, views: dict[str, str]) -> bool:
    return _is_slice(node) or (isinstance(node, ast.Name) and node.id in views)


def _bound_names(target) -> list:
    """The names an assignment target binds: ``x``, those of ``x, (y, *z)``; not the
    names read inside ``b[i]`` or ``o.attr`` (a store into an element binds nothing)."""
    if isinstance(target, ast.Name):
        return [target]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _bound_names(e)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []


def _assigned_views(tree: ast.FunctionDef, params, views: dict[str, str], where) -> dict[str, str]:
    """Local names bound to views (``b = a[:m]``), name -> base array, checked."""
    local: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for sub in ast.walk(tree):
            if isinstance(sub, ast.Assign) and len(sub.targets) == 1 \
                    and isinstance(sub.targets[0], ast.Name):
                t = sub.targets[0].id
                scope = {**views, **local}
                if _is_view_expr(sub.value, scope) and t not in local:
                    if t in params:
                        where.refuse(sub, f"reassigning the array parameter {t!r} to a view",
                                     "hpu passes every parameter's value per task",
                                     f"bind the view to a new name: {t}_part = "
                                     f"{shown_as(sub.value) or ast.unparse(sub.value)}")
                    local[t] = _view_base(sub.value, scope)
                    changed = True
    # every assignment of a view name is a view of the same array
    for sub in ast.walk(tree):
        targets = []
        if isinstance(sub, ast.Assign):
            for tg in sub.targets:
                targets += _bound_names(tg)
            value = sub.value if len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name) \
                else None
        elif isinstance(sub, (ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = _bound_names(sub.target)
            value = None
        else:
            continue
        for t in targets:
            if t.id not in local:
                continue
            scope = {**views, **local}
            if value is None or not _is_view_expr(value, scope):
                where.refuse(sub, f"assigning something other than a view to {t.id!r}",
                             f"{t.id!r} holds a view of {local[t.id]!r} elsewhere; a name "
                             "bound to a view must only ever hold views",
                             "use another name for the other value")
            if _view_base(value, scope) != local[t.id]:
                where.refuse(sub, f"the view {t.id!r} of two different arrays",
                             f"{t.id!r} is a view of {local[t.id]!r} and of "
                             f"{_view_base(value, scope)!r}",
                             "use one name per array")
    return local


def _call_positions(call: ast.Call, params) -> list[tuple[int, ast.expr]]:
    """(parameter position, argument) for a call's positional and keyword arguments."""
    out = [(k, a) for k, a in enumerate(call.args) if not isinstance(a, ast.Starred)]
    for kw in call.keywords:
        if kw.arg is not None and kw.arg in params:
            out.append((list(params).index(kw.arg), kw.value))
    return out


def _own_views(tree: ast.FunctionDef, params) -> set[str]:
    """Parameters of the decorated function that its recursive calls pass a view for."""
    name = tree.name
    mine: set[str] = set()
    changed = True
    while changed:
        changed = False
        views = {p: p for p in mine}
        local = _assigned_views_quiet(tree, params, views)
        scope = {**views, **local}
        for sub in ast.walk(tree):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == name:
                for k, arg in _call_positions(sub, params):
                    if k < len(params) and params[k] not in mine and _is_view_expr(arg, scope):
                        mine.add(params[k])
                        changed = True
    return mine


def _assigned_views_quiet(tree, params, views) -> dict[str, str]:
    """:func:`_assigned_views` without the checks (used while a fixed point grows)."""
    local: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for sub in ast.walk(tree):
            if isinstance(sub, ast.Assign) and len(sub.targets) == 1 \
                    and isinstance(sub.targets[0], ast.Name):
                t = sub.targets[0].id
                scope = {**views, **local}
                if t not in local and t not in params and _is_view_expr(sub.value, scope):
                    local[t] = _view_base(sub.value, scope)
                    changed = True
    return local


# --------------------------------------------------------------------------- expressions

def _c(v: int) -> ast.Constant:
    return ast.Constant(value=v)


def _n(name: str) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Load())


def _add(x, y):
    if isinstance(y, ast.Constant) and y.value == 0:
        return x
    if isinstance(x, ast.Constant) and x.value == 0:
        return y
    return ast.BinOp(left=x, op=ast.Add(), right=y)


def _sub(x, y):
    if isinstance(y, ast.Constant) and y.value == 0:
        return x
    return ast.BinOp(left=x, op=ast.Sub(), right=y)


def _call(f, *args):
    return ast.Call(func=_n(f), args=list(args), keywords=[])


def _int_const(node) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
            and isinstance(node.operand, ast.Constant) and type(node.operand.value) is int:
        return -node.operand.value
    return None


class _View:
    """A view as expressions: base array name, offset (None: 0), length."""

    def __init__(self, base: str, off, n):
        self.base, self._off, self._n = base, off, n

    def off(self):
        return _c(0) if self._off is None else copy.deepcopy(self._off)

    def n(self):
        return copy.deepcopy(self._n)


# --------------------------------------------------------------------------- the rewriter

class _Rewriter(ast.NodeTransformer):
    """Rewrites one function's body: indices, lengths, slices passed to calls, view locals."""

    def __init__(self, where, params, views: dict[str, str], local: dict[str, str],
                 callee_views: dict[str, frozenset[int]], self_name: str, own_params,
                 locals_: set[str]):
        self.where = where
        self.params = params
        self.views = {**views, **local}           # view name -> base array
        self.local = local
        self.callee_views = callee_views         # callee -> positions of its view parameters;
        #                                          a callee not in it: expand any view passed
        self.self_name = self_name
        self.own_params = own_params
        self.locals_ = locals_
        self.helper_calls: list = []
        self.arrays_used: set[str] = set()       # names indexed, sliced or measured:
        #                                          a slice assignment's value among them is
        #                                          copied element by element, else stored
        self.copies = 0                          # slice assignments lowered so far
        self.generated: set[str] = set()         # the names they introduced
        #: the np.f(...) calls being visited: (the call, its text as written)
        self.library_calls: list = []

    # ---- views
    def view_of(self, node) -> _View:
        if isinstance(node, ast.Name):
            if node.id in self.views:
                o, n = hidden_names(node.id)
                return _View(self.views[node.id], _n(o), _n(n))
            if node.id in self.params:
                return _View(node.id, None, _call("len", _n(node.id)))
            self.where.refuse(node, f"slicing {node.id!r}",
                              f"{node.id!r} is not an array parameter or a view of one",
                              "slice the array parameters themselves (a[lo:hi]) or names "
                              "bound to their slices")
        if _is_slice(node):
            return self._sliced(self.view_of(node.value), node)
        self.where.refuse(node, f"slicing `{ast.unparse(node)}`",
                          "only array parameters and views of them can be sliced",
                          "slice the array parameter itself, e.g. a[lo:hi]")

    def _sliced(self, inner: _View, node) -> _View:
        """The view ``node`` (a slice) of the view ``inner``."""
        s = node.slice
        if s.step is not None and _int_const(s.step) != 1:
            # (a slice with a step that is read makes the function run as Numba compiles
            # it, hpu._functional.find_allocation: only a store through one comes here)
            name = ast.unparse(node.value)
            lo = ast.unparse(s.lower) if s.lower is not None else "0"
            hi = ast.unparse(s.upper) if s.upper is not None else f"len({name})"
            self.where.refuse(node, f"the slice `{ast.unparse(node)}` with a step",
                              "a view with a step is not contiguous; hpu views are "
                              "(array, offset, length)",
                              f"loop with the step instead: for i in range({lo}, {hi}, "
                              f"{ast.unparse(s.step)}): ... {name}[i]")
        for bound in (s.lower, s.upper):
            if bound is not None:
                self._pure(bound, node, "a slice bound")
        lower = self.visit(s.lower) if s.lower is not None else None
        upper = self.visit(s.upper) if s.upper is not None else None
        start = None if lower is None else self._clamp(lower, inner.n())
        if upper is None:
            length = inner.n() if start is None else _sub(inner.n(), start)
        else:
            stop = self._clamp(upper, inner.n())
            length = stop if start is None else \
                _call("max", _sub(stop, copy.deepcopy(start)), _c(0))
        off = inner._off if start is None else _add(inner.off(), copy.deepcopy(start))
        return _View(inner.base, off, length)

    @staticmethod
    def _clamp(x, n):
        """Python's slice-bound rule: a negative bound counts from the end, then clip."""
        k = _int_const(x)
        if k is not None and k >= 0:
            return _call("min", x, n)
        if k is not None:
            return _call("max", _add(n, x), _c(0))
        return ast.IfExp(test=ast.Compare(left=x, ops=[ast.Lt()], comparators=[_c(0)]),
                         body=_call("max", _add(copy.deepcopy(n), copy.deepcopy(x)), _c(0)),
                         orelse=_call("min", copy.deepcopy(x), copy.deepcopy(n)))

    def _pure(self, expr, node, what):
        for sub in ast.walk(expr):
            if isinstance(sub, ast.Call) and not (isinstance(sub.func, ast.Name)
                                                  and sub.func.id in _PURE_CALLS):
                if isinstance(sub.func, ast.Attribute):
                    continue  # math.floor and friends: pure
                self.where.refuse(node, f"a helper call in {what}",
                                  f"`{ast.unparse(sub)}` would be evaluated more than once",
                                  "compute it into a name on the line before")

    def _is_array_expr(self, node) -> bool:
        return _is_view_expr(node, self.views)

    # ---- uses
    def visit_Subscript(self, node):
        v = node.value
        if isinstance(v, ast.Attribute) and v.attr == "shape" and isinstance(node.ctx, ast.Load):
            if _int_const(node.slice) in (0, -1):
                out = self._length(v.value, node)
                if out is not None:
                    return out
            elif self._is_array_expr(v.value) or (isinstance(v.value, ast.Name)
                                                  and v.value.id in self.locals_):
                self.where.refuse(node, f"`{ast.unparse(node)}`",
                                  "hpu arrays are 1-D: their shape has one entry",
                                  f"use {ast.unparse(v)}[0] or len(...)")
        if _is_slice(node) and self.library_calls and isinstance(node.ctx, ast.Load):
            self._refuse_library_call(node, ast.unparse(node))
        if _is_slice(node):
            self.where.refuse(node, f"the view `{ast.unparse(node)}` used here",
                              "a view can be indexed, measured (len, .size, .shape[0]), "
                              "passed to the function or a helper, or bound to a name",
                              "index it element by element, or pass it to a helper (a slice "
                              "assigned an expression, `out[lo:hi] = a[lo:hi] * w`: copy it, "
                              "then update in place -- `out[lo:hi] = a[lo:hi]`, then "
                              "`out[lo:hi] *= w` -- or write the loop)")
        if isinstance(node.slice, ast.Tuple):
            return self.generic_visit(node)  # refused by the subset checker
        if not self._is_array_expr(node.value):
            return self.generic_visit(node)
        text = ast.unparse(node)  # before the rewrite: the user's own text
        view = self.view_of(node.value)
        self._pure(node.slice, node, "an index of a view")
        i = self.visit(node.slice)
        out = ast.Subscript(value=ast.Name(id=view.base, ctx=ast.Load()),
                            slice=_add(view.off(), wrapped_index(i, view.n())), ctx=node.ctx)
        out.hpu_view = ViewIndex(text, _located(copy.deepcopy(i), node),
                                 _located(view.n(), node), _located(view.off(), node))
        return ast.copy_location(out, node)

    def _length(self, target, node):
        if self._is_array_expr(target):
            return ast.copy_location(self.view_of(target).n(), node)
        if isinstance(target, ast.Name) and target.id in self.locals_:
            return ast.copy_location(_call("len", _n(target.id)), node)
        return None

    def visit_Attribute(self, node):
        if node.attr == "size":
            out = self._length(node.value, node)
            if out is not None:
                return out
        if node.attr == "shape" and self._is_array_expr(node.value):
            self.where.refuse(node, f"`{ast.unparse(node)}` as a whole",
                              "the shape is a tuple; hpu arrays are 1-D",
                              f"use {ast.unparse(node)}[0] or len(...)")
        return self.generic_visit(node)

    def _refuse_library_call(self, node, view: str):
        """A NumPy (or other library) function given the view ``view``: refused here, and
        tagged ``as_written`` -- Numba compiles such a call as written, so the decorator runs
        the function so, on the CPU, rather than refusing it (hpu._decorator._as_written)."""
        _, text = self.library_calls[-1]       # as written: its parts may be rewritten now
        fname = ast.unparse(ast.parse(text, mode="eval").body.func)
        try:
            self.where.refuse(node, f"`{fname}` of the view `{view}` (`{text}`)",
                              "hpu computes on a view's elements: it writes the loops of "
                              "the reductions it knows (sum, min, max, mean, argmin, "
                              "argmax, prod, any, all, count_nonzero, dot, as np.f(v) or "
                              f"v.f()), and {fname} is not one of them",
                              f"write the loop over `{view}`'s elements (`for x in "
                              f"{view}: ...`), or make an array of it first (`b = "
                              f"{view}.copy()`, then {fname}(b)): a function that makes "
                              "arrays runs compiled by Numba as written, on the CPU "
                              "(guide §10)")
        except TranslationError as err:
            err.as_written = text
            raise

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.views and self.library_calls:
            self._refuse_library_call(node, node.id)
        if isinstance(node.ctx, ast.Load) and node.id in self.views:
            self.where.refuse(node, f"the view `{node.id}` used as a value",
                              "a view can be indexed, measured (len, .size, .shape[0]), "
                              "passed to the function or a helper, or bound to a name",
                              "return or store its elements instead")
        return node

    def visit_Assign(self, node):
        if len(node.targets) == 1 and _is_slice(node.targets[0]):
            return self._slice_store(node)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in self.local:
            view = self.view_of(node.value)
            o, n = hidden_names(node.targets[0].id)
            a1 = ast.copy_location(ast.Assign(targets=[ast.Name(id=o, ctx=ast.Store())],
                                              value=view.off()), node)
            a2 = ast.copy_location(ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())],
                                              value=view.n()), node)
            return [a1, a2]
        return self.generic_visit(node)

    def _slice_store(self, node):
        """``dst[s:t] = src`` as NumPy does it, as a loop every backend runs.

        ``src`` a view or an array: its length must equal the target's, or be
        1 (broadcast), else ValueError -- :data:`SLICE_COPY` checks it, in the CPU module
        and on the device (its error channel), and gives the count to copy (0 after an
        error on the device: nothing is touched).  Overlapping views of one array copy as
        ``memmove`` does (NumPy's result): backwards when the target starts after the
        source.  Anything else is a scalar, stored in every element.  The value is
        evaluated first, as in Python.  Generated names and subscripts carry the user's
        statement (:func:`shown_as`), which error messages name.
        """
        v = node.value
        if isinstance(v, ast.IfExp) and any(
                self._is_array_expr(e) or (isinstance(e, ast.Name) and e.id in self.arrays_used)
                for e in (v.body, v.orelse)):
            # out[k:] = left[i:] if c else right[j:]: one slice assignment per branch (Python
            # evaluates the test, then the branch taken, then the target)
            branch = ast.If(test=v.test, body=[ast.Assign([node.targets[0]], v.body)],
                            orelse=[ast.Assign([copy.deepcopy(node.targets[0])], v.orelse)])
            for each in branch.body + branch.orelse:
                each.hpu_text = ast.unparse(node)     # messages name the statement written
            return self.visit(_located(ast.fix_missing_locations(ast.copy_location(branch, node)),
                                       node))
        text = shown_as(node) or ast.unparse(node)
        k = self.copies
        self.copies += 1
        names = {c: f"hpu__copy{k}{c}" for c in "nmsdoijv"}
        self.generated.update(names.values())

        def name(c, store=False):
            return ast.Name(id=names[c], ctx=ast.Store() if store else ast.Load())

        def assign(c, value):
            return ast.Assign(targets=[name(c, True)], value=value)

        def shown(sub):
            sub.hpu_text = text
            return sub

        target = node.targets[0]
        out = []
        array = self._is_array_expr(v) or (isinstance(v, ast.Name) and v.id in self.arrays_used)
        if array:
            src = self._copied(v)
            out += [assign("m", src.n()), assign("o", src.off())]
        else:
            out.append(assign("v", self.visit(v)))
        dst = self._copied(target)
        out.append(assign("d", dst.off()))
        if array:
            check = shown(_call(SLICE_COPY, dst.n(), name("m")))
            out += [assign("n", check),
                    assign("s", ast.IfExp(test=ast.Compare(left=name("m"), ops=[ast.Eq()],
                                                           comparators=[name("n")]),
                                          body=_c(1), orelse=_c(0)))]
            j = ast.IfExp(test=ast.Compare(left=name("d"), ops=[ast.LtE()],
                                           comparators=[name("o")]),
                          body=name("i"), orelse=_sub(_sub(name("n"), _c(1)), name("i")))
            load = shown(ast.Subscript(value=_n(src.base), ctx=ast.Load(),
                                       slice=_add(name("o"), ast.BinOp(name("j"), ast.Mult(),
                                                                       name("s")))))
            body = [assign("j", j)]
            at = name("j")
        else:
            out.append(assign("n", dst.n()))
            load, body, at = name("v"), [], name("i")
        store = shown(ast.Subscript(value=ast.Name(id=dst.base, ctx=ast.Load()),
                                    slice=_add(name("d"), at), ctx=ast.Store()))
        body.append(ast.Assign(targets=[store], value=load))
        out.append(ast.For(target=ast.Name(id=names["i"], ctx=ast.Store()),
                           iter=_call("range", name("n")), body=body, orelse=[]))
        return [_located(ast.fix_missing_locations(ast.copy_location(s, node)), node)
                for s in out]

    def _copied(self, node) -> _View:
        """A slice assignment's target or source: a view, or a whole array (a local
        one of a helper too, which :meth:`view_of` does not slice)."""
        if isinstance(node, ast.Name) and node.id not in self.views \
                and node.id not in self.params and node.id in self.arrays_used:
            return _View(node.id, None, _call("len", _n(node.id)))
        if _is_slice(node) and isinstance(node.value, ast.Name) \
                and node.value.id not in self.views and node.value.id not in self.params \
                and node.value.id in self.arrays_used:
            whole = _View(node.value.id, None, _call("len", _n(node.value.id)))
            return self._sliced(whole, node)
        return self.view_of(node)

    def visit_Call(self, node):
        f = node.func
        if (isinstance(f, ast.Attribute) and f.attr == "sort" and not node.args
                and (self._is_array_expr(f.value) or (isinstance(f.value, ast.Name)
                                                      and f.value.id in self.params))):
            part = ast.unparse(f.value)
            self.where.refuse(node, f"sorting in place with `{ast.unparse(node)}`",
                              "methods of arrays are not in the numeric subset (a device "
                              "has no sort)",
                              f"write `{part} = np.sort({part})`: hpu then runs the function "
                              "compiled by Numba as written, on the CPU")
        if isinstance(f, ast.Name) and f.id == "len" and len(node.args) == 1:
            out = self._length(node.args[0], node)
            if out is not None:
                return out
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                and f.value.id in self.views:
            self.where.refuse(node, f"the method call `{ast.unparse(node)}`",
                              "methods of arrays are not in the numeric subset",
                              "write the loop out over range(len(...))")
        if isinstance(f, ast.Attribute):
            # a library function given a view (`np.where(a > 0, 1, 0)`, `np.median(a)`):
            # visit_Name's refusal names it
            self.library_calls.append((node, ast.unparse(node)))
            try:
                return self.generic_visit(node)
            finally:
                self.library_calls.pop()
        if not isinstance(f, ast.Name) or f.id in _PURE_CALLS:
            return self.generic_visit(node)
        cv = self.callee_views.get(f.id)
        positions = None if cv is None else set(cv)
        params = self.own_params if f.id == self.self_name else None
        args, expanded = [], set()
        for k, a in enumerate(node.args):
            take = (positions is None and self._is_array_expr(a)) or \
                   (positions is not None and k in positions)
            if take and not isinstance(a, ast.Starred):
                if not (self._is_array_expr(a) or (isinstance(a, ast.Name)
                                                   and a.id in self.params)):
                    self.where.refuse(a, f"passing `{ast.unparse(a)}` where {f.id} expects an "
                                      "array", "elsewhere this parameter receives a view",
                                      "pass an array parameter or a slice of one")
                v = self.view_of(a)
                args += [ast.copy_location(ast.Name(id=v.base, ctx=ast.Load()), a),
                         ast.copy_location(v.off(), a), ast.copy_location(v.n(), a)]
                expanded.add(k)
            else:
                args.append(self.visit(a))
        keywords = []
        for kw in node.keywords:
            if params is not None and kw.arg in params and \
                    params.index(kw.arg) in (positions or ()):
                v = self.view_of(kw.value)
                o, n = hidden_names(kw.arg)
                keywords += [ast.keyword(arg=kw.arg, value=_n(v.base)),
                             ast.keyword(arg=o, value=v.off()), ast.keyword(arg=n, value=v.n())]
            else:
                kw.value = self.visit(kw.value)
                keywords.append(kw)
        node.args, node.keywords = args, keywords
        if f.id != self.self_name:
            self.helper_calls.append((f.id, node, frozenset(expanded)))
        return node


def _with_hidden_params(tree: ast.FunctionDef, views) -> None:
    new = []
    for arg in tree.args.posonlyargs + tree.args.args:
        new.append(arg)
        if arg.arg in views:
            for h in hidden_names(arg.arg):
                new.append(ast.copy_location(ast.arg(arg=h, annotation=None), arg))
    tree.args.posonlyargs = []
    tree.args.args = new


def _rewrite(tree: ast.FunctionDef, where, views: set[str], callee_views) -> _Rewriter:
    params = [a.arg for a in tree.args.posonlyargs + tree.args.args]
    if tree.args.defaults:
        for a in tree.args.args[-len(tree.args.defaults):]:
            if a.arg in views:
                where.refuse(tree, f"a default value for the view parameter {a.arg!r}",
                             "it receives slices, so hpu passes it as three values",
                             "remove the default")
    vmap = {p: p for p in views}
    local = _assigned_views(tree, params, vmap, where)
    from hpu._frontend import stored_names

    locals_ = set(params) | stored_names(tree.body)
    rw = _Rewriter(where, params, vmap, local, callee_views, tree.name, params, locals_)
    rw.arrays_used = used_as_arrays(tree)  # a slice assignment's value: array or scalar
    tree.body = [s for stmt in tree.body for s in _as_list(rw.visit(stmt))]
    _with_hidden_params(tree, views)
    ast.fix_missing_locations(tree)
    return rw


def _as_list(x):
    return x if isinstance(x, list) else [x]


# --------------------------------------------------------------------------- entry points

def rewrite_main(tree: ast.FunctionDef, where) -> ViewInfo:
    """Rewrite the decorated function's (stripped, copied) tree in place."""
    params = [a.arg for a in tree.args.posonlyargs + tree.args.args]
    views = _own_views(tree, params)
    ordered = [p for p in params if p in views]
    rw = _rewrite(tree, where, set(ordered),
                  {tree.name: frozenset(params.index(p) for p in ordered)})
    hidden = {h for p in ordered for h in hidden_names(p)}
    hidden |= {h for name in rw.local for h in hidden_names(name)} | rw.generated
    return ViewInfo(views=tuple((p, *hidden_names(p)) for p in ordered),
                    hidden=frozenset(hidden), helper_calls=tuple(rw.helper_calls))


@dataclass
class HelperViews:
    """The helpers' view parameters (a fixed point over the call graph), and their rewrite."""

    views: dict[str, tuple[str, ...]]          #: helper -> its parameters that are views
    positions: dict[str, frozenset[int]]       #: helper -> the positions of those parameters

    def rewrite(self, name: str, tree: ast.FunctionDef, where) -> frozenset:
        """Rewrite helper ``name``'s stripped tree in place; returns the hidden names."""
        views = self.views.get(name, ())
        rw = _rewrite(tree, where, set(views), dict(self.positions))
        hidden = {h for p in views for h in hidden_names(p)}
        hidden |= {h for n in rw.local for h in hidden_names(n)} | rw.generated
        return frozenset(hidden)



def plan_helpers(fn, spec, info: ViewInfo, source_of, strip, make_where) -> HelperViews:
    """Find the helpers reachable from the decorated function, decide which of their
    parameters are views, and complete the decorated function's calls to them.

    ``source_of``/``strip``/``make_where`` are the frontend's own (passed in to
    keep one definition of how source is read).  Helpers that cannot be read are
    skipped here: the frontend's resolution reports them with the right message.
    """
    from hpu._errors import TranslationError

    trees: dict[str, ast.FunctionDef] = {}

    def discover(tree, glb):
        local = {a.arg for a in tree.args.posonlyargs + tree.args.args}
        for sub in ast.walk(tree):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
                n = sub.func.id
                if n in local or n in trees or n == spec.name:
                    continue
                obj = glb.get(n)
                if hasattr(obj, "py_func") and hasattr(obj, "overloads"):
                    obj = obj.py_func
                if not callable(obj) or not hasattr(obj, "__code__") or obj is fn \
                        or type(obj).__name__ == "DivideAndConquer":
                    continue
                try:
                    _text, _start, filename, hnode = source_of(obj, "helper")
                except TranslationError:
                    continue
                h = strip(hnode)
                h.name = n
                trees[n] = h
                discover(h, obj.__globals__)

    discover(spec.tree, fn.__globals__)
    views: dict[str, set[str]] = {n: set() for n in trees}
    for callee, call, expanded in info.helper_calls:
        if callee in views:
            params = [a.arg for a in trees[callee].args.args]
            views[callee] |= {params[k] for k in expanded if k < len(params)}
    changed = True
    while changed:
        changed = False
        for n, tree in trees.items():
            params = [a.arg for a in tree.args.args]
            vmap = {p: p for p in views[n]}
            scope = {**vmap, **_assigned_views_quiet(tree, params, vmap)}
            for sub in ast.walk(tree):
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) \
                        and sub.func.id in views:
                    cparams = [a.arg for a in trees[sub.func.id].args.args]
                    for k, a in enumerate(sub.args):
                        if k < len(cparams) and cparams[k] not in views[sub.func.id] \
                                and _is_view_expr(a, scope):
                            views[sub.func.id].add(cparams[k])
                            changed = True
    ordered = {n: tuple(a.arg for a in trees[n].args.args if a.arg in views[n]) for n in trees}

    # complete the decorated function's calls: whole arrays where a callee takes a view
    main_where = make_where(spec.filename, f"function {spec.name!r}")
    main_params = list(spec.params)
    for callee, call, expanded in info.helper_calls:
        if callee not in ordered or not ordered[callee]:
            continue
        cparams = [a.arg for a in trees[callee].args.args]
        want = sorted(cparams.index(p) for p in ordered[callee])
        done = {e for (c, e) in info.fixed if c == id(call)}
        given = len(call.args) - 2 * (len(expanded) + len(done))   # the user's arguments
        todo = [k for k in want if k not in expanded and k not in done and k < given]
        for k in sorted(todo, reverse=True):
            idx = k + 2 * sum(1 for e in expanded | done if e < k)
            arg = call.args[idx]
            if not (isinstance(arg, ast.Name) and arg.id in main_params):
                main_where.refuse(arg, f"passing `{ast.unparse(arg)}` where {callee} expects "
                                  "an array", "elsewhere this parameter receives a view",
                                  "pass an array parameter or a slice of one")
            extra = [ast.copy_location(_c(0), arg),
                     ast.copy_location(_call("len", _n(arg.id)), arg)]
            ast.fix_missing_locations(extra[1])
            call.args[idx + 1:idx + 1] = extra
        for k in todo:
            info.fixed.add((id(call), k))
    positions = {n: frozenset(k for k, a in enumerate(trees[n].args.args) if a.arg in views[n])
                 for n in trees}
    return HelperViews(views=ordered, positions=positions)


def bind(spec, values: dict) -> dict:
    """The decorated function's arguments with the hidden view parameters added: a whole
    array ``a`` is the view ``(a, 0, len(a))``.  Ordered as ``spec.params``."""
    views = getattr(spec, "views", ())
    if not views:
        return values
    import numpy as np

    extra = {}
    for p, o, n in views:
        v = values[p]
        if not isinstance(v, np.ndarray):
            raise TypeError(f"{spec.name}(): parameter {p!r} received {type(v).__name__} "
                            f"{v!r}, but {spec.name} slices it as an array; pass a 1-D NumPy "
                            "array")
        extra[o], extra[n] = 0, int(v.shape[0])
    merged = {**values, **extra}
    return {p: merged[p] for p in spec.params}


def device_span(spec, arrays, params: dict, start: int, values: dict):
    """``(base, end)`` of the arrays the device's tasks (``start:`` of a level) can touch,
    from their views, or None when some array the function uses is not a view.

    A task sees only ``[offset, offset + length)`` of each view, so the device's share
    needs exactly the union of its tasks' views: with one span for every array (as
    ``span=`` gives), that is ``[min offset, max end)`` over the views.  ``params`` are the
    level's per-task parameters; an offset or length not among them is the same for
    every task (the call's own value).
    """
    import numpy as np

    views = {p: (o, n) for p, o, n in getattr(spec, "views", ())}
    if not views or not arrays or any(a not in views for a in arrays):
        return None
    lo = hi = None
    for p in arrays:
        o, n = views[p]
        off = params[o][start:] if o in params else np.array([values[o]], np.int64)
        ln = params[n][start:] if n in params else np.array([values[n]], np.int64)
        if off.size == 0:
            return None
        end = off + ln   # one of them may be a single value: broadcast
        a, b = int(off.min()), int(end.max())
        lo = a if lo is None else min(lo, a)
        hi = b if hi is None else max(hi, b)
    return (max(lo, 0), hi)
