"""Whole-array reductions -- ``a.sum()``, ``np.max(a)``, ``min(a)`` -- as the loops they stand for.

Why
===

A base case is often written with NumPy or a builtin over the task's slice::

    def total(a):
        if len(a) <= 64:
            return a.sum()                  # np.sum(a), sum(a) alike
        m = len(a) // 2
        return total(a[:m]) + total(a[m:])

Device code has no array objects to call methods on, but each of these is a loop over the
view's elements, which every backend already runs (the CPU module, the OpenCL translator
and its bounds checks, views, helpers).  So :func:`reductions_as_loops` rewrites the
function (and each helper) before anything else reads it: the reduction is computed by a
loop before its statement, into a name that stands for it there.  The loops are taken out
of their statements by :mod:`hpu._comprehensions`' hoister, which keeps Python's order of
evaluation (the calls evaluated before the reduction in the statement are taken out first)
and leaves in place a reduction evaluated only under a condition inside an expression (a
branch of ``x if c else y`` that is not a whole ``return``/assignment, after ``and``/``or``,
in a ``while`` test): those stay refused, with the fix (assign it to a name first).

What each one computes, exactly as written
------------------------------------------

* ``sum(a)``, ``sum(a, start)``: ``s = 0`` (or ``start``), then ``s = s + a[i]`` in order,
  as Python adds.  ``np.sum(a)``, ``a.sum()``: 0 plus the items added in NumPy's own order,
  pairwise (:meth:`_Reductions.pairwise`), so a float sum is NumPy's to the last bit (added
  in order, about half of the float64 sums of 8 or more items differed there).  Integers
  and booleans give NumPy's int64 sum in any order.
* ``np.count_nonzero(a)``: ``0``, then ``+ (a[i] != 0)`` (a NaN counts), an int.
* ``np.prod(a)``, ``a.prod()``: ``p = 1``, then ``p = p * a[i]``.
* ``np.mean(a)``, ``a.mean()``: the items as float64 summed in NumPy's pairwise order,
  divided by the length (NumPy's mean to the last bit); ``nan`` for an empty array (NumPy warns too; hpu does not).
* ``min(a)``, ``max(a)`` (Python's): the first element, then each one that compares
  smaller (larger) -- as Python's builtin does, so a NaN counts only where it comes first.
* ``np.min``/``np.max``/``np.amin``/``np.amax(a)``, ``a.min()``, ``a.max()``: the same, but a
  NaN anywhere is the result, as NumPy's.
* ``any(a)``, ``all(a)``, ``np.any``, ``np.all``, ``a.any()``, ``a.all()``: the loop up to
  the first element that decides it (non-zero for ``any``, zero for ``all``; NaN counts as
  true, as in Python); a bool.
* ``np.argmin(a)``, ``np.argmax(a)``, ``a.argmin()``, ``a.argmax()``: the index of the first
  smallest (largest) element, or of the first NaN, as NumPy's.
* An empty array: ``min``/``max``/``argmin``/``argmax`` raise Python's or NumPy's ``ValueError`` with its message
  (:data:`REDUCE_FIRST`, an operation every backend checks: the device records it in its
  error channel and nothing is lost); sums and products give 0 and 1.

``sum(e for x in xs if c)`` (a ``start`` too), ``any(...)`` and ``all(...)`` of one ``for``:
the generator's loops, its names renamed (they do not leak into the function, as in Python),
``any``/``all`` stopping at the first element that decides them.

The argument may also be an element-wise expression over one or two arrays --
``np.sum(a > 0)``, ``(a[lo:hi] * a[lo:hi]).sum()``, ``np.max(np.abs(a - t))``,
``np.sum(a - b)``: constants, scalar names, arithmetic, one comparison, ``abs``/``np.abs``.
The loop computes it at each element (``a[i] > 0``), with no temporary array.  Two arrays
follow NumPy's broadcasting (equal lengths, or one of them 1, read at stride 0), and
``np.dot(a, b)`` of two 1-D arrays is the sum of their products, its lengths equal; both
checked by :data:`REDUCE_PAIR`, which raises NumPy's ``ValueError`` as
:data:`REDUCE_FIRST` does.

``max``/``min`` of one iterable with ``key=`` (a one-parameter lambda, a function's name)
or ``default=``, or of a generator expression with ``if``s or several ``for``s
(:meth:`_Reductions.flag_minmax`): one pass with a flag, the first element that comes taken
as it is (its type is the result's: no typed first value is needed before the loop, which
the device's typing allows for these ``hpu_late_`` names only), then each later one whose
key compares larger (smaller); nothing came: the default, or :data:`REDUCE_FIRST`'s error.

Not rewritten (the subset's refusal stands): other keyword arguments (``axis=``),
``max(a, b, key=...)``, ``sorted``, reductions of anything but an array, a slice of one, a
name bound to one, or an element-wise expression over one or two of these.
"""
from __future__ import annotations

