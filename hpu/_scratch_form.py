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
  while the children use the same buffer), or at the top level of a helper that block
  calls once (a helper returns before the children run, or runs after them):
  ``np.empty(B - A[, dtype])``, ``np.zeros(B - A[, dtype])``, ``np.empty_like(x[A:B])``,
  ``np.zeros_like(x[A:B])``, ``x[A:B].copy()``, ``np.copy(x[A:B])`` -- zeros and copies are
  filled by a loop; the dtype is a parameter array's ``.dtype``, a NumPy type, or
  float64 as NumPy's default;
* ``A`` and ``B`` are the task's bounds ``lo``, ``hi`` (two int parameters) or a midpoint
  ``mid`` assigned once from ``(lo + hi) // 2``, ``lo + (hi - lo) // 2`` or ``(lo + hi) >> 1``,
  each possibly ``+ 1`` or ``- 1``, with ``A`` before ``B`` (``lo..hi``, ``lo..mid``,
  ``mid..hi``): inside the task's part;
* every recursive call passes bounds of that kind inside ``[lo, hi]``, and no two calls'
  overlap, so no two tasks of a level share an element of a buffer.  Where the calls are
  apart by one more element (``(lo, mid)`` and ``(mid + 1, hi)``: CLRS's closed ranges,
  ``merge_sort(A, 0, len(A) - 1)``), a task's part is ``[lo, hi + 1)`` (``A[q + 1:r + 1]``);
* the allocated name is never reassigned, returned or passed to a recursive call;
* a size named first may have a small constant added (``np.empty(n1 + 1)``: CLRS's sentinel
  slot) where the part is as long as a recursive call's: the buffer's slots are then
  ``1 + c`` wide, the part ``[A, B)`` at ``[(1 + c) A, (1 + c) A + B - A + c)``, inside the
  part's own slots because a call's part is never empty where the merge runs (a task that
  reached its calls with an empty one would call itself with the same bounds forever);
* a size may be a name assigned once from such a difference (``n1 = m - l + 1``), and a
  list of zeros is an allocation too, ``L = [0] * n1``, where every value stored into it is
  read from one parameter array (``L[i] = arr[l + i]``: its dtype) and it is used only as
  ``L[i]`` and ``len(L)`` (:func:`hpu._list_kinds.element_source`): the tutorials' merge
  on closed ranges.  Python checks a list's indices, so such a form checks every index
  (``ScratchForm.lists``).

