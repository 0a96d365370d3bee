"""Functional recursion on the device: results written into one buffer instead of allocated.

Why a rewrite
=============

A functional function returns new arrays: ``merge(msort(a[:m]), msort(a[m:]))``.  A device
cannot allocate (a work-item has no heap), and the breadth-first driver keeps per-task
results as scalars in level arrays.  But the commonest functional shape needs no heap at
all: each call's result is as long as its slice of the input (a sort, a sort that also
counts), the two calls take the halves ``a[:m]`` and ``a[m:]``, and the combine is a
helper that allocates its output, ``out = np.empty(len(left) + len(right), ...)``, fills
it and returns it.  Then the result of the call on ``a[lo:hi]`` can live at ``[lo, hi)``
of a buffer, and the children's results one level down -- a buffer of ``2 n`` in two
halves used by alternate levels (parity ``p``), as a ping-pong mergesort does: a call
reads its children's results in half ``1 - p`` and writes its own in half ``p``, over
slices no other task at its level touches.

So :func:`rewrite` turns the function into the in-place function below -- ordinary
Python that the whole breadth-first machinery takes as written (the CPU's levels, the
OpenCL kernels, the hybrid split and its plan, the device's subtree solver)::

    def msort(a, hpu_buf, hpu_at, hpu_p):              # result -> hpu_buf[half p][at : at+len(a)]
        if len(a) <= 1:
            for hpu_i in range(len(a)):                # `return a.copy()`
                hpu_buf[hpu_p * (len(hpu_buf) // 2) + hpu_at + hpu_i] = a[hpu_i]
            return
        m = len(a) // 2
        hpu_c = m                                      # the split, clamped as Python slices
        ...
        msort(a[:hpu_c], hpu_buf, hpu_at, 1 - hpu_p)
        msort(a[hpu_c:], hpu_buf, hpu_at + hpu_c, 1 - hpu_p)
        merge_into(hpu_buf[q + hpu_at : q + hpu_at + hpu_c],          # the children's results
                   hpu_buf[q + hpu_at + hpu_c : q + hpu_at + len(a)],
                   hpu_buf[hpu_p * (len(hpu_buf) // 2) + hpu_at : ... + len(a)])  # `out`

and the helper into ``merge_into(left, right, out)``: the allocation becomes the
parameter, ``return out`` returns nothing (``return out, inv`` returns ``inv``).  The
run then returns ``hpu_buf[:n]`` (copied), with the scalars the function returned.

What is rewritten (else the function runs on the CPU as before, and the reason says why)
---------------------------------------------------------------------------------------

* one parameter, the array -- or three, ``f(arr, lo, hi)``, whose calls are ``f(arr, lo, m)``
  and ``f(arr, m, hi)`` at a midpoint ``m`` (:func:`_span_form`: read as the one-array
  function on ``hpu_s = arr[lo:hi]``, the calls written back with the user's bounds, the
  result of ``[lo, hi)`` at ``[lo, hi)`` of the buffer; a midpoint keeps both halves inside
  the task's slice, as the layout needs, with no check at run time); leading guards ``if ...: ... return R`` whose ``R`` is
  ``a.copy()``, ``a``, ``a[:]``, ``np.copy(a)`` or ``a.astype(<a float dtype>)``, alone or
  first in a tuple with scalars --
  or an empty array (``np.zeros(0, a.dtype)``, ``np.empty(0)``, ``np.array([])``, ``a[:0]``)
  under a test that ``a`` is empty (``if len(a) == 0``, ``if not a``): as long as its slice;
* after those, any parameters every recursive call passes on unchanged (:func:`_passed_on`:
  a cutoff, a direction), which the form takes after the array and passes on too;
* two recursive calls, on ``a[:e]`` and ``a[e:]`` (the same ``e``: together they are ``a``;
  either may come first), as ``x = f(...)``, ``x, k = f(...)`` or inside the combine's call;
  or ``k`` calls on consecutive slices, ``a[:e1]``, ``a[e1:e2]``, ..., ``a[ek:]`` (each
  lower bound written as the slice before it ends; the one-array form, its combine a helper
  taking all ``k`` children: ``merge3(x, y, z)`` allocating ``len(x) + len(y) + len(z)``,
  or nested calls, ``merge(merge(x, y), z)``, inlined into one such helper:
  :func:`_nested_combines`).
  The child on ``a[e_j:e_j+1]`` writes its result at ``at + e_j``.  Python clamps each bound
  on its own, so ``e2 < e1`` gives overlapping pieces, whose results are longer than ``a``
  together: a task whose clamped cuts are out of order sets the flag
  (:data:`PIECES_ORDER`, :func:`_ordered_cuts`) and the call is redone on the CPU;
* one combine: a helper whose one allocation, ``np.empty``/``np.zeros``, at its top level,
  is sized ``len(p) + len(q)`` of the two parameters that receive the children's arrays
  (directly, or through names assigned once from their lengths: ``n1 + n2``),
  and whose every ``return`` is that array, alone or first in a tuple -- or one child
  under a guard that the other is empty (``if len(left) == 0: return right``, which
  :func:`_copied_returns` makes a copy into the output); the children's arrays are used
  only as its arguments.  Or the combine written in the function after
  the second call, allocating once (``len(left) + len(right)``, ``len(a)`` or a name
  assigned ``len(a)``) and returning that array first: :func:`_outlined` moves it into
  such a helper, passing the names it reads;
* the combine's other allocations at its top level (``L = np.empty(len(left) + 1)``,
  ``tmp = left.copy()``, ``np.zeros(n1 + n2, np.int64)``, ``np.empty_like(right)``) are
  scratch, each carved from a buffer of its own (:func:`_scratch`): its size must be
  bounded by ``k * len(a) + c`` -- built of the children's lengths, integer constants and
  names assigned once from them -- so that the task at offset ``at`` of its level takes
  ``[(k + c) * at, ... + size)``, which no other task of its level touches; the buffer,
  ``(k + c) * n + 1`` elements, is allocated when the run starts.  This is the per-level
  buffer of the issue, sized by construction rather than by a prefix sum at run time, and
  a device's subtree solver uses it as its per-task arena.  A size hpu cannot bound so is
  a *run-time arena*: ``arena * n + 1`` elements (a run option), the task at ``at`` owning
  ``arena * len(a)`` of them from ``arena * at``; the size is checked when the task runs,
  and one that does not fit sets a flag and returns at once -- a work-item cannot
  allocate, nor stop its level -- after which the whole call is redone on the CPU, as a
  device's stack overflow is (:meth:`hpu._decorator.DivideAndConquer._run_in_place`);
* a combine that builds its result as a list (``out = []``, ``append``, ``extend``, ``+=``;
  :func:`_list_result`): the list becomes the output array and a count, checked as it
  grows and at the return -- a list of another length than the two children's sets the
  flag (the call is redone on the CPU), since its length is not known when hpu reads it;
* the halves named before the calls (``p = arr[0:mid]`` then ``f(p)``) are the calls'
  slices;
* scalar assignments before the guards (``n = len(a)``) stay where they are;
* the result type Numba gives the function is a 1-D array, or a tuple of one and scalars.

Why these and not more: they are what makes "each result is as long as its slice" true
by construction -- a base case copies its slice, a combine's output is as long as its two
children's together, and the children are the pieces of the slice.  Anything else (a
helper that returns one of its inputs, a result used before the combine) would need the
check at run time, and a device cannot stop a level to say so -- except the order of a
k-way split's cuts, one comparison per cut, whose flag sends the call back to the CPU.
"""
from __future__ import annotations

import ast
import copy
import inspect
from dataclasses import dataclass

import numpy as np

from hpu._functional import _allocation_in, _numpy_names

__all__ = ["Rewritten", "rewrite", "BUF", "AT", "PARITY"]

BUF, AT, PARITY, INDEX, CUT = "hpu_buf", "hpu_at", "hpu_p", "hpu_i", "hpu_c"
#: the combine's bounds in the buffer: children's from Q0 (Q1 where the right one starts, Q2
#: its end), its own output from M0 to M1 -- names, so that each view's clamped bounds stay
#: small expressions (nested, they made Numba's type inference take a minute per function)
Q0, Q1, Q2, M0, M1 = "hpu_q0", "hpu_q1", "hpu_q2", "hpu_m0", "hpu_m1"
#: the run-time arena's three int64s: ``[0]`` set to 1 when a task's scratch would not fit
#: its region (the run is then redone on the CPU), ``[1]`` the arena's width (elements per
#: element of the input: the ``arena=`` run option), ``[2]`` the largest width a task that
#: did not fit needed (tasks racing may leave a smaller one, never one that fits)
ARENA = "hpu_arena"


class NotRewritable(Exception):
    """Why a function keeps its CPU path (a sentence)."""


@dataclass
class Rewritten:
    """The in-place function (``fn``, a plain Python function whose ``__hpu_tree__`` the
    frontend reads); ``scalars``: how many scalars follow the array in the result;
    ``same_dtype``: the combine allocates with its input's dtype (``np.empty(...,
    left.dtype)``), so the result's dtype is the argument's, with no compile to ask Numba."""

    fn: object
    scalars: int
    same_dtype: bool = False
    #: the combine's scratch arrays (:func:`_scratch`): per allocation, ``(width, dtype)``:
    #: a buffer of ``width * n + 1`` elements (``n`` the input's length) of ``dtype`` (None:
    #: the result's), passed after ``hpu_p``; ``width`` None: a run-time arena, ``arena *
    #: n + 1`` elements (the ``arena=`` run option)
    scratch: tuple = ()
    #: some scratch size is checked at run time: the function takes, last, the int64s
    #: ``[overflowed, arena, needed]`` (:data:`ARENA`)
    arena: bool = False
    #: the span form's parameters ``(arr, lo, hi)`` (:func:`_span_form`): the function takes
    #: them first, and its result for ``[lo, hi)`` lives at ``[lo, hi)`` of the buffer's half
    #: (``hpu_at`` is ``lo``: the buffer and scratch are as long as the whole array)
    span: tuple | None = None
    #: the partition form (:mod:`hpu._functional_partition`): the function takes ``(hpu_w,
    #: lo, hi, p, hpu_arena)``, ``hpu_w`` twice the input with the input in its first half,
    #: where the result is at the end
    partition: bool = False
    #: the form tests the user's own indices itself (a list's, as Python checks them): it
    #: runs without the bounds-checked mode, whose compile costs twice as long
    checks_itself: bool = False
    #: the function returns a Python list whatever it is given (its pieces are lists joined
    #: by `+`): the form runs on a list argument only (an array in: the CPU path, as written)
    returns_list: bool = False
    #: the parameters every recursive call passes on unchanged (:func:`_passed_on`): the
    #: function takes them after the array (or after ``arr, lo, hi``), before ``hpu_buf``
    extra: tuple = ()


def _tree(fn):
    """``(def without docstring or decorators, source text, first line)``: the frontend's own
    reading of a function (:func:`hpu._frontend._source_of`, ``_strip``)."""
    from hpu._frontend import _source_of, _strip

    text, start, _, node = _source_of(fn, "function")
    return _strip(node), text, start


def _is_name(n, name=None) -> bool:
    return isinstance(n, ast.Name) and (name is None or n.id == name)


def _copy_of(e, a: str, nps: set) -> bool:
    """``a.copy()``, ``a``, ``a[:]``, ``np.copy(a)``, ``list(a)``."""
    if _is_name(e, a):
        return True
    if (isinstance(e, ast.Call) and _is_name(e.func, "list") and len(e.args) == 1
            and _is_name(e.args[0], a) and not e.keywords):
        return True
    if (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "copy"
            and _is_name(e.func.value, a) and not e.args and not e.keywords):
        return True
    if (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "copy"
            and _is_name(e.func.value) and e.func.value.id in nps and len(e.args) == 1
            and _is_name(e.args[0], a) and not e.keywords):
        return True
    return (isinstance(e, ast.Subscript) and _is_name(e.value, a) and isinstance(e.slice, ast.Slice)
            and e.slice.lower is None and e.slice.upper is None and e.slice.step is None)


def _base_helper_inlined(g, arr, a: str, fn, used: set, local_names: set):
    """``return insertion(a)`` in the guard ``g``, where ``insertion`` is a function of the
    same module whose one ``return`` is its last statement and returns a name, and which
    reads no module name that the function has as a local (``local_names``): its body
    put in the guard before the return, its parameter read as ``a`` and its own names
    renamed (``hpu_insertion_b``), and the name it returned (a Name node), which
    :func:`_worked_copy` then reads.  None, and ``g`` untouched, for anything else."""
    import types

    if not (isinstance(arr, ast.Call) and _is_name(arr.func) and len(arr.args) == 1
            and _is_name(arr.args[0], a) and not arr.keywords):
        return None
    h = fn.__globals__.get(arr.func.id)
    if not (isinstance(h, types.FunctionType) and h.__globals__ is fn.__globals__
            and h is not fn and h.__closure__ is None):
        return None
    try:
        node, _, _ = _tree(h)
    except Exception:  # noqa: BLE001 - no source, or one hpu refuses: left as written
        return None
    params = node.args
    if (len(params.args) != 1 or params.vararg or params.kwarg or params.kwonlyargs
            or params.defaults or not node.body or not isinstance(node.body[-1], ast.Return)
            or not _is_name(node.body[-1].value)):
        return None
    inner = [n for st in node.body for n in ast.walk(st)]
    if (sum(isinstance(n, ast.Return) for n in inner) != 1
            or any(isinstance(n, (ast.FunctionDef, ast.Lambda, ast.Global, ast.Nonlocal,
                                  ast.Yield, ast.YieldFrom, ast.GeneratorExp, ast.ListComp,
                                  ast.SetComp, ast.DictComp)) for n in inner)
            or any(isinstance(n, ast.Call) and _is_name(n.func, h.__name__) for n in inner)):
        return None
    p = params.args[0].arg
    if any(isinstance(n, ast.Name) and n.id == p and not isinstance(n.ctx, ast.Load)
           for n in inner):
        return None                 # the parameter rebound: not the caller's slice
    local = {n.id for n in inner if isinstance(n, ast.Name)
             and not isinstance(n.ctx, ast.Load)}
    renamed = {}
    for v in sorted(local):
        renamed[v] = _fresh(f"hpu_{h.__name__}_{v}", used)
        used.add(renamed[v])
    if node.body[-1].value.id not in renamed:
        return None                 # it returns its parameter or a global
    free = {n.id for n in inner if isinstance(n, ast.Name)} - local - {p}
    if free & local_names:
        return None                 # a module name it reads is the function's own local

    class R(ast.NodeTransformer):
        def visit_Name(self, n):
            if n.id == p:
                return ast.copy_location(ast.Name(a, n.ctx), n)
            if n.id in renamed:
                return ast.copy_location(ast.Name(renamed[n.id], n.ctx), n)
            return n

    body = [R().visit(copy.deepcopy(st)) for st in node.body]
    g.body[-1:-1] = body[:-1]
    return body[-1].value


def _worked_copy(g, arr, a: str, nps: set) -> int | None:
    """In the guard ``g`` returning ``arr``: the index of ``b = a.copy()`` (or
    ``np.copy(a)``) among its statements, where ``arr`` is ``b``, ``b`` is assigned nowhere
    else in ``g`` and ``a`` nowhere in it -- a base case that copies its slice and sorts or
    changes the copy in place (``b = a.copy()``, an insertion sort of ``b``, ``return b``);
    else None.  Only a real copy: ``b = a[:]`` is a view, whose writes Python makes in the
    caller's array."""
    if not _is_name(arr) or arr.id == a:
        return None
    b = arr.id
    stores = [n for n in ast.walk(g) if isinstance(n, ast.Name)
              and not isinstance(n.ctx, ast.Load) and n.id in (a, b)]
    if len(stores) != 1 or stores[0].id != b:
        return None
    for i, st in enumerate(g.body[:-1]):
        if (isinstance(st, ast.Assign) and len(st.targets) == 1 and _is_name(st.targets[0], b)
                and isinstance(st.value, ast.Call) and _copy_of(st.value, a, nps)
                and not _is_name(st.value.func, "list")):
            return i
    return None