import ast
import copy
import math

from hpu._comprehensions import _Hoister

__all__ = ["reductions_as_loops", "REDUCE_FIRST", "REDUCE_PAIR", "EMPTY_MESSAGES",
           "empty_message", "pair_message"]

#: the operation that checks a min/max's array is not empty: ``REDUCE_FIRST(n, kind)`` gives
#: 0 (the index of the first element) or raises ValueError (:data:`EMPTY_MESSAGES[kind]`)
REDUCE_FIRST = "hpu__reduce_first"


def _python_empty(f) -> str:
    try:
        f([])
    except ValueError as e:
        return str(e)
    raise AssertionError(f)  # pragma: no cover


#: the ValueError each empty reduction raises, by kind: Python's builtins (their text on
#: this Python), then NumPy's
EMPTY_MESSAGES = (
    _python_empty(min),
    _python_empty(max),
    "zero-size array to reduction operation minimum which has no identity",
    "zero-size array to reduction operation maximum which has no identity",
    "attempt to get argmin of an empty sequence",
    "attempt to get argmax of an empty sequence",
)


#: the operation that checks two arrays' lengths in one reduction: ``REDUCE_PAIR(n1, n2,
#: kind)`` gives the count of elements (kind 0: NumPy's broadcasting -- equal, or one of
#: them 1; kind 1: ``np.dot``'s -- equal) or raises NumPy's ValueError (:func:`pair_message`)
REDUCE_PAIR = "hpu__reduce_pair"


def pair_message(kind: int, n1: int, n2: int) -> str:
    if kind == 1:
        return f"shapes ({n1},) and ({n2},) not aligned: {n1} (dim 0) != {n2} (dim 0)"
    return f"operands could not be broadcast together with shapes ({n1},) ({n2},) "


def empty_message(kind: int) -> str:
    return EMPTY_MESSAGES[kind] if 0 <= kind < len(EMPTY_MESSAGES) else "empty reduction"


_METHODS = {"sum": "npsum", "prod": "prod", "min": "npmin", "max": "npmax", "mean": "mean",
            "any": "any", "all": "all", "argmin": "argmin", "argmax": "argmax"}
_NUMPY = {"sum": "npsum", "prod": "prod", "min": "npmin", "max": "npmax", "amin": "npmin",
          "amax": "npmax", "product": "prod", "mean": "mean", "any": "any", "all": "all",
          "argmin": "argmin", "argmax": "argmax"}
_BUILTINS = {"sum": "sum", "min": "min", "max": "max", "any": "any", "all": "all"}
#: REDUCE_FIRST's kind (the message's index) of each reduction that needs an element
_KINDS = {"min": 0, "max": 1, "npmin": 2, "npmax": 3, "argmin": 4, "argmax": 5}


def _arrayish(e, arrays) -> bool:
    """``a``, ``a[s:t]``, ``a[s:t][u:v]`` of an array ``a``."""
    while isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Slice) \
            and e.slice.step is None:
        e = e.value
    return isinstance(e, ast.Name) and e.id in arrays


#: NumPy's element-wise functions an element-wise argument may call (as ``np.NAME``), each
#: as the builtin that computes it on one element
_UFUNCS = {"abs": "abs", "absolute": "abs"}


def _elementwise(e, arrays, numpy_names):
    """The arrays ``e`` computes on element by element (``a > 0``, ``a * a``,
    ``abs(a[lo:hi] - t)``, ``a - b``): a list of one or two distinct array expressions, or
    None; its other leaves are constants and scalar names."""
    leaves: list = []

    def ok(n) -> bool:
        if _arrayish(n, arrays):
            leaves.append(n)
            return True
        if isinstance(n, ast.Constant):
            return isinstance(n.value, (int, float))
        if isinstance(n, ast.Name):
            return n.id not in numpy_names
        if isinstance(n, ast.BinOp):
            return ok(n.left) and ok(n.right)
        if isinstance(n, ast.UnaryOp):
            return ok(n.operand)
        if isinstance(n, ast.Compare):
            return len(n.ops) == 1 and ok(n.left) and ok(n.comparators[0])
        if isinstance(n, ast.Call) and len(n.args) == 1 and not n.keywords:
            f = n.func
            if (isinstance(f, ast.Name) and f.id == "abs") or (
                    isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                    and f.value.id in numpy_names and f.attr in _UFUNCS):
                return ok(n.args[0])
        return False

    if not isinstance(e, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call)) or not ok(e):
        return None
    distinct: dict = {}
    for x in leaves:
        distinct.setdefault(ast.dump(x), x)
    return list(distinct.values()) if 1 <= len(distinct) <= 2 else None


