"""Scratch arrays allocated in an index-form recursion: carved from one buffer per site.

Why
===

The in-place mergesort most people write on index bounds allocates its merge buffer where it
merges::

    def msort(a, lo, hi):
        if hi - lo <= 1:
            return
        mid = (lo + hi) // 2
        msort(a, lo, mid)
        msort(a, mid, hi)
        tmp = np.empty(hi - lo, a.dtype)        # or a[lo:mid].copy(), np.zeros(mid - lo), ...
        ...                                     # merge a[lo:mid] and a[mid:hi] into tmp
        a[lo:hi] = tmp

A task cannot allocate (a work-item has no heap; the CPU's levels keep no per-task arrays),
so such a function ran compiled as written on the CPU -- and, its merge loop being its own,
as one call on one core.  But its buffer needs no heap: it is as long as a part of the
task's range ``[lo, hi)``, and is dead before the task returns.  Sibling tasks have disjoint
ranges (the function relies on it already: it writes ``a[lo:hi]``), and a parent combines
only after its children are done.  So the allocation can be the task's part of a buffer as
long as the array, one per allocation site, allocated once when the run starts:
``tmp = hpu_scr0[lo:hi]`` -- a view, as hpu's views go (:mod:`hpu._views`) -- and the
function with the buffers as parameters is ordinary in-place code the breadth-first
machinery runs on every device.  :func:`rewrite_scratch` does that.

What is rewritten (else the function keeps its path, compiled as written)
-------------------------------------------------------------------------

* allocations in the function's own body, each ``name = <allocation>`` as a statement of
  the block that makes the recursive calls, after the last of them (so it is not alive
  while the children use the same buffer):
  ``np.empty(B - A[, dtype])``, ``np.zeros(B - A[, dtype])``, ``np.empty_like(x[A:B])``,
  ``np.zeros_like(x[A:B])``, ``x[A:B].copy()``, ``np.copy(x[A:B])`` -- zeros and copies are
  filled by a loop; the dtype is a parameter array's ``.dtype``, a NumPy type, or
  float64 as NumPy's default;
* ``A`` and ``B`` are the task's bounds ``lo``, ``hi`` (two int parameters) or a midpoint
  ``mid`` assigned once from ``(lo + hi) // 2``, ``lo + (hi - lo) // 2`` or ``(lo + hi) >> 1``,
  with ``A`` before ``B`` (``lo..hi``, ``lo..mid``, ``mid..hi``): inside the task's range;
* every recursive call passes the bounds ``(lo, mid)``, ``(mid, hi)``, ``(mid + 1, hi)``
  or ``(lo, mid - 1)``: inside the task's range, so no two tasks of a level share an element
  of a buffer;
* the allocated name is never reassigned, returned or passed to a recursive call.

The root's bounds are checked when the run starts (``0 <= lo <= hi <= len`` of the longest
array argument, the buffers' length); anything else runs the function as written.
"""
from __future__ import annotations

import ast
import copy
import inspect
from dataclasses import dataclass

import numpy as np

__all__ = ["rewrite_scratch", "ScratchForm", "NotScratch"]

PREFIX = "hpu_scr"


class NotScratch(Exception):
    """The function is not of the shape above (the message says what differs)."""


@dataclass(frozen=True)
class ScratchForm:
    """The rewritten function and how to make its buffers."""

    fn: object                          #: the function with the buffers as its last parameters
    params: tuple[str, ...]             #: the user's parameters
    bounds: tuple[str, str]             #: (lo, hi)
    dtypes: tuple[object, ...]          #: per buffer: a parameter's name (its dtype) or a dtype

    def buffers(self, bound: dict) -> tuple[np.ndarray, ...] | None:
        """The buffers for a call (``bound``: parameter -> value), or None where the root's
        bounds are not inside the arrays (the function then runs as written)."""
        arrays = [v for v in bound.values() if isinstance(v, np.ndarray) and v.ndim == 1]
        lo, hi = (bound.get(b) for b in self.bounds)
        if not arrays or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                 for v in (lo, hi)):
            return None
        n = max(v.size for v in arrays)
        if not 0 <= lo <= hi <= n:
            return None
        out = []
        for d in self.dtypes:
            dtype = bound[d].dtype if isinstance(d, str) else np.dtype(d)
            out.append(np.empty(n, dtype))
        return tuple(out)


