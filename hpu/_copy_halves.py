"""The commonest Python mergesort, breadth-first: its copied halves carved from one buffer.

Why
===

The mergesort most Python tutorials print sorts in place by copying its halves and merging
them back::

    def merge_sort(arr):
        if len(arr) > 1:
            mid = len(arr) // 2
            L = arr[:mid].copy()                # (a list's slice copies: NumPy needs .copy())
            R = arr[mid:].copy()
            merge_sort(L)
            merge_sort(R)
            i = j = k = 0
            while i < len(L) and j < len(R):    # merge L and R back into arr
                ...
                arr[k] = ...
                k += 1
            while i < len(L): ...
            while j < len(R): ...

Each call allocates two arrays and recurses on them, not on ``arr``; breadth-first, every
level's copies would be alive at once (``n log n`` elements).  But the function never reads
``arr``'s elements after its calls -- it only overwrites them -- so the copies can be made
*after* the calls instead, from ``arr``'s halves that the calls sorted in place::

    def merge_sort(arr, hpu_s, hpu_flag):
        if len(arr) > 1:
            mid = len(arr) // 2
            merge_sort(arr[:mid], hpu_s[:mid], hpu_flag)
            merge_sort(arr[mid:], hpu_s[mid:], hpu_flag)
            L = hpu_s[:mid]                     # filled from arr[:mid], as the copy was
            R = hpu_s[mid:]
            ...                                 # the merge, as written
            if k != len(arr):
                hpu_flag[0] = 1

which is ordinary in-place code on slices (``hpu_s`` sliced with ``arr``): the whole
breadth-first machinery runs it on every device, with one buffer as long as the array.

The two are the same function only where the merge writes *every* element of ``arr``: an
element it leaves would hold its sorted value where Python keeps the one before the calls.
hpu knows which elements the merge writes when every store into ``arr`` is ``arr[k] = v``
followed at once by ``k += 1``, with ``k`` set to 0 after the calls and changed nowhere else:
it writes ``arr[0:k]``, each once.  Whether ``k`` reaches ``len(arr)`` is known only as the
task runs: a task where it does not sets ``hpu_flag[0]`` (a work-item cannot stop its
level), and the call is then redone from a copy of the input, as written, compiled on the
CPU (:meth:`hpu._decorator.DivideAndConquer._run_functional`).  A merge that stores at any
other index (``arr[i + j]``) marks each element it stores in a buffer of bytes sliced with
``arr`` (``hpu_m``), and its end checks and clears the marks: a byte per element and a pass
per task, where the counter costs nothing in memory.

A merge written as a helper, ``merge(arr, L, R)``, is written out in the function first
(:func:`_inline_helpers`): the checks above need to see every store into ``arr``, and a
call that passes ``arr`` on is a read of it as far as they can tell.

What is rewritten (else the function keeps its path)
---------------------------------------------------

* in the block that makes the recursive calls: ``L = arr[:m].copy()`` and ``R =
  arr[m:].copy()`` (``np.copy(...)``, ``np.array(...)``; ``arr[0:m]``, ``arr[m:len(arr)]``;
  both in one tuple assignment), ``arr`` a parameter never reassigned, ``m`` a name assigned
  once from ``len(arr) // 2`` (``n // 2`` with ``n = len(arr)``, ``>> 1``, ``(n + 1) // 2``)
  or that expression;
* then exactly two recursive calls, one on ``L`` and one on ``R`` in the array's place, the
  other parameters passed on unchanged, in statements that use neither ``L``, ``R`` nor
  ``arr`` otherwise, with nothing else between the copies and the calls;
* ``arr`` used nowhere else but in ``len(arr)`` and the stores ``arr[k] = v`` described
  above; ``L`` and ``R`` assigned once, never returned;
* no ``return`` after the calls except the block's last statement.
"""
from __future__ import annotations

import ast
import copy
import inspect
from dataclasses import dataclass

import numpy as np

from hpu._functional_dps import (_fresh, _function, _is_name, _self_calls, _split_pairs,
                                 _store_counts, _tree)
from hpu._functional_partition import _np_call

__all__ = ["CopyHalvesForm", "NotCopyHalves", "rewrite_copy_halves"]


class NotCopyHalves(Exception):
    """The function is not of the shape above (the message says what differs)."""