class _Reductions(_Hoister):
    def __init__(self, arrays: set, maybe: set, numpy_names: set, used: set):
        super().__init__()
        self.arrays = arrays                # names used as arrays
        self.maybe = arrays | maybe         # and the parameters, which may be
        self.np = numpy_names
        self.used = used

    def fresh(self, what: str) -> str:     # no '__': the subset refuses those as the user's
        while True:
            self.k += 1
            name = f"hpu_{what}{self.k}"
            if name not in self.used:
                self.used.add(name)
                return name

    def array(self, e):
        """(the array, the element-wise expression over it or None, a second array of it
        or None) of a reduction's argument, or None."""
        if _arrayish(e, self.maybe):
            return e, None, None
        leaves = _elementwise(e, self.arrays, self.np)
        if leaves is None:
            return None
        return leaves[0], e, (leaves[1] if len(leaves) == 2 else None)

    def kind(self, e):
        """``(what, array, start, element-wise expression or None, second array or None,
        REDUCE_PAIR's kind)`` when ``e`` is a reduction this module rewrites, else None
        (for a generator expression, ``array`` is the generator)."""
        if not isinstance(e, ast.Call) or any(isinstance(a, ast.Starred) for a in e.args):
            return None
        f = e.func
        if (isinstance(f, ast.Name) and f.id in ("max", "min") and f.id not in self.used_globals
                and self._flagged(e)):
            return "flag" + f.id, e, None, None, None, 0
        if e.keywords:
            return None
        if (isinstance(f, ast.Name) and f.id in ("sum", "any", "all")
                and f.id not in self.used_globals and e.args
                and isinstance(e.args[0], ast.GeneratorExp)
                and (len(e.args) == 1 or (f.id == "sum" and len(e.args) == 2))
                and (f.id == "sum" or len(e.args[0].generators) == 1)
                and not any(g.is_async for g in e.args[0].generators)):
            return ("gen" + f.id, e.args[0], (e.args[1] if len(e.args) == 2 else None), None,
                    None, 0)
        if (isinstance(f, ast.Name) and f.id in ("max", "min") and f.id not in self.used_globals
                and len(e.args) == 1 and isinstance(e.args[0], ast.GeneratorExp)
                and self._first_of(e.args[0]) is not None):
            return "gen" + f.id, e.args[0], None, None, None, 0
        if isinstance(f, ast.Name) and f.id in _BUILTINS and f.id not in self.used_globals:
            if len(e.args) == 1 or (f.id == "sum" and len(e.args) == 2):
                arr = self.array(e.args[0])
                if arr is not None:
                    return (_BUILTINS[f.id], arr[0], (e.args[1] if len(e.args) == 2 else None),
                            arr[1], arr[2], 0)
            return None
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                and f.value.id in self.np and f.attr == "dot" and len(e.args) == 2 \
                and all(_arrayish(a, self.maybe) for a in e.args):
            a, b = e.args                      # np.dot of two 1-D arrays: NumPy's lengths
            prod = ast.BinOp(copy.deepcopy(a), ast.Mult(), copy.deepcopy(b))
            same = ast.dump(a) == ast.dump(b)
            return "sum", a, None, prod, (None if same else b), 1
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                and f.value.id in self.np and f.attr == "count_nonzero" and len(e.args) == 1:
            arr = self.array(e.args[0])     # the number of items != 0 (NaN counts), an int
            if arr is not None:
                item = copy.deepcopy(arr[1] if arr[1] is not None else arr[0])
                return ("sum", arr[0], None,
                        ast.Compare(item, [ast.NotEq()], [ast.Constant(0)]), arr[2], 0)
            return None
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                and f.value.id in self.np and f.attr in _NUMPY and len(e.args) == 1:
            arr = self.array(e.args[0])
            if arr is not None:
                return _NUMPY[f.attr], arr[0], None, arr[1], arr[2], 0
            return None
        if isinstance(f, ast.Attribute) and f.attr in _METHODS and not e.args:
            arr = self.array(f.value)
            if arr is not None:
                return _METHODS[f.attr], arr[0], None, arr[1], arr[2], 0
        return None

    used_globals: frozenset = frozenset()
    local: frozenset = frozenset()          # the function's parameters and assigned names

    def _first_of(self, gen: ast.GeneratorExp):
        """``max(e for t in it)``/``min``: ``"range"`` when ``it`` is ``range(b)`` or
        ``range(a, b)``, ``"array"`` when it is an array or a slice of one -- the shapes
        whose first element is known before the loop (a typed first value: the device
        needs every name assigned before it is read) -- else None (left refused).  One
        ``for``, no ``if``, a name as target."""
        if len(gen.generators) != 1:
            return None
        g = gen.generators[0]
        if g.ifs or g.is_async or not isinstance(g.target, ast.Name):
            return None
        it = g.iter
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and "range" not in self.used_globals and not it.keywords
                and 1 <= len(it.args) <= 2
                and not any(isinstance(a, ast.Starred) for a in it.args)):
            return "range"
        if _arrayish(it, self.maybe):
            return "array"
        return None

    def _flagged(self, e: ast.Call) -> bool:
        """``max``/``min`` of one iterable that :meth:`flag_minmax` computes: ``key=`` (a
        one-parameter lambda or a function's name), ``default=``, a generator expression
        of any ``for``s and ``if``s, ``range(...)`` or an array -- each except the shapes the
        exact first-element loops already take (one ``for`` without ``if``, an array, with
        neither keyword)."""
        if len(e.args) != 1 or isinstance(e.args[0], ast.Starred):
            return False
        kw = {k.arg: k.value for k in e.keywords}
        if None in kw or len(kw) != len(e.keywords) or set(kw) - {"key", "default"}:
            return False
        key = kw.get("key")
        if isinstance(key, ast.Constant) and key.value is None:
            key = None
        if key is not None and not (
                (isinstance(key, ast.Lambda) and len(key.args.args) == 1
                 and not (key.args.posonlyargs or key.args.vararg or key.args.kwonlyargs
                          or key.args.kwarg or key.args.defaults))
                or (isinstance(key, ast.Name) and key.id not in self.local)):
            return False
        if isinstance(kw.get("default"), ast.Constant) and kw["default"].value is None:
            return False        # None as a result: refused by the subset, with its rewrite
        it = e.args[0]
        if isinstance(it, ast.GeneratorExp):
            if any(g.is_async for g in it.generators):
                return False
            return bool(kw) or self._first_of(it) is None
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and "range" not in self.used_globals and not it.keywords
                and 1 <= len(it.args) <= 3):
            return True
        return bool(kw) and _arrayish(it, self.maybe)

    def _renamed(self, gen: ast.GeneratorExp):
        """``(comprehensions, element)`` of ``gen`` with its variables renamed fresh (a
        generator's do not leak into the function, as in Python), the first iterable as
        written: it is evaluated where the call is."""
        from hpu._comprehensions import _Renamer

        names = {}
        for g in gen.generators:
            for n in ast.walk(g.target):
                if isinstance(n, ast.Name) and n.id not in names:
                    names[n.id] = self.fresh("g")
        rename = _Renamer(names)
        gens = copy.deepcopy(gen.generators)
        first_iter = gens[0].iter
        gens = [rename.visit(g) for g in gens]
        gens[0].iter = first_iter
        return gens, rename.visit(copy.deepcopy(gen.elt))

    def flag_minmax(self, what: str, e: ast.Call) -> list:
        """``max(it, key=k, default=d)`` and ``max(e for ... if ...)``: one pass over the
        elements with a flag, as Python's builtin runs it -- the first element taken, then
        each later one whose key compares larger (smaller): a NaN only where it comes first,
        the first of equal ones kept; when nothing came, ``d``, or Python's ValueError
        (``REDUCE_FIRST``).  The result is typed by the elements alone (and ``d``): its
        name is assigned only in the loop, which the device's typing allows for hpu's
        ``hpu_late_`` names (the flag guards every read)."""
        from hpu._comprehensions import _Renamer

        def name(n, store_=False):
            return ast.Name(n, ast.Store() if store_ else ast.Load())

        def assign(n, value):
            return ast.Assign([name(n, True)], value)

        kw = {k.arg: k.value for k in e.keywords}
        key, default = kw.get("key"), kw.get("default")
        if isinstance(key, ast.Constant):
            key = None
        it = e.args[0]
        out = []
        if isinstance(it, ast.GeneratorExp):
            gens, elt = self._renamed(it)
        elif isinstance(it, ast.Call):                      # range(...)
            t = self.fresh("g")
            gens = [ast.comprehension(name(t, True), copy.deepcopy(it), [], 0)]
            elt = name(t)
        else:                                               # an array: by index
            v, j = it.id if isinstance(it, ast.Name) else self.fresh("view"), self.fresh("j")
            if not isinstance(it, ast.Name):                # a slice: bound once, a view
                out.append(assign(v, copy.deepcopy(it)))
            gens = [ast.comprehension(name(j, True), ast.Call(
                name("range"), [ast.Call(name("len"), [name(v)], [])], []), [], 0)]
            elt = ast.Subscript(name(v), name(j), ast.Load())
        r, found, x = (self.fresh(f"late_{what}"), self.fresh("found"), self.fresh("x"))
        self.last = r
        if default is not None:                     # evaluated once, before the loop
            d = self.fresh("default")
            out.append(assign(d, copy.deepcopy(default)))
        out.append(assign(found, ast.Constant(False)))
        body = [assign(x, elt)]
        cmp_new, cmp_old = name(x), name(r)
        if key is not None:
            k, rk = self.fresh("key"), self.fresh("late_key")
            if isinstance(key, ast.Lambda):
                value = _Renamer({key.args.args[0].arg: x}).visit(copy.deepcopy(key.body))
            else:
                value = ast.Call(name(key.id), [name(x)], [])
            body.append(assign(k, value))
            cmp_new, cmp_old = name(k), name(rk)
        better = ast.Compare(cmp_new, [ast.Gt() if what == "max" else ast.Lt()], [cmp_old])

        def take():
            return [assign(r, name(x))] + ([assign(rk, name(k))] if key is not None else [])

        # (`not found or new > old` in one test: Numba's bytecode analysis refuses the read
        # of a name not yet assigned there, not in an elif)
        body.append(ast.If(ast.UnaryOp(ast.Not(), name(found)),
                           take() + [assign(found, ast.Constant(True))],
                           [ast.If(better, take(), [])]))
        out.extend(_nested(gens, body))
        if default is not None:
            out.append(ast.If(ast.UnaryOp(ast.Not(), name(found)), [assign(r, name(d))], []))
        else:                                       # nothing came: Python's ValueError
            out.append(assign(self.fresh("first"), ast.Call(name(REDUCE_FIRST), [
                ast.IfExp(name(found), ast.Constant(1), ast.Constant(0)),
                ast.Constant(_KINDS[what])], [])))
        return self.block(out)           # reductions inside it, in turn

    def generator(self, what: str, gen: ast.GeneratorExp, start) -> list:
        """``sum(e for x in xs if c)`` (``any``/``all`` of one ``for``): the loops, their
        variables renamed (a generator's do not leak into the function, as in Python), the
        first iterable evaluated where the call is; the result in ``self.last``."""
        gens, elt = self._renamed(gen)
        r = self.fresh(what)
        self.last = r

        def store(value):
            return ast.Assign([ast.Name(r, ast.Store())], value)

        if what in ("max", "min"):
            return self.block(self._first_then_rest(what, gen, gens[0].target, gens[0].iter,
                                                    elt, store, r))
        if what == "sum":
            init = copy.deepcopy(start) if start is not None else ast.Constant(0)
            body = [store(ast.BinOp(ast.Name(r, ast.Load()), ast.Add(), elt))]
        else:                                   # one for: the first deciding element breaks
            init = ast.Constant(what == "all")
            body = [ast.If(ast.Compare(elt, [ast.NotEq() if what == "any" else ast.Eq()],
                                       [ast.Constant(0)]),
                           [store(ast.Constant(what == "any")), ast.Break()], [])]
        return self.block([store(init)] + _nested(gens, body))   # reductions inside it, in turn

    def _first_then_rest(self, what, gen, target, it, elt, store, r) -> list:
        """``max(e for t in it)``: ``it`` evaluated once, Python's ValueError when it is
        empty (``REDUCE_FIRST``), ``r`` = ``e`` at the first ``t``, then each later ``e``
        that compares larger (smaller) -- a NaN counts only where it comes first, as in
        Python."""
        def name(n, store_=False):
            return ast.Name(n, ast.Store() if store_ else ast.Load())

        def assign(n, value):
            return ast.Assign([name(n, True)], value)

        t = target.id
        x, first = self.fresh("x"), self.fresh("first")
        kind = _KINDS[what]
        better = ast.If(ast.Compare(name(x), [ast.Gt() if what == "max" else ast.Lt()],
                                    [name(r)]), [store(name(x))], [])
        out = []
        if self._first_of(gen) == "range":
            lo, hi = self.fresh("a"), self.fresh("b")
            if len(it.args) == 2:
                out.append(assign(lo, copy.deepcopy(it.args[0])))
            else:
                out.append(assign(lo, ast.Constant(0)))
            out.append(assign(hi, copy.deepcopy(it.args[-1])))
            count = ast.Call(name("max"), [ast.BinOp(name(hi), ast.Sub(), name(lo)),
                                           ast.Constant(0)], [])
            out.append(assign(first, ast.Call(name(REDUCE_FIRST), [count, ast.Constant(kind)],
                                              [])))
            out.append(assign(t, ast.BinOp(name(lo), ast.Add(), name(first))))
            out.append(store(copy.deepcopy(elt)))
            rest = ast.Call(name("range"), [ast.BinOp(name(lo), ast.Add(), ast.Constant(1)),
                                            name(hi)], [])
            out.append(ast.For(name(t, True), rest,
                               [assign(x, copy.deepcopy(elt)), better], []))
        else:
            v, j = self.fresh("view"), self.fresh("j")
            out.append(assign(v, copy.deepcopy(it)))
            length = ast.Call(name("len"), [name(v)], [])
            out.append(assign(first, ast.Call(name(REDUCE_FIRST),
                                              [length, ast.Constant(kind)], [])))
            out.append(assign(t, ast.Subscript(name(v), name(first), ast.Load())))
            out.append(store(copy.deepcopy(elt)))
            out.append(ast.For(name(j, True),
                               ast.Call(name("range"), [ast.Constant(1), copy.deepcopy(length)],
                                        []),
                               [assign(t, ast.Subscript(name(v), name(j), ast.Load())),
                                assign(x, copy.deepcopy(elt)), better], []))
        return out

    def pairwise(self, r: str, n: str, item, zero) -> list:
        """``r = zero +`` the sum of ``item(j)`` for ``j < n`` in NumPy's order
        (``pairwise_sum`` of ``numpy/_core/src/umath/loops_utils.h.src``): fewer than 8
        items in order; up to 128 in eight running sums, added as ``((r0 + r1) + (r2 +
        r3)) + ((r4 + r5) + (r6 + r7))``, then the rest in order; more, split at ``8 * (n
        // 16)`` and the halves' sums added.  NumPy's recursion becomes a walk over its tree
        (a node found again from the root by the path's bits), each left half's pending sum
        in one of :data:`_PAIRWISE_DEPTH` names: a work-item has no stack.  A block of up to
        128 items is that walk's first and last leaf, not a branch of its own, and the
        pending sums take their type from one item: each copy of the item's expression is
        typed and compiled again (17 copies here, 59 before: Numba took 6.8 s instead of
        4.0 s to compile ``(a[lo:hi] * a[lo:hi]).sum()``'s recursion).  Integers add
        alike in any order; float sums come out bit for bit as NumPy's (its mean too, for
        which ``zero`` is 0.0: the items as float64).  Past ``2**26`` items, in order."""
        names = {k: self.fresh(k.lower()) for k in
                 ("D", "PATH", "LO", "SZ", "J", "I", "E", "X", "H", "K")}
        names["N"], names["R"] = n, r
        for k in range(8):
            names[f"A{k}"] = self.fresh(f"a{k}_")
        for k in range(1, _PAIRWISE_DEPTH + 1):
            names[f"P{k}"] = self.fresh(f"p{k}_")
        depth = range(1, _PAIRWISE_DEPTH + 1)
        blocks = {
            "init": [f"P{k} = X" for k in depth],
            "first": [f"A{k} = Z + ITEM(J)\nJ += 1" for k in range(8)],
            "more": [f"A{k} = A{k} + ITEM(J)\nJ += 1" for k in range(8)],
            "pop": ["if D == 1:\n    X = P1 + X"] + [f"elif D == {k}:\n    X = P{k} + X"
                                                    for k in depth if k > 1],
            "push": ["if D == 1:\n    P1 = X"] + [f"elif D == {k}:\n    P{k} = X"
                                                for k in depth if k > 1],
        }
        text = _PAIRWISE
        for key, lines in [("block", [_BLOCK]), *blocks.items()]:
            while "{" + key + "}" in text:      # each place at its own indentation
                at_ = text.index("{" + key + "}")
                pad = at_ - text.rindex("\n", 0, at_) - 1
                body = "\n".join(lines).replace("\n", "\n" + " " * pad)
                text = text[:at_] + body + text[at_ + len(key) + 2:]
        tree = ast.parse(text)

        class _Fill(ast.NodeTransformer):
            def visit_Call(self, c):
                if isinstance(c.func, ast.Name) and c.func.id == "ITEM":
                    return item(names["J"])
                return self.generic_visit(c)

            def visit_Name(self, m):
                if m.id == "Z":
                    return copy.deepcopy(zero)
                m.id = names.get(m.id, m.id)
                return m

        out = [_Fill().visit(st) for st in tree.body]
        for node in (n for st in out for n in ast.walk(st)):
            # every index here lies in [0, n): no wrapping of a negative one (a view's
            # index is otherwise tested for one, which kept LLVM from vectorising the loop)
            if isinstance(node, ast.Subscript) and names["J"] in {
                    x.id for x in ast.walk(node.slice) if isinstance(x, ast.Name)}:
                node.slice.hpu_nonneg = True
        return out

    def target(self, e) -> bool:
        return self.kind(e) is not None

    def build(self, e, pre: list):
        what, arr, start, each, other, pair = self.kind(e)
        text = ast.unparse(e)

        def at(node):
            for n in ast.walk(node):
                ast.copy_location(n, e)
                n.hpu_text = text             # messages name the reduction as written
            return node

        def name(n, store=False):
            return ast.Name(n, ast.Store() if store else ast.Load())

        def assign(n, value):
            return ast.Assign([name(n, True)], value)

        strides: dict = {}                    # a second array's views: (name, stride)

        def element(v, i):
            # i is a loop's index in [0, n) (or the first one's, 0): never negative, so no
            # wrapping of a negative index; a broadcast array (stride k = 0) reads element
            # 0 -- a choice, not a product, which the checks of the user's products would
            # take for one of theirs (each a call, costing compile time)
            k = strides.get(v)
            at_i = name(i) if k is None else ast.IfExp(name(k), name(i), ast.Constant(0))
            at_i.hpu_nonneg = True
            return ast.Subscript(name(v), at_i, ast.Load())

        def item(v, i):
            """Element ``i`` of the argument: of the array, or the element-wise expression
            with the arrays' elements in the arrays' places (a length-1 array broadcast)."""
            elem = element(v, i)
            if each is None:
                return elem
            key = ast.dump(arr)
            put = {key: elem}
            if other is not None:
                put[ast.dump(other)] = element(v2, i)

            class _Put(ast.NodeTransformer):
                def visit(self, n):
                    if isinstance(n, ast.expr) and ast.dump(n) in put:
                        return copy.deepcopy(put[ast.dump(n)])
                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                            and n.func.attr in _UFUNCS:        # np.abs(x) of one element
                        n.func = ast.Name(_UFUNCS[n.func.attr], ast.Load())
                    return super().visit(n)

            return _Put().visit(copy.deepcopy(each))

        stmts: list = []
        if what.startswith("flag"):
            pre.extend(at(st) for st in self.flag_minmax(what[4:], e))
            out = ast.copy_location(name(self.last), e)
            out.hpu_text = text
            return out
        if what.startswith("gen"):
            pre.extend(at(st) for st in self.generator(what[3:], arr, start))
            out = ast.copy_location(name(self.last), e)
            out.hpu_text = text
            return out
        def bound(x):
            if isinstance(x, ast.Name):
                return x.id
            w = self.fresh("view")             # a slice: bound once, a view of its array
            stmts.append(assign(w, copy.deepcopy(x)))
            return w

        v = bound(arr)
        length = ast.Call(name("len"), [name(v)], [])
        v2 = None
        if other is not None:                  # two arrays: NumPy's rule on their lengths
            v2 = bound(other)
            n = self.fresh("n")
            stmts.append(assign(n, ast.Call(name(REDUCE_PAIR), [
                copy.deepcopy(length), ast.Call(name("len"), [name(v2)], []),
                ast.Constant(pair)], [])))
            for w in (v, v2):                  # a length-1 array broadcast: stride 0
                k = self.fresh("s")
                strides[w] = k
                stmts.append(assign(k, ast.IfExp(
                    ast.Compare(ast.Call(name("len"), [name(w)], []), [ast.Eq()], [name(n)]),
                    ast.Constant(1), ast.Constant(0))))
            length = name(n)
        r, i = self.fresh(what), self.fresh("i")
        if what in ("npsum", "mean"):
            # NumPy's order: pairwise (a float sum's last bits are NumPy's own)
            n = self.fresh("n")
            stmts.append(assign(n, copy.deepcopy(length)))
            stmts.extend(self.pairwise(r, n, lambda j: item(v, j),
                                       ast.Constant(0.0 if what == "mean" else 0)))
            if what == "mean":                 # NumPy: nan (and a warning) when empty
                stmts.append(ast.If(
                    ast.Compare(name(n), [ast.Gt()], [ast.Constant(0)]),
                    [assign(r, ast.BinOp(name(r), ast.Div(), name(n)))],
                    [assign(r, ast.Constant(math.nan))]))
        elif what in ("sum", "prod", "mean"):
            init = copy.deepcopy(start) if start is not None else ast.Constant(
                {"sum": 0, "prod": 1, "mean": 0.0}[what])
            op = ast.Mult() if what == "prod" else ast.Add()
            stmts.append(assign(r, init))
            stmts.append(ast.For(name(i, True), ast.Call(name("range"), [length], []),
                                 [assign(r, ast.BinOp(name(r), op, item(v, i)))], []))
            if what == "mean":                 # NumPy: nan (and a warning) when empty
                stmts.append(ast.If(
                    ast.Compare(copy.deepcopy(length), [ast.Gt()], [ast.Constant(0)]),
                    [assign(r, ast.BinOp(name(r), ast.Div(), copy.deepcopy(length)))],
                    [assign(r, ast.Constant(math.nan))]))
        elif what in ("any", "all"):
            # the first element that decides it ends the loop; NaN is true, as in Python
            decided = ast.Compare(item(v, i), [ast.NotEq() if what == "any" else ast.Eq()],
                                  [ast.Constant(0)])
            stmts.append(assign(r, ast.Constant(what == "all")))
            stmts.append(ast.For(name(i, True), ast.Call(name("range"), [length], []),
                                 [ast.If(decided, [assign(r, ast.Constant(what == "any")),
                                                   ast.Break()], [])], []))
        else:
            kind = _KINDS[what]
            first, x = self.fresh("first"), self.fresh("x")
            best = self.fresh("m") if what.startswith("arg") else r
            stmts.append(assign(first, ast.Call(name(REDUCE_FIRST),
                                                [copy.deepcopy(length), ast.Constant(kind)],
                                                [])))
            stmts.append(assign(best, item(v, first)))
            if best != r:
                stmts.append(assign(r, name(first)))
            better = ast.Compare(name(x), [ast.Lt() if kind % 2 == 0 else ast.Gt()],
                                 [name(best)])
            if kind >= 2:                      # NumPy: a NaN anywhere is the result
                better = ast.BoolOp(ast.Or(), [better, ast.Compare(name(x), [ast.NotEq()],
                                                                   [name(x)])])
            if kind >= 4:                      # the first NaN's index: then nothing beats it
                better = ast.BoolOp(ast.And(), [ast.Compare(name(best), [ast.Eq()],
                                                            [name(best)]), better])
            found = [assign(best, name(x))] + ([assign(r, name(i))] if best != r else [])
            stmts.append(ast.For(name(i, True),
                                 ast.Call(name("range"), [ast.Constant(1), copy.deepcopy(length)],
                                          []),
                                 [assign(x, item(v, i)), ast.If(better, found, [])], []))
        pre.extend(at(s) for s in stmts)
        out = ast.copy_location(name(r), e)
        out.hpu_text = text
        return out