def _heap_sort(arr: str, at: str, n: str) -> str:
    """Source of the sort of ``arr[at:at + n]`` in place (``at``: "" or an offset followed
    by " + "), ascending with NaNs last as NumPy puts them: what the device (and the CPU's
    in-place form) runs for ``np.sort(a)`` and ``b.sort()`` of a cutoff, and for the
    ``np.sort`` of a join.

    A heapsort: O(n log n) whatever the cutoff's size (an insertion sort, quadratic, made
    a cutoff of ``len(a) <= 20000`` slower than the plain function), in place (a
    work-item cannot allocate), one loop that first builds the heap and then takes its
    largest item to the end.  Not stable, as ``np.sort``'s default is not: numbers that
    compare equal are the same numbers (``0.0`` and ``-0.0`` may change places, as in
    NumPy's)."""
    def lt(x, y):       # x < y, a NaN greater than any number
        return f"({x} < {y} or ({y} != {y} and {x} == {x}))"

    def el(i):
        return f"{arr}[{at}{i}]"
    # the temporaries named after the array: two sorts of different dtypes in one function
    # keep their own types
    return (f"hpu_hk_{arr} = ({n}) // 2\n"
            f"hpu_he_{arr} = {n}\n"
            f"while hpu_hk_{arr} > 0 or hpu_he_{arr} > 1:\n"
            f"    if hpu_hk_{arr} > 0:\n"
            f"        hpu_hk_{arr} -= 1\n"
            f"        hpu_hr_{arr} = hpu_hk_{arr}\n"
            f"    else:\n"
            f"        hpu_he_{arr} -= 1\n"
            f"        hpu_hv_{arr} = {el(0)}\n"
            f"        {el(0)} = {el(f'hpu_he_{arr}')}\n"
            f"        {el(f'hpu_he_{arr}')} = hpu_hv_{arr}\n"
            f"        hpu_hr_{arr} = 0\n"
            f"    hpu_hv_{arr} = {el(f'hpu_hr_{arr}')}\n"
            f"    hpu_hc_{arr} = 2 * hpu_hr_{arr} + 1\n"
            f"    while hpu_hc_{arr} < hpu_he_{arr}:\n"
            f"        if hpu_hc_{arr} + 1 < hpu_he_{arr} and "
            f"{lt(el(f'hpu_hc_{arr}'), el(f'hpu_hc_{arr} + 1'))}:\n"
            f"            hpu_hc_{arr} += 1\n"
            f"        if not {lt(f'hpu_hv_{arr}', el(f'hpu_hc_{arr}'))}:\n"
            f"            break\n"
            f"        {el(f'hpu_hr_{arr}')} = {el(f'hpu_hc_{arr}')}\n"
            f"        hpu_hr_{arr} = hpu_hc_{arr}\n"
            f"        hpu_hc_{arr} = 2 * hpu_hr_{arr} + 1\n"
            f"    {el(f'hpu_hr_{arr}')} = hpu_hv_{arr}")


def _sort_as_loops(st, b: str) -> list:
    """``b.sort()`` (``kind=`` any: the numbers sorted are the same) as the heapsort the
    device runs, NaNs last as NumPy puts them; any other statement as it is."""
    e = st.value if isinstance(st, ast.Expr) else None
    if not (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute)
            and e.func.attr == "sort" and _is_name(e.func.value, b) and not e.args
            and all(k.arg == "kind" for k in e.keywords)):
        return [st]
    loops = ast.parse(_heap_sort(b, "", f"len({b})")).body
    for n in (m for loop in loops for m in ast.walk(loop)):
        ast.copy_location(n, st)
    return loops


def _sorted_of(e, a: str, nps: set) -> bool:
    """``np.sort(a)`` (``kind=`` any: the numbers sorted are the same): a sorted copy, as a
    cutoff writes it (``if len(a) <= 16: return np.sort(a)``)."""
    return (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute)
            and e.func.attr == "sort" and _is_name(e.func.value) and e.func.value.id in nps
            and len(e.args) == 1 and _is_name(e.args[0], a)
            and all(k.arg == "kind" for k in e.keywords))


def _one_of(e, a: str, nps: set) -> bool:
    """``[a[0]]``, ``[a[-1]]``, ``np.array([a[0]])``: a's one element, in a new list or
    array (under a test that ``a`` has one element: :func:`_one_test`)."""
    if (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "array"
            and _is_name(e.func.value) and e.func.value.id in nps and len(e.args) == 1
            and not e.keywords):
        e = e.args[0]
    if not (isinstance(e, ast.List) and len(e.elts) == 1):
        return False
    x = e.elts[0]
    return (isinstance(x, ast.Subscript) and _is_name(x.value, a)
            and ast.dump(x.slice) in (ast.dump(ast.Constant(0)),
                                      ast.dump(ast.UnaryOp(ast.USub(), ast.Constant(1)))))


def _one_test(test, name: str) -> bool:
    """``len(name) == 1`` (either way round), ``name.size == 1``."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)):
        return False
    left, right = test.left, test.comparators[0]
    if isinstance(left, ast.Constant):
        left, right = right, left
    return (_len_of(left) == name and isinstance(right, ast.Constant)
            and type(right.value) is int and right.value == 1)


def _empty_of(e, a: str, nps: set):
    """``(True, dtype is a's)`` for an empty array written as people write it --
    ``np.zeros(0, a.dtype)``, ``np.empty(0)``, ``np.array([], dtype=...)``, ``a[:0]``,
    ``a[0:0]``, or an empty list ``[]`` -- else None."""
    if isinstance(e, ast.List) and not e.elts:
        return True, False
    if (isinstance(e, ast.Subscript) and _is_name(e.value, a) and isinstance(e.slice, ast.Slice)
            and e.slice.step is None and isinstance(e.slice.upper, ast.Constant)
            and e.slice.upper.value == 0 and (e.slice.lower is None or (
                isinstance(e.slice.lower, ast.Constant) and e.slice.lower.value == 0))):
        return True, True
    if not (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and _is_name(e.func.value)
            and e.func.value.id in nps and e.args and len(e.args) <= 2):
        return None
    size = e.args[0]
    if e.func.attr in ("zeros", "empty", "ones"):
        if not (isinstance(size, ast.Constant) and size.value == 0 and type(size.value) is int):
            return None
    elif e.func.attr == "array":
        if not (isinstance(size, ast.List) and not size.elts):
            return None
    else:
        return None
    if any(k.arg != "dtype" for k in e.keywords):
        return None
    dtype = _dtype_arg(e)
    return True, (isinstance(dtype, ast.Attribute) and dtype.attr == "dtype"
                  and _is_name(dtype.value, a))


def _float_astype(e, a: str, fn) -> bool:
    """``a.astype(D)`` with ``D`` a float dtype (``np.float64``, ``float``, ``"float32"``)."""
    if not (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute)
            and e.func.attr == "astype" and _is_name(e.func.value, a) and len(e.args) == 1
            and not e.keywords):
        return False
    try:
        dt = _dtype_of(e.args[0], (), fn)
    except NotRewritable:
        return False
    return dt is not None and dt.kind == "f"


def _dtype_arg(call):
    """The dtype an ``np.NAME(size, dtype)`` call gives, by position or keyword; else None."""
    return call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg == "dtype"), None)


def _split_result(e):
    """(array expression, [scalar expressions]) of a return value."""
    if isinstance(e, ast.Tuple):
        if not e.elts:
            raise NotRewritable("it returns an empty tuple")
        return e.elts[0], list(e.elts[1:])
    return e, []


def _mentions(node, names) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _else_lifted(stmts, name: str) -> list:
    """``stmts`` with a last ``if base: return ... else: <the recursion>`` read as the guard
    ``if base: return ...`` followed by the recursion (``if test: <the recursion> else:
    return ...`` as the guard ``if not test``, and so ``if test: <the recursion>`` followed
    by a last ``return ...``); so is a last ``return base if test
    else <the recursion>`` (or ``return <the recursion> if test else base``, the guard
    ``if not test``), the one-line form of published quicksorts."""
    body = list(stmts)
    if (len(body) >= 2 and isinstance(body[-2], ast.If) and not body[-2].orelse
            and body[-2].body and isinstance(body[-2].body[-1], ast.Return)
            and not _self_calls(body[-2].test, name)
            and _self_calls(ast.Module(body[-2].body, []), name)
            and isinstance(body[-1], ast.Return) and not _self_calls(body[-1], name)):
        # `if len(a) > 1: <the recursion, returning>` then `return a.copy()`: the guard
        # `if not test: return a.copy()`, then the recursion
        last, rec = body.pop(), body.pop()
        guard = ast.If(ast.UnaryOp(ast.Not(), rec.test), [last], [])
        body += [ast.fix_missing_locations(ast.copy_location(guard, rec)), *rec.body]
    elif (body and isinstance(body[-1], ast.If) and body[-1].orelse
            and not _self_calls(body[-1].test, name)
            and not _self_calls(ast.Module(body[-1].body, []), name)):
        last = body.pop()
        body += [ast.copy_location(ast.If(last.test, last.body, []), last), *last.orelse]
    elif (body and isinstance(body[-1], ast.If) and body[-1].orelse
          and not _self_calls(body[-1].test, name)
          and not _self_calls(ast.Module(body[-1].orelse, []), name)
          and isinstance(body[-1].orelse[-1], ast.Return)):
        # `if len(a) > 1: <the recursion> else: return a.copy()`: the guard `if not test`
        last = body.pop()
        guard = ast.If(ast.UnaryOp(ast.Not(), last.test), last.orelse, [])
        body += [ast.fix_missing_locations(ast.copy_location(guard, last)), *last.body]
    elif (body and isinstance(body[-1], ast.Return) and isinstance(body[-1].value, ast.IfExp)
          and not _self_calls(body[-1].value.test, name)):
        last = body.pop()
        e = last.value
        if not _self_calls(e.body, name):
            test, base, rest = e.test, e.body, e.orelse
        elif not _self_calls(e.orelse, name):
            test, base, rest = ast.UnaryOp(ast.Not(), e.test), e.orelse, e.body
        else:
            return [*body, last]
        guard = ast.If(test, [ast.copy_location(ast.Return(base), last)], [])
        body += [ast.fix_missing_locations(ast.copy_location(guard, last)),
                 ast.copy_location(ast.Return(rest), last)]
    return body


def _self_calls(node, name):
    return [n for n in ast.walk(node) if isinstance(n, ast.Call) and _is_name(n.func, name)]


def _slice_of(call, a):
    """``(lower, upper)`` AST bounds of ``f(a[lower:upper])``, else None."""
    if len(call.args) != 1 or call.keywords:
        return None
    s = call.args[0]
    if not (isinstance(s, ast.Subscript) and _is_name(s.value, a) and isinstance(s.slice, ast.Slice)
            and s.slice.step is None):
        return None
    return s.slice.lower, s.slice.upper


def _alloc(stmt, nps):
    """``(name, size, zeros)`` of ``name = np.empty(size, ...)`` / ``np.zeros``, else None;
    ``np.empty_like(x)`` / ``np.zeros_like(x)`` of a name: size ``len(x)``."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and _is_name(stmt.targets[0])):
        return None
    v = stmt.value
    if (isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
            and v.func.attr in ("empty_like", "zeros_like") and _is_name(v.func.value)
            and v.func.value.id in nps and len(v.args) == 1 and _is_name(v.args[0])
            and not v.keywords):
        return (stmt.targets[0].id, ast.parse(f"len({v.args[0].id})", mode="eval").body,
                v.func.attr == "zeros_like")
    if (isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
            and v.func.attr in ("empty", "zeros") and _is_name(v.func.value)
            and v.func.value.id in nps and v.args):
        return stmt.targets[0].id, v.args[0], v.func.attr == "zeros"
    return None


def _len_of(e):
    """The name ``p`` of ``len(p)`` or ``p.size``, else None."""
    if (isinstance(e, ast.Call) and _is_name(e.func, "len") and len(e.args) == 1
            and _is_name(e.args[0]) and not e.keywords):
        return e.args[0].id
    if isinstance(e, ast.Attribute) and e.attr == "size" and _is_name(e.value):
        return e.value.id
    return None


def _own_names_free(names, who: str) -> None:
    """The names hpu writes into the in-place form all start ``hpu_`` (the buffer, its
    bounds, temporaries ``hpu_r0``, ``hpu_s0``): a function or combine of the user's that
    uses such a name keeps its CPU path."""
    mine = sorted(n for n in names if n.startswith("hpu_"))
    if mine:
        raise NotRewritable(f"{who} uses the name {mine[0]!r}; names starting hpu_ are the "
                            "ones hpu's device form writes")


def _fresh(base: str, used: set) -> str:
    """``base``, or ``base2``, ``base3``, ...: the first that names nothing in ``used``."""
    name, k = base, 2
    while name in used:
        name, k = f"{base}{k}", k + 1
    return name


def _repeated_lists_as_arrays(node, nps) -> bool:
    """``out = [0] * size`` (``size * [0]``, ``[0.0]``, ``[None]``) at the combine's top level,
    a list it returns and otherwise only indexes (``out[k] = x``, ``out[k]``) and measures
    (``len(out)``), as ``out = hpu_np.zeros(size)``, in place: the array the rest of
    :func:`_helper_into` reads, its dtype Numba's typing of the function.  A slot the
    combine never writes holds a zero, as in Python -- a ``[None]``'s too, read as
    ``[0]`` by the CPU path's own rule (:func:`hpu._list_kinds.slots_as_zeros`: only where
    the combine has no other ``None``).  Returns whether it applied."""
    from hpu._list_kinds import slots_as_zeros

    slots_as_zeros(node)
    returned = {_split_result(r.value)[0].id for r in ast.walk(node)
                if isinstance(r, ast.Return) and r.value is not None
                and _is_name(_split_result(r.value)[0])}
    done = False
    for st in node.body:
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1
                and _is_name(st.targets[0]) and st.targets[0].id in returned
                and isinstance(st.value, ast.BinOp) and isinstance(st.value.op, ast.Mult)):
            continue
        out = st.targets[0].id
        for side, size in ((st.value.left, st.value.right), (st.value.right, st.value.left)):
            if (isinstance(side, ast.List) and len(side.elts) == 1
                    and isinstance(side.elts[0], ast.Constant)
                    and type(side.elts[0].value) in (int, float) and side.elts[0].value == 0):
                break
        else:
            continue
        allowed = set()
        for n in ast.walk(node):
            if isinstance(n, ast.Subscript) and _is_name(n.value, out) \
                    and not isinstance(n.slice, ast.Slice):
                allowed.add(id(n.value))
            elif isinstance(n, ast.Call) and _is_name(n.func, "len") and len(n.args) == 1:
                allowed.add(id(n.args[0]))
            elif isinstance(n, ast.Return) and n.value is not None:
                allowed.add(id(_split_result(n.value)[0]))
        if any(_is_name(n, out) and id(n) not in allowed and n is not st.targets[0]
               for n in ast.walk(node)):
            continue
        st.value = ast.copy_location(ast.Call(
            ast.Attribute(ast.Name(LISTED, ast.Load()), "zeros", ast.Load()), [size], []),
            st.value)
        done = True
    ast.fix_missing_locations(node)
    return done


def _lists_returned_as_arrays(node, nps) -> None:
    """``return np.array(out)`` (``np.asarray``, first in a tuple too) of a list ``out`` the
    function makes empty (``out = []``) as ``return out``, in place: the device form's
    result is an array already, the list's elements in order (their dtype Numba's typing of
    the function, as NumPy infers it from them)."""
    made = {st.targets[0].id for st in ast.walk(node)
            if isinstance(st, ast.Assign) and len(st.targets) == 1
            and _is_name(st.targets[0]) and isinstance(st.value, ast.List) and not st.value.elts}

    def listed(e):
        return (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute)
                and e.func.attr in ("array", "asarray") and _is_name(e.func.value)
                and e.func.value.id in nps and len(e.args) == 1 and not e.keywords
                and _is_name(e.args[0]) and e.args[0].id in made)

    for r in ast.walk(node):
        if isinstance(r, ast.Return) and r.value is not None:
            if listed(r.value):
                r.value = r.value.args[0]
            elif isinstance(r.value, ast.Tuple) and r.value.elts and listed(r.value.elts[0]):
                r.value.elts[0] = r.value.elts[0].args[0]