The root's bounds are checked when the run starts (``0 <= lo <= hi <= len`` of the longest
array argument, the buffers' length); anything else runs the function as written.
"""
from __future__ import annotations

import ast
import copy
import inspect
from dataclasses import dataclass

import numpy as np

from hpu._functional import _allocation_in
from hpu._functional_dps import _fresh, _function, _is_name, _self_calls, _tree
from hpu._functional_partition import _np_call

__all__ = ["rewrite_scratch", "ScratchForm", "NotScratch", "predicted_peak"]

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
    #: 1 where a task's part is [lo, hi + 1) (calls on (lo, mid) and (mid + 1, hi)), else 0
    extra: int = 0
    #: a buffer stands for a Python list (``[0] * n``): its indices are checked, as Python
    #: checks a list's
    lists: bool = False
    #: per buffer, the elements each allocation has beyond its part (CLRS's sentinel slot,
    #: ``np.empty(n1 + 1)``): its part ``[A, B)`` is then ``[(1 + pad) A, ... + B - A + pad)``
    pads: tuple[int, ...] = ()

    def buffers(self, bound: dict) -> tuple[np.ndarray, ...] | None:
        """The buffers for a call (``bound``: parameter -> value), or None where the root's
        bounds are not inside the arrays (the function then runs as written)."""
        arrays = [v for v in bound.values() if isinstance(v, np.ndarray) and v.ndim == 1]
        lo, hi = (bound.get(b) for b in self.bounds)
        if not arrays or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                 for v in (lo, hi)):
            return None
        n = max(v.size for v in arrays)
        if not 0 <= lo <= hi + self.extra <= n:
            return None
        out = []
        for k, d in enumerate(self.dtypes):
            dtype = bound[d].dtype if isinstance(d, str) else np.dtype(d)
            pad = self.pads[k] if self.pads else 0
            out.append(np.empty((1 + pad) * n + pad, dtype))
        return tuple(out)


def predicted_peak(plan, program, values: dict, dead: frozenset, *, keep: bool,
                   unified: bool) -> tuple[int, str]:
    """``(bytes, basis)``: the host memory a run of the scratch form allocates at its peak,
    for ``plan`` (a ``hpu.model.Plan``) on ``values`` (the form's arguments, its buffers
    among them: ``dead``).  Every array such a run allocates is hpu's own, and its size is
    known before the run: so this is a sum, not a probe (the function has int bounds
    beside its array, which a prefix probe would have to guess):

    * the buffers, one per allocation site;
    * the call's snapshot of the arrays the function writes (``keep_inputs``; only the
      ``span``'s part), :mod:`hpu._snapshot`, which leaves the buffers out;
    * where the plan uses a device (:mod:`hpu._opencl._backend`): without the snapshot, a
      copy of the written arrays, whole without a span, and with one the device's share of
      the span on a device that works in the caller's arrays (nothing on one with its own
      memory); without a span, on a device with its own memory, the download's copy of the
      largest written array and its mask of changed elements.

    Left out: the level arrays (a few int64s per task down to the cut-off: kilobytes)."""
    written = [values[n] for n in program.layout.arrays
               if n in program.closure.written and n not in dead
               and isinstance(values.get(n), np.ndarray)]
    span = program.spec.span
    lo, hi = (int(values[span[0]]), int(values[span[1]])) if span is not None else (0, 0)

    def part(arr):
        return arr.nbytes if span is None else max(0, min(hi, arr.size) - max(lo, 0)) * \
            arr.itemsize

    buffers = sum(values[n].nbytes for n in dead if isinstance(values.get(n), np.ndarray))
    snapshot = sum(part(w) for w in written) if keep else 0
    device = 0
    if plan.uses_device and written:
        y = plan.transfer_level
        cpu, dev = plan.tasks[y] if y is not None and y < len(plan.tasks) else (0, 1)
        share = dev / (cpu + dev) if cpu + dev else 1.0
        if not keep and span is None:       # whole arrays, on either kind of device
            device += sum(w.nbytes for w in written)
        elif not keep and unified:          # the device's share of the span
            device += int(share * sum(part(w) for w in written))
        if not unified and span is None:
            device += max(w.nbytes + w.size for w in written)
    total = buffers + snapshot + device
    mb = 1e6
    basis = (f"computed: hpu's scratch buffers {buffers / mb:.3g} MB (one per allocation "
             f"site), the call's snapshot {snapshot / mb:.3g} MB"
             + (f", the device's copies {device / mb:.3g} MB" if device else "")
             + "; the level arrays (kilobytes) left out")
    return total, basis


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
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add) and _is_name(e.left, lo):
        r = e.right
        return (isinstance(r, ast.BinOp) and isinstance(r.op, (ast.FloorDiv, ast.RShift))
                and (two(r.right) if isinstance(r.op, ast.FloorDiv) else one(r.right))
                and isinstance(r.left, ast.BinOp) and isinstance(r.left.op, ast.Sub)
                and _is_name(r.left.left, hi) and _is_name(r.left.right, lo))
    return False


def _stored(tree) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out[n.id] = out.get(n.id, 0) + 1
    return out


class _Site:
    """One allocation: ``name = <kind>`` of ``[lo, hi)`` (names in its function), the
    dtype (an array's name or a dtype), ``source`` for a copy; ``owner``: the helper it is
    in (None: the function itself)."""

    def __init__(self, stmt, name, kind, lo, hi, dtype, source=None):
        self.stmt, self.name, self.kind = stmt, name, kind
        self.lo, self.hi, self.dtype, self.source = lo, hi, dtype, source
        self.owner = None
        self.stores: dict = {}
        self.listed = False         #: a list of zeros (Python checks its indices)
        self.pad = 0                #: elements beyond its part (``np.empty(n1 + 1)``)

    def at(self, x):
        """The caller's name for ``x``, a name (or a position) in this site's function."""
        if isinstance(x, tuple):
            return self.at(x[0]), x[1]
        if self.owner is None or not isinstance(x, str):
            return x
        return self.owner.binds.get(x, f"<{x}>")


class _Helper:
    """A helper called from the calls' block that allocates: its tree, the one call, and
    which of the caller's names each of its parameters receives."""

    def __init__(self, fn, tree, text, start, call, binds):
        self.fn, self.tree, self.text, self.start = fn, tree, text, start
        self.call, self.binds = call, binds


def _helper_sites(block, name, fn, nps, sites) -> list:
    """The helpers the calls' block calls that allocate: their sites appended to ``sites``
    (each bound to its helper), the helpers returned.  A helper that allocates anywhere
    else (in a loop, in a helper of its own), or is called more than once, is not this
    form."""
    import types

    out = []
    seen = {}
    for st in block:
        for c in ast.walk(st):
            if not (isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                    and c.func.id != name):
                continue
            h = fn.__globals__.get(c.func.id)
            if not isinstance(h, types.FunctionType):
                continue
            try:
                tree, text, start = _tree(h)
            except Exception:  # noqa: BLE001 - no source: Numba's business as written
                continue
            if _allocation_in(tree, h.__globals__) is None:
                continue
            if c.func.id in seen:
                raise NotScratch(f"its helper {c.func.id}() allocates and is called twice")
            hparams = [a.arg for a in tree.args.args]
            if (c.keywords or len(c.args) != len(hparams) or tree.args.vararg
                    or tree.args.defaults or tree.args.kwonlyargs):
                raise NotScratch(f"its helper {c.func.id}() allocates and is not called with "
                                 "every parameter by position")
            binds = {p: a.id for p, a in zip(hparams, c.args) if isinstance(a, ast.Name)}
            helper = _Helper(h, tree, text, start, c, binds)
            mine = []
            for s in tree.body:
                if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(
                        s.targets[0], ast.Name):
                    site = _allocation(s, nps, tree)
                    if site is not None:
                        site.owner, site.stores = helper, _stored(tree)
                        mine.append(site)
            rest = copy.deepcopy(tree)
            keep = {(s.stmt.lineno, s.stmt.col_offset) for s in mine}
            rest.body = [x for x in rest.body if (x.lineno, x.col_offset) not in keep]
            if not mine or _allocation_in(rest, h.__globals__) is not None:
                raise NotScratch(f"its helper {c.func.id}() allocates other than at its top "
                                 "level")
            used = {x for s in mine for x in (s.lo and s.lo[0], s.hi and s.hi[0], s.source)
                    if x is not None}
            if used & set(_stored(tree)):
                raise NotScratch(f"its helper {c.func.id}() assigns "
                                 f"{sorted(used & set(_stored(tree)))[0]!r}, which sizes its "
                                 "allocation")
            seen[c.func.id] = helper
            sites.extend(mine)
            out.append(helper)
    return out


def rewrite_scratch(fn, nps: set) -> ScratchForm:
    """The scratch form of ``fn`` (module docstring), or :class:`NotScratch`."""
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
        site = _allocation(s, nps, node)
        if site is None:
            continue
        if i <= last:
            raise NotScratch(f"it allocates `{s.targets[0].id}` (line {s.lineno}) before its "
                             "last recursive call")
        sites.append(site)
    helpers = _helper_sites(block, name, fn, nps, sites)
    if not sites:
        raise NotScratch("it allocates nothing this form carves")
    # every allocation of the function is one of these sites
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
    names = {s.at(s.lo)[0] for s in sites} | {s.at(s.hi)[0] for s in sites}
    mids = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0],
                                                                             ast.Name):
            mids.setdefault(n.targets[0].id, []).append(n.value)
    los = {s.at(s.lo)[0] for s in sites if s.at(s.lo)[0] in params}
    his = {s.at(s.hi)[0] for s in sites if s.at(s.hi)[0] in params}
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
    base = {lo: 0, hi: 4, **{m: 2 for m in mid_names}}
    ilo, ihi = params.index(lo), params.index(hi)

    def value(pos):
        """A position's place: lo 0, a midpoint 2, hi 4, each +-1 (None: not one of them)."""
        return None if pos is None or pos[0] not in base else base[pos[0]] + pos[1]

    # the calls' parts of [lo, hi): inside it, and apart from each other -- by one element
    # more where the calls leave the midpoint to one side (`(lo, mid)`, `(mid + 1, hi)`: the
    # closed ranges of `f(a, 0, len(a) - 1)`), so that [lo, hi + 1) is the task's part then
    parts = []
    call_ends = []      # each call's (lo, hi) positions

    def shape(lo_pos, hi_pos):
        return ((base[lo_pos[0]], lo_pos[1]), (base[hi_pos[0]], hi_pos[1]))

    for c in calls:
        vlo, vhi = value(_position(c.args[ilo])), value(_position(c.args[ihi]))
        if vlo is None or vhi is None or not 0 <= vlo <= vhi <= 4:
            raise NotScratch(f"a recursive call's bounds (line {c.lineno}) are not a part of "
                             f"[{lo}, {hi})")
        for k, p in enumerate(params):
            if k not in (ilo, ihi) and not _is_name(c.args[k], p):
                raise NotScratch(f"a recursive call (line {c.lineno}) passes {p} changed")
        parts.append((vlo, vhi, c.lineno))
        call_ends.append((_position(c.args[ilo]), _position(c.args[ihi])))
    parts.sort()
    if any(a_[1] > b_[0] for a_, b_ in zip(parts, parts[1:])):
        raise NotScratch(f"its recursive calls' bounds overlap (line {parts[-1][2]}): "
                         f"tasks of one level would share a buffer's elements")
    ext = int(all(a_[1] + 1 <= b_[0] for a_, b_ in zip(parts, parts[1:])))
    # each call's part as ((base, offset), (base, offset)) of its ends
    shapes = {shape(cl, (ch[0], ch[1] + ext)) for cl, ch in call_ends}
    for site in sites:
        slo, shi = value(site.at(site.lo)), value(site.at(site.hi))
        if slo is None or shi is None or not 0 <= slo <= shi <= 4 + ext:
            span = f"[{lo}, {hi} + 1)" if ext else f"[{lo}, {hi})"
            raise NotScratch(f"`{site.name}` (line {site.stmt.lineno}) is not sized by a part "
                             f"of {span} (lo..hi, lo..mid or mid..hi)")
        if site.pad:
            # as long as a call's part, shifted (R = np.empty(n2 + 1), n2 = r - q, beside
            # the call on (q + 1, r)): a call's part is never empty where the allocation
            # runs (a task that reaches its calls with an empty one calls itself again with
            # the same bounds, and never returns), so the (1 + pad)-wide slots of its
            # part's elements hold the pad too
            (ln, lo_off), (hn, hi_off) = shape(site.at(site.lo), site.at(site.hi))
            if not any(cl[0] == ln and ch[0] == hn and lo_off - cl[1] == hi_off - ch[1]
                       for cl, ch in shapes):
                raise NotScratch(f"`{site.name}` (line {site.stmt.lineno}) has {site.pad} "
                                 "more elements than its part, which is not as long as a "
                                 "recursive call's part")
        if (site.stores if site.owner else stores).get(site.name) != 1:
            raise NotScratch(f"`{site.name}` is assigned again")
    for s in sites:
        for n in ast.walk(s.owner.tree if s.owner else node):
            if isinstance(n, ast.Return) and n.value is not None and any(
                    _is_name(x, s.name) for x in ast.walk(n.value)):
                raise NotScratch(f"it returns the allocated `{s.name}`")

    # each buffer's dtype: a parameter array's (by name) or a NumPy type
    dtypes = tuple(s.at(s.dtype) if isinstance(s.dtype, str) else s.dtype for s in sites)
    unknown = [d for d in dtypes if isinstance(d, str) and d not in params]
    if unknown:
        raise NotScratch(f"a buffer's dtype `{unknown[0]}` is not known")

    # the rewrite
    new = copy.deepcopy(node)
    bufs = [f"{PREFIX}{k}" for k in range(len(sites))]
    new.args.args = new.args.args + [ast.arg(b) for b in bufs]
    by_line = {(s.stmt.lineno, s.stmt.col_offset): (k, s) for k, s in enumerate(sites)
               if s.owner is None}

    def replace(stmts):
        out = []
        for st in stmts:
            hit = by_line.get((getattr(st, "lineno", None), getattr(st, "col_offset", None)))
            if hit is not None and isinstance(st, ast.Assign):
                k, s = hit
                a_, b_ = _text(s.lo), _text(s.hi)
                if s.pad:
                    w = 1 + s.pad
                    src = (f"{s.name} = {bufs[k]}[{w} * ({a_}):{w} * ({a_}) + ({b_}) - ({a_})"
                           f" + {s.pad}]\n")
                else:
                    src = f"{s.name} = {bufs[k]}[{a_}:{b_}]\n"
                if s.kind == "zeros":
                    src += (f"for hpu_i in range(({b_}) - ({a_}) + {s.pad}):\n"
                            f"    {s.name}[hpu_i] = 0\n")
                elif s.kind == "copy":
                    src += (f"for hpu_i in range(({b_}) - ({a_})):\n"
                            f"    {s.name}[hpu_i] = {s.source}[{a_} + hpu_i]\n")
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
    glb = dict(fn.__globals__)
    for h in helpers:           # each its copy with its sites carved, called with its buffers
        mine = [(k, s) for k, s in enumerate(sites) if s.owner is h]
        by_line = {(s.stmt.lineno, s.stmt.col_offset): (k, s) for k, s in mine}
        hnew = copy.deepcopy(h.tree)
        hnew.name = _fresh(f"{h.tree.name}_scratch", set(glb) | set(_stored(node)))
        hnew.args.args = hnew.args.args + [ast.arg(bufs[k]) for k, _ in mine]
        hnew.body = replace(hnew.body)
        ast.fix_missing_locations(hnew)
        hglb = dict(h.fn.__globals__)
        hfile = inspect.getsourcefile(h.fn) or h.fn.__code__.co_filename
        hfn = _function(hnew, hglb, hfile)
        hfn.__hpu_tree__ = (hnew, hfile, h.text, h.start)
        hfn.__hpu_shown__ = h.tree.name
        glb[hnew.name] = hfn
        for c in ast.walk(new):
            if (isinstance(c, ast.Call) and _is_name(c.func, h.tree.name)
                    and (c.lineno, c.col_offset) == (h.call.lineno, h.call.col_offset)):
                c.func = ast.Name(hnew.name, ast.Load())
                c.args = c.args + [ast.Name(bufs[k], ast.Load()) for k, _ in mine]
    ast.fix_missing_locations(new)
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    made = _function(new, glb, filename)
    made.__hpu_tree__ = (new, filename, text, start)
    glb[name] = made
    return ScratchForm(fn=made, params=tuple(params), bounds=(lo, hi), dtypes=dtypes, extra=ext,
                       lists=any(s.listed for s in sites), pads=tuple(s.pad for s in sites))


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