@dataclass(frozen=True)
class CopyHalvesForm:
    """The rewritten function (its parameters, then the buffer and the flag) and how to make
    what it takes beyond the user's arguments."""

    fn: object
    params: tuple[str, ...]
    array: str                      #: the array parameter the halves are copied from
    counter: str                    #: the merge's store index (named in the fallback)
    marks: bool = False             #: whether it takes a buffer of marks (int8), zeroed
    #: (the scratch form's protocol: a slice form has no bounds, no closed ranges)
    bounds: None = None
    extra: int = 0

    def buffers(self, bound: dict) -> tuple[np.ndarray, ...] | None:
        """``(buffer, flag)`` for a call, or None where the array is not a 1-D array."""
        a = bound.get(self.array)
        if not isinstance(a, np.ndarray) or a.ndim != 1:
            return None
        if self.marks:
            return np.empty(a.size, a.dtype), np.zeros(a.size, np.int8), np.zeros(1, np.int64)
        return np.empty(a.size, a.dtype), np.zeros(1, np.int64)

    def flagged(self, values) -> bool:
        """Whether a task's merge left elements of its slice unwritten (``values``: the
        arguments the run was given)."""
        return bool(values[-1][0])


def _parsed_at(src: str, at) -> list:
    """The statements of ``src``, placed at the user's statement ``at``."""
    out = ast.parse(src).body
    for x in out:
        for n in ast.walk(x):
            ast.copy_location(n, at)
    return out


def _copy_source(e, nps, bare: bool = False):
    """``arr[...]`` of ``arr[...].copy()``, ``np.copy(arr[...])``, ``np.array(arr[...])``
    (``bare``: of ``arr[...]`` itself, a list's slice being a copy)."""
    if bare and isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Slice):
        return e
    if (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "copy"
            and not e.args and not e.keywords):
        return e.func.value
    if _np_call(e, nps, "copy", "array") and len(e.args) == 1 and not e.keywords:
        return e.args[0]
    return None


def _half(s, arr: str, lengths=frozenset()):
    """``("lo", m)`` of ``arr[:m]``/``arr[0:m]``, ``("hi", m)`` of ``arr[m:]``/
    ``arr[m:len(arr)]`` (or ``arr[m:n]``, ``n`` in ``lengths``: names assigned once from
    ``len(arr)``), else None."""
    if not (isinstance(s, ast.Subscript) and _is_name(s.value, arr)
            and isinstance(s.slice, ast.Slice) and s.slice.step is None):
        return None
    lo, hi = s.slice.lower, s.slice.upper

    def zero(x):
        return x is None or (isinstance(x, ast.Constant) and x.value == 0
                             and type(x.value) is int)

    def end(x):
        return x is None or (isinstance(x, ast.Call) and _is_name(x.func, "len")
                             and len(x.args) == 1 and _is_name(x.args[0], arr)) or (
            _is_name(x) and x.id in lengths)

    if zero(lo) and hi is not None:
        return "lo", hi
    if lo is not None and end(hi):
        return "hi", lo
    return None


def _middle(m, arr: str, node) -> bool:
    """``m`` is ``len(arr) // 2`` (``>> 1``, ``(len(arr) + 1) // 2``), directly or through
    names assigned once (``n = len(arr)``; ``mid = n // 2``): inside ``[0, len(arr)]``."""
    counts = _store_counts(node)
    values = {}
    for n in ast.walk(node):
        if (isinstance(n, ast.Assign) and len(n.targets) == 1 and _is_name(n.targets[0])
                and counts.get(n.targets[0].id) == 1):
            values[n.targets[0].id] = n.value

    def length(e, seen=()):
        if isinstance(e, ast.Call) and _is_name(e.func, "len") and len(e.args) == 1:
            return _is_name(e.args[0], arr)
        if _is_name(e) and e.id in values and e.id not in seen:
            return length(values[e.id], (*seen, e.id))
        return False

    def half(e, seen=()):
        if _is_name(e) and e.id in values and e.id not in seen:
            return half(values[e.id], (*seen, e.id))
        if not isinstance(e, ast.BinOp):
            return False
        c = e.right
        if isinstance(e.op, ast.FloorDiv) and isinstance(c, ast.Constant) and c.value == 2:
            inner = e.left
        elif isinstance(e.op, ast.RShift) and isinstance(c, ast.Constant) and c.value == 1:
            inner = e.left
        else:
            return False
        if (isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Add)
                and isinstance(inner.right, ast.Constant) and inner.right.value == 1):
            inner = inner.left
        return length(inner)

    return half(m)