def _helper_into(h, arrays: tuple[int, ...], used: set):
    """The helper ``h`` rewritten to write its allocated result into a last parameter:
    ``(new function tree, its name, scalars it returns)``."""
    node, text, start = _tree(h)
    if not getattr(h, "__hpu_synth__", False):     # (a nest's own are hpu's: _nested_combines)
        names = ({n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                 | {p.arg for p in node.args.args})
        if getattr(h, "__hpu_own__", False):
            names -= {SLICE}    # (the function's code, outlined: the span form's slice)
        _own_names_free(names, f"its combine {h.__name__}()")
    params = [p.arg for p in node.args.args]
    if node.args.vararg or node.args.kwarg or node.args.kwonlyargs or node.args.defaults:
        raise NotRewritable(f"its combine {h.__name__}() has default, keyword-only or * parameters")
    nps = _numpy_names(h.__globals__)
    _loops_indexed(node, params)
    kids = tuple(params[x] for x in arrays)
    # a list result, and `if not q: return p`, are read for two children
    _popped_fronts(node, kids)
    _lists_returned_as_arrays(node, nps)
    listed = len(kids) == 2 and _list_result(node, kids[0], kids[1], h)
    if listed or _repeated_lists_as_arrays(node, nps):
        nps = nps | {LISTED}
    joined = not listed and _concatenated_returns(node, nps, kids)
    allocs = [(i, _alloc(s, nps)) for i, s in enumerate(node.body)]
    allocs = [(i, x) for i, x in allocs if x is not None]
    returned = {_split_result(r.value)[0].id for r in ast.walk(node)
                if isinstance(r, ast.Return) and r.value is not None
                and _is_name(_split_result(r.value)[0])}
    results = [(i, x) for i, x in allocs if x[0] in returned]
    if len(results) != 1:
        raise NotRewritable(f"its combine {h.__name__}() does not allocate its result once, at "
                            "its top level (`out = np.empty(len(left) + len(right), ...)`)")
    i, (out, size, zeros) = results[0]
    scratch = _scratch(node, i, kids, nps, h, used)
    writes = _child_write(node, kids)
    dtype = _dtype_arg(node.body[i].value)
    same = (isinstance(dtype, ast.Attribute) and dtype.attr == "dtype"
            and _is_name(dtype.value) and dtype.value.id in kids)
    exact = _exact(size, kids, _len_names(node, kids, i, nps))
    if exact is None or {k: c for k, c in exact.items() if c} != {c: 1 for c in kids}:
        total = " + ".join(f"len({c})" for c in kids)
        raise NotRewritable(f"its combine {h.__name__}() allocates `{ast.unparse(size)}` "
                            f"elements, not {total}: its result would not be as "
                            f"long as its {len(kids)} children's")
    if out in params:
        raise NotRewritable(f"its combine {h.__name__}() reassigns its parameter {out!r}")
    rest = node.body[:i] + node.body[i + 1:]
    for sc in scratch:                      # np.empty(...) -> its region of a buffer
        at = rest.index(sc.stmt)
        rest[at:at + 1] = sc.carve
    if len(kids) == 2:
        _copied_returns(rest, out, *kids)
    for t, stmt in enumerate(rest):     # the early returns of the run-time checks
        for n in ast.walk(stmt):
            if isinstance(n, ast.Return) and getattr(n, "hpu_bail", False):
                n.value = _overflow_values(rest, t, out, params, node, h)
    check = copy.deepcopy(node)
    check.body = rest
    for n in ast.walk(check):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == out:
            raise NotRewritable(f"its combine {h.__name__}() assigns {out!r} twice")
    arity = None
    for n in ast.walk(check):
        if isinstance(n, ast.Return):
            if n.value is None:
                raise NotRewritable(f"its combine {h.__name__}() has a `return` without its result")
            arr, scalars = _split_result(n.value)
            if not _is_name(arr, out) or any(_mentions(s, {out}) for s in scalars):
                raise NotRewritable(f"its combine {h.__name__}() returns "
                                    f"`{ast.unparse(n.value)}` (line {n.lineno}), not {out!r}")
            if arity not in (None, len(scalars)):
                raise NotRewritable(f"the returns of its combine {h.__name__}() differ in length")
            arity = len(scalars)
            n.value = _value_of(scalars)
        elif isinstance(n, (ast.FunctionDef, ast.Lambda)) and n is not check:
            raise NotRewritable(f"its combine {h.__name__}() defines a function inside")
    if arity is None:
        raise NotRewritable(f"its combine {h.__name__}() never returns its result")
    # what is left may not allocate: the helper's other allocations are not sized anywhere
    if _allocation_in(check, h.__globals__) is not None:
        raise NotRewritable(f"its combine {h.__name__}() allocates more than its result")
    body = list(rest)
    if zeros:           # np.zeros: the parameter starts as zeros, as the array did
        fill = ast.parse(f"for {INDEX} in range(len({out})):\n    {out}[{INDEX}] = 0").body[0]
        for n in ast.walk(fill):
            ast.copy_location(n, node.body[i])
        body.insert(i, fill)
    new = ast.FunctionDef(name="", args=copy.deepcopy(node.args), body=body, decorator_list=[],
                          returns=None, type_params=[])
    new.args.args.append(ast.arg(out))
    for sc in scratch:
        new.args.args += [ast.arg(sc.buf), ast.arg(sc.at)]
    checked = listed or joined or any(sc.width is None for sc in scratch)
    if checked:
        new.args.args.append(ast.arg(ARENA))
    ast.copy_location(new, node)
    new.name = _fresh(f"{h.__name__}_into", used)
    ast.fix_missing_locations(new)
    return new, text, start, arity, same, scratch, writes, checked


@dataclass
class _Scratch:
    """One scratch array of the combine: the statement that allocates it (``stmt``), what
    replaces it (``carve``: a view of the buffer ``buf`` from ``at``, filled as the
    allocation fills it), ``width`` (the buffer holds ``width`` elements per element of
    the input) and ``dtype`` (None: the result's; else a NumPy dtype)."""

    stmt: object
    carve: list
    buf: str
    at: str
    width: int | None       #: None: a run-time arena (``arena=`` elements per element)
    dtype: object


def _exact(e, children, names) -> dict | None:
    """``e`` as ``{child: k, "": c}`` -- ``sum(k * len(child)) + c``, every ``k`` and ``c`` an
    int >= 0 -- when it is built of ``len(child)``/``child.size``, integer constants, names
    in ``names`` (themselves such sums), ``+`` and a constant times a term; else None."""
    if isinstance(e, ast.Constant) and type(e.value) is int and e.value >= 0:
        return {"": e.value}
    if _len_of(e) in children:
        return {_len_of(e): 1}
    if _len_of(e) is not None and f"len:{_len_of(e)}" in names:
        return dict(names[f"len:{_len_of(e)}"])
    if isinstance(e, ast.Name) and e.id in names:
        return dict(names[e.id])
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Mult)):
        x, y = _exact(e.left, children, names), _exact(e.right, children, names)
        if x is None or y is None:
            return None
        if isinstance(e.op, ast.Add):
            return {k: x.get(k, 0) + y.get(k, 0) for k in {*x, *y}}
        for u, v in ((x, y), (y, x)):
            if set(u) <= {""}:                  # a constant times a sum
                return {k: u.get("", 0) * c for k, c in v.items()}
    return None


def _store_counts(node) -> dict:
    """How many times ``node`` assigns each name."""
    counts: dict = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            counts[n.id] = counts.get(n.id, 0) + 1
    return counts


def _len_names(node, children, upto: int, nps=frozenset()) -> dict:
    """Names assigned once in the helper, at its top level before statement ``upto``, from
    its children's lengths (``n1, n2 = len(left), len(right)``): name -> :func:`_exact`;
    and ``len:x`` for an array ``x = np.empty(size, ...)`` allocated once there, ``size``
    such a sum (a nested combine's inner result, :func:`_nested_combines`)."""
    counts = _store_counts(node)
    names: dict = {}
    for stmt in node.body[:upto]:
        made = _alloc(stmt, nps) if nps else None
        if made is not None and counts.get(made[0]) == 1:
            form = _exact(made[1], children, names)
            if form is not None:
                names[f"len:{made[0]}"] = form
            continue
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        t, v = stmt.targets[0], stmt.value
        pairs = (list(zip(t.elts, v.elts)) if isinstance(t, ast.Tuple)
                 and isinstance(v, ast.Tuple) and len(t.elts) == len(v.elts) else [(t, v)])
        for tt, vv in pairs:
            if _is_name(tt) and counts.get(tt.id) == 1:
                form = _exact(vv, children, names)
                if form is not None:
                    names[tt.id] = form
    return names


def _scratch(node, result_at: int, children, nps, h, used) -> list:
    """The combine's other allocations at its top level -- ``np.empty(size[, dtype])``,
    ``np.zeros``, ``np.empty_like(child)``, ``np.zeros_like(child)``, ``child.copy()``,
    ``np.copy(child)`` -- each carved from a buffer of its own, sized when the run starts:
    ``size`` is bounded by ``k * len(a) + c`` (:func:`_exact`, from the children's
    lengths and names assigned once from them, ``n1, n2 = len(left), len(right)``), so the
    task on ``a`` at offset ``at`` of its level takes ``[(k + c) * at, (k + c) * at + size)``,
    a region no other task of its level touches (the next task starts ``len(a) >= 1``
    elements on).  A size hpu cannot bound so (``len(left) * len(right)``, a count made by a
    loop, ``len(left) - 1``) is a run-time arena: the task's region is ``arena * len(a)``
    elements from ``arena * at`` (``arena=``, a run option), and a size that does not fit
    -- or is negative, which NumPy refuses -- sets :data:`ARENA`'s flag and returns at once
    (its value is a placeholder, :func:`_overflow_values`): the run is then redone on the
    CPU, where the function allocates as written."""
    counts = _store_counts(node)
    out = []
    for i, stmt in enumerate(node.body):
        if i == result_at:
            continue
        made = _scratch_alloc(stmt, children, nps)
        if made is None:
            continue
        name, size, dtype, fill = made
        if counts.get(name) != 1:
            raise NotRewritable(f"its combine {h.__name__}() assigns {name!r} more than once")
        form = _exact(size, children, _len_names(node, children, i, nps))
        if isinstance(dtype, ast.AST):
            dtype = _dtype_of(dtype, children, h)
        k = len(out)
        buf = _fresh(f"hpu_scr{k}", used)
        at = _fresh(f"hpu_o{k}", used)
        if form is not None:
            src = f"{name} = {buf}[{at}:{at} + {ast.unparse(size)}]"
        else:   # a run-time arena: the size checked against the task's region, when known
            total = " + ".join(f"len({c})" for c in children)
            n = _fresh(f"hpu_n{k}", used)
            span = f"max(1, {total})"
            src = (f"{n} = {ast.unparse(size)}\n"
                   f"if {n} < 0 or {n} > {ARENA}[1] * ({total}):\n"
                   f"    {ARENA}[2] = max({ARENA}[2], ({n} + {span} - 1) // {span})\n"
                   f"    pass\n"
                   f"{name} = {buf}[{at}:{at} + {n}]")
        if fill is not None:
            src += (f"\nfor {INDEX} in range(len({name})):\n"
                    f"    {name}[{INDEX}] = {fill}")
        carve = ast.parse(src).body
        if form is None:        # the flag and the early return (_bail), in place of `pass`
            carve[1].body[-1:] = _bail(ARENA_OVERFLOW, stmt)
        for c in carve:
            for n in ast.walk(c):
                ast.copy_location(n, stmt)
        # at most (k + c) * len(a) for a task on a (len(a) >= 1): each child is a half of a
        out.append(_Scratch(stmt, carve, buf, at,
                            None if form is None else max(1, sum(form.values())), dtype))
    return out


#: the module name of the allocation :func:`_list_result` writes in place of ``out = []``
#: (removed with every result allocation: the name is never looked up)
LISTED = "hpu_np"
#: what the flag's ``[0]`` says: a scratch size did not fit its arena (or was negative); a
#: list result was not as long as the two children's together
ARENA_OVERFLOW, LIST_LENGTH = 1, 2
#: ... a k-way split's slices overlapped (``a[e1:e2]`` with ``e2 < e1``); (3 is
#: :data:`hpu._functional_partition.PIECES_LENGTH`); a concatenated result was not as long
#: as the two children's together
PIECES_ORDER, CONCAT_LENGTH = 4, 5


def _bail(flag: int, where):
    """``hpu_arena[0] = flag`` and an early return whose value :func:`_helper_into` fills
    (:func:`_overflow_values`)."""
    stmts = ast.parse(f"{ARENA}[0] = {flag}\nreturn").body
    stmts[1].hpu_bail = True
    for st in stmts:
        for n in ast.walk(st):
            ast.copy_location(n, where)
    return stmts


def _popped_fronts(node, kids) -> None:
    """A merge that takes its children's fronts off with ``pop(0)``, as many tutorials
    write it (``while left and right: if left[0] <= right[0]: result.append(left.pop(0))``
    then ``result.extend(left)``), rewritten in place (``node``) to read each child from a
    count of the elements taken, ``hpu_f_<child>``: ``left[0]`` -> ``left[hpu_f_left]``,
    ``left.pop(0)`` (the argument of an ``append`` statement, or ``x = left.pop(0)``) -> that
    element, the count raised after the statement, ``left`` tested for truth or measured ->
    what is left of it, ``extend(left)`` / ``+= left`` / ``+ left`` -> ``left[hpu_f_left:]``.
    The children are then never written, as the device form needs (the plain function's
    pops change lists no one reads after the merge).  A child used any other way is left
    as written (and the combine refused as writing into its children)."""
    for p in kids:
        pops = [n for n in ast.walk(node) if _front_pop(n, p)]
        if not pops:
            continue
        count = f"hpu_f_{p}"
        if _mentions(node, {count}):
            continue
        allowed: dict[int, str] = {}        # id(Name p) -> how it is read

        def mark(n, how):
            allowed[id(n)] = how

        for n in ast.walk(node):
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) \
                    and isinstance(n.value.func, ast.Attribute) \
                    and n.value.func.attr == "append" and len(n.value.args) == 1 \
                    and _front_pop(n.value.args[0], p):
                mark(n.value.args[0].func.value, "pop")
            elif isinstance(n, ast.Assign) and _front_pop(n.value, p):
                mark(n.value.func.value, "pop")
            elif isinstance(n, ast.Subscript) and _is_name(n.value, p) \
                    and isinstance(n.slice, ast.Constant) and n.slice.value == 0 \
                    and isinstance(n.ctx, ast.Load):
                mark(n.value, "front")
            elif isinstance(n, (ast.While, ast.If)) or (
                    isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not)):
                for t in _truth_names(n.test if not isinstance(n, ast.UnaryOp) else n.operand):
                    if _is_name(t, p):
                        mark(t, "truth")
            elif isinstance(n, ast.Call) and _is_name(n.func, "len") and len(n.args) == 1 \
                    and _is_name(n.args[0], p):
                mark(n.args[0], "len")
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                    and n.func.attr == "extend" and len(n.args) == 1 and _is_name(n.args[0], p):
                mark(n.args[0], "rest")
            elif isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add) \
                    and _is_name(n.value, p):
                mark(n.value, "rest")
            elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add) and _is_name(n.right, p):
                mark(n.right, "rest")
        names = [n for n in ast.walk(node) if _is_name(n, p)]
        if any(id(n) not in allowed for n in names) or any(
                isinstance(n.ctx, ast.Store) for n in names):
            continue

        # what each read of p becomes (a `len(p)` is rewritten at its call)
        read_as = {"truth": f"len({p}) > {count}", "rest": f"{p}[{count}:]",
                   "front": f"{p}[{count}]"}

        class Fronts(ast.NodeTransformer):
            def visit_Name(self, n):
                how = allowed.get(id(n))
                return _expr_at(read_as[how], n) if how in ("truth", "rest") else n

            def visit_Call(self, c):
                if _front_pop(c, p):
                    return _expr_at(read_as["front"], c)
                if _is_name(c.func, "len") and len(c.args) == 1 and _is_name(c.args[0], p):
                    return _expr_at(f"(len({p}) - {count})", c)
                return self.generic_visit(c)

            def visit_Subscript(self, s):
                if _is_name(s.value, p) and allowed.get(id(s.value)) == "front":
                    return _expr_at(read_as["front"], s)
                return self.generic_visit(s)

            def generic_stmt(self, st):
                popped = any(_front_pop(x, p) for x in ast.walk(st))
                st = self.generic_visit(st)
                if not popped:
                    return st
                step = ast.parse(f"{count} = {count} + 1").body[0]
                for x in ast.walk(step):
                    ast.copy_location(x, st)
                return [st, step]

            visit_Expr = visit_Assign = generic_stmt

        node.body = [ast.copy_location(ast.parse(f"{count} = 0").body[0], node.body[0]),
                     *node.body]
        Fronts().visit(node)
        ast.fix_missing_locations(node)


def _expr_at(src: str, where):
    """The expression ``src``, placed at ``where``'s line (errors name the user's)."""
    e = ast.parse(src, mode="eval").body
    for x in ast.walk(e):
        ast.copy_location(x, where)
    return e


def _front_pop(n, p: str) -> bool:
    """``p.pop(0)``."""
    return (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == "pop" and _is_name(n.func.value, p) and len(n.args) == 1
            and isinstance(n.args[0], ast.Constant) and n.args[0].value == 0
            and not n.keywords)


def _truth_names(test):
    """The names a test reads for their truth: the test itself, ``and``/``or`` operands,
    ``not`` operands."""
    if isinstance(test, ast.BoolOp):
        for v in test.values:
            yield from _truth_names(v)
    elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from _truth_names(test.operand)
    elif isinstance(test, ast.Name):
        yield test


