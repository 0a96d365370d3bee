"""Writes that the tasks of one level could make to the same element: run as one task.

Why
===

hpu runs a level's tasks side by side (Numba's threads, OpenCL work-items).  That is the
plain function's answer only when sibling tasks write disjoint elements -- mergesort's
``a[k]`` for ``k`` in its own ``[lo, hi)``.  A recursion that accumulates into one shared
element instead::

    def count(a, cnt, lo, hi):
        if hi - lo == 1:
            cnt[0] += 1                  # every leaf, the same element
            h[a[lo]] += 1                # a histogram: an element chosen by the data
            ...

is correct in Python, which makes one call at a time, and silently wrong side by side: two
tasks read the element, both add one, one update is lost (measured: 114 575 leaves of
131 072 counted on two threads).  So such a function is found when it is decorated, and
each of its runs is one task (K = 0: the function compiled as written, depth first, on the
calling thread), which is exactly Python's order; the plan says so and why, and the run
warns once with the rewrite that runs in parallel (return the count and add the children's).

What counts as the task's own element
=====================================

A write ``arr[i] = ...`` (or ``+=``, or a slice ``arr[s:e] = ...``) into an array every task
is given unchanged (a parameter passed on as it is) is the task's own when its index is a
*position*: built by ``+``, ``-``, ``*`` from a parameter the calls change (``lo``, ``hi``, a
segment tree's ``node``), a midpoint (``(lo + hi) // 2``, ``>> 1``), ``min``/``max`` of
positions or of a position and the array's edge (``0``, ``len(a)``), or a local or loop
variable that only ever holds such a value (``k = lo; k += 1``, ``for k in range(lo, hi)``).
An index that is a constant (``cnt[0]``), made only of what every task sees alike
(``out[n - 1]``, ``len(a)``), read from the data (``h[a[lo]]``, ``v = a[lo]; h[v]``, a
helper's result), a position folded onto fewer elements (``lo // 64``, ``lo % 8``,
``min(lo, 5)``) or a width (``hi - lo``) is not.  In a leaf of one element (``if hi - lo ==
1``) the neighbours' positions ``lo - 1``, ``lo + 1`` are shared when written, or read in an
array the function writes (:func:`_neighbours`: a running sum over the leaves reads what
Python's order wrote first).  A write into a local array, or into a view
of the task's part (``v = a[lo:hi]``, a slice parameter), is always the task's own.
Helpers are followed: a helper's parameter is a position when every call passes one.

Sibling calls whose index ranges provably overlap (``f(a, lo, mid + 1)`` beside
``f(a, mid, hi)``) in a function that writes arrays count too (:func:`_overlapping_calls`).

The test is syntactic and errs one way only where it must: writes it cannot prove shared
(``out[lo + rank]`` with a data-dependent ``rank``) stay parallel, as before.
"""
from __future__ import annotations

import ast

__all__ = ["shared_writes", "shared_writes_of", "SharedWrite"]

POS, FIXED, DATA = "position", "fixed", "data"
_PURE = {"min", "max", "abs", "int", "range"}


class SharedWrite(tuple):
    """``(line, text, helper)``: where a write into a shared element is, as the user wrote
    it; ``helper`` is the helper's name or ``""`` for the function's own code."""

    __slots__ = ()

    @property
    def line(self) -> int:
        return self[0]

    @property
    def text(self) -> str:
        return self[1]

    @property
    def helper(self) -> str:
        return self[2]


def _join(cats) -> str:
    cats = list(cats)
    if POS in cats:
        return POS
    return DATA if DATA in cats else FIXED