def _position(e):
    """``(name, offset)`` of ``name``, ``name + 1`` or ``name - 1``, else None."""
    if isinstance(e, ast.Name):
        return e.id, 0
    if (isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub))
            and isinstance(e.left, ast.Name) and isinstance(e.right, ast.Constant)
            and e.right.value == 1 and type(e.right.value) is int):
        return e.left.id, 1 if isinstance(e.op, ast.Add) else -1
    return None


def _extent(size):
    """``(A, B)`` positions of ``B - A`` or ``B - A + 1`` (``B + 1`` then), else None."""
    plus = 0
    if (isinstance(size, ast.BinOp) and isinstance(size.op, ast.Add)
            and isinstance(size.right, ast.Constant) and size.right.value == 1):
        size, plus = size.left, 1
    if (isinstance(size, ast.BinOp) and isinstance(size.op, ast.Sub)
            and isinstance(size.left, ast.Name) and isinstance(size.right, ast.Name)):
        return (size.right.id, 0), (size.left.id, plus)
    return None


def _slice_part(x):
    """``(array, A, B)`` of ``array[A:B]`` (positions), else None."""
    if (isinstance(x, ast.Subscript) and isinstance(x.value, ast.Name)
            and isinstance(x.slice, ast.Slice) and x.slice.step is None
            and x.slice.lower is not None and x.slice.upper is not None):
        lo, hi = _position(x.slice.lower), _position(x.slice.upper)
        if lo is not None and hi is not None:
            return x.value.id, lo, hi
    return None