def _list_result(node, p: str, q: str, h) -> bool:
    """A combine that builds its result as a list -- ``out = []`` at its top level, then
    ``out.append(x)``, ``out.extend(left[i:])``, ``out += right[j:]``, ``out = out +
    [x]``, ``len(out)``, ``out[k]`` -- rewritten in place (``node``) into the array form
    the rest of :func:`_helper_into` reads: ``out = hpu_np.empty(len(p) + len(q))`` (the
    result's dtype is Numba's typing of the function) and a count ``hpu_k`` of the elements
    written.  The length is checked as the list grows and at each ``return``: a list that
    would not be as long as the two children's together sets the flag
    (:data:`LIST_LENGTH`) and returns, and the call is redone on the CPU as written.
    Returns whether it applied."""
    returned = set()
    for r in ast.walk(node):
        if isinstance(r, ast.Return) and r.value is not None:
            arr = _split_result(r.value)[0]
            if _is_name(arr):
                returned.add(arr.id)
            elif _chain(arr) is not None:           # return out + left[i:] + right[j:]
                returned.add(_chain(arr)[0])
    made = [(i, st) for i, st in enumerate(node.body)
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and _is_name(st.targets[0])
            and st.targets[0].id in returned and isinstance(st.value, ast.List)
            and not st.value.elts]
    if len(made) != 1:
        return False
    at, first = made[0]
    out = first.targets[0].id
    if _store_counts(node).get(out, 0) != 1 + sum(
            1 for n in ast.walk(node) if isinstance(n, (ast.AugAssign, ast.Assign))
            and n is not first and _grows(n, out) is not None):
        raise NotRewritable(f"its combine {h.__name__}() assigns its list {out!r} again")
    count = "hpu_k"
    seq = iter(range(1_000_000))

    def put(values, where):
        """``out[hpu_k] = v; hpu_k += 1`` for each value, the room checked first."""
        k = next(seq)
        if isinstance(values, list):            # append(x), + [x, y]: their number is known
            need, body, pre = str(len(values)), [], []
            for v in values:
                body += ast.parse(f"{out}[{count}] = 0\n{count} = {count} + 1").body
                body[-2].value = v
        else:                                   # extend(s): s's elements, s evaluated once
            src = f"hpu_v{k}"
            pre = [ast.Assign([ast.Name(src, ast.Store())], values)]
            need = f"len({src})"
            body = ast.parse(f"for hpu_j{k} in range(len({src})):\n"
                             f"    {out}[{count}] = {src}[hpu_j{k}]\n"
                             f"    {count} = {count} + 1").body
        check = ast.parse(f"if {count} + {need} > len({out}):\n    pass").body[0]
        check.body = _bail(LIST_LENGTH, where)
        stmts = pre + [check] + body
        for st in stmts:
            for n in ast.walk(st):
                ast.copy_location(n, where)
        return stmts

    class Grow(ast.NodeTransformer):
        def visit_Expr(self, st):
            c = st.value
            if (isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                    and _is_name(c.func.value, out)):
                if c.func.attr == "append" and len(c.args) == 1 and not c.keywords:
                    return put([self.visit(c.args[0])], st)
                if c.func.attr == "extend" and len(c.args) == 1 and not c.keywords:
                    return put(self._seq(c.args[0], st), st)
            return self.generic_visit(st)

        def visit_AugAssign(self, st):
            grown = _grows(st, out)
            return self.generic_visit(st) if grown is None else put(self._seq(grown, st), st)

        def visit_Assign(self, st):
            if st is first:
                return st
            grown = _grows(st, out)
            return self.generic_visit(st) if grown is None else put(self._seq(grown, st), st)

        def _seq(self, e, st):
            if isinstance(e, ast.List):
                return [self.visit(x) for x in e.elts]
            if _is_name(e) or (isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Slice)
                               and _is_name(e.value) and e.slice.step is None):
                if _mentions(e, {out}):
                    raise NotRewritable(f"its combine {h.__name__}() extends its list {out!r} "
                                        f"by itself (line {st.lineno})")
                return self.visit(e)
            raise NotRewritable(f"its combine {h.__name__}() extends its list {out!r} by "
                                f"`{ast.unparse(e)}` (line {st.lineno}): hpu's device form "
                                "takes a name or a slice of one")

        def visit_Call(self, c):
            if _is_name(c.func, "len") and len(c.args) == 1 and _is_name(c.args[0], out):
                return ast.copy_location(ast.Name(count, ast.Load()), c)
            return self.generic_visit(c)

        def visit_Return(self, st):
            if st.value is None:
                return st
            arr, scalars = _split_result(st.value)
            chain = _chain(arr)
            grown = []
            if chain is not None and chain[0] == out:   # out + s1 + s2: extended, returned
                for e in chain[1]:
                    grown += put(self._seq(e, st), st)
                arr = ast.copy_location(ast.Name(out, ast.Load()), arr)
                st.value = (ast.copy_location(ast.Tuple([arr, *scalars], ast.Load()), st.value)
                            if scalars else arr)
            elif not _is_name(arr, out):
                return self.generic_visit(st)
            check = ast.parse(f"if {count} != len({out}):\n    pass").body[0]
            check.body = _bail(LIST_LENGTH, st)
            for n in ast.walk(check):
                ast.copy_location(n, st)
            return [*grown, check, self.generic_visit(st)]

    rest = [Grow().visit(st) for st in node.body[at + 1:]]
    body = []
    for st in rest:
        body.extend(st if isinstance(st, list) else [st])
    alloc = ast.parse(f"{out} = {LISTED}.empty(len({p}) + len({q}))\n{count} = 0").body
    for st in alloc:
        for n in ast.walk(st):
            ast.copy_location(n, first)
    node.body = node.body[:at] + alloc + body
    # what is left of the list: the stores and checks written here, and its name returned
    # (its elements are not read: `out[-1]` is the last appended in Python, not here)
    allowed = set()
    for n in ast.walk(ast.Module(body, [])):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) \
                and _is_name(n.value, out) and _is_name(n.slice, count):
            allowed.add(id(n.value))
        elif isinstance(n, ast.Call) and _is_name(n.func, "len") and len(n.args) == 1:
            allowed.add(id(n.args[0]))
        elif isinstance(n, ast.Return) and n.value is not None:
            allowed.add(id(_split_result(n.value)[0]))
    for st in body:
        for n in ast.walk(st):
            if _is_name(n, out) and id(n) not in allowed:
                where = next((x for x in ast.walk(st) if x is not n and n in ast.walk(x)
                              and isinstance(x, ast.expr)), n)
                raise NotRewritable(f"its combine {h.__name__}() uses its list {out!r} in "
                                    f"`{ast.unparse(where)}` (line {n.lineno}): the device "
                                    "form takes append, extend, += and len() of the list "
                                    "it returns")
    ast.fix_missing_locations(node)
    return True


#: what joins a combine's pieces: ``np.concatenate((out[:k], left[i:], right[j:]))``
_JOINS = ("concatenate", "hstack")


def _concatenated_returns(node, nps, kids) -> bool:
    """``return np.concatenate((out[:k], left[i:], right[j:]))`` (``np.hstack``, a list
    of the pieces, scalars after it in a tuple), with ``out`` the combine's top-level
    allocation of its children's dtype (or NumPy's float64): rewritten in place (``node``)
    to write each later piece after the prefix, in order, and ``return out``.  The pieces
    are evaluated once, as Python evaluates them; their length together is checked first:
    one other than ``len(out)`` sets the flag (:data:`CONCAT_LENGTH`) and returns, and the
    call is redone on the CPU as written.  Returns whether any return was rewritten."""
    allocs = set()
    for st in node.body:
        a = _alloc(st, nps)
        if a is not None:
            dtype = _dtype_arg(st.value) if isinstance(st.value, ast.Call) else None
            if dtype is None or (isinstance(dtype, ast.Attribute) and dtype.attr == "dtype"
                                 and _is_name(dtype.value) and dtype.value.id in kids):
                allocs.add(a[0])
    seq = iter(range(1_000_000))

    def joined(e):
        """``(out, k, [pieces])`` of ``np.concatenate((out[:k], ...))``, else None."""
        if not (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute)
                and _is_name(e.func.value) and e.func.value.id in nps
                and e.func.attr in _JOINS and len(e.args) == 1 and not e.keywords
                and isinstance(e.args[0], (ast.Tuple, ast.List)) and len(e.args[0].elts) > 1):
            return None
        first, *pieces = e.args[0].elts
        if not (isinstance(first, ast.Subscript) and _is_name(first.value)
                and first.value.id in allocs and isinstance(first.slice, ast.Slice)
                and first.slice.step is None
                and (first.slice.lower is None or (isinstance(first.slice.lower, ast.Constant)
                                                   and first.slice.lower.value == 0))):
            return None
        out = first.value.id
        if any(_mentions(x, {out}) or isinstance(x, ast.Starred) for x in pieces):
            return None
        return out, first.slice.upper, pieces

    class Join(ast.NodeTransformer):
        rewritten = False

        def visit_Return(self, st):
            if st.value is None:
                return st
            arr, scalars = _split_result(st.value)
            found = joined(arr)
            if found is None:
                return st
            out, upper, pieces = found
            k = next(seq)
            at, vs = f"hpu_c{k}", [f"hpu_v{k}_{t}" for t in range(len(pieces))]
            src = f"{at} = len({out})\n" if upper is None else (
                f"{at} = 0\n"
                f"if {at} < 0:\n    {at} = {at} + len({out})\n"
                f"if {at} < 0:\n    {at} = 0\n"
                f"if {at} > len({out}):\n    {at} = len({out})\n")
            src += "".join(f"{v} = 0\n" for v in vs)
            total = " + ".join([at, *(f"len({v})" for v in vs)])
            src += f"if {total} != len({out}):\n    pass\n"
            src += "".join(f"for hpu_j{k}_{t} in range(len({v})):\n"
                           f"    {out}[{at}] = {v}[hpu_j{k}_{t}]\n"
                           f"    {at} = {at} + 1\n" for t, v in enumerate(vs))
            stmts = ast.parse(src).body
            if upper is not None:
                stmts[0].value = upper
            first_v = 1 if upper is None else 4
            for t, piece in enumerate(pieces):
                stmts[first_v + t].value = piece
            stmts[first_v + len(pieces)].body = _bail(CONCAT_LENGTH, st)
            arr = ast.Name(out, ast.Load())
            st.value = ast.Tuple([arr, *scalars], ast.Load()) if scalars else arr
            for x in stmts + [st]:
                for n in ast.walk(x):
                    ast.copy_location(n, st)
            Join.rewritten = True
            return [*stmts, st]

    body = []
    for st in node.body:
        got = Join().visit(st)
        body.extend(got if isinstance(got, list) else [got])
    node.body = body
    ast.fix_missing_locations(node)
    return Join.rewritten


def _loops_indexed(node, params) -> None:
    """``for v in left:`` over a parameter (a child's array, or another the combine takes)
    as ``for hpu_t0 in range(len(left)): v = left[hpu_t0]``: the loop a device runs, the
    same elements in the same order while the body changes nothing of ``left`` (else the
    loop is left as written, and the translator says why)."""
    seq = iter(range(1_000_000))

    class Index(ast.NodeTransformer):
        def visit_For(self, st):
            self.generic_visit(st)
            x = st.iter
            if not (_is_name(x) and x.id in params and _is_name(st.target)):
                return st
            inner = ast.Module(st.body + st.orelse, [])
            if any((isinstance(n, ast.Name) and n.id == x.id and isinstance(n.ctx, ast.Store))
                   or (isinstance(n, ast.Attribute) and _is_name(n.value, x.id))
                   or (isinstance(n, ast.Subscript) and _is_name(n.value, x.id)
                       and isinstance(n.ctx, ast.Store))
                   for n in ast.walk(inner)):
                return st
            i = f"hpu_t{next(seq)}"
            head = ast.parse(f"for {i} in range(len({x.id})):\n    {st.target.id} = "
                             f"{x.id}[{i}]").body[0]
            for n in ast.walk(head):
                ast.copy_location(n, st)
            head.body += st.body
            head.orelse = st.orelse
            return head

    Index().visit(node)
    ast.fix_missing_locations(node)


def _chain(e):
    """``(name, [s1, s2, ...])`` of ``name + s1 + s2 ...``, else None."""
    parts = []
    while isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        parts.append(e.right)
        e = e.left
    return (e.id, parts[::-1]) if parts and _is_name(e) else None


def _grows(st, out: str):
    """The sequence ``out += s`` or ``out = out + s`` adds, else None."""
    if isinstance(st, ast.AugAssign) and _is_name(st.target, out) and isinstance(st.op, ast.Add):
        return st.value
    if (isinstance(st, ast.Assign) and len(st.targets) == 1 and _is_name(st.targets[0], out)
            and isinstance(st.value, ast.BinOp) and isinstance(st.value.op, ast.Add)
            and _is_name(st.value.left, out)):
        return st.value.right
    return None


def _overflow_values(rest, at: int, out: str, params, node, h):
    """What a run-time arena's early ``return`` (statement ``at`` of the combine's body
    ``rest``) gives: ``out`` and, as the combine's own ``return`` has them, its scalars --
    their values are never read (the run is redone on the CPU), but their types must be
    the combine's, so each is the return's own expression with the names not yet assigned
    replaced by their first value (``inv = 0`` after the allocation: ``0``).  A name whose
    first value is not a constant leaves the combine on the CPU path."""
    ret = rest[-1] if rest and isinstance(rest[-1], ast.Return) else next(
        (n for s in rest for n in ast.walk(s) if isinstance(n, ast.Return)), None)
    if ret is None or ret.value is None:
        return ast.Name(out, ast.Load())        # refused by the caller, with its reason
    _, scalars = _split_result(ret.value)
    stored = set(_store_counts(node)) | set(params)
    known = set(params)
    for stmt in rest[:at]:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
                known.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))

    def first_value(name):
        for stmt in rest[at:]:
            if not isinstance(stmt, ast.Assign):
                continue
            for t in stmt.targets:
                if _is_name(t, name):
                    return stmt.value
                if (isinstance(t, ast.Tuple) and isinstance(stmt.value, ast.Tuple)
                        and len(t.elts) == len(stmt.value.elts)):
                    for tt, vv in zip(t.elts, stmt.value.elts):
                        if _is_name(tt, name):
                            return vv
        return None

    def constant(e):
        return e is not None and not _mentions(e, stored) and all(
            _is_name(c.func) and c.func.id in ("float", "int", "bool")
            for c in ast.walk(e) if isinstance(c, ast.Call))

    class Sub(ast.NodeTransformer):
        def visit_Name(self, n):
            if n.id not in stored or n.id in known:
                return n
            v = first_value(n.id)
            if not constant(v):
                raise NotRewritable(
                    f"its combine {h.__name__}() allocates a size hpu checks only at run time "
                    f"(line {rest[at].lineno}) before {n.id!r} has a constant value, which "
                    "the combine's result needs when the size does not fit")
            return copy.deepcopy(v)

    values = [Sub().visit(copy.deepcopy(x)) for x in scalars]
    return (ast.Tuple([ast.Name(out, ast.Load()), *values], ast.Load()) if values
            else ast.Name(out, ast.Load()))


def _scratch_alloc(stmt, children, nps):
    """``(name, size, dtype, fill)`` of a scratch allocation statement, else None; ``dtype``
    None for the result's, an AST to resolve, or a dtype; ``fill``: what each element is
    set to (``0``, ``child[hpu_i]``) or None."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            and _is_name(stmt.targets[0]) and isinstance(stmt.value, ast.Call)):
        return None
    name, v = stmt.targets[0].id, stmt.value
    f = v.func
    if not isinstance(f, ast.Attribute):
        return None
    np_call = _is_name(f.value) and f.value.id in nps
    if (f.attr == "copy" and not v.args and not v.keywords and _is_name(f.value)
            and f.value.id in children):
        child = f.value.id
        return name, ast.parse(f"len({child})", mode="eval").body, None, f"{child}[{INDEX}]"
    if not np_call:
        return None
    if f.attr in ("copy", "empty_like", "zeros_like") and len(v.args) == 1 and not v.keywords \
            and _is_name(v.args[0]) and v.args[0].id in children:
        child = v.args[0].id
        fill = {"copy": f"{child}[{INDEX}]", "zeros_like": "0"}.get(f.attr)
        return name, ast.parse(f"len({child})", mode="eval").body, None, fill
    if f.attr in ("empty", "zeros") and v.args and len(v.args) <= 2 \
            and all(k.arg == "dtype" for k in v.keywords):
        dtype = _dtype_arg(v)
        return (name, v.args[0], np.dtype(np.float64) if dtype is None else dtype,
                "0" if f.attr == "zeros" else None)
    # CLRS's sentinel: np.append(left, np.inf), np.concatenate((left, np.array([np.inf])))
    # -- float64
    # (a float sentinel makes NumPy's result float64 whatever the child's dtype)
    pair = (v.args if f.attr == "append" and len(v.args) == 2 else
            v.args[0].elts if f.attr in ("concatenate", "hstack") and len(v.args) == 1
            and isinstance(v.args[0], (ast.Tuple, ast.List)) and len(v.args[0].elts) == 2
            else None)
    if pair is not None and not v.keywords and _is_name(pair[0]) and pair[0].id in children:
        child, last = pair[0].id, pair[1]
        if f.attr != "append":      # [v], np.array([v])
            if (isinstance(last, ast.Call) and isinstance(last.func, ast.Attribute)
                    and last.func.attr == "array" and _is_name(last.func.value)
                    and last.func.value.id in nps and len(last.args) == 1
                    and not last.keywords):
                last = last.args[0]
            if not (isinstance(last, ast.List) and len(last.elts) == 1):
                return None
            last = last.elts[0]
        if _float_sentinel(last, nps):
            return (name, ast.parse(f"len({child}) + 1", mode="eval").body,
                    np.dtype(np.float64),
                    f"({child}[{INDEX}] if {INDEX} < len({child}) else {ast.unparse(last)})")
    return None


def _float_sentinel(e, nps) -> bool:
    """A float constant: ``np.inf``, ``-math.inf``, ``float("inf")``, ``1e300``."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        e = e.operand
    if isinstance(e, ast.Constant):
        return type(e.value) is float
    if isinstance(e, ast.Attribute) and _is_name(e.value):
        return (e.value.id in nps or e.value.id == "math") and e.attr in ("inf", "nan")
    return (isinstance(e, ast.Call) and _is_name(e.func, "float") and len(e.args) == 1
            and isinstance(e.args[0], ast.Constant) and isinstance(e.args[0].value, str))