#: the deepest pending sum of :meth:`_Reductions.pairwise`: NumPy's tree over 2**26 items
#: is 20 levels deep (leaves of 64 to 128)
_PAIRWISE_DEPTH = 20

_PAIRWISE = """
R = Z
if N < 8 or N > 67108864:
    for I in range(N):
        J = I
        R = R + ITEM(J)
else:
    D = 0
    PATH = 0
    LO = 0
    SZ = N
    J = 0
    X = Z + ITEM(J)
    {init}
    while True:
        while SZ > 128:
            SZ = 8 * (SZ // 16)
            D += 1
            PATH = PATH * 2
        {block}
        while D > 0 and PATH % 2 == 1:
            {pop}
            PATH = PATH // 2
            D -= 1
        if D == 0:
            R = Z + X
            break
        {push}
        PATH = PATH + 1
        LO = 0
        SZ = N
        K = D - 1
        while K >= 0:
            H = 8 * (SZ // 16)
            if (PATH >> K) % 2 == 1:
                LO = LO + H
                SZ = SZ - H
            else:
                SZ = H
            K -= 1
"""

#: one block of 8 to 128 items, [LO, LO + SZ): eight running sums, then the rest in order
_BLOCK = """J = LO
{first}
I = 8
E = SZ - SZ % 8
while I < E:
    J = LO + I
    {more}
    I += 8
X = ((A0 + A1) + (A2 + A3)) + ((A4 + A5) + (A6 + A7))
while I < SZ:
    J = LO + I
    X = X + ITEM(J)
    I += 1"""