def _np_call(e, nps, *names) -> bool:
    return (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute)
            and e.func.attr in names and isinstance(e.func.value, ast.Name)
            and e.func.value.id in nps)


def _is(e, name) -> bool:
    return isinstance(e, ast.Name) and e.id == name


def _midpoint(e, lo: str, hi: str) -> bool:
    """``(lo + hi) // 2``, ``(hi + lo) // 2``, ``lo + (hi - lo) // 2``, ``(lo + hi) >> 1``."""
    def two(x):
        return isinstance(x, ast.Constant) and x.value in (2,)

    def one(x):
        return isinstance(x, ast.Constant) and x.value == 1

    def sum_(x):
        return (isinstance(x, ast.BinOp) and isinstance(x.op, ast.Add)
                and {getattr(x.left, "id", None), getattr(x.right, "id", None)} == {lo, hi})

    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.FloorDiv) and two(e.right):
        return sum_(e.left)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.RShift) and one(e.right):
        return sum_(e.left)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add) and _is(e.left, lo):
        r = e.right
        return (isinstance(r, ast.BinOp) and isinstance(r.op, (ast.FloorDiv, ast.RShift))
                and (two(r.right) if isinstance(r.op, ast.FloorDiv) else one(r.right))
                and isinstance(r.left, ast.BinOp) and isinstance(r.left.op, ast.Sub)
                and _is(r.left.left, hi) and _is(r.left.right, lo))
    return False


def _self_calls(tree, name):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _is(n.func, name)]


def _stored(tree) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out[n.id] = out.get(n.id, 0) + 1
    return out


class _Site:
    def __init__(self, stmt, name, kind, lo, hi, dtype, source=None):
        self.stmt, self.name, self.kind = stmt, name, kind
        self.lo, self.hi, self.dtype, self.source = lo, hi, dtype, source