def _dtype_of(e, children, h):
    """The dtype a scratch allocation names: None for a child's (``left.dtype``: the
    result's), else the NumPy dtype of ``np.float64``, ``float``, ``"int32"``..."""
    if isinstance(e, ast.Attribute) and e.attr == "dtype" and _is_name(e.value) \
            and e.value.id in children:
        return None
    try:
        if not all(isinstance(n, (ast.Name, ast.Attribute, ast.Constant, ast.Load))
                   for n in ast.walk(e)):
            raise ValueError(e)         # a call: not evaluated here
        value = eval(compile(ast.Expression(e), "<dtype>", "eval"),  # noqa: S307
                     dict(h.__globals__))
        dt = np.dtype(value)
    except Exception:  # noqa: BLE001 - any expression that is not a plain dtype
        raise NotRewritable(f"its combine {h.__name__}() allocates with the dtype "
                            f"`{ast.unparse(e)}`, which is not one hpu can read") from None
    if dt.kind not in "iuf":
        raise NotRewritable(f"its combine {h.__name__}() allocates {dt} scratch")
    return dt


def _child_write(node, children) -> int | None:
    """The line of the first statement of the combine that may write into a child's array
    (an element or slice store, ``+=`` into one, the child passed to a function other than
    ``len``), else None."""
    for n in ast.walk(node):
        targets = (n.targets if isinstance(n, ast.Assign) else [n.target]
                   if isinstance(n, ast.AugAssign) else [])
        for t in targets:
            if isinstance(t, ast.Subscript) and _is_name(t.value) and t.value.id in children:
                return n.lineno
        if isinstance(n, ast.Call) and not _is_name(n.func, "len") and any(
                _is_name(arg) and arg.id in children for arg in n.args):
            return n.lineno
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and _is_name(n.func.value) and n.func.value.id in children):
            return n.lineno         # left.pop(0), left.sort(): a method may change it
    return None


def _empty_test(test, name: str) -> bool:
    """``not name``, ``len(name) == 0``, ``name.size == 0`` (or ``0 == ...``, ``< 1``)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _is_name(test.operand, name)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(left, ast.Constant):
        left, right = right, left
        op = {ast.Eq: ast.Eq(), ast.Gt: ast.Lt()}.get(type(op), ast.NotEq())
    return (_len_of(left) == name and isinstance(right, ast.Constant)
            and type(right.value) is int
            and ((isinstance(op, ast.Eq) and right.value == 0)
                 or (isinstance(op, ast.Lt) and right.value == 1)
                 or (isinstance(op, ast.LtE) and right.value == 0)))


def _copied_returns(stmts, out: str, p: str, q: str) -> None:
    """``if not q: return p`` (``p``, ``q`` the combine's two children, either way round;
    ``len(q) == 0`` too, and ``elif``) -> ``out[:] = p`` then ``return out``: the merge
    that hands back one child when the other is empty.  The guard makes ``p`` as long as
    ``out`` (``len(p) + len(q)``); the copy runs as any slice assignment (hpu._views)."""
    for s in stmts:
        if not isinstance(s, ast.If):
            continue
        last = s.body[-1] if s.body else None
        if isinstance(last, ast.Return) and last.value is not None:
            arr, scalars = _split_result(last.value)
            for kept, empty in ((p, q), (q, p)):
                if _is_name(arr, kept) and _empty_test(s.test, empty) \
                        and not any(_mentions(x, {kept}) for x in scalars):
                    store = ast.Assign([ast.Subscript(ast.Name(out, ast.Load()),
                                                      ast.Slice(None, None, None), ast.Store())],
                                       ast.Name(kept, ast.Load()))
                    ret = ast.Return(ast.Name(out, ast.Load()) if not scalars else
                                     ast.Tuple([ast.Name(out, ast.Load()), *scalars], ast.Load()))
                    s.body[-1:] = [ast.copy_location(store, last), ast.copy_location(ret, last)]
                    ast.fix_missing_locations(s)
                    break
        _copied_returns(s.orelse, out, p, q)


def _value_of(scalars):
    """What a rewritten ``return`` gives: nothing, the one scalar, or their tuple."""
    return None if not scalars else scalars[0] if len(scalars) == 1 else ast.Tuple(scalars,
                                                                                    ast.Load())


def _names_of(target):
    """The names of an assignment's target (``x`` or ``x, k``), else None."""
    if _is_name(target):
        return [target.id]
    if isinstance(target, ast.Tuple) and all(_is_name(e) for e in target.elts):
        return [e.id for e in target.elts]
    return None


def _call_statement(call, names):
    """``call`` as a statement whose scalars (``names[1:]``) are assigned: the array part of
    the result is the buffer now."""
    if len(names) == 1:
        return ast.Expr(call)
    target = (ast.Name(names[1], ast.Store()) if len(names) == 2 else
              ast.Tuple([ast.Name(x, ast.Store()) for x in names[1:]], ast.Store()))
    return ast.Assign([target], call)


def _clamp(cut: str, bound, a: str, lineno_of) -> list:
    """``cut = bound`` clamped as a slice bound of ``a`` is."""
    src = (f"{cut} = {ast.unparse(bound)}\n"
           f"if {cut} < 0:\n    {cut} = {cut} + len({a})\n"
           f"{cut} = min(max({cut}, 0), len({a}))")
    stmts = ast.parse(src).body
    for s in stmts:
        for n in ast.walk(s):
            ast.copy_location(n, lineno_of)
    return stmts


#: the task's slice of the array in the span form (``f(arr, lo, hi)``): ``arr[lo:hi]``
SLICE = "hpu_s"


def _width(n, lo: str, hi: str) -> bool:
    """``n`` is ``hi - lo``."""
    return (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub)
            and _is_name(n.left, hi) and _is_name(n.right, lo))


def _midpoint(e, lo: str, hi: str) -> bool:
    """``e`` is ``(lo + hi) // 2``, ``(lo + hi + 1) // 2``, ``lo + (hi - lo) // 2`` or
    ``lo + (hi - lo + 1) // 2`` (either order of a sum): inside ``[lo, hi]`` whenever
    ``lo <= hi``, so the two calls' slices are the task's, split."""
    def is_(n, x):
        return _is_name(n, x)

    def pair(n, x, y):      # x + y in either order
        return isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add) and (
            (is_(n.left, x) and is_(n.right, y)) or (is_(n.left, y) and is_(n.right, x)))

    def half(n, inner):     # inner // 2, inner (+ 1) // 2
        if not (isinstance(n, ast.BinOp) and isinstance(n.op, ast.FloorDiv)
                and isinstance(n.right, ast.Constant) and n.right.value == 2
                and type(n.right.value) is int):
            return False
        t = n.left
        if isinstance(t, ast.BinOp) and isinstance(t.op, ast.Add) \
                and isinstance(t.right, ast.Constant) and t.right.value == 1 \
                and type(t.right.value) is int:
            t = t.left
        return inner(t)

    def width(t):
        return _width(t, lo, hi)

    if half(e, lambda t: pair(t, lo, hi)):
        return True
    return isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add) and (
        (is_(e.left, lo) and half(e.right, width)) or (is_(e.right, lo) and half(e.left, width)))


def _span_form(node, name: str):
    """``(arr, lo, hi)`` of a function written ``f(arr, lo, hi)`` whose calls are
    ``f(arr, lo, m)`` and ``f(arr, m, hi)`` with ``m`` a midpoint (:func:`_midpoint`, or a name
    assigned one once), none of the three ever reassigned; else :class:`NotRewritable`.
    The tree is rewritten in place into the one-array form on ``hpu_s = arr[lo:hi]``:
    ``arr[lo:hi]`` -> ``hpu_s``, ``hi - lo`` -> ``len(hpu_s)``, the calls ->
    ``f(hpu_s[:m - lo])`` and ``f(hpu_s[m - lo:])`` -- which :func:`rewrite` then takes as
    it takes a function of one array, and writes back as ``f(arr, lo, lo + c, ...)``."""
    arr, lo, hi = (p.arg for p in node.args.args)
    stores = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            stores[n.id] = stores.get(n.id, []) + [n]
    for p in (arr, lo, hi):
        if p in stores:
            raise NotRewritable(f"it assigns its parameter {p} (line {stores[p][0].lineno})")
    mids = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and _is_name(n.targets[0]) \
                and len(stores.get(n.targets[0].id, ())) == 1 and _midpoint(n.value, lo, hi):
            mids[n.targets[0].id] = n.value
    calls = _self_calls(node, name)
    cut = None
    for c in calls:
        if len(c.args) != 3 or c.keywords or not _is_name(c.args[0], arr):
            raise NotRewritable(f"a recursive call does not pass {arr} and two bounds (line "
                                f"{c.lineno})")
        first = _is_name(c.args[1], lo)
        e = c.args[2] if first else c.args[1]
        if not (first or _is_name(c.args[2], hi)):
            raise NotRewritable(f"a recursive call is not on [{lo}, m) or [m, {hi}) (line "
                                f"{c.lineno})")
        if not (_midpoint(e, lo, hi) or (_is_name(e) and e.id in mids)):
            raise NotRewritable(f"a recursive call splits at `{ast.unparse(e)}` (line "
                                f"{c.lineno}), not at a midpoint of [{lo}, {hi}) such as "
                                f"({lo} + {hi}) // 2")
        if cut is not None and ast.dump(cut) != ast.dump(e):
            raise NotRewritable("its recursive calls split at different places")
        cut = e
        offset = ast.BinOp(copy.deepcopy(e), ast.Sub(), ast.Name(lo, ast.Load()))
        view = ast.Subscript(ast.Name(SLICE, ast.Load()),
                             ast.Slice(None if first else offset, offset if first else None,
                                       None), ast.Load())
        c.args = [view]
        for n in ast.walk(c):
            ast.copy_location(n, c)

    def whole(n):
        return (isinstance(n, ast.Subscript) and _is_name(n.value, arr)
                and isinstance(n.slice, ast.Slice) and n.slice.step is None
                and _is_name(n.slice.lower, lo) and _is_name(n.slice.upper, hi))

    class Sub(ast.NodeTransformer):
        def visit(self, n):
            if isinstance(n, ast.expr) and whole(n):
                return ast.copy_location(ast.Name(SLICE, ast.Load()), n)
            if isinstance(n, ast.expr) and _width(n, lo, hi):
                return ast.copy_location(ast.Call(ast.Name("len", ast.Load()),
                                                  [ast.Name(SLICE, ast.Load())], []), n)
            return super().visit(n)

    node.body = [Sub().visit(st) for st in node.body]
    bind = ast.parse(f"{SLICE} = {arr}[{lo}:{hi}]").body[0]
    for n in ast.walk(bind):
        ast.copy_location(n, node.body[0])
    node.body.insert(0, bind)
    ast.fix_missing_locations(node)
    return arr, lo, hi


def rewrite(dc) -> Rewritten:
    """The in-place form of the decorated functional function ``dc``: on its children's
    slices (module docstring), or on the pieces it filters its input into
    (:mod:`hpu._functional_partition`); else :class:`NotRewritable` with the reason."""
    try:
        return _rewrite_slices(dc)
    except NotRewritable as err:
        first = _in_user_names(err, dc.py_func)
        from hpu._functional_partition import NotPartition, rewrite_partition

        try:
            return rewrite_partition(dc)
        except NotPartition:
            raise first from None


def _in_user_names(err: NotRewritable, fn) -> NotRewritable:
    """``err`` in the user's names: the span form ``f(arr, lo, hi)`` is read on hpu's one
    slice ``hpu_s`` (:func:`_span_form`), which a reason says as ``arr[lo:hi]``."""
    import re

    text = str(err)
    if not re.search(rf"\b{SLICE}\b", text):
        return err
    try:
        params = [p.arg for p in _tree(fn)[0].args.args]
    except Exception:  # noqa: BLE001 - no source: the reason stays as it is
        return err
    if len(params) < 3:
        return err
    arr, lo, hi = params[:3]
    return NotRewritable(re.sub(rf"\b{SLICE}\b", f"{arr}[{lo}:{hi}]", text))