def _calls_block(stmts, name: str):
    """The block whose statements make every recursive call (none inside a compound
    statement of it), else None."""
    holding = [st for st in stmts if _self_calls(st, name)]
    if not holding:
        return None
    if all(not isinstance(st, (ast.If, ast.For, ast.While, ast.With, ast.Try)) for st in holding):
        return stmts
    if len(holding) == 1 and isinstance(holding[0], ast.If):
        st = holding[0]
        inner = [b for b in (st.body, st.orelse) if any(_self_calls(x, name) for x in b)]
        if len(inner) == 1 and not _self_calls(st.test, name):
            return _calls_block(inner[0], name)
    return None


def rewrite_copy_halves(fn, nps, lists: bool = False) -> CopyHalvesForm:
    """``fn`` rewritten as the module describes, or :class:`NotCopyHalves`.  ``lists``:
    for a list argument, whose slices are copies (``L = arr[:mid]``, as the tutorials
    write it for lists): the form runs on the list's elements as an array, written back
    into the list when it is done (:meth:`hpu._decorator.DivideAndConquer._run_as_written`)."""
    node, text, start = _tree(fn)
    node = copy.deepcopy(node)
    name = node.name
    a = node.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
        raise NotCopyHalves("it has default, keyword-only or * parameters")
    params = [p.arg for p in a.args]

    def split(stmts):
        stmts = _split_pairs(stmts)
        for st in stmts:
            for field in ("body", "orelse"):
                inner = getattr(st, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(st, field, split(inner))
        return stmts

    node.body = split(node.body)
    block = _calls_block(node.body, name)
    if block is None:
        raise NotCopyHalves("its recursive calls are not statements of one block")
    _inline_helpers(node, block, fn)
    copies = {}         # name -> (index, "lo"/"hi", m, statement, array)
    counts = _store_counts(node)
    # names assigned once from len(x) (n = len(arr)): x, by name
    length_of = {n.targets[0].id: n.value.args[0].id for n in ast.walk(node)
                 if isinstance(n, ast.Assign) and len(n.targets) == 1
                 and _is_name(n.targets[0]) and counts.get(n.targets[0].id) == 1
                 and isinstance(n.value, ast.Call) and _is_name(n.value.func, "len")
                 and len(n.value.args) == 1 and _is_name(n.value.args[0])}
    for i, st in enumerate(block):
        if (isinstance(st, ast.Assign) and len(st.targets) == 1 and _is_name(st.targets[0])):
            src = _copy_source(st.value, nps, lists)
            if src is not None and isinstance(src, ast.Subscript) and _is_name(src.value) \
                    and src.value.id in params:
                x = src.value.id
                half = _half(src, x, frozenset(k for k, v in length_of.items() if v == x))
                if half is not None:
                    copies[st.targets[0].id] = (i, half[0], half[1], st, src.value.id)
    if len(copies) != 2:
        raise NotCopyHalves("it does not copy two halves of an array parameter")
    (L, cl), (R, cr) = sorted(copies.items(), key=lambda kv: kv[1][1] != "lo")
    arr = cl[4]
    if cl[1] != "lo" or cr[1] != "hi" or cr[4] != arr \
            or ast.dump(cl[2]) != ast.dump(cr[2]):
        raise NotCopyHalves("its copies are not arr[:m] and arr[m:] with the same m")
    m = cl[2]
    if counts.get(arr) or counts.get(L) != 1 or counts.get(R) != 1:
        raise NotCopyHalves(f"it reassigns {arr}, {L} or {R}")
    if not _middle(m, arr, node):
        raise NotCopyHalves(f"its halves are split at `{ast.unparse(m)}`, not len({arr}) // 2")
    pos = params.index(arr)
    # the calls: one on L, one on R, the other parameters passed on
    calls = _self_calls(node, name)
    on = {}
    for c in calls:
        if c.keywords or len(c.args) != len(params):
            raise NotCopyHalves("a recursive call does not pass every parameter by position")
        for k, (arg, p) in enumerate(zip(c.args, params)):
            if k == pos:
                if not (_is_name(arg) and arg.id in (L, R)) or arg.id in on:
                    raise NotCopyHalves(f"its recursive calls are not one on {L} and one "
                                        f"on {R}")
                on[arg.id] = c
            elif not _is_name(arg, p):
                raise NotCopyHalves(f"a recursive call passes `{ast.unparse(arg)}` as {p}")
    if set(on) != {L, R}:
        raise NotCopyHalves(f"its recursive calls are not one on {L} and one on {R}")
    first = min(cl[0], cr[0])
    call_at = [i for i, st in enumerate(block) if _self_calls(st, name)]
    last = max(call_at)
    between = [i for i in range(first, last + 1) if i not in (cl[0], cr[0]) and i not in call_at]
    if between or min(call_at) < max(cl[0], cr[0]):
        raise NotCopyHalves("something else runs between its copies and its calls")
    call_args = {id(c.args[pos]) for c in calls}
    for i in call_at:
        for n in ast.walk(block[i]):
            if _is_name(n) and n.id in (L, R, arr) and id(n) not in call_args:
                raise NotCopyHalves(f"a statement with a recursive call uses {n.id} (line "
                                    f"{block[i].lineno})")
    # arr: only len(arr), the copies, and the counter's stores
    allowed = set()
    for st in (cl[3], cr[3]):
        for n in ast.walk(st.value):
            allowed.add(id(n))
    indices = []
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and _is_name(n.func, "len") and len(n.args) == 1 \
                and _is_name(n.args[0], arr):
            allowed.add(id(n.args[0]))
        elif (isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)
              and _is_name(n.value, arr)):
            indices.append(n.slice)
            allowed.add(id(n.value))
    for n in ast.walk(node):
        if _is_name(n, arr) and id(n) not in allowed:
            raise NotCopyHalves(f"it reads {arr} after its calls (line {n.lineno})")
    if not indices:
        raise NotCopyHalves(f"it never writes {arr}")
    used = ({n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | set(params)
            | set(fn.__globals__))
    buf, flag = _fresh("hpu_s", used), _fresh("hpu_flag", used)
    used |= {buf, flag}
    marks = None
    counter = ast.unparse(indices[0])
    one = all(_is_name(i, counter) for i in indices)
    loop = _loop_over(block, last, arr, counter, node) if one else None
    if loop is not None:
        _instrument_loop(node, block, loop, arr, counter, flag, used)
    else:
        try:
            if not one:
                raise NotCopyHalves("its stores are at several indices")
            _instrument_counter(node, block, last, arr, counter, flag, used)
        except NotCopyHalves:
            # any other merge: each store marks its element; the merge's end checks that
            # every element was marked, and clears the marks for the level above
            marks = _fresh("hpu_m", used)
            used.add(marks)
            _instrument_marks(node, block, last, arr, marks, flag, used)
            counter = ", ".join(dict.fromkeys(ast.unparse(i) for i in indices))
    # (the instrumentation adds statements after the calls only: `last` still holds)
    for n in ast.walk(node):
        if isinstance(n, ast.Return) and n.value is not None and any(
                _is_name(x) and x.id in (L, R, arr) for x in ast.walk(n.value)):
            raise NotCopyHalves(f"it returns {L}, {R} or {arr}")
    after = block[last + 1:]
    if any(isinstance(n, ast.Return) for st in after[:-1] for n in ast.walk(st)) or any(
            isinstance(n, ast.Return) for st in after[-1:]
            for n in ast.walk(st) if n is not st):
        raise NotCopyHalves("it returns from inside its merge")
    for st in after:
        if any(isinstance(n, (ast.Global, ast.Nonlocal, ast.FunctionDef, ast.Lambda))
               for n in ast.walk(st)):
            raise NotCopyHalves("its merge defines a function or a global")
    # the rewrite
    mt = ast.unparse(m)
    for c in calls:
        lo = c.args[pos].id == L
        view = f"[:{mt}]" if lo else f"[{mt}:]"
        c.args[pos] = ast.copy_location(ast.parse(f"{arr}{view}", mode="eval").body, c.args[pos])
        for extra in (buf, marks):
            if extra is not None:
                c.args.append(ast.copy_location(ast.parse(f"{extra}{view}", mode="eval").body,
                                                c))
        c.args.append(ast.copy_location(ast.Name(flag, ast.Load()), c))
    made = []
    for target, at, view in ((L, cl[3], f"[:{mt}]"), (R, cr[3], f"[{mt}:]")):
        offset = "0" if target == L else f"len({arr}) - len({target})"
        src = (f"{target} = {buf}{view}\n"
               f"for hpu_i in range(len({target})):\n"
               f"    {target}[hpu_i] = {arr}[{offset} + hpu_i]")
        made += _parsed_at(src, at)
    tail = after
    new_tail = tail
    if loop is None and marks is None:      # the counter's: it must have reached len(arr)
        end_at = (len(tail) if not (tail and isinstance(tail[-1], ast.Return))
                  else len(tail) - 1)
        check = _parsed_at(f"if {counter} != len({arr}):\n    {flag}[0] = 1",
                           tail[end_at - 1] if end_at else block[last])
        new_tail = tail[:end_at] + check + tail[end_at:]
    kept = [st for i, st in enumerate(block[:last + 1]) if i not in (cl[0], cr[0])]
    block[:] = kept + made + new_tail
    node.args.args = node.args.args + [ast.arg(x) for x in (buf, marks, flag) if x is not None]
    ast.fix_missing_locations(node)
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    glb = dict(fn.__globals__)
    out = _function(node, glb, filename)
    out.__hpu_tree__ = (node, filename, text, start)
    glb[name] = out
    return CopyHalvesForm(fn=out, params=tuple(params), array=arr, counter=counter,
                          marks=marks is not None)


def _instrument_counter(node, block, last: int, arr: str, k: str, flag: str,
                       used: set) -> None:
    """Check that the merge writes ``arr[0:k]`` -- every store into ``arr`` is ``arr[k] =
    v``; ``k`` is set to 0 once, at the top level of the calls' block after its calls and
    before any other use, and changed elsewhere only by ``k += 1`` -- and add the checks
    that it wrote each of them: a store sets ``hpu_w``, a ``k += 1`` without one since
    ``k`` last changed sets the flag, and so does ``k != len(arr)`` at the end (added by
    the caller)."""
    zero = [i for i, st in enumerate(block) if i > last and isinstance(st, ast.Assign)
            and all(_is_name(t) for t in st.targets) and any(_is_name(t, k) for t in st.targets)
            and isinstance(st.value, ast.Constant) and st.value.value == 0
            and type(st.value.value) is int]
    if len(zero) != 1:
        raise NotCopyHalves(f"its counter {k} is not set to 0 once after its calls")
    set_at = block[zero[0]]
    first = (set_at.lineno, set_at.col_offset)
    for n in ast.walk(node):
        if _is_name(n, k) and (n.lineno, n.col_offset) < first:
            raise NotCopyHalves(f"its counter {k} is used before it is set to 0")

    def step(st):
        return ((isinstance(st, ast.AugAssign) and _is_name(st.target, k)
                 and isinstance(st.op, ast.Add) and isinstance(st.value, ast.Constant)
                 and st.value.value == 1 and type(st.value.value) is int)
                or (isinstance(st, ast.Assign) and len(st.targets) == 1
                    and _is_name(st.targets[0], k) and isinstance(st.value, ast.BinOp)
                    and isinstance(st.value.op, ast.Add) and _is_name(st.value.left, k)
                    and isinstance(st.value.right, ast.Constant) and st.value.right.value == 1
                    and type(st.value.right.value) is int))

    def store(st):
        return (isinstance(st, ast.Assign) and len(st.targets) == 1
                and isinstance(st.targets[0], ast.Subscript)
                and _is_name(st.targets[0].value, arr) and _is_name(st.targets[0].slice, k))

    steps, stores = set(), set()
    for n in ast.walk(node):
        if isinstance(n, ast.stmt) and step(n):
            steps.add(id(n))
        elif isinstance(n, ast.stmt) and store(n):
            stores.add(id(n))
    for n in ast.walk(node):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) \
                and _is_name(n.value, arr):
            if not any(id(st) in stores for st in ast.walk(node)
                       if isinstance(st, ast.Assign) and n in st.targets):
                raise NotCopyHalves(f"it changes {arr} other than by `{arr}[{k}] = ...` "
                                    f"(line {n.lineno})")
        if isinstance(n, ast.Name) and n.id == k and isinstance(n.ctx, ast.Store):
            owner = next((st for st in ast.walk(node) if isinstance(st, ast.stmt)
                          and n in getattr(st, "targets", [getattr(st, "target", None)])), None)
            if owner is not set_at and (owner is None or id(owner) not in steps):
                raise NotCopyHalves(f"its counter {k} changes other than by {k} += 1 "
                                    f"(line {n.lineno})")
    inside = {id(n) for st in block[zero[0]:] for n in ast.walk(st)}
    if not (steps | stores) <= inside:
        raise NotCopyHalves(f"it changes {arr} or {k} outside the block of its calls")
    w = _fresh("hpu_w", used)
    used.add(w)

    def walk(stmts):
        out = []
        for st in stmts:
            for field in ("body", "orelse"):
                inner = getattr(st, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(st, field, walk(inner))
            if id(st) in steps:
                out += _parsed_at(f"if {w} == 0:\n    {flag}[0] = 1", st)
                out.append(st)
                out += _parsed_at(f"{w} = 0", st)
            elif id(st) in stores:
                out.append(st)
                out += _parsed_at(f"{w} = 1", st)
            elif st is set_at:
                out.append(st)
                out += _parsed_at(f"{w} = 0", st)
            else:
                out.append(st)
        return out

    block[:] = walk(block)


def _loop_over(block, last: int, arr: str, k: str, node):
    """The statement ``for k in range(len(arr)):`` (``range(0, len(arr))``, ``range(n)``
    with ``n = len(arr)`` assigned once) of the calls' block after its calls, else None."""
    counts = _store_counts(node)
    lengths = {n.targets[0].id for n in ast.walk(node)
               if isinstance(n, ast.Assign) and len(n.targets) == 1 and _is_name(n.targets[0])
               and counts.get(n.targets[0].id) == 1 and isinstance(n.value, ast.Call)
               and _is_name(n.value.func, "len") and len(n.value.args) == 1
               and _is_name(n.value.args[0], arr)}

    def whole(e):
        return (isinstance(e, ast.Call) and _is_name(e.func, "len") and len(e.args) == 1
                and _is_name(e.args[0], arr)) or (_is_name(e) and e.id in lengths)

    for st in block[last + 1:]:
        if (isinstance(st, ast.For) and _is_name(st.target, k) and isinstance(st.iter, ast.Call)
                and _is_name(st.iter.func, "range") and not st.iter.keywords
                and (len(st.iter.args) == 1 and whole(st.iter.args[0])
                     or len(st.iter.args) == 2 and isinstance(st.iter.args[0], ast.Constant)
                     and st.iter.args[0].value == 0 and type(st.iter.args[0].value) is int
                     and whole(st.iter.args[1]))):
            return st
    return None


def _instrument_loop(node, block, loop, arr: str, k: str, flag: str, used: set) -> None:
    """Check that ``for k in range(len(arr)):`` writes ``arr[k]`` in each of its turns --
    every store into ``arr`` is ``arr[k] = v`` in its body, ``k`` is assigned nowhere else,
    and no ``break``/``continue`` ends a turn early -- and add the check that each turn
    stored: ``hpu_w`` set to 0 as a turn starts, to 1 by a store; a turn that ends with 0
    sets the flag."""
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id == k and isinstance(n.ctx, ast.Store) \
                and n is not loop.target:
            raise NotCopyHalves(f"its loop variable {k} is assigned in its loop (line "
                                f"{n.lineno})")
    inside = {id(n) for n in ast.walk(loop)}
    stores = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 \
                and isinstance(n.targets[0], ast.Subscript) \
                and _is_name(n.targets[0].value, arr) and _is_name(n.targets[0].slice, k):
            stores.add(id(n))
    for n in ast.walk(node):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) \
                and _is_name(n.value, arr):
            owner = next((st for st in ast.walk(node) if isinstance(st, (ast.Assign,
                                                                          ast.AugAssign))
                          and n in (st.targets if isinstance(st, ast.Assign)
                                    else [st.target])), None)
            if owner is None or id(owner) not in stores or id(owner) not in inside:
                raise NotCopyHalves(f"it changes {arr} other than by `{arr}[{k}] = ...` in "
                                    f"its loop over {k} (line {n.lineno})")

    def jumps(stmts) -> bool:
        for s2 in stmts:
            if isinstance(s2, (ast.Break, ast.Continue)):
                return True
            if not isinstance(s2, (ast.For, ast.While)):
                for field in ("body", "orelse"):
                    inner = getattr(s2, field, None)
                    if isinstance(inner, list) and jumps(inner):
                        return True
        return False

    if jumps(loop.body):
        raise NotCopyHalves(f"its loop over {k} may end a turn early (break or continue)")
    w = _fresh("hpu_w", used)
    used.add(w)

    def walk(stmts):
        out = []
        for st in stmts:
            for field in ("body", "orelse"):
                inner = getattr(st, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(st, field, walk(inner))
            out.append(st)
            if id(st) in stores:
                out += _parsed_at(f"{w} = 1", st)
        return out

    loop.body = (_parsed_at(f"{w} = 0", loop.body[0]) + walk(loop.body)
                 + _parsed_at(f"if {w} == 0:\n    {flag}[0] = 1", loop.body[-1]))


_PURE_CALLS = frozenset({"len", "min", "max", "abs", "int"})


def _instrument_marks(node, block, last: int, arr: str, marks: str, flag: str,
                      used: set) -> None:
    """Check a merge whose stores are ``arr[e] = v`` at any index (``arr[i + j]``, two
    counters, a helper's own): each store marks its element (``hpu_m[e] = 1``, the
    marks sliced with ``arr``), and the merge's end sets the flag where an element is
    unmarked, clearing the marks for the level above.  Every store must be in the calls'
    block after its calls, a statement of its own, at an index without side effects."""
    tail = {id(n) for st in block[last + 1:] for n in ast.walk(st)}
    owners = {}
    for st in ast.walk(node):
        if isinstance(st, ast.stmt):
            for t in (st.targets if isinstance(st, ast.Assign) else
                      [st.target] if isinstance(st, (ast.AugAssign, ast.AnnAssign, ast.For))
                      else []):
                for n in ast.walk(t):
                    owners.setdefault(id(n), st)
    stores = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) \
                and _is_name(n.value, arr):
            st = owners.get(id(n))
            if not (isinstance(st, ast.Assign) and st.targets == [n]) or id(n) not in tail:
                raise NotCopyHalves(f"it changes {arr} other than by `{arr}[i] = v` after "
                                    f"its calls (line {n.lineno})")
            if isinstance(n.slice, ast.Slice) or any(
                    isinstance(x, (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom))
                    or isinstance(x, ast.Call) and not (
                        _is_name(x.func) and x.func.id in _PURE_CALLS)
                    for x in ast.walk(n.slice)):
                raise NotCopyHalves(f"it stores into {arr} at `{ast.unparse(n.slice)}`, "
                                    "an index that is not one element or calls a function")
            stores.add(id(st))

    def walk(stmts):
        out = []
        for st in stmts:
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(st, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(st, field, walk(inner))
            out.append(st)
            if id(st) in stores:
                out += _parsed_at(f"{marks}[{ast.unparse(st.targets[0].slice)}] = 1", st)
        return out

    tail_stmts = walk(block[last + 1:])
    q = _fresh("hpu_q", used)
    used.add(q)
    at = len(tail_stmts) - (1 if tail_stmts and isinstance(tail_stmts[-1], ast.Return) else 0)
    check = _parsed_at(f"for {q} in range(len({arr})):\n"
                       f"    if {marks}[{q}] == 0:\n"
                       f"        {flag}[0] = 1\n"
                       f"    {marks}[{q}] = 0", tail_stmts[at - 1] if at else block[last])
    block[last + 1:] = tail_stmts[:at] + check + tail_stmts[at:]


def _inline_helpers(node, block, fn) -> None:
    """The calls' block with each helper called after its recursive calls written out in
    its place (``merge(arr, L, R)``, ``inv += merge(arr, L, R)``, ``return merge(...)``),
    so that the merge is read as the function's own.  A helper is written out where it is
    a plain function of the same module, positional parameters only, none reassigned, with
    no return but its last statement; its own names are renamed apart.  Anything else is
    left as it is (and the form's checks then say why)."""
    import types

    calls_at = [i for i, st in enumerate(block) if _self_calls(st, node.name)]
    if not calls_at:
        return
    mine = ({n.id for n in ast.walk(node) if isinstance(n, ast.Name)
             and isinstance(n.ctx, (ast.Store, ast.Del))}
            | {a.arg for a in node.args.args})
    out = block[:max(calls_at) + 1]
    for st in block[max(calls_at) + 1:]:
        got = _written_out(st, fn, mine, types)
        out += got if got is not None else [st]
    block[:] = out


def _written_out(st, fn, mine: set, types):
    """``st`` with its helper call written out (:func:`_inline_helpers`), or None."""
    if isinstance(st, ast.Expr):
        call, make = st.value, None
    elif isinstance(st, ast.Assign) and len(st.targets) == 1 and _is_name(st.targets[0]):
        call, make = st.value, lambda e: ast.Assign([st.targets[0]], e)
    elif isinstance(st, ast.AugAssign) and _is_name(st.target):
        call, make = st.value, lambda e: ast.AugAssign(st.target, st.op, e)
    elif isinstance(st, ast.Return) and st.value is not None:
        call, make = st.value, lambda e: ast.Return(e)
    else:
        return None
    if not (isinstance(call, ast.Call) and _is_name(call.func) and not call.keywords
            and not any(isinstance(a, ast.Starred) for a in call.args)):
        return None
    h = fn.__globals__.get(call.func.id)
    if (not isinstance(h, types.FunctionType) or h is fn or h.__globals__ is not fn.__globals__
            or h.__code__.co_freevars or call.func.id in mine):
        return None
    try:
        hnode, _, _ = _tree(h)
    except Exception:  # noqa: BLE001 - no source: the call stays
        return None
    if inspect.getsourcefile(h) != inspect.getsourcefile(fn):
        return None
    hnode = copy.deepcopy(hnode)
    a = hnode.args
    params = [p.arg for p in a.args]
    if (a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or len(call.args) != len(params)
            or any(isinstance(n, (ast.FunctionDef, ast.Lambda, ast.Global, ast.Nonlocal,
                                  ast.Yield, ast.YieldFrom, ast.ClassDef, ast.Try,
                                  ast.With))
                   for b in hnode.body for n in ast.walk(b))):
        return None
    body = hnode.body
    returns = [n for n in ast.walk(hnode) if isinstance(n, ast.Return)]
    result = None
    if returns:
        if len(returns) != 1 or body[-1] is not returns[0]:
            return None
        result = returns[0].value
        body = body[:-1]
    if make is not None and result is None:
        return None
    assigned = {n.id for n in ast.walk(hnode) if isinstance(n, ast.Name)
                and isinstance(n.ctx, (ast.Store, ast.Del))}
    if assigned & set(params):
        return None
    loaded = {n.id for n in ast.walk(hnode) if isinstance(n, ast.Name)} - assigned - set(params)
    if loaded & mine:
        return None      # a global of the helper's that the function names otherwise
    rename, pre = {}, []
    taken = set(mine) | set(fn.__globals__) | loaded
    for p, arg in zip(params, call.args):
        if _is_name(arg):
            rename[p] = arg.id
        else:
            rename[p] = _fresh(f"{p}_{h.__name__}", taken)
            taken.add(rename[p])
            pre.append(ast.Assign([ast.Name(rename[p], ast.Store())], arg))
    for x in sorted(assigned):
        rename[x] = _fresh(f"{x}_{h.__name__}", taken)
        taken.add(rename[x])
    mine |= taken - set(fn.__globals__) - loaded
    for n in ast.walk(hnode):
        if isinstance(n, ast.Name) and n.id in rename:
            n.id = rename[n.id]
    for x in pre:
        ast.copy_location(x, st)
        for n in ast.walk(x):
            ast.copy_location(n, st)
    tailing = []
    if make is not None:
        tailing = [ast.copy_location(make(result), st)]
    elif result is not None and not isinstance(result, (ast.Name, ast.Constant)):
        tailing = [ast.copy_location(ast.Expr(result), returns[0])]
    return pre + body + tailing