def rewrite_scratch(fn, nps: set) -> ScratchForm:
    """The scratch form of ``fn`` (module docstring), or :class:`NotScratch`."""
    from hpu._functional_dps import _function, _tree

    try:
        node, text, start = _tree(fn)
    except Exception:  # noqa: BLE001 - no source: not this form
        raise NotScratch("its source cannot be read") from None
    name = node.name
    params = [a.arg for a in node.args.args]
    if node.args.vararg or node.args.kwarg or node.args.kwonlyargs or node.args.defaults:
        raise NotScratch("it takes other parameters than plain positional ones")
    if any(p.startswith("hpu_") for p in _stored(node)) or any(p.startswith("hpu_")
                                                             for p in params):
        raise NotScratch("it uses names starting hpu_")
    calls = _self_calls(node, name)
    if not calls or any(c.keywords or len(c.args) != len(params) for c in calls):
        raise NotScratch("its recursive calls do not pass every parameter by position")

    # the block holding the calls (as statements of their own), and its allocations
    simple = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)

    def find_block(stmts):
        """``(block, index of its last statement with a call)``: the block whose statements
        make every recursive call in their own expressions."""
        idx = [i for i, s in enumerate(stmts) if _self_calls(s, name)]
        if not idx:
            return None
        if all(isinstance(stmts[i], simple) for i in idx):
            return stmts, idx[-1]
        if len(idx) != 1:
            return None
        s = stmts[idx[0]]
        if not isinstance(s, ast.If) or _self_calls(s.test, name):
            return None
        parts = [b for b in (s.body, s.orelse) if any(_self_calls(x, name) for x in b)]
        return find_block(parts[0]) if len(parts) == 1 else None

    found = find_block(node.body)
    if found is None:
        raise NotScratch("its recursive calls are not statements of one block")
    block, last = found
    stores = _stored(node)
    sites: list[_Site] = []
    for i, s in enumerate(block):
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name)):
            continue
        site = _allocation(s, nps)
        if site is None:
            continue
        if i <= last:
            raise NotScratch(f"it allocates `{s.targets[0].id}` (line {s.lineno}) before its "
                             "last recursive call")
        sites.append(site)
    if not sites:
        raise NotScratch("it allocates nothing this form carves")
    # every allocation of the function is one of these sites
    from hpu._functional import _allocation_in

    rest = copy.deepcopy(node)
    site_lines = {(s.stmt.lineno, s.stmt.col_offset) for s in sites}
    for n in ast.walk(rest):
        for field in ("body", "orelse"):
            inner = getattr(n, field, None)
            if isinstance(inner, list):
                setattr(n, field, [x for x in inner if (getattr(x, "lineno", None),
                                                        getattr(x, "col_offset", None))
                                   not in site_lines])
    if _allocation_in(rest, fn.__globals__) is not None:
        raise NotScratch("it allocates elsewhere too")

    # the bounds: the int parameters the sites' extents use
    for site in sites:
        if site.lo is None:
            raise NotScratch(f"`{site.name}` (line {site.stmt.lineno}) is not sized by a part "
                             f"of its range: `{ast.unparse(site.stmt.value)}`")
    names = {s.lo for s in sites} | {s.hi for s in sites}
    bound_params = [p for p in params if p in names]
    mids = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0],
                                                                             ast.Name):
            mids.setdefault(n.targets[0].id, []).append(n.value)
    los = {s.lo for s in sites if s.lo in params}
    his = {s.hi for s in sites if s.hi in params}
    lo = next(iter(los)) if len(los) == 1 else None
    hi = next(iter(his)) if len(his) == 1 else None
    if (lo is None) != (hi is None):
        # lo..mid or mid..hi only: the other parameter from the midpoint
        for m, values in mids.items():
            if m in names and len(values) == 1 and stores.get(m) == 1:
                for p in params:
                    if lo is None and p != hi and _midpoint(values[0], p, hi):
                        lo = p
                    elif hi is None and p != lo and _midpoint(values[0], lo, p):
                        hi = p
    if lo is None or hi is None or lo == hi or stores.get(lo) or stores.get(hi):
        raise NotScratch("its allocations are not sized from two bounds it never reassigns")
    mid_names = {m for m, v in mids.items() if len(v) == 1 and stores.get(m) == 1
                 and _midpoint(v[0], lo, hi)}
    order = {lo: 0, hi: 2, **{m: 1 for m in mid_names}}
    for site in sites:
        if site.lo not in order or site.hi not in order or order[site.lo] >= order[site.hi]:
            raise NotScratch(f"`{site.name}` (line {site.stmt.lineno}) is not sized by a part "
                             f"of [{lo}, {hi}) (lo..hi, lo..mid or mid..hi)")
        if stores.get(site.name) != 1:
            raise NotScratch(f"`{site.name}` is assigned again")
    del bound_params
    ilo, ihi = params.index(lo), params.index(hi)

    def part(x, allowed):
        if isinstance(x, ast.Name):
            return x.id in allowed
        return (isinstance(x, ast.BinOp) and isinstance(x.op, (ast.Add, ast.Sub))
                and isinstance(x.left, ast.Name) and x.left.id in mid_names
                and isinstance(x.right, ast.Constant) and x.right.value == 1)

    for c in calls:
        clo, chi = c.args[ilo], c.args[ihi]
        ok_lo = part(clo, {lo} | mid_names) and not (
            isinstance(clo, ast.BinOp) and isinstance(clo.op, ast.Sub))
        ok_hi = (isinstance(chi, ast.Name) and chi.id in {hi} | mid_names) or (
            isinstance(chi, ast.BinOp) and isinstance(chi.op, ast.Sub) and part(chi, mid_names))
        if not (ok_lo and ok_hi) or ast.dump(clo) == ast.dump(chi):
            raise NotScratch(f"a recursive call's bounds (line {c.lineno}) are not a part of "
                             f"[{lo}, {hi})")
        for k, p in enumerate(params):
            if k not in (ilo, ihi) and not _is(c.args[k], p):
                raise NotScratch(f"a recursive call (line {c.lineno}) passes {p} changed")
    for n in ast.walk(node):
        if isinstance(n, ast.Return) and n.value is not None and any(
                _is(x, s.name) for s in sites for x in ast.walk(n.value)):
            raise NotScratch("it returns an allocated array")

    # the rewrite
    new = copy.deepcopy(node)
    bufs = [f"{PREFIX}{k}" for k in range(len(sites))]
    new.args.args = new.args.args + [ast.arg(b) for b in bufs]
    by_line = {(s.stmt.lineno, s.stmt.col_offset): (k, s) for k, s in enumerate(sites)}

    def replace(stmts):
        out = []
        for st in stmts:
            hit = by_line.get((getattr(st, "lineno", None), getattr(st, "col_offset", None)))
            if hit is not None and isinstance(st, ast.Assign):
                k, s = hit
                src = f"{s.name} = {bufs[k]}[{s.lo}:{s.hi}]\n"
                if s.kind == "zeros":
                    src += (f"for hpu_i in range({s.hi} - {s.lo}):\n"
                            f"    {s.name}[hpu_i] = 0\n")
                elif s.kind == "copy":
                    src += (f"for hpu_i in range({s.hi} - {s.lo}):\n"
                            f"    {s.name}[hpu_i] = {s.source}[{s.lo} + hpu_i]\n")
                for x in ast.parse(src).body:
                    for m in ast.walk(x):
                        ast.copy_location(m, st)
                    out.append(x)
                continue
            for field in ("body", "orelse"):
                inner = getattr(st, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(st, field, replace(inner))
            out.append(st)
        return out

    new.body = replace(new.body)
    for c in _self_calls(new, name):
        c.args = c.args + [ast.Name(b, ast.Load()) for b in bufs]
    ast.fix_missing_locations(new)
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    glb = dict(fn.__globals__)
    made = _function(new, glb, filename)
    made.__hpu_tree__ = (new, filename, text, start)
    glb[name] = made
    dtypes = tuple(s.dtype for s in sites)
    for d in dtypes:
        if not isinstance(d, str) or d not in params:
            if isinstance(d, str):
                raise NotScratch(f"a buffer's dtype `{d}` is not known")
    return ScratchForm(fn=made, params=tuple(params), bounds=(lo, hi), dtypes=dtypes)


def _dtype_of(e, nps):
    """A parameter's name (``a.dtype``), a NumPy dtype (``np.int64``, ``float``), or a
    string that names what is not known."""
    if e is None:
        return np.float64
    if isinstance(e, ast.Attribute) and e.attr == "dtype" and isinstance(e.value, ast.Name):
        return e.value.id
    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id in nps:
        t = getattr(np, e.attr, None)
        if isinstance(t, type) and issubclass(t, np.generic):
            return t
    if isinstance(e, ast.Name) and e.id in ("float", "int"):
        return np.float64 if e.id == "float" else np.int64
    return ast.unparse(e)


def _extent(size):
    """``(A, B)`` of ``B - A`` (two names), else None."""
    if (isinstance(size, ast.BinOp) and isinstance(size.op, ast.Sub)
            and isinstance(size.left, ast.Name) and isinstance(size.right, ast.Name)):
        return size.right.id, size.left.id
    return None


def _slice_part(x):
    """``(array, A, B)`` of ``array[A:B]``, else None."""
    if (isinstance(x, ast.Subscript) and isinstance(x.value, ast.Name)
            and isinstance(x.slice, ast.Slice) and x.slice.step is None
            and isinstance(x.slice.lower, ast.Name) and isinstance(x.slice.upper, ast.Name)):
        return x.value.id, x.slice.lower.id, x.slice.upper.id
    return None


def _allocation(st: ast.Assign, nps) -> _Site | None:
    """The site of ``name = <allocation>`` (module docstring), or None."""
    e, target = st.value, st.targets[0].id
    if _np_call(e, nps, "empty", "zeros") and 1 <= len(e.args) <= 2:
        kw = {k.arg: k.value for k in e.keywords}
        if set(kw) - {"dtype"}:
            return None
        ext = _extent(e.args[0]) or (None, None)     # (checked by the caller: a reason)
        dtype = _dtype_of(e.args[1] if len(e.args) == 2 else kw.get("dtype"), nps)
        kind = "zeros" if e.func.attr == "zeros" else "empty"
        return _Site(st, target, kind, ext[0], ext[1], dtype)
    if _np_call(e, nps, "empty_like", "zeros_like", "copy") and len(e.args) == 1 \
            and not e.keywords:
        got = _slice_part(e.args[0])
        if got is None:
            return None
        kind = {"empty_like": "empty", "zeros_like": "zeros", "copy": "copy"}[e.func.attr]
        return _Site(st, target, kind, got[1], got[2], got[0], source=got[0])
    if (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "copy"
            and not e.args and not e.keywords):
        got = _slice_part(e.func.value)
        if got is None:
            return None
        return _Site(st, target, "copy", got[1], got[2], got[0], source=got[0])
    return None