def _passed_on(node, name: str):
    """``(node, extras)``: the function's trailing parameters (keyword-only ones included)
    that every recursive call passes on unchanged -- ``msort(a[:m], cutoff)``,
    ``msort(a, lo, m, reverse=reverse)`` -- and that nothing assigns, as ``extras``, and
    ``node`` without them, its calls without their arguments: the rest of :func:`rewrite`
    reads a function of one array (or of an array and its bounds) as before, and the form
    takes them back after its core parameters, ``f(a, *extras, hpu_buf, ...)``, each call
    passing them on.  The run passes their values at the call (scalars: else the CPU path
    runs, as written).  A parameter some call changes, or leaves to its default (the
    default, not the caller's value, in Python), is no extra."""
    node = copy.deepcopy(node)
    args = node.args
    if args.vararg or args.kwarg or args.posonlyargs:
        return node, ()
    params = [p.arg for p in args.args]
    kwonly = [p.arg for p in args.kwonlyargs]
    stored = {n.id for n in ast.walk(node)
              if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    calls = _self_calls(node, name)

    def passed(k, p):
        for c in calls:
            by_kw = [kw for kw in c.keywords if kw.arg == p]
            if k is not None and k < len(c.args):
                ok = _is_name(c.args[k], p) and not by_kw
            else:
                ok = len(by_kw) == 1 and _is_name(by_kw[0].value, p)
            if not ok:
                return False
        return p not in stored

    if not calls or not all(passed(None, p) for p in kwonly) or any(
            isinstance(x, ast.Starred) for c in calls for x in c.args) or any(
            kw.arg is None for c in calls for kw in c.keywords):
        return node, ()
    trailing = []
    for k in range(len(params) - 1, 0, -1):
        if not passed(k, params[k]):
            break
        trailing.insert(0, params[k])
    extras = tuple(trailing + kwonly)
    if not extras:
        return node, ()
    core = len(params) - len(trailing)
    for c in calls:
        c.args = c.args[:core]
        c.keywords = [kw for kw in c.keywords if kw.arg not in extras]
    args.args = args.args[:core]
    args.defaults = args.defaults[:max(0, len(args.defaults) - len(trailing))]
    args.kwonlyargs, args.kw_defaults = [], []
    return node, extras


def _split_pairs(stmts):
    """``L, R = x, y`` as ``L = x`` then ``R = y`` (no value reads a name the line sets)."""
    out = []
    for st in stmts:
        if (isinstance(st, ast.Assign) and len(st.targets) == 1
                and isinstance(st.targets[0], ast.Tuple) and isinstance(st.value, ast.Tuple)
                and len(st.targets[0].elts) == len(st.value.elts)
                and all(_is_name(t) for t in st.targets[0].elts)):
            names = {t.id for t in st.targets[0].elts}
            if not any(_is_name(n) and n.id in names for v in st.value.elts
                       for n in ast.walk(v)):
                for t, v in zip(st.targets[0].elts, st.value.elts):
                    out.append(ast.copy_location(ast.Assign([t], v), st))
                continue
        out.append(st)
    return out


def _named_slices_inlined(node, name: str, a: str) -> None:
    """``left = a[:mid]`` (or ``left, right = a[:mid], a[mid:]``) then ``left = f(left)`` or
    ``sl = f(left)`` or ``return merge(f(left), f(right))``: the slice written into the
    call, ``f(a[:mid])``, and its name's assignment dropped, in place -- the children as
    the form reads them (a recursive call on a slice of ``a``).  Only in one block, where
    the name is read once, by that call (as its first argument), before it is bound again
    (by the call's own statement, or never read afterwards), and nothing in between assigns
    ``a``, the name, or a name the slice's bounds read: the view the name held is the
    slice the call is given."""
    def loads(st, x):
        return [n for n in ast.walk(st) if isinstance(n, ast.Name) and n.id == x
                and isinstance(n.ctx, ast.Load)]

    def stores(st):
        return {n.id for n in ast.walk(st) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Store)}

    def sliced(e):
        return (isinstance(e, ast.Subscript) and _is_name(e.value, a)
                and isinstance(e.slice, ast.Slice) and e.slice.step is None)

    def split(stmts):       # the pairs of slices only: other pairs are read as written
        return [x for st in stmts for x in (
            _split_pairs([st]) if isinstance(st, ast.Assign)
            and isinstance(st.value, ast.Tuple) and all(sliced(v) for v in st.value.elts)
            else [st])]

    def block(stmts):
        out = split(stmts)
        for st in out:
            for field_ in ("body", "orelse"):
                inner = getattr(st, field_, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(st, field_, block(inner))
        i = 0
        while i < len(out):
            st = out[i]
            if not (isinstance(st, ast.Assign) and len(st.targets) == 1
                    and isinstance(st.targets[0], ast.Name) and sliced(st.value)):
                i += 1
                continue
            x = st.targets[0].id
            bounds = {n.id for n in ast.walk(st.value) if isinstance(n, ast.Name)}
            use = None
            for j in range(i + 1, len(out)):
                if loads(out[j], x):
                    use = j
                    break
                if stores(out[j]) & (bounds | {x}):
                    break
            if use is None:
                i += 1
                continue
            s2 = out[use]
            calls = [c for c in ast.walk(s2) if isinstance(c, ast.Call)
                     and _is_name(c.func, name) and c.args and _is_name(c.args[0], x)]
            if len(calls) != 1 or len(loads(s2, x)) != 1 or isinstance(
                    s2, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
                i += 1
                continue
            call = calls[0]
            rebound = x in stores(s2)
            later = [n for st2 in out[use + 1:] for n in loads(st2, x)]
            if not rebound and (later or sum(len(loads(t, x)) for t in node.body) != 1):
                i += 1
                continue
            call.args[0] = copy.deepcopy(st.value)
            del out[i]
        return out

    node.body = block(node.body)
    ast.fix_missing_locations(node)


def _rewrite_slices(dc) -> Rewritten:
    """The in-place form on the children's slices (module docstring)."""
    import types

    fn = dc.py_func
    from hpu._errors import TranslationError

    try:
        node, text, start = _tree(fn)
    except TranslationError:
        raise NotRewritable("its source cannot be read") from None
    name = node.name
    node, extras = _passed_on(node, name)
    _lists_returned_as_arrays(node, _numpy_names(fn.__globals__))
    params = [p.arg for p in node.args.args]
    if len(params) == 1:        # l, r = np.array_split(a, 2); left = a[:m]; left = f(left)
        from hpu._functional import array_splits_as_slices

        array_splits_as_slices(node, fn.__globals__)
        _named_slices_inlined(node, name, params[0])
    if node.args.vararg or node.args.kwarg or node.args.kwonlyargs or len(params) not in (1, 3):
        raise NotRewritable("it takes other parameters than one array, or an array and the "
                            "two bounds of its slice, and parameters every recursive call "
                            "passes on unchanged")
    span = None
    if len(params) == 3:        # f(arr, lo, hi): on the slice arr[lo:hi] (_span_form)
        _own_names_free({n.id for n in ast.walk(node) if isinstance(n, ast.Name)}, name)
        span = _span_form(node, name)
        a = SLICE
    else:
        a = params[0]
    glb = fn.__globals__
    nps = _numpy_names(glb)
    own = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    _own_names_free(own - {SLICE}, name)
    used = own | set(glb)
    half = f"(len({BUF}) // 2)"

    region = f"{PARITY} * {half} + {AT}"     # where a task's result starts in the buffer

    def copy_into(at_line, arr):
        at = region
        src = (f"for {INDEX} in range(len({a})):\n"
               f"    {BUF}[{at} + {INDEX}] = {a}[{INDEX}]")
        if _sorted_of(arr, a, nps):
            # np.sort(a): the copy sorted in place (a heapsort), NaNs last as NumPy's
            src += "\n" + _heap_sort(BUF, f"{at} + ", f"len({a})")
        loops = ast.parse(src).body
        for loop in loops:
            for n in ast.walk(loop):
                ast.copy_location(n, at_line)
        return loops

    body = _else_lifted(node.body, name)
    out_body = []
    scalars = None
    other_dtype = False     # an empty base case of another dtype than the argument's
    aliased = 0             # the line of a base case returning `a` itself (a view), if any

    def returns_of(block):
        return [n for s in block for n in ast.walk(s) if isinstance(n, ast.Return)]

    def set_arity(k, where):
        nonlocal scalars
        if scalars not in (None, k):
            raise NotRewritable(f"its returns differ in length (line {where.lineno})")
        scalars = k

    # scalar statements before the guards (`n = len(a)`), kept as they are
    while body and isinstance(body[0], ast.Assign) and all(
            _is_name(t) for t in body[0].targets) and not _self_calls(body[0], name) \
            and _allocation_in(ast.Module([body[0]], []), glb) is None:
        out_body.append(copy.deepcopy(body.pop(0)))
    leading = len(out_body)
    # leading guards: base cases that return a copy of their slice
    while body and isinstance(body[0], ast.If) and not _self_calls(body[0], name):
        g = copy.deepcopy(body.pop(0))
        if g.orelse:
            raise NotRewritable(f"a guard has an else branch (line {g.lineno})")
        if not isinstance(g.body[-1], ast.Return):
            raise NotRewritable(f"a guard does not end in a return (line {g.lineno})")
        for r in returns_of(g.body):
            if r is not g.body[-1]:
                raise NotRewritable(f"a guard returns from inside a block (line {r.lineno})")
        ret = g.body[-1]
        if ret.value is None:
            raise NotRewritable(f"a base case returns nothing (line {ret.lineno})")
        arr, sc = _split_result(ret.value)
        before = list(g.body)
        inlined = _base_helper_inlined(g, arr, a, fn, used, {a, *params, *(
            n.id for n in ast.walk(node)
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load))})
        worked = _worked_copy(g, arr if inlined is None else inlined, a, nps)
        if inlined is not None:
            if worked is None:          # not a copy worked on: the helper's call, as written
                g.body = before
            else:
                arr = inlined
        if worked is not None:
            # `b = a.copy(); <b sorted or changed in place>; return b`: b is the task's
            # region of the buffer, a copied into it first (the insertion-sort cutoff)
            bind = ast.parse(f"{arr.id} = {BUF}[{region}:{region} + len({a})]").body[0]
            for n in ast.walk(bind):
                ast.copy_location(n, g.body[worked])
            g.body[worked:worked + 1] = [*copy_into(g.body[worked], ast.Name(a, ast.Load())),
                                         bind]
            g.body = [x for st in g.body for x in _sort_as_loops(st, arr.id)]
            set_arity(len(sc), ret)
            ret.value = _value_of(sc)
            out_body.append(g)
            continue
        empty = _empty_of(arr, a, nps)
        if empty is not None and _empty_test(g.test, a) and not any(
                isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == a
                for n in ast.walk(g)):
            # `if len(a) == 0: return np.zeros(0, a.dtype)`: as long as its slice, as a copy
            # is; another dtype than a's leaves the result's dtype to Numba's typing
            other_dtype = other_dtype or not empty[1]
        elif _one_of(arr, a, nps) and _one_test(g.test, a):
            pass        # `if len(a) == 1: return [a[0]]`: a new copy of its one element
        elif _float_astype(arr, a, fn):
            # `a.astype(np.float64)`: a copy whose stores convert, as astype does from ints
            # or floats to floats; the result's dtype is left to Numba's typing
            other_dtype = True
        elif not (_copy_of(arr, a, nps) or _sorted_of(arr, a, nps)):
            raise NotRewritable(f"a base case returns `{ast.unparse(arr)}` (line {ret.lineno}), "
                                f"not a copy of {a}")
        elif not (isinstance(arr, ast.Call)):       # `a`, `a[:]`: the caller's own elements
            aliased = aliased or ret.lineno
        set_arity(len(sc), ret)
        ret.value = _value_of(sc)
        g.body = g.body[:-1] + [*copy_into(ret, arr), ret]
        out_body.append(g)
    if len(out_body) == leading:
        raise NotRewritable("it has no leading `if ...: return` base case")

    body = _slice_names_inlined(_pairs_split(body, name), node, a, name)
    # the recursive part: hoist the calls out of the combine and the return
    stmts = []
    tmp = iter(range(1_000_000))

    shown: dict[str, str] = {}          # hpu_r<k> -> the call it stands for, as written

    def as_written(e) -> str:
        """``e`` as the user wrote it: each hoisted call's name read as the call."""
        e = copy.deepcopy(e)
        for n in ast.walk(e):
            if isinstance(n, ast.Name) and n.id in shown:
                n.id = shown[n.id]
        return ast.unparse(e)

    def hoist(e, at):
        """``e`` with every self-call inside replaced by a fresh name, assigned before."""
        class H(ast.NodeTransformer):
            def visit_Call(self, c):
                self.generic_visit(c)
                if _is_name(c.func, name):
                    t = f"hpu_r{next(tmp)}"
                    shown[t] = ast.unparse(c)
                    stmts.append(ast.copy_location(ast.Assign([ast.Name(t, ast.Store())], c), at))
                    return ast.copy_location(ast.Name(t, ast.Load()), c)
                return c
        return H().visit(e)

    for s in body:
        if isinstance(s, ast.Return) and s.value is not None:
            value = hoist(copy.deepcopy(s.value), s)
            arr, sc = _split_result(value)
            if isinstance(arr, ast.Call):
                t = f"hpu_r{next(tmp)}"
                shown[t] = as_written(arr)
                stmts.append(ast.copy_location(ast.Assign([ast.Name(t, ast.Store())], arr), s))
                arr = ast.Name(t, ast.Load())
            value = arr if not sc else ast.Tuple([arr, *sc], ast.Load())
            stmts.append(ast.copy_location(ast.Return(value), s))
        elif isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.value, ast.Call) \
                and not _is_name(s.value.func, name) and _self_calls(s.value, name):
            value = hoist(copy.deepcopy(s.value), s)
            stmts.append(ast.copy_location(ast.Assign(s.targets, value), s))
        else:               # a call inside a block is refused below: not assigned on its own
            stmts.append(copy.deepcopy(s))
    if not stmts or not isinstance(stmts[-1], ast.Return):
        raise NotRewritable("its recursive case does not end in a return")
    if returns_of(stmts[:-1]):
        raise NotRewritable("its recursive case returns from more than one place")

    # classify: the two calls, the one combine, scalar statements
    calls = []      # (index, target names, lower, upper)
    combine = None  # (index, helper, target names)
    for i, s in enumerate(stmts):
        inner = _self_calls(s, name)
        if not inner:
            continue
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and s.value is inner[0]
                and len(inner) == 1):
            raise NotRewritable(f"a recursive call is not assigned on its own (line {s.lineno})")
        bounds = _slice_of(s.value, a)
        if bounds is None:
            raise NotRewritable(f"a recursive call is not on a slice of {a} (line {s.lineno})")
        names = _names_of(s.targets[0])
        if names is None:
            raise NotRewritable(f"a recursive call's result is unpacked into something other "
                                f"than names (line {s.lineno})")
        calls.append((i, names, *bounds))
    if len(calls) < 2:
        raise NotRewritable(f"it makes {len(calls)} recursive call, not two or more")
    if len(calls) > 2 and span is not None:
        raise NotRewritable(f"it makes {len(calls)} recursive calls on bounds of its array: "
                            "the device form of f(arr, lo, hi) is for two halves")
    pieces = _pieces(calls)     # in the array's order, whatever the calls' order
    if pieces is None:
        raise NotRewritable(
            "its two recursive calls are not on a[:e] and a[e:] with the same e"
            if len(calls) == 2 else
            f"its {len(calls)} recursive calls are not on consecutive slices of {a} "
            "(a[:e1], a[e1:e2], ..., a[ek:], each bound as the slice before it ends)")
    k_ways = len(pieces)
    n1 = pieces[0][1]                       # the first child's result names
    at_of = {p[0]: j for j, p in enumerate(pieces)}     # statement -> piece
    last = max(at_of)
    results = {p[1][0] for p in pieces}
    if len({len(p[1]) for p in pieces}) != 1 or len(results) != k_ways:
        raise NotRewritable("its recursive calls' results are unpacked differently")
    outlined = {}       # a combine written inline: its helper, by name
    by_call = {id(stmts[i]): j for i, j in at_of.items()}
    stmts = _nested_combines(stmts, results, name, glb, used, outlined, as_written,
                             (inspect.getsourcefile(fn) or fn.__code__.co_filename, text, start))
    # (a folded chain drops statements: the calls' places again)
    at_of = {i: by_call[id(st)] for i, st in enumerate(stmts) if id(st) in by_call}
    last = max(at_of)

    def helper_call(s):
        """``x = helper(..., left, ...)``: a call of a Python function (not ``len``) that
        takes a child's array."""
        return (isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)
                and _is_name(s.value.func) and _mentions(s.value, results)
                and (s.value.func.id in outlined
                     or isinstance(glb.get(s.value.func.id), types.FunctionType)))

    if not any(helper_call(s) for s in stmts[last + 1:]):
        stmts, hfn = _outlined(stmts, last, tuple(p[1][0] for p in pieces), a,
                               out_body + stmts[:last + 1], name, fn, used, text, start,
                               extras)
        outlined[hfn.__name__] = hfn
    for i, s in enumerate(stmts):
        if i in at_of:
            continue
        if helper_call(s):
            if combine is not None:
                raise NotRewritable("its children's arrays go to more than one call")
            h = outlined.get(s.value.func.id) or glb.get(s.value.func.id)
            if not isinstance(h, types.FunctionType):
                raise NotRewritable(f"its combine {s.value.func.id}() is not a Python function")
            positions = []
            for k, arg in enumerate(s.value.args):
                if _is_name(arg) and arg.id in results:
                    positions.append((k, arg.id))
                elif _mentions(arg, results):
                    raise NotRewritable(f"a child's array is used in `{as_written(arg)}` "
                                        "(the device form passes each child's array to the "
                                        "combine as it is: write the combine as one helper "
                                        "taking them all)")
            order = [r for _, r in positions]
            if sorted(order) != sorted(results) or s.value.keywords:
                raise NotRewritable(f"its combine {h.__name__}() does not take the "
                                    f"{'two' if k_ways == 2 else k_ways} children's arrays, "
                                    "once each, by position")
            combine = (i, h, s, positions)
        elif _mentions(s, results) and not isinstance(s, ast.Return):
            raise NotRewritable(f"a child's array is used outside the combine (line "
                                f"{getattr(s, 'lineno', '?')})")
    if combine is None:
        raise NotRewritable("its children's arrays are not combined by a helper")
    ci, h, cs, positions = combine
    if ci < last:
        raise NotRewritable("its combine comes before its second recursive call")
    new_h, h_text, h_start, h_scalars, same, scratch, writes, checked = _helper_into(
        h, tuple(k for k, _ in positions), used)
    if aliased and writes:
        raise NotRewritable(f"a base case returns {a} itself (line {aliased}), a view of the "
                            f"caller's array, and its combine {h.__name__}() may write into "
                            f"its children (line {writes}): in Python those writes reach the "
                            "caller's array")
    bufs = [scr.buf for scr in scratch]         # passed down unchanged, as hpu_buf is
    # the flag: the helper's run-time checks take it, and a k-way split's order of cuts
    arena = checked or k_ways > 2
    if arena:
        bufs.append(ARENA)
    merged = _names_of(cs.targets[0])
    if merged is None or len(merged) != 1 + h_scalars:
        raise NotRewritable(f"its combine's result is unpacked as "
                            f"`{ast.unparse(cs.targets[0])}`, not as "
                            f"{h.__name__}() returns it")
    ret = stmts[-1]
    arr, sc = _split_result(ret.value)
    if not _is_name(arr, merged[0]) or _mentions(ast.Tuple(sc, ast.Load()), {merged[0]} | results):
        raise NotRewritable(f"it returns `{as_written(ret.value)}`, not its combine's array "
                            "first")
    set_arity(len(sc), ret)
    if len(n1) != 1 + scalars:
        raise NotRewritable("its recursive calls' results are unpacked differently from its "
                            "returns")
    for i, s in enumerate(stmts[:-1]):
        if i not in at_of and i != ci and _mentions(s, {merged[0]}):
            raise NotRewritable(f"its combine's array is used outside the return (line {s.lineno})")
    # the statements, rewritten
    q = f"((1 - {PARITY}) * {half} + {AT})"
    mine = f"{PARITY} * {half} + {AT}"

    def view(lo, hi):
        return ast.parse(f"{BUF}[{lo}:{hi}]", mode="eval").body

    # the cuts: CUT, then hpu_c2, hpu_c3... (a k-way split); the pieces' bounds in the
    # task's slice and the children's results in the buffer, hpu_q0 ... hpu_q<k>
    cuts = [CUT] + [f"{CUT}{j}" for j in range(2, k_ways)]
    qs = [f"hpu_q{j}" for j in range(k_ways + 1)]
    new_stmts = []
    for i, s in enumerate(stmts):
        if i == min(at_of):
            for j, c in enumerate(cuts):
                new_stmts.extend(_clamp(c, pieces[j][3], a, s))
            if k_ways > 2:
                new_stmts.extend(_ordered_cuts(cuts, s))
        if i in at_of:
            j = at_of[i]
            first = j == 0
            if span is None:
                sub = (f"{a}[{'' if first else cuts[j - 1]}:"
                       f"{cuts[j] if j < len(cuts) else ''}]")
            else:                       # the bounds of the half, as the user wrote them
                arr_, lo_, hi_ = span
                sub = (f"{arr_}, {lo_}, {lo_} + {CUT}" if first
                       else f"{arr_}, {lo_} + {CUT}, {hi_}")
            at = AT if first else f"{AT} + {cuts[j - 1]}"
            more = "".join(f", {b}" for b in bufs)
            sub += "".join(f", {e}" for e in extras)
            call = ast.parse(f"{name}({sub}, {BUF}, {at}, 1 - {PARITY}{more})",
                             mode="eval").body
            new = _call_statement(call, pieces[j][1])
        elif i == ci:
            bounds = ast.parse(f"{Q0} = {q}\n"
                               + "".join(f"{qs[j + 1]} = {Q0} + {c}\n"
                                         for j, c in enumerate(cuts))
                               + f"{qs[-1]} = {Q0} + len({a})\n"
                               f"{M0} = {mine}\n{M1} = {M0} + len({a})").body
            for b in bounds:
                for n in ast.walk(b):
                    ast.copy_location(n, s)
            new_stmts.extend(bounds)
            args = list(s.value.args)
            piece_of = {p[1][0]: j for j, p in enumerate(pieces)}
            for k, r in positions:
                args[k] = view(qs[piece_of[r]], qs[piece_of[r] + 1])
            args.append(view(M0, M1))
            for scr in scratch:     # the buffer, and this task's region: width * at
                width = f"{ARENA}[1]" if scr.width is None else scr.width
                args += [ast.Name(scr.buf, ast.Load()),
                         ast.parse(f"{width} * {AT}", mode="eval").body]
            if checked:             # (the helper takes the flag)
                args.append(ast.Name(ARENA, ast.Load()))
            new = _call_statement(ast.Call(ast.Name(new_h.name, ast.Load()), args, []), merged)
        elif s is ret:
            new = ast.Return(_value_of(sc))
        else:
            new = s
        for n in ast.walk(new):
            ast.copy_location(n, s)
        new_stmts.append(new)
    main = ast.FunctionDef(name=name, args=ast.arguments(
        posonlyargs=[], args=[*(ast.arg(p) for p in (*(span or (a,)), *extras)),
                              ast.arg(BUF), ast.arg(AT),
                              ast.arg(PARITY),
                              *(ast.arg(b) for b in bufs)],
        kwonlyargs=[], kw_defaults=[], defaults=[]), body=out_body + new_stmts,
        decorator_list=[], returns=None, type_params=[])
    ast.copy_location(main, node)
    ast.fix_missing_locations(main)
    # function objects the frontend reads the trees of (hpu._frontend._source_of)
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    hfile = inspect.getsourcefile(h) or h.__code__.co_filename
    new_glb = dict(glb)
    hfn = _function(new_h, h.__globals__, hfile)
    hfn.__hpu_tree__ = (new_h, hfile, h_text, h_start)
    # messages name the user's helper, not merge_into (an outlined combine: the function)
    hfn.__hpu_shown__ = getattr(h, "__hpu_shown__", h.__name__)
    hfn.__hpu_own__ = getattr(h, "__hpu_own__", False)
    new_glb[new_h.name] = hfn
    mfn = _function(main, new_glb, filename)
    mfn.__hpu_tree__ = (main, filename, text, start)
    new_glb[name] = mfn
    plus = bool(getattr(h, "__hpu_plus__", False))     # lists joined by `+`: lists only
    return Rewritten(fn=mfn, scalars=scalars, same_dtype=same and not other_dtype,
                     returns_list=plus,
                     scratch=tuple((scr.width, scr.dtype) for scr in scratch), arena=arena,
                     span=span, extra=extras)