class _Function:
    """The categories of one function's names, given its parameters'."""

    def __init__(self, tree: ast.FunctionDef, params: dict[str, str]):
        self.cat = dict(params)
        assigned: dict[str, list] = {}
        for n in ast.walk(tree):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    self._bind(t, n.value, assigned)
            elif isinstance(n, (ast.AnnAssign, ast.NamedExpr)) and n.value is not None \
                    and isinstance(n.target, ast.Name):
                assigned.setdefault(n.target.id, []).append(n.value)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                assigned.setdefault(n.target.id, []).append(
                    ast.BinOp(ast.Name(n.target.id, ast.Load()), n.op, n.value))
            elif isinstance(n, (ast.For, ast.comprehension)):
                it = n.iter
                if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                        and it.func.id == "range" and isinstance(n.target, ast.Name)):
                    # its values lie between its start and its stop: a step (2 * m, a
                    # width) says how far apart they are, not whose they are
                    assigned.setdefault(n.target.id, []).append(
                        ast.Call(ast.Name("min", ast.Load()), list(it.args[:2]), []))
                else:
                    for t in ast.walk(n.target):
                        if isinstance(t, ast.Name):
                            assigned.setdefault(t.id, []).append(None)     # data
        locals_ = set(assigned) - set(params)
        for name in locals_:
            self.cat[name] = POS        # optimistic; lowered to the fixed point below
        changed = True
        while changed:
            changed = False
            for name in locals_:
                values = assigned[name]
                cats = [DATA if v is None else self.of(v) for v in values]
                new = POS if all(c == POS for c in cats) else (
                    DATA if DATA in cats else FIXED)
                if new != self.cat[name]:
                    self.cat[name] = new
                    changed = True

    @staticmethod
    def _bind(t, value, assigned):
        if isinstance(t, ast.Name):
            assigned.setdefault(t.id, []).append(value)
        elif isinstance(t, (ast.Tuple, ast.List)):
            vals = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(
                value.elts) == len(t.elts) else [None] * len(t.elts)
            for sub, v in zip(t.elts, vals):
                _Function._bind(sub, v, assigned)
        elif isinstance(t, ast.Starred):
            _Function._bind(t.value, None, assigned)

    def of(self, e) -> str:
        """The category of the integer expression ``e``."""
        if isinstance(e, ast.Constant):
            return FIXED
        if isinstance(e, ast.Name):
            return self.cat.get(e.id, FIXED)        # a module constant
        if isinstance(e, ast.UnaryOp):
            return self.of(e.operand)
        if isinstance(e, ast.BinOp):
            left, right = self.of(e.left), self.of(e.right)
            if DATA in (left, right):
                # (lo + rank, rank read from the data: kept the task's own, as it cannot
                # be shown shared -- see the module's last paragraph)
                return _join([left, right])
            if isinstance(e.op, (ast.FloorDiv, ast.RShift, ast.Mod, ast.BitAnd)):
                # a position halved, shifted or reduced is many tasks' (lo // 64, lo % 8),
                # except a midpoint: (lo + hi) // 2, (lo + hi) >> 1
                mid = (isinstance(e.op, (ast.FloorDiv, ast.RShift))
                       and isinstance(e.left, ast.BinOp) and isinstance(e.left.op, ast.Add)
                       and self.of(e.left.left) == POS and self.of(e.left.right) == POS)
                return POS if mid else FIXED
            if isinstance(e.op, ast.Sub) and left == POS and right == POS:
                return FIXED            # a width (hi - lo): tasks of one size share it
            if isinstance(e.op, ast.Sub) and right == POS:
                # a mirror (len(a) - 1 - lo): another task's element, which that task
                # may read or write -- a reversal pairs them, other writes collide
                return FIXED
            # (a position plus, minus, times anything else is still one: mid - 1, 2 * node)
            return _join([left, right])
        if isinstance(e, ast.IfExp):
            return _join([self.of(e.body), self.of(e.orelse)])
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name):
            if e.func.id == "len":
                return FIXED
            if e.func.id in ("min", "max") and e.args:
                # min(lo, 5) clamps many tasks to one element: a position only when every
                # operand is one (min(hi, lo + 16)) or the array's own edge (0, len(a):
                # a slice's bounds clamped, which every task's positions lie within)
                cats = [self.of(x) for x in e.args if not _edge(x)] or [FIXED]
                return (DATA if DATA in cats else POS if all(c == POS for c in cats)
                        else FIXED)
            if e.func.id in _PURE and e.args:
                return _join(self.of(x) for x in e.args)
            return DATA
        if isinstance(e, ast.Attribute) and e.attr in ("size", "shape"):
            return FIXED
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Attribute) \
                and e.value.attr == "shape":
            return FIXED
        return DATA

    def index(self, sl) -> str:
        if isinstance(sl, ast.Slice):
            return POS if sl.lower is not None and self.of(sl.lower) == POS else FIXED
        if isinstance(sl, ast.Tuple):
            return _join(self.index(x) for x in sl.elts)
        return self.of(sl)