def _nested(gens, body: list) -> list:
    """``body`` inside the generator's loops: a ``for`` per comprehension, its ``if``s around
    what follows it."""
    for g in reversed(gens):
        for cond in reversed(g.ifs):
            body = [ast.If(cond, body, [])]
        body = [ast.For(g.target, g.iter, body, [])]
    return body


def reductions_as_loops(tree: ast.FunctionDef, glb: dict, arrays: set) -> list:
    """Rewrites ``tree``'s body in place (see the module); returns the reductions left in
    it, each evaluated only under a condition inside an expression (the caller refuses
    them).  ``arrays``: the names that are arrays in ``tree`` (a reduction of one of
    ``tree``'s parameters counts it as an array, an element-wise argument's other names are
    scalars); ``glb`` its globals (which names are NumPy, and builtins the module
    shadows)."""
    import numpy as np

    params = {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
    local = params | {n.id for n in ast.walk(tree)
                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    used = local | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    h = _Reductions(arrays, params, {k for k, v in glb.items() if v is np} - local, used)
    h.used_globals = frozenset(k for k in _BUILTINS if k in glb)
    h.local = frozenset(local)
    tree.body = h.block(tree.body)
    ast.fix_missing_locations(tree)
    return [n for n in ast.walk(tree) if isinstance(n, ast.expr) and h.target(n)]