def _starts(lo) -> bool:
    return lo is None or (isinstance(lo, ast.Constant) and lo.value == 0)


def _pieces(calls):
    """The calls ``(index, names, lower, upper)`` in the order of their slices when they
    are ``a[:e1]``, ``a[e1:e2]``, ..., ``a[ek:]`` (each lower bound written as the slice
    before it ends, in whatever order the calls come), else None."""
    firsts = [c for c in calls if _starts(c[2]) and c[3] is not None]
    if len(firsts) != 1:
        return None
    chain, rest = [firsts[0]], [c for c in calls if c is not firsts[0]]
    while rest:
        end = chain[-1][3]
        if end is None:
            return None
        nxt = [c for c in rest if c[2] is not None and ast.dump(c[2]) == ast.dump(end)]
        if len(nxt) != 1:
            return None
        chain.append(nxt[0])
        rest.remove(nxt[0])
    return chain if chain[-1][3] is None else None


def _ordered_cuts(cuts, where) -> list:
    """A k-way split's clamped cuts out of order (``a[e1:e2]`` with ``e2 < e1``: Python's
    pieces then overlap, and their results are not as long as the input together): the
    flag (:data:`PIECES_ORDER`), the run redone on the CPU, and the cuts made ordered so that
    this task's writes stay inside its slice meanwhile."""
    src = "".join(f"if {b} < {c}:\n    {ARENA}[0] = {PIECES_ORDER}\n    {b} = {c}\n"
                  for c, b in zip(cuts, cuts[1:]))
    stmts = ast.parse(src).body
    for st in stmts:
        for n in ast.walk(st):
            ast.copy_location(n, where)
    return stmts


def _pairs_split(body, name: str) -> list:
    """``left, right = f(a[:m]), f(a[m:])`` as two assignments, in order (the same, as no
    value reads a name the line assigns)."""
    out = []
    for st in body:
        if (isinstance(st, ast.Assign) and len(st.targets) == 1
                and isinstance(st.targets[0], ast.Tuple) and isinstance(st.value, ast.Tuple)
                and len(st.targets[0].elts) == len(st.value.elts)
                and all(_is_name(t) for t in st.targets[0].elts)
                and _self_calls(st.value, name)
                and not _mentions(st.value, {t.id for t in st.targets[0].elts})):
            for t, v in zip(st.targets[0].elts, st.value.elts):
                out.append(ast.copy_location(ast.Assign([copy.deepcopy(t)], copy.deepcopy(v)),
                                             st))
            continue
        out.append(st)
    return out


def _slice_names_inlined(body, node, a: str, name: str) -> list:
    """``p = a[0:mid]`` ... ``f(p)``: the halves named before the calls, as people write
    them, put back into the calls (``f(a[0:mid])``) when the name is assigned once and used
    only as a call's argument, and the names its bounds read are assigned once."""
    counts = _store_counts(node)
    body = copy.deepcopy(body)          # the tree may be the frontend's, kept
    calls = _self_calls(ast.Module(body, []), name)
    out = []
    for st in body:
        if (isinstance(st, ast.Assign) and len(st.targets) == 1 and _is_name(st.targets[0])
                and isinstance(st.value, ast.Subscript) and _is_name(st.value.value, a)
                and isinstance(st.value.slice, ast.Slice) and st.value.slice.step is None
                and counts.get(st.targets[0].id) == 1
                and all(counts.get(n.id, 0) <= 1 for n in ast.walk(st.value.slice)
                        if isinstance(n, ast.Name))):
            alias = st.targets[0].id
            uses = [n for s2 in body for n in ast.walk(s2)
                    if isinstance(n, ast.Name) and n.id == alias and isinstance(n.ctx, ast.Load)]
            args = [c for c in calls if len(c.args) == 1 and not c.keywords
                    and _is_name(c.args[0], alias)]
            if uses and len(args) == len(uses):
                for c in args:
                    c.args[0] = ast.copy_location(copy.deepcopy(st.value), c.args[0])
                continue
        out.append(st)
    return out


def _registered(tree, glb, where, s, kids, used, outlined, **marks):
    """The combine ``tree`` hpu wrote, made a function (its source ``where``: ``(file, text,
    first line)``) under a fresh name kept in ``outlined``, with ``marks`` (``shown``,
    ``own``, ``plus``) as its ``__hpu_<mark>__`` attributes; returns ``s``'s targets
    assigned its call on the children ``kids``."""
    key = _fresh(f"hpu_{tree.name}", used | set(outlined))
    filename, text, start = where
    hfn = _function(tree, glb, filename)
    hfn.__hpu_tree__ = (tree, filename, text, start)
    hfn.__hpu_synth__ = True          # its hpu_ names are hpu's (_helper_into)
    for mark, value in marks.items():
        setattr(hfn, f"__hpu_{mark}__", value)
    used.update(n.id for n in ast.walk(tree) if isinstance(n, ast.Name))
    used.add(key)
    outlined[key] = hfn
    call = ast.Call(ast.Name(key, ast.Load()), [ast.Name(k, ast.Load()) for k in kids], [])
    return ast.fix_missing_locations(ast.copy_location(
        ast.Assign([copy.deepcopy(s.targets[0])], call), s))


def _nested_combines(stmts, results, name, glb, used, outlined, as_written, where) -> list:
    """``stmts`` with a combine of nested calls -- ``x = merge(merge(l, m), r)``, a 3-way
    mergesort's -- made one call of a helper hpu writes, ``x = merge(l, m, r)``, whose body
    is each call's helper inlined in turn (:func:`hpu._filters._inline`)::

        def merge(hpu_r0, hpu_r1, hpu_r2):
            hpu_t0 = np.empty(len(hpu_r0) + len(hpu_r1), hpu_r0.dtype)   # the inner merge
            ...
            hpu_t1 = np.empty(len(hpu_t0) + len(hpu_r2), hpu_t0.dtype)   # the outer one
            ...
            return hpu_t1

    The rest of the rewrite reads it as any k-way combine: the outer call's allocation is
    its result, each inner call's a scratch array (:func:`_scratch`) whose length,
    ``len(hpu_t0)``, is its size (:func:`_len_names`).  An inner call's helper must
    allocate its result once at its top level and return it, its last statement its only
    return (it is inlined where Python would call it); the helpers are plain functions of
    one module, as a combine is."""
    import types

    from hpu._filters import _inline

    out = []
    nps = _numpy_names(glb) | {PLUS}
    stmts = _sorts_folded(stmts, results, nps)
    for s in _chains_folded(_plus_hoisted(stmts, results), results):
        joined = _children_joined(s, results, nps)
        if joined is not None:
            out.append(_joined_helper(s, joined, name, glb, used, outlined, where))
            continue
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.value, ast.Call)
                and _is_name(s.value.func) and s.value.func.id != name
                and any(isinstance(x, ast.Call) and _mentions(x, results)
                        for x in s.value.args)):
            out.append(s)
            continue
        shown = as_written(s.value)
        kids: list[str] = []
        body: list = []
        helpers: list = []

        def refuse(why):
            raise NotRewritable(f"its combine `{shown}` nests calls, {why}")

        def flat(call, outer):
            f = call.func
            h = glb.get(f.id) if _is_name(f) else None
            if not isinstance(h, types.FunctionType) or call.keywords or hasattr(h, "py_func"):
                refuse(f"and `{as_written(call)}` is not a call of a Python function by "
                       "position")
            node, _, _ = _tree(h)
            _own_names_free({n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                            | {p.arg for p in node.args.args}, f"its combine {h.__name__}()")
            helpers.append(h)
            args = []
            for x in call.args:
                if _is_name(x) and x.id in results:
                    kids.append(x.id)
                    args.append(ast.Name(x.id, ast.Load()))
                elif isinstance(x, ast.Call) and _mentions(x, results):
                    args.append(ast.Name(flat(x, False), ast.Load()))
                else:
                    refuse(f"and passes `{as_written(x)}`, neither a child's array nor a "
                           "call on them")
            if outer:
                return ast.Call(ast.Name(f.id, ast.Load()), args, [])
            last = node.body[-1] if node.body else None
            h_nps = _numpy_names(h.__globals__)
            allocs = [_alloc(st, h_nps) for st in node.body]
            if not (isinstance(last, ast.Return) and _is_name(last.value)
                    and any(x is not None and x[0] == last.value.id for x in allocs)):
                refuse(f"and {h.__name__}() does not end by returning the array it "
                       "allocates (`out = np.empty(len(left) + len(right), ...)`)")
            t = f"hpu_t{len(body)}"
            body.append(ast.copy_location(
                ast.Assign([ast.Name(t, ast.Store())], ast.Call(ast.Name(f.id, ast.Load()),
                                                                args, [])), s))
            return t

        top = flat(s.value, True)
        files = {h.__code__.co_filename for h in helpers}
        if len(files) != 1 or len({id(h.__globals__) for h in helpers}) != 1:
            refuse("and its helpers are not all of one module")
        outer = glb[top.func.id]
        target = s.targets[0]
        names = _names_of(target)
        if names is None:
            refuse(f"and its result is unpacked as `{ast.unparse(target)}`")
        last_names = [f"hpu_t{len(body)}"] + [f"hpu_u{j}" for j in range(1, len(names))]
        tgt = (ast.Name(last_names[0], ast.Store()) if len(names) == 1 and _is_name(target)
               else ast.Tuple([ast.Name(x, ast.Store()) for x in last_names], ast.Store()))
        body.append(ast.copy_location(ast.Assign([tgt], top), s))
        hfile = files.pop()
        params = list(dict.fromkeys(kids))
        inlined = []
        counter = iter(range(1_000_000))
        for st in body:
            got = _inline(st, outer.__globals__, hfile, name, counter,
                          set(params) | set(last_names) | {f"hpu_t{j}" for j in range(len(body))})
            if got is None:
                refuse(f"and {st.value.func.id}() cannot be inlined where it is called "
                       "(its last statement must be its only return)")
            inlined += got
        ret = ast.Return(ast.Name(last_names[0], ast.Load()) if len(last_names) == 1 else
                         ast.Tuple([ast.Name(x, ast.Load()) for x in last_names], ast.Load()))
        inlined.append(ast.copy_location(ret, inlined[-1]))
        hname = outer.__name__
        tree = ast.FunctionDef(
            name=hname, args=ast.arguments(posonlyargs=[], args=[ast.arg(x) for x in params],
                                           kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=inlined, decorator_list=[], returns=None, type_params=[])
        ast.copy_location(tree, inlined[0])
        ast.fix_missing_locations(tree)
        _, h_text, h_start = _tree(outer)
        out.append(_registered(tree, outer.__globals__, (hfile, h_text, h_start), s, kids,
                               used, outlined,
                               shown=getattr(outer, "__hpu_shown__", hname)))
    return out


def _sorts_folded(stmts, results, nps) -> list:
    """``x = np.concatenate((l, r))`` (or ``x = l + r`` of lists) followed at once by
    ``x.sort()`` as ``x = np.sort(np.concatenate((l, r)))`` (``x = sorted(l + r)``): the
    same numbers in the same new array or list, a join sorted, which
    :func:`_children_joined` and :func:`_plus_hoisted` read."""
    out = []
    for s in stmts:
        prev = out[-1] if out else None
        e = s.value if isinstance(s, ast.Expr) else None
        if (isinstance(prev, ast.Assign) and len(prev.targets) == 1
                and _is_name(prev.targets[0]) and isinstance(e, ast.Call)
                and isinstance(e.func, ast.Attribute) and e.func.attr == "sort"
                and _is_name(e.func.value, prev.targets[0].id) and not e.args
                and all(k.arg == "kind" for k in e.keywords)):
            v = prev.value
            joined = _children_joined(prev, results, nps)
            if _plus_chain(v, results) is not None:
                value = ast.Call(ast.Name("sorted", ast.Load()), [v], [])
            elif joined is not None and not joined[3]:
                value = ast.Call(ast.Attribute(ast.Name(joined[0], ast.Load()), "sort",
                                               ast.Load()), [v], [])
            else:
                value = None
            if value is not None:
                out[-1] = ast.fix_missing_locations(ast.copy_location(
                    ast.Assign([ast.Name(prev.targets[0].id, ast.Store())], value), prev))
                continue
        out.append(s)
    return out


def _chains_folded(stmts, results) -> list:
    """``k = merge(x, y)`` then ``out = merge(k, z)`` as ``out = merge(merge(x, y), z)``:
    a call on the children's arrays (alone) whose result is read once, as an argument of a
    later call statement, nothing between reading or assigning it -- the nest Python
    runs, in the same order."""
    stmts = list(stmts)
    i = 0
    while i < len(stmts):
        s = stmts[i]
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and _is_name(s.targets[0])
                and isinstance(s.value, ast.Call) and _is_name(s.value.func)
                and not s.value.keywords and s.value.args
                and all(_is_name(x) and x.id in results for x in s.value.args)):
            i += 1
            continue
        k = s.targets[0].id
        uses = [j for j in range(i + 1, len(stmts)) if _mentions(stmts[j], {k})]
        j = uses[0] if len(uses) == 1 else None
        use = stmts[j] if j is not None else None
        if not (use is not None and isinstance(use, ast.Assign) and len(use.targets) == 1
                and isinstance(use.value, ast.Call) and not _mentions(use.targets[0], {k})
                and sum(1 for n in ast.walk(use) if _is_name(n, k)) == 1
                and any(_is_name(x, k) for x in use.value.args)
                and k not in results):
            i += 1
            continue
        use = copy.deepcopy(use)
        use.value.args = [copy.deepcopy(s.value) if _is_name(x, k) else x
                          for x in use.value.args]
        stmts[j] = use
        del stmts[i]
    return stmts


#: the module name of the join :func:`_plus_hoisted` writes for ``r1 + r0`` of lists
PLUS = "hpu_plus"


def _plus_chain(e, results):
    """The names of ``r1 + r0 + ...``, children's results each once, else None."""
    names = []

    def walk(x):
        if isinstance(x, ast.BinOp) and isinstance(x.op, ast.Add):
            return walk(x.left) and walk(x.right)
        if _is_name(x) and x.id in results:
            names.append(x.id)
            return True
        return False

    if walk(e) and len(names) >= 2 and len(set(names)) == len(names):
        return names
    return None


def _plus_hoisted(stmts, results) -> list:
    """``return rev(a[m:]) + rev(a[:m])`` -- the children's lists joined by ``+`` (a function
    of lists: its base case returns its list) -- as ``hpu_plussed = hpu_plus.concatenate((r1,
    r0))``, then ``return hpu_plussed``: the join :func:`_joined_helper` writes; ``return
    sorted(l + r)`` -- its call hoisted, ``hpu_r2 = sorted(hpu_r0 + hpu_r1)`` -- as
    ``hpu_plus.sort(...)`` of that join (numbers sorted as NumPy sorts them, Python's order;
    of NaNs no sort's order is Python's: guide §"Known differences").  The form runs only on
    a list at the call (``Rewritten.returns_list``): on an array ``+`` adds."""
    out = []
    for s in stmts:
        if isinstance(s, ast.Return) and s.value is not None:
            arr, sc = _split_result(s.value)
            names = _plus_chain(arr, results)
            if names is not None:
                t = "hpu_plussed"
                join = ast.parse(f"{t} = {PLUS}.concatenate(({', '.join(names)},))").body[0]
                for n in ast.walk(join):
                    ast.copy_location(n, s)
                ret = ast.Return(ast.Tuple([ast.Name(t, ast.Load()), *sc], ast.Load())
                                 if sc else ast.Name(t, ast.Load()))
                out += [join, ast.fix_missing_locations(ast.copy_location(ret, s))]
                continue
        if (isinstance(s, ast.Assign) and len(s.targets) == 1 and _is_name(s.targets[0])
                and isinstance(s.value, ast.Call) and _is_name(s.value.func, "sorted")
                and len(s.value.args) == 1 and not s.value.keywords):
            # `return sorted(l + r)`, its call hoisted: `hpu_r2 = sorted(hpu_r0 + hpu_r1)`
            names = _plus_chain(s.value.args[0], results)
            if names is not None:
                join = ast.parse(f"{s.targets[0].id} = {PLUS}.sort({PLUS}.concatenate(("
                                 f"{', '.join(names)},)))").body[0]
                for n in ast.walk(join):
                    ast.copy_location(n, s)
                out.append(join)
                continue
        out.append(s)
    return out


def _children_joined(s, results, nps):
    """``(numpy's name, [children], [their expressions], sorted)`` of ``x =
    np.concatenate((r1, r0))`` (``np.hstack``, a list for the tuple, ``np.append(r1,
    r0)``): the children's arrays joined whole, each once, in any order -- and sorted
    after, ``np.sort(np.concatenate((r0, r1)))`` (``kind=`` any); else None."""
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and _is_name(s.targets[0])
            and isinstance(s.value, ast.Call)):
        return None
    join, ordered = s.value, False
    if (isinstance(join.func, ast.Attribute) and join.func.attr == "sort"
            and _is_name(join.func.value) and join.func.value.id in nps
            and len(join.args) == 1 and isinstance(join.args[0], ast.Call)
            and all(k.arg == "kind" for k in join.keywords)):
        join, ordered = join.args[0], True
    if not (isinstance(join.func, ast.Attribute) and _is_name(join.func.value)
            and join.func.value.id in nps and not join.keywords):
        return None
    f, args = join.func.attr, join.args
    items = (args if f == "append" and len(args) == 2 else
             args[0].elts if f in ("concatenate", "hstack") and len(args) == 1
             and isinstance(args[0], (ast.Tuple, ast.List)) else None)
    if items is None or len(items) < 2:
        return None
    kids, exprs = [], []
    for x in items:
        if _is_name(x) and x.id in results:
            kids.append(x.id)
            exprs.append(None)
            continue
        whole = _elementwise_of(x, results)
        if whole is None:
            return None
        kids.append(whole)
        exprs.append(x)
    if len(set(kids)) != len(kids):
        return None
    return join.func.value.id, kids, exprs, ordered