def _edge(e) -> bool:
    """``0``, ``len(a)``, ``a.size``, ``a.shape[0]``, or ``len(a) - 1``: an end of an array."""
    if isinstance(e, ast.Constant) and e.value == 0 and type(e.value) is int:
        return True
    if (isinstance(e, ast.BinOp) and isinstance(e.op, ast.Sub)
            and isinstance(e.right, ast.Constant) and e.right.value == 1):
        e = e.left
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "len":
        return True
    if isinstance(e, ast.Attribute) and e.attr == "size":
        return True
    return (isinstance(e, ast.Subscript) and isinstance(e.value, ast.Attribute)
            and e.value.attr == "shape")


def _targets(node):
    if isinstance(node, ast.Assign):
        return [t for x in node.targets for t in ast.walk(x) if isinstance(t, ast.Subscript)
                and isinstance(t.ctx, ast.Store)]
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript):
        return [node.target]
    return []


def shared_writes(spec, closure) -> tuple[SharedWrite, ...]:
    """Every write of the function (``spec``) and its helpers (``closure``) into an element
    that another task of the same level may write too (module docstring)."""
    helpers = {h.name: (h.tree, tuple(h.params), h.display) for h in closure.helpers
               if h.tree is not None}
    viewed = {v[0] for v in spec.views}
    shared = {p for p in spec.passthrough if p not in viewed}
    cats = {p: (FIXED if p in spec.passthrough else POS) for p in spec.params}
    cats.update({p: POS for p in viewed})
    found = _scan(spec.name, spec.tree, cats, shared, helpers)
    if closure.written:
        found = tuple(sorted(found + _overlapping_calls(spec)
                             + _neighbours(spec, shared, set(closure.written))))
    return found