def _text(pos) -> str:
    name, off = pos
    return name if off == 0 else f"{name} {'+' if off > 0 else '-'} 1"


def _sizes(tree) -> dict:
    """Names assigned once in ``tree`` from a difference of names (``n1 = m - l + 1``): the
    expression, for an allocation sized by the name."""
    if tree is None:
        return {}
    stores = _stored(tree)
    return {n.targets[0].id: n.value for n in ast.walk(tree)
            if isinstance(n, ast.Assign) and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name) and stores.get(n.targets[0].id) == 1
            and _extent(n.value) is not None}


def _allocation(st: ast.Assign, nps, tree=None) -> _Site | None:
    """The site of ``name = <allocation>`` (module docstring), or None.  ``tree``: the
    function it is in, for a size named first (``n1 = m - l + 1``) and for a list of zeros,
    ``[0] * n1``, whose values are all read from one parameter array (its dtype)."""
    from hpu._list_kinds import element_source, zeros_list

    e, target = st.value, st.targets[0].id
    sizes = _sizes(tree)

    def size(x):
        return sizes.get(x.id, x) if isinstance(x, ast.Name) else x

    count = zeros_list(e)
    if count is not None and tree is not None:
        src = element_source(tree, target)
        ext = _extent(size(count))
        if src is None or ext is None:
            return None
        site = _Site(st, target, "zeros", ext[0], ext[1], src)
        site.listed = True
        return site
    if _np_call(e, nps, "empty", "zeros") and 1 <= len(e.args) <= 2:
        kw = {k.arg: k.value for k in e.keywords}
        if set(kw) - {"dtype"}:
            return None
        core, pad = e.args[0], 0
        if (isinstance(core, ast.BinOp) and isinstance(core.op, ast.Add)
                and isinstance(core.left, ast.Name) and core.left.id in sizes
                and isinstance(core.right, ast.Constant) and type(core.right.value) is int
                and 1 <= core.right.value <= 4):
            core, pad = core.left, core.right.value     # `n1 + 1`: a sentinel's slot
        ext = _extent(size(core)) or (None, None)       # (checked by the caller: a reason)
        dtype = _dtype_of(e.args[1] if len(e.args) == 2 else kw.get("dtype"), nps)
        kind = "zeros" if e.func.attr == "zeros" else "empty"
        site = _Site(st, target, kind, ext[0], ext[1], dtype)
        site.pad = pad
        return site
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