def _elementwise_of(e, results):
    """The child whose whole array ``e`` computes on element by element -- ``r + l[-1]``,
    ``-r``, ``2 * r - 1``: one child's name among ``+``, ``-``, ``*`` and scalars (int or
    float constants, a child's element at a constant index, a child's ``len``) -- else
    None.  The join writes ``e`` per element, each scalar read as Python reads it, into an
    array of the children's dtype -- or, with a float constant, of the dtype Numba's typing
    gives the function (:func:`_joined_helper`)."""
    wholes = []

    def index(i):
        if isinstance(i, ast.UnaryOp) and isinstance(i.op, ast.USub):
            i = i.operand
        return isinstance(i, ast.Constant) and type(i.value) is int

    def ok(x):
        if _is_name(x) and x.id in results:
            wholes.append(x.id)
            return True
        if isinstance(x, ast.BinOp) and isinstance(x.op, (ast.Add, ast.Sub, ast.Mult)):
            return ok(x.left) and ok(x.right)
        if isinstance(x, ast.UnaryOp) and isinstance(x.op, ast.USub):
            return ok(x.operand)
        if isinstance(x, ast.Constant):
            return type(x.value) in (int, float)
        if isinstance(x, ast.Subscript):
            return _is_name(x.value) and x.value.id in results and index(x.slice)
        return (isinstance(x, ast.Call) and _is_name(x.func, "len") and len(x.args) == 1
                and not x.keywords and _is_name(x.args[0]) and x.args[0].id in results)

    return wholes[0] if ok(e) and len(wholes) == 1 else None


def _joined_helper(s, joined, name, glb, used, outlined, where):
    """``x = np.concatenate((r1, r0))`` as ``x = <helper>(r1, r0)``, the helper hpu writes
    (each child copied after the ones before it, into an array as long as all, then sorted
    in place for ``np.sort(np.concatenate(...))``: :func:`_heap_sort`), which the
    rest of the rewrite reads as any combine: the children's order is the one written,
    whatever their slices' (a reversal, ``np.concatenate((f(a[m:]), f(a[:m])))``)."""
    np_name, kids, exprs, ordered = joined
    if np_name == PLUS:     # (lists joined by `+`: the function may not import NumPy)
        glb = {**glb, PLUS: np}
    params = [f"hpu_j{j}" for j in range(len(kids))]
    param_of = dict(zip(kids, params))
    total = " + ".join(f"len({p})" for p in params)
    # a float constant in a piece (`l * 0.5`) makes NumPy's result floats whatever the
    # children's dtype: no dtype given, the result's is Numba's typing of the function (of
    # int keys, none: its levels' arrays differ, and the CPU path runs, as written)
    floats = any(isinstance(n, ast.Constant) and type(n.value) is float
                 for e in exprs if e is not None for n in ast.walk(e))
    src = [f"def joined({', '.join(params)}):",
           f"    hpu_jo = {np_name}.empty({total}{'' if floats else f', {params[0]}.dtype'})",
           "    hpu_jk = 0"]
    for p in params:
        src += [f"    for hpu_ji in range(len({p})):",
                f"        hpu_jo[hpu_jk + hpu_ji] = {p}[hpu_ji]",
                f"    hpu_jk += len({p})"]
    if ordered:     # np.sort(np.concatenate(...)): the joined array sorted in place
        src += ["    " + line for line in _heap_sort("hpu_jo", "", "len(hpu_jo)").splitlines()]
    src.append("    return hpu_jo")
    tree = ast.parse("\n".join(src)).body[0]

    class Element(ast.NodeTransformer):
        """A joined piece's expression on element ``hpu_ji``: its whole child read there,
        the other children's elements and lengths on the helper's parameters."""

        def visit_Subscript(self, x):
            return ast.Subscript(ast.Name(param_of[x.value.id], ast.Load()), x.slice,
                                 ast.Load())

        def visit_Call(self, x):
            return ast.Call(x.func, [ast.Name(param_of[x.args[0].id], ast.Load())], [])

        def visit_Name(self, x):
            return ast.Subscript(ast.Name(param_of[x.id], ast.Load()),
                                 ast.Name("hpu_ji", ast.Load()), ast.Load())

    loops = [st for st in tree.body if isinstance(st, ast.For)]
    for loop, e in zip(loops, exprs):
        if e is not None:       # `r + l[-1]`: each element computed as it is copied
            loop.body[0].value = Element().visit(copy.deepcopy(e))
    for n in ast.walk(tree):
        ast.copy_location(n, s)
    # the function's file and line: its code is the function's own, so messages name no
    # helper, as the function's (own)
    return _registered(tree, glb, where, s, kids, used, outlined, shown=name, own=True,
                       plus=np_name == PLUS)


def _outlined(stmts, last, children, a, before, name, fn, used, text, start, extras=()):
    """``(stmts, helper)``: ``stmts`` with a combine written inline after the second call (``out =
    np.empty(len(a), a.dtype)``, the merge, ``return out, c``) moved into a helper the
    rest of :func:`rewrite` reads as any combine: ``out, hpu_s0 = <name>_combine(left,
    right, <the names it reads>)``, ``return out, hpu_s0``.  The allocation's size may be
    ``len(left) + len(right)``, ``len(a)`` or a name assigned ``len(a)``: the children's
    results are as long as their halves, so the three are one length."""
    nps = _numpy_names(fn.__globals__)
    section, ret = stmts[last + 1:-1], stmts[-1]
    allocs = [(k, _alloc(s, nps)) for k, s in enumerate(section)]
    arr, sc = _split_result(ret.value)
    allocs = [(k, x) for k, x in allocs if x is not None and _is_name(arr, x[0])]
    chain = _chain(arr)
    lists = [k for k, s in enumerate(section)
             if isinstance(s, ast.Assign) and len(s.targets) == 1 and _is_name(s.targets[0])
             and (_is_name(arr, s.targets[0].id)
                  or (chain is not None and chain[0] == s.targets[0].id))
             and isinstance(s.value, ast.List) and not s.value.elts]
    if len(children) > 2:
        lists = []          # (a list result is read for two children: _list_result)
    if len(allocs) != 1 and len(lists) != 1:
        # (the others are scratch: the helper carves them, _scratch)
        raise NotRewritable("its children's arrays are not combined by a helper, nor by code "
                            "after the calls that allocates its result once "
                            "(`out = np.empty(len(left) + len(right), ...)`, or `out = []` "
                            "grown by append and extend) and returns it first")
    if len(allocs) == 1:
        k, (out, size, _) = allocs[0]
    else:           # a list: its length is checked at run time (_list_result)
        k, size = lists[0], None
        out = section[k].targets[0].id
    lengths = {ast.dump(ast.parse(f"len({a})", mode="eval").body)}
    for s in before:                        # n = len(a), assigned once
        if (isinstance(s, ast.Assign) and len(s.targets) == 1 and _is_name(s.targets[0])
                and _len_of(s.value) == a):
            lengths.add(ast.dump(ast.Name(s.targets[0].id, ast.Load())))
    p = children[0]
    total = " + ".join(f"len({c})" for c in children)
    # len(left) + len(right), directly or through names the section assigns once (n = ...)
    exact = (None if size is None else
             _exact(size, children, _len_names(ast.Module(section, []), children, k, nps)))
    whole = size is None or (exact is not None
                             and {x: c for x, c in exact.items() if c} == {c: 1 for c in children})
    if not whole and (ast.dump(size) not in lengths or (
            _is_name(size) and sum(1 for s in stmts + before for n in ast.walk(s)
                                   if isinstance(n, ast.Name) and n.id == size.id
                                   and isinstance(n.ctx, ast.Store)) > 1)):
        raise NotRewritable(f"its combine allocates `{ast.unparse(size)}` elements, not "
                            f"{total} or len({a}): its result would not be as "
                            f"long as its {len(children)} children's")
    body = copy.deepcopy(section)
    alloc = body[k]
    call = alloc.value
    if size is not None:                    # (out = []: kept as written)
        if call.func.attr.endswith("_like"):    # np.empty_like(a) -> np.empty(len(a), a.dtype)
            like = call.args[0]
            call.func.attr = call.func.attr[:-len("_like")]
            call.args = [like, ast.Attribute(copy.deepcopy(like), "dtype", ast.Load())]
            ast.fix_missing_locations(alloc)
        call.args[0] = ast.copy_location(ast.parse(total, mode="eval").body, call.args[0])
        dt = _dtype_arg(call)
        if isinstance(dt, ast.Attribute) and dt.attr == "dtype" and _is_name(dt.value, a):
            dt.value.id = p                     # a's dtype is its halves' (copies of it)
        ast.fix_missing_locations(alloc)
    # (out, or a list's `out + left[i:] + right[j:]`: _list_result reads it in the helper)
    value = ast.copy_location(ast.Return(ast.Tuple([copy.deepcopy(arr), *copy.deepcopy(sc)],
                                                   ast.Load())
                                         if sc else copy.deepcopy(arr)), ret)
    body.append(value)
    # (names a base case binds are unbound here: its guard returned -- its test's alone)
    defined = {a, *extras} | {n.id for s in before for n in ast.walk(
        s.test if isinstance(s, ast.If) and not s.orelse and s.body
        and isinstance(s.body[-1], ast.Return) else s)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    reads = []
    for s in body:
        for n in ast.walk(s):
            if (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in defined
                    and n.id not in children and n.id not in reads):
                reads.append(n.id)
    helper = _fresh(f"{name}_combine", used)
    tree = ast.FunctionDef(
        name=helper, args=ast.arguments(posonlyargs=[], args=[ast.arg(x) for x in
                                                             (*children, *reads)],
                                        kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=body, decorator_list=[], returns=None, type_params=[])
    ast.copy_location(tree, section[0] if section else ret)
    ast.fix_missing_locations(tree)
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    hfn = _function(tree, fn.__globals__, filename)
    hfn.__hpu_tree__ = (tree, filename, text, start)
    hfn.__hpu_shown__ = name                # its code is the function's own:
    hfn.__hpu_own__ = True                  # messages name no helper, as the function's
    temps = [f"hpu_s{x}" for x in range(len(sc))]
    target = (ast.Name(out, ast.Store()) if not sc else
              ast.Tuple([ast.Name(out, ast.Store()), *(ast.Name(t, ast.Store()) for t in temps)],
                        ast.Store()))
    assign = ast.Assign([target], ast.Call(ast.Name(helper, ast.Load()),
                                           [ast.Name(x, ast.Load()) for x in
                                            (*children, *reads)],
                                           []))
    back = ast.Return(ast.Tuple([ast.Name(out, ast.Load()),
                                 *(ast.Name(t, ast.Load()) for t in temps)], ast.Load())
                      if sc else ast.Name(out, ast.Load()))
    for node in (assign, back):
        for n in ast.walk(node):
            ast.copy_location(n, section[k] if section else ret)
    return stmts[:last + 1] + [assign, back], hfn


def _function(tree, glb, filename):
    space: dict = {}
    exec(compile(ast.Module([copy.deepcopy(tree)], []), filename, "exec"), glb, space)  # noqa: S102
    return space[tree.name]