def _width_one(test, lo: str, hi: str):
    """``"open"`` where ``test`` says the task holds one element of a half-open range
    (``hi - lo == 1``, ``hi - lo <= 1``, ``hi - lo < 2``, ``hi == lo + 1``, either way
    round), ``"closed"`` of a closed one (``lo == hi``), else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    a, op, b = test.left, test.ops[0], test.comparators[0]
    text = {ast.unparse(a), ast.unparse(b)}

    def const(x, *vals):
        return isinstance(x, ast.Constant) and type(x.value) is int and x.value in vals

    width = f"{hi} - {lo}"
    if isinstance(op, ast.Eq):
        if text == {lo, hi}:
            return "closed"
        if (ast.unparse(a) == width and const(b, 1)) or (ast.unparse(b) == width
                                                        and const(a, 1)):
            return "open"
        if text in ({hi, f"{lo} + 1"}, {f"{hi} - 1", lo}):
            return "open"
    if ast.unparse(a) == width and ((isinstance(op, ast.LtE) and const(b, 1))
                                   or (isinstance(op, ast.Lt) and const(b, 2))):
        return "open"
    return None


def _neighbours(spec, shared: set, written: set) -> tuple[SharedWrite, ...]:
    """In a leaf of one element (``if hi - lo == 1:``), an access of a shared array at
    another position than the task's own, ``lo + 1`` or ``lo - 1``: a write there is the
    neighbouring task's element; a read there of an array the function writes reads what
    the neighbour writes, which Python's order has written first (a running sum over the
    leaves, ``a[lo] += a[lo - 1]``) and side by side it may not have."""
    from hpu._scratch_form import _position

    tree, params = spec.tree, list(spec.params)
    stored = {x.id for n in ast.walk(tree) for x in ast.walk(n)
              if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store)}
    out = []
    arrays = {x for x in shared if not x.startswith("hpu_")}
    for i, lo in enumerate(params):
        for hi in params[i + 1:]:
            if lo in stored or hi in stored or lo in arrays or hi in arrays:
                continue
            for node in ast.walk(tree):
                if not isinstance(node, ast.If):
                    continue
                kind = _width_one(node.test, lo, hi)
                if kind is None:
                    continue
                own = {(lo, 0), (hi, 0) if kind == "closed" else (hi, -1)}
                for st in node.body:
                    for x in ast.walk(st):
                        if not (isinstance(x, ast.Subscript) and isinstance(x.value, ast.Name)
                                and x.value.id in arrays):
                            continue
                        pos = _position(x.slice)
                        if pos is None or pos[0] not in (lo, hi) or pos in own:
                            continue
                        store = isinstance(x.ctx, ast.Store) or any(
                            isinstance(a, ast.AugAssign) and a.target is x
                            for a in ast.walk(st))
                        if store or x.value.id in written:
                            line = getattr(x, "lineno", node.lineno)
                            what = "writes" if store else "reads"
                            out.append(SharedWrite((line, f"{ast.unparse(x)} ({what} a "
                                                    "neighbouring task's element)", "")))
    keys, found = set(), []
    for w in out:
        if (w.line, w.text) not in keys:
            keys.add((w.line, w.text))
            found.append(w)
    return tuple(found)


def _overlapping_calls(spec) -> tuple[SharedWrite, ...]:
    """Sibling calls whose index ranges provably overlap (``f(a, lo, mid + 1)`` beside
    ``f(a, mid, hi)``) in a function that writes arrays: their tasks, side by side, write the
    elements both ranges hold.  The bounds are read as :mod:`hpu._scratch_form` reads them
    (two parameters, a midpoint assigned once, each +-1); anything else gives no verdict."""
    from hpu._scratch_form import _midpoint, _position

    tree, params = spec.tree, list(spec.params)
    assigned: dict[str, list] = {}

    def bound(t):
        """The names a target binds: not those read in a store's index (`a[lo] = v`
        assigns no `lo`, which made the overlap go unseen)."""
        if isinstance(t, ast.Name):
            yield t
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                yield from bound(e)
        elif isinstance(t, ast.Starred):
            yield from bound(t.value)

    for n in ast.walk(tree):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                for x in bound(t):
                    assigned.setdefault(x.id, []).append(n.value)
        elif isinstance(n, (ast.AugAssign, ast.For)) and isinstance(
                getattr(n, "target", None), ast.Name):
            assigned.setdefault(n.target.id, []).append(None)
    calls = spec.calls
    for i, lo in enumerate(params):
        # lo before hi in the signature (f(a, lo, hi), CLRS's f(A, p, r)): a midpoint
        # (lo + hi) // 2 reads the same either way round, and read the other way round
        # CLRS's apart calls (p, q), (q + 1, r) would seem to overlap
        for hi in params[i + 1:]:
            if lo in assigned or hi in assigned:
                continue
            mids = {m for m, v in assigned.items() if len(v) == 1 and v[0] is not None
                    and _midpoint(v[0], lo, hi)}
            if not mids:
                continue
            base = {lo: 0, hi: 4, **{m: 2 for m in mids}}
            ilo, ihi = params.index(lo), params.index(hi)
            parts = []
            for c in calls:
                pl, ph = _position(c.args[ilo]), _position(c.args[ihi])
                if pl is None or ph is None or pl[0] not in base or ph[0] not in base:
                    break
                parts.append((base[pl[0]] + pl[1], base[ph[0]] + ph[1], c))
            else:
                parts.sort(key=lambda t: (t[0], t[1]))
                for a_, b_ in zip(parts, parts[1:]):
                    if a_[1] > b_[0] and a_[0] < a_[1] and b_[0] < b_[1]:
                        text = (f"{spec.name}({', '.join(ast.unparse(x) for x in a_[2].args)}) "
                                f"and {spec.name}({', '.join(ast.unparse(x) for x in b_[2].args)})"
                                " overlap")
                        return (SharedWrite((b_[2].lineno, text, "")),)
                half_open = len(parts) > 1 and all(a_[1] == b_[0] for a_, b_ in
                                                   zip(parts, parts[1:]))
                if half_open and parts[0][0] == 0 and parts[-1][1] == 4:
                    # the children cover [lo, hi): a write at hi (or past it), or before
                    # lo, is the next (previous) task's element -- a task of this level,
                    # or of a subtree that runs beside it
                    for node in ast.walk(tree):
                        for t in _targets(node):
                            at = _position(t.slice)
                            if at is not None and ((at[0] == hi and at[1] >= 0)
                                                   or (at[0] == lo and at[1] < 0)):
                                return (SharedWrite((node.lineno, (
                                    f"`{ast.unparse(node).splitlines()[0]}` writes outside "
                                    f"the task's range [{lo}, {hi}) (its calls cover "
                                    f"exactly it): the neighbouring task's element"), "")),)
    return ()


def shared_writes_of(fn) -> tuple[SharedWrite, ...]:
    """:func:`shared_writes` of a functional function (:mod:`hpu._functional`: compiled as
    written and fanned out over the cores), read from its source: an array every recursive
    call passes on as it is (``f(a[:m], calls)``) is shared; a slice of one is the task's."""
    from hpu._functional import _trees

    found = list(_trees(fn))
    if not found:
        return ()
    _, tree = found[0]
    name = tree.name
    params = [x.arg for x in tree.args.args]
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id == name]
    if not calls:
        return ()
    shared, cats = set(), {}
    for k, p in enumerate(params):
        passed = []
        for c in calls:
            given = {kw.arg: kw.value for kw in c.keywords}
            passed.append(c.args[k] if k < len(c.args) else given.get(p))
        same = all(isinstance(e, ast.Name) and e.id == p for e in passed)
        if same:
            shared.add(p)
        cats[p] = FIXED if same else POS
    helpers = {}
    for f, t in found[1:]:
        helpers.setdefault(t.name, (t, tuple(x.arg for x in t.args.args), t.name))
    return _scan(name, tree, cats, shared, helpers)


def _scan(name, tree, cats, shared, helpers) -> tuple[SharedWrite, ...]:
    """The shared writes of ``tree`` (its names' categories from ``cats``; ``shared``: its
    arrays every task is given alike) and of the helpers it calls, followed with the
    categories of their arguments."""
    # hpu's own arrays (the in-place forms' flag, hpu._functional_dps.ARENA): a task that
    # sets the flag stores a constant any task may store, read after the level
    shared = {x for x in shared if not x.startswith("hpu_")}
    todo = [(name, tree, cats, set(shared), "")]
    seen: set = set()
    found: list[SharedWrite] = []
    while todo:
        fname, t, cats, shared, shown = todo.pop()
        key = (fname, tuple(sorted(cats.items())), tuple(sorted(shared)))
        if key in seen:
            continue
        seen.add(key)
        fn = _Function(t, cats)
        for node in ast.walk(t):
            for tgt in _targets(node):
                if isinstance(tgt.value, ast.Name) and tgt.value.id in shared \
                        and fn.index(tgt.slice) != POS:
                    found.append(SharedWrite((getattr(node, "lineno", 0),
                                              ast.unparse(node).splitlines()[0], shown)))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in helpers and node.func.id != name:
                htree, hparams, display = helpers[node.func.id]
                hp, hs = {}, set()
                for k, p in enumerate(hparams):
                    arg = node.args[k] if k < len(node.args) else None
                    if isinstance(arg, ast.Name) and arg.id in shared \
                            and not p.startswith("hpu_"):
                        hs.add(p)
                    hp[p] = FIXED if arg is None else fn.of(arg)
                todo.append((node.func.id, htree, hp, hs, display))
    out, keys = [], set()
    for w in found:
        if (w.line, w.text) not in keys:
            keys.add((w.line, w.text))
            out.append(w)
    return tuple(sorted(out))
