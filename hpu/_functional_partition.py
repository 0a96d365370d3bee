"""Partition recursion on the device: quicksorts written on masks and list comprehensions.

Why a second in-place form
==========================

The quicksort most Python users write is functional and filters its input::

    def quicksort(arr):
        if len(arr) <= 1:
            return arr
        pivot = arr[len(arr) // 2]
        left = [x for x in arr if x < pivot]          # or arr[arr < pivot]
        middle = [x for x in arr if x == pivot]
        right = [x for x in arr if x > pivot]
        return quicksort(left) + middle + quicksort(right)   # or np.concatenate((...))

Its children are not slices of its input, so :mod:`hpu._functional_dps` (results at the
children's slices) does not apply.  But the result is again as long as the input whenever
the pieces together are: each piece -- a filter of the input, or one value -- has its place
in the result from the running sum of the pieces' lengths, and a recursive piece's result
takes exactly its place.  So :func:`rewrite_partition` turns the function into the in-place
quicksort below, ordinary Python the breadth-first machinery takes as written (the CPU's
levels, OpenCL kernels, the hybrid split, the device's subtree solver)::

    def quicksort(hpu_w, hpu_lo, hpu_hi, hpu_p, hpu_arena):
        hpu_o = hpu_p * H + hpu_lo                              # the task's input: hpu_w[hpu_o:]
        hpu_n = hpu_hi - hpu_lo                                 # len(arr)
        if hpu_n <= 1:                                          # final: into the other half
            for hpu_i in range(hpu_n): hpu_w[(1 - hpu_p) * H + hpu_lo + hpu_i] = hpu_w[hpu_o + hpu_i]
            return
        pivot = hpu_w[hpu_o + (hpu_n // 2)]
        <one pass over arr: hpu_k0 += 1 where x < pivot, hpu_k1 where ==, hpu_k2 where >>
        hpu_t = hpu_k0 + hpu_k1 + hpu_k2
        if hpu_t != hpu_n:                                      # NaN, or pieces that overlap:
            hpu_arena[0] = 3; hpu_k0 = hpu_k1 = hpu_k2 = 0      # the call is redone on the CPU
        if hpu_t == hpu_n:
            <one pass: each piece's elements, in order, from hpu_lo + (its running sum) of the
             other half; a piece that is not recursed on is final: copied into this half too>
        quicksort(hpu_w, hpu_lo, hpu_lo + hpu_k0, 1 - hpu_p, hpu_arena)
        quicksort(hpu_w, hpu_lo + hpu_k0 + hpu_k1, hpu_hi, 1 - hpu_p, hpu_arena)

(A function checked for bounds -- lists, ``boundscheck=True`` -- reads its input through a
view ``arr = hpu_w[...]`` instead, whose length the checks read.)

``hpu_w`` is ``2 n`` elements, the input copied into its first half when the run starts.
A task reads its half ``p`` and writes its children's inputs into half ``1 - p``; every
element, once final (a base case's, a piece not recursed on), is in both halves, and no
later task touches it, so the first half holds the result at the end.  The filters keep
their input's order, as the comprehension does, so every child sees (and picks its pivot
from) exactly the list the plain function would build.  A task whose pieces are not as long
as its input together -- NaN keys that no comparison keeps, pieces that overlap or drop
values -- sets a flag and returns; the whole call is then redone on the CPU as written, as
a list of another length is (:data:`PIECES_LENGTH`).

What is rewritten (else the function keeps its CPU path, and the reason says why)
--------------------------------------------------------------------------------

* one parameter, the array; leading scalar statements and ``if ...: return`` base cases
  returning a copy of it (as :mod:`hpu._functional_dps` reads them);
* then scalar statements (``pivot = arr[0]``, ``rest = arr[1:]``, ``if``s choosing a pivot),
  which must not write into an array, allocate, or call the function;
* pieces: ``[x for x in S if P(x)]`` (``np.array`` of it too), ``S[P(S)]`` of comparisons
  joined by ``&``, ``|``, ``~``, or one value ``[v]`` / ``np.array([v])``, with ``S`` the
  array, a slice of it or a name bound to one -- each assigned to a name or written inline;
  a value a mask compares with that reads the array (``a[a < a[0]]``) is named before its
  statement, as NumPy reads it once (:func:`_hoisted`);
* pieces built by a loop of appends, or returned by a helper of the same file, are first
  written as the comprehensions they are (:mod:`hpu._filters`); ``np.append(x, pivot)``
  of a name assigned once from one element is the piece ``[pivot]``;
* one ``return`` of their concatenation in order -- ``+`` of lists, ``np.concatenate``,
  ``np.hstack`` or ``np.append`` -- each piece once, the recursive ones as ``f(piece)``
  (inline, or ``l = f(piece)`` before the return).
"""
from __future__ import annotations

import ast
import copy
import inspect

from hpu._filters import (appends_as_filters, buffers_as_filters, inlined_helpers,
                          sunk_list_inits)
from hpu._functional import _allocation_in, _numpy_names
from hpu._functional_dps import (ARENA, INDEX, NotRewritable, Rewritten, _copy_of,
                                 _else_lifted, _empty_of, _empty_test, _function, _is_name,
                                 _mentions, _one_of, _one_test, _own_names_free, _self_calls,
                                 _tree)

__all__ = ["rewrite_partition", "NotPartition", "PIECES_LENGTH", "WORK", "LO", "HI", "SIDE"]

WORK, LO, HI, SIDE = "hpu_w", "hpu_lo", "hpu_hi", "hpu_p"
#: the flag a task sets when its pieces are not as long as its input (hpu_arena[0])
PIECES_LENGTH = 3
_HALF = f"(len({WORK}) // 2)"
_MINE = f"{SIDE} * {_HALF} + {LO}"              # where this task's input starts
_OTHER = f"(1 - {SIDE}) * {_HALF} + {LO}"       # where its children's inputs start


class NotPartition(NotRewritable):
    """The function is not shaped as a partition recursion at all (its calls take slices,
    or it concatenates nothing): the slice form's reason is the one to give."""


class _Piece:
    """One piece of the result: a filter of ``source`` by ``test`` (its element named
    ``var``), or one ``value``; ``recursive`` when the function is called on it."""

    def __init__(self, line, source=None, var=None, test=None, value=None):
        self.line, self.source, self.var, self.test, self.value = line, source, var, test, value
        self.recursive = False
        self.listed = False     # a Python list: `+` joins it (arrays it would add)
        self.key = None         # its name in the function, or hpu_n<k> when written inline


def _parsed(src: str, where) -> list:
    """The statements of ``src``, placed at ``where``'s lines (errors name the user's)."""
    stmts = ast.parse(src).body
    for st in stmts:
        for n in ast.walk(st):
            ast.copy_location(n, where)
    return stmts


#: the allocations whose arrays the function may fill (:func:`hpu._filters.buffers_as_filters`)
_MADE = ("empty", "zeros", "empty_like", "zeros_like")


def _np_call(e, nps, *names):
    return (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute)
            and e.func.attr in names and _is_name(e.func.value) and e.func.value.id in nps)


def _source_ok(s, a: str, views: set) -> bool:
    """``a``, a name bound to a slice of it, or ``a[lo:hi]`` (step 1)."""
    if _is_name(s):
        return s.id == a or s.id in views
    return (isinstance(s, ast.Subscript) and isinstance(s.slice, ast.Slice)
            and s.slice.step is None and _source_ok(s.value, a, views))


def _mask_test(m, src, var: str):
    """The element test of the mask ``m`` over ``src`` (``src < p``, ``(src > lo) & (src <
    hi)``, ``~(src == p)``), with ``src`` read as the element ``var``; None if it is not one."""
    if isinstance(m, ast.Compare) and len(m.ops) == 1:
        sides = [m.left, m.comparators[0]]
        hit = [ast.dump(s) == ast.dump(src) for s in sides]
        if sum(hit) != 1 or any(_mentions(s, _names(src)) for s, h in zip(sides, hit) if not h):
            return None
        new = [ast.Name(var, ast.Load()) if h else copy.deepcopy(s) for s, h in zip(sides, hit)]
        return ast.Compare(new[0], list(m.ops), [new[1]])
    if isinstance(m, ast.BinOp) and isinstance(m.op, (ast.BitAnd, ast.BitOr)):
        left, right = _mask_test(m.left, src, var), _mask_test(m.right, src, var)
        if left is None or right is None:
            return None
        return ast.BoolOp(ast.And() if isinstance(m.op, ast.BitAnd) else ast.Or(), [left, right])
    if isinstance(m, ast.UnaryOp) and isinstance(m.op, ast.Invert):
        inner = _mask_test(m.operand, src, var)
        return None if inner is None else ast.UnaryOp(ast.Not(), inner)
    return None


def _element_free(side, names: set) -> bool:
    """``side`` reads the arrays ``names`` only element by element (``a[0]``,
    ``a[len(a) // 2]``) or by length: one value for the whole filter, not per element."""
    parents = {}
    for n in ast.walk(side):
        for c in ast.iter_child_nodes(n):
            parents[id(c)] = n
    for n in ast.walk(side):
        if isinstance(n, ast.Name) and n.id in names:
            up = parents.get(id(n))
            whole = (isinstance(up, ast.Subscript) and up.value is n
                     and not isinstance(up.slice, (ast.Slice, ast.Tuple)))
            measured = (isinstance(up, ast.Call) and _is_name(up.func, "len")
                        and up.args == [n]) or (isinstance(up, ast.Attribute)
                                                and up.attr in ("size", "shape"))
            if not (whole or measured) or n is side:
                return False
    return True


def _hoisted(stmts: list) -> list:
    """``stmts`` with the value a mask compares its array with, where that value reads the
    array (``a[a < a[0]]``, ``a[(a >= a[-1]) | (a < a[0])]``), named before the statement
    (``hpu_q0 = a[0]``; ``a[a < hpu_q0]``).  NumPy too reads it once, before the mask, and
    raises there for an empty ``a`` (IndexError): so does the named value; per element it
    would be read once per element and never for an empty one."""
    out, counter = [], iter(range(1_000_000))

    def compares(m):
        if isinstance(m, ast.Compare) and len(m.ops) == 1:
            yield m
        elif isinstance(m, ast.BinOp) and isinstance(m.op, (ast.BitAnd, ast.BitOr)):
            yield from compares(m.left)
            yield from compares(m.right)
        elif isinstance(m, ast.UnaryOp) and isinstance(m.op, ast.Invert):
            yield from compares(m.operand)

    for st in stmts:
        names = []
        bound = {t.id for g in ast.walk(st) if isinstance(g, ast.comprehension)
                 for t in ast.walk(g.target) if isinstance(t, ast.Name)}
        for n in ast.walk(st):
            if not (isinstance(n, ast.Subscript) and not isinstance(n.slice, ast.Slice)
                    and isinstance(n.ctx, ast.Load)):
                continue
            src = n.value
            base = src
            while isinstance(base, ast.Subscript) and isinstance(base.slice, ast.Slice):
                base = base.value
            if not _is_name(base) or base.id in bound:
                continue
            for c in compares(n.slice):
                sides = [c.left, c.comparators[0]]
                hit = [ast.dump(x) == ast.dump(src) for x in sides]
                if sum(hit) != 1:
                    continue
                other = sides[hit.index(False)]
                if not _mentions(other, {base.id}) or not _element_free(other, {base.id}):
                    continue
                q = f"hpu_q{next(counter)}"
                names.append(ast.copy_location(ast.Assign([ast.Name(q, ast.Store())],
                                                          other, lineno=st.lineno), other))
                if hit[0]:
                    c.comparators[0] = ast.copy_location(ast.Name(q, ast.Load()), other)
                else:
                    c.left = ast.copy_location(ast.Name(q, ast.Load()), other)
        out += [ast.fix_missing_locations(x) for x in names] + [st]
    return out


def _names(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _renamed(node, old: str, new: str):
    node = copy.deepcopy(node)
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id == old:
            n.id = new
    return node


def _piece(e, a: str, views: set, nps: set, var: str, slices: bool = False):
    """The :class:`_Piece` the expression ``e`` writes, or None."""
    line = getattr(e, "lineno", 0)
    listed = True                   # a Python list (a comprehension, [v]), not an array
    if _np_call(e, nps, "array", "asarray") and len(e.args) == 1 and not e.keywords:
        e = e.args[0]               # np.array([...]): the same elements, as an array
        listed = False
    got = _piece_of(e, a, views, var, line, slices)
    if got is not None:
        got.listed = listed and isinstance(e, (ast.ListComp, ast.List))
    return got


def _piece_of(e, a: str, views: set, var: str, line: int, slices: bool = False):
    if isinstance(e, ast.ListComp) and len(e.generators) == 1:
        g = e.generators[0]
        if (g.is_async or not _is_name(g.target) or not _is_name(e.elt, g.target.id)
                or not _source_ok(g.iter, a, views)):
            return None
        v = g.target.id
        tests = [_renamed(t, v, var) for t in g.ifs]
        test = (ast.Constant(True) if not tests else tests[0] if len(tests) == 1
                else ast.BoolOp(ast.And(), tests))
        return _Piece(line, source=g.iter, var=var, test=test)
    if isinstance(e, ast.Subscript) and not isinstance(e.slice, ast.Slice) \
            and _source_ok(e.value, a, views):
        test = _mask_test(e.slice, e.value, var)
        return None if test is None else _Piece(line, source=e.value, var=var, test=test)
    if isinstance(e, ast.List) and len(e.elts) == 1 and not isinstance(e.elts[0], ast.Starred):
        return _Piece(line, value=e.elts[0])
    if slices and isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Slice) \
            and _source_ok(e, a, views):       # a[:1] joined: all of it (named, a view)
        return _Piece(line, source=e, var=var, test=ast.Constant(True))
    return None


def _concatenation(e, nps):
    """The items of ``x + y + z``, ``np.concatenate((x, y, z))`` (a list too),
    ``np.hstack(...)``, ``np.append(x, y)``; None if ``e`` is none of them."""
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        parts = [e.left, e.right]
    elif _np_call(e, nps, "concatenate", "hstack") and len(e.args) == 1 and not e.keywords \
            and isinstance(e.args[0], (ast.Tuple, ast.List)):
        parts = list(e.args[0].elts)
    elif _np_call(e, nps, "append") and len(e.args) == 2 and not e.keywords:
        parts = list(e.args)
        for part in parts:      # np.append flattens: a name may hold one element
            part.hpu_appended = True
    else:
        return None
    items = []
    for part in parts:          # (x + y) + z, np.append(np.append(x, y), z): one list
        inner = _concatenation(part, nps)
        items += inner if inner is not None else [part]
    return items


def _elements(node, a: str) -> set:
    """Names the function assigns once, from one element of ``a`` or of a slice of it
    (``pivot = arr[0]``): values, which ``np.append`` appends as one element."""
    stores: dict[str, list] = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            stores.setdefault(n.id, []).append(n)
    out = set()
    for st in ast.walk(node):
        if (isinstance(st, ast.Assign) and len(st.targets) == 1 and _is_name(st.targets[0])
                and len(stores.get(st.targets[0].id, ())) == 1
                and isinstance(st.value, ast.Subscript)
                and not isinstance(st.value.slice, (ast.Slice, ast.Tuple))
                and _is_name(st.value.value, a)):
            out.add(st.targets[0].id)
    return out


def rewrite_partition(dc) -> Rewritten:
    """The in-place form of the partition recursion ``dc`` (module docstring), or
    :class:`NotRewritable` with the reason (:class:`NotPartition`: it is not one)."""
    from hpu._errors import TranslationError

    fn = dc.py_func
    try:
        node, text, start = _tree(fn)
    except TranslationError:
        raise NotPartition("its source cannot be read") from None
    name = node.name
    params = [p.arg for p in node.args.args]
    if node.args.vararg or node.args.kwarg or node.args.kwonlyargs or len(params) != 1:
        raise NotPartition("it takes other parameters than one array")
    a = params[0]
    calls = _self_calls(node, name)
    if not calls or any(len(c.args) != 1 or c.keywords for c in calls):
        raise NotPartition("its recursive calls do not take one argument each")
    if any(isinstance(c.args[0], ast.Subscript) and isinstance(c.args[0].slice, ast.Slice)
           and _is_name(c.args[0].value, a) for c in calls):
        raise NotPartition("its recursive calls take slices")
    glb = fn.__globals__
    nps = _numpy_names(glb)
    own = _names(node)
    _own_names_free(own, name)
    # arrays the function allocates itself may be written (buffers filled by counts,
    # hpu._filters; any other allocation is refused below, as allocating)
    made = {t.id for st in ast.walk(node) if isinstance(st, ast.Assign)
            and isinstance(st.value, ast.Call) and _np_call(st.value, nps, *_MADE)
            for t in st.targets if _is_name(t)}
    for n in ast.walk(node):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) \
                and _is_name(n.value) and n.value.id in made and n.value.id != a:
            continue
        if isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store):
            raise NotRewritable(f"it writes into an array (line {n.lineno}): in Python that "
                                "write reaches the caller's array, which the device form "
                                "never holds")
        if isinstance(n, (ast.Global, ast.Nonlocal, ast.Lambda, ast.Yield, ast.YieldFrom)):
            raise NotRewritable(f"it uses `{type(n).__name__.lower()}` (line {n.lineno})")

    body = sunk_list_inits(_else_lifted(node.body, name), name)
    out = []

    out += _parsed(f"{a} = {WORK}[{_MINE}:{SIDE} * {_HALF} + {HI}]", node.body[0])

    def plain(st) -> bool:
        return (not _self_calls(st, name) and _allocation_in(ast.Module([st], []), glb) is None
                and not any(isinstance(n, ast.Return) for n in ast.walk(st)))

    while body and plain(body[0]) and not isinstance(body[0], ast.If):
        if _self_calls(body[0], name) or a in {n.id for n in ast.walk(body[0]) if isinstance(
                n, ast.Name) and isinstance(n.ctx, ast.Store)}:
            break
        out.append(copy.deepcopy(body.pop(0)))
    guards = 0
    while body and isinstance(body[0], ast.If) and not _self_calls(body[0], name):
        g = copy.deepcopy(body.pop(0))
        rets = [n for n in ast.walk(g) if isinstance(n, ast.Return)]
        if g.orelse or not isinstance(g.body[-1], ast.Return) or rets != [g.body[-1]]:
            raise NotRewritable(f"a base case is not `if ...: ... return <its copy>` "
                                f"(line {g.lineno})")
        ret = g.body[-1]
        v = ret.value
        empty = _empty_of(v, a, nps) if v is not None else None
        if v is None or not (_copy_of(v, a, nps) or (_one_of(v, a, nps) and _one_test(g.test, a))
                             or (empty is not None and empty[1] and _empty_test(g.test, a))):
            what = "nothing" if v is None else f"`{ast.unparse(v)}`"
            raise NotRewritable(f"a base case returns {what} (line {ret.lineno}), not a copy "
                                f"of {a}")
        if _allocation_in(ast.Module(g.body[:-1], []), glb) is not None:
            raise NotRewritable(f"a base case allocates (line {g.lineno})")
        g.body[-1:] = _parsed(f"for {INDEX} in range(len({a})):\n"
                              f"    {WORK}[{_OTHER} + {INDEX}] = {a}[{INDEX}]\nreturn", ret)
        out.append(g)
        guards += 1
    if not guards:
        raise NotRewritable("it has no leading `if ...: return` base case")

    # the recursive part: scalar statements, pieces, recursive calls, one return
    body = inlined_helpers(body, glb, fn.__code__.co_filename, name, node)
    body = buffers_as_filters(appends_as_filters(body), nps)
    body = _hoisted([copy.deepcopy(st) for st in body])
    pieces: dict[str, _Piece] = {}      # by name (inline ones get hpu_n<k>)
    called: dict[str, str] = {}         # l = f(piece): l -> the piece's name
    views = set()
    assigned_after: dict[str, set] = {}  # piece -> names assigned after its statement
    kept = []
    result = None
    counter = iter(range(1_000_000))

    def new_piece(e, where, slices=False):
        k = next(counter)
        p = _piece(e, a, views, nps, f"hpu_v{k}", slices)
        if p is None:
            return None
        p.key = f"hpu_n{k}"
        p.line = where.lineno
        pieces[p.key] = p
        assigned_after[p.key] = set()
        return p.key

    def stored(st):
        return {n.id for n in ast.walk(st) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Store)}

    def item_of(e, where):
        """``(piece key, recursive)`` of one item of the concatenation."""
        if isinstance(e, ast.Call) and _is_name(e.func, name):
            arg = e.args[0]
            key = arg.id if _is_name(arg) and arg.id in pieces else new_piece(arg, where)
            if key is None:
                raise NotRewritable(f"a recursive call takes `{ast.unparse(arg)}` (line "
                                    f"{where.lineno}), not a filter of {a}")
            return key, True
        if _is_name(e) and e.id in called:
            return called.pop(e.id), True
        if _is_name(e) and e.id in pieces:
            return e.id, False
        if _is_name(e) and getattr(e, "hpu_appended", False) and e.id in values:
            e = ast.copy_location(ast.List([e], ast.Load()), e)     # np.append(x, pivot)
        key = new_piece(e, where, slices=True)
        if key is None:
            raise NotRewritable(f"`{ast.unparse(e)}` (line {where.lineno}) is not a piece: a "
                                f"filter of {a} or one value in a list")
        return key, False

    values = _elements(node, a)
    order = None
    plus = False
    concat_named: dict = {}             # r = f(l) + m + f(g); return r
    for st in body:
        for got in assigned_after.values():
            got |= stored(st)
        if result is None and isinstance(st, ast.Return) and st.value is not None:
            value = st.value
            if _is_name(value) and value.id in concat_named:
                value = concat_named.pop(value.id)
            items = _concatenation(value, nps)
            if items is None:
                raise NotPartition(f"it does not return a concatenation of its pieces (line "
                                   f"{st.lineno})")
            order = [item_of(e, st) for e in items]
            result = st
            plus = isinstance(value, ast.BinOp)
            continue
        if result is not None:
            raise NotRewritable(f"a statement follows its return (line {st.lineno})")
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and _is_name(st.targets[0]):
            t = st.targets[0].id
            if isinstance(st.value, ast.Call) and _is_name(st.value.func, name):
                arg = st.value.args[0]
                key = arg.id if _is_name(arg) and arg.id in pieces else new_piece(arg, st)
                if key is None:
                    raise NotRewritable(f"a recursive call takes `{ast.unparse(arg)}` (line "
                                        f"{st.lineno}), not a filter of {a}")
                called[t] = key
                continue
            if _concatenation(st.value, nps) is not None and (
                    _self_calls(st.value, name) or _mentions(st.value, set(called))):
                concat_named[t] = st.value
                continue
            if not _self_calls(st.value, name) and t not in pieces:
                key = new_piece(st.value, st)
                if key is not None:
                    pieces[t] = pieces.pop(key)
                    assigned_after[t] = assigned_after.pop(key)
                    continue
            if isinstance(st.value, ast.Subscript) and isinstance(st.value.slice, ast.Slice) \
                    and _source_ok(st.value, a, views):
                views.add(t)
        if _mentions(st, set(pieces) | set(called) | set(concat_named)):
            raise NotRewritable(f"a piece is used outside the concatenation (line "
                                f"{st.lineno})")
        if a in stored(st):
            raise NotRewritable(f"it assigns {a} again (line {st.lineno})")
        if not plain(st):
            raise NotRewritable(f"its recursive part allocates, returns early or calls "
                                f"{name} outside the concatenation (line {st.lineno})")
        kept.append(copy.deepcopy(st))
    if result is None:
        raise NotPartition("its recursive case does not end in a return")
    keys = [k for k, _ in order]
    if sorted(keys) != sorted(pieces) or len(set(keys)) != len(keys) or called:
        raise NotRewritable(f"its pieces are not each used once in the concatenation (line "
                            f"{result.lineno})")
    if not any(rec for _, rec in order):
        raise NotPartition("it concatenates no recursive call")
    if plus and not all(pieces[k].listed for k, _ in order):
        # `f(a[a < p]) + a[a == p]` adds arrays element by element: not a concatenation
        raise NotRewritable(f"it joins arrays with `+` (line {result.lineno}), which adds "
                            "them element by element")
    for key, rec in order:
        p = pieces[key]
        p.recursive = rec
        reads = _names(p.test if p.value is None else p.value) | (
            _names(p.source) if p.source is not None else set())
        late = reads & (assigned_after[key] - {p.var})
        if late:
            raise NotRewritable(f"the piece on line {p.line} reads {sorted(late)[0]!r}, "
                                "assigned again after it")
        if p.value is None and _mentions(p.test, set(pieces)):
            raise NotRewritable(f"the piece on line {p.line} reads another piece")

    # the generated statements, at the return's place: one counting pass and one writing
    # pass over each source the filters share (three filters of `arr`: two loops, not six
    # -- the compiled levels and kernels stay small)
    at = result
    gen = []
    total = [f"hpu_k{j}" for j in range(len(order))]
    groups: dict[str, list] = {}
    for j, (key, _) in enumerate(order):
        p = pieces[key]
        if p.value is not None:
            gen += _parsed(f"hpu_e{j} = 0\nhpu_k{j} = 1", at)
            gen[-2].value = copy.deepcopy(p.value)
        else:
            groups.setdefault(ast.dump(p.source), []).append(j)

    def group_loop(g, members, step):
        """``for hpu_i in range(len(hpu_s<g>)):`` binding each member's element name, then
        ``if test: <step(j)>`` per member."""
        loop = _parsed(f"for {INDEX} in range(len(hpu_s{g})):\n    pass", at)[0]
        first = pieces[order[members[0]][0]].var
        loop.body = _parsed(f"{first} = hpu_s{g}[{INDEX}]", at)
        for j in members:
            p = pieces[order[j][0]]
            if p.var != first:
                loop.body += _parsed(f"{p.var} = {first}", at)
            test = _parsed("if True:\n    pass", at)[0]
            test.test = copy.deepcopy(p.test)
            test.body = _parsed(step(j, p.var), at)
            loop.body.append(test)
        return loop

    for g, members in enumerate(groups.values()):
        gen += _parsed(f"hpu_s{g} = 0", at)
        gen[-1].value = copy.deepcopy(pieces[order[members[0]][0]].source)
        gen += _parsed("\n".join(f"hpu_k{j} = 0" for j in members), at)
        gen.append(group_loop(g, members, lambda j, v: f"hpu_k{j} += 1"))
    # pieces of another length together than the input: the flag, and empty children (an
    # early return here would be a guard after loops, which the level-by-level form has not)
    zero = "".join(f"    {k} = 0\n" for k in total)
    gen += _parsed(f"hpu_t = {' + '.join(total)}\nif hpu_t != len({a}):\n"
                   f"    {ARENA}[0] = {PIECES_LENGTH}\n{zero}", at)
    gen += _parsed(f"hpu_b0 = {LO}", at)
    for j in range(1, len(order)):
        gen += _parsed(f"hpu_b{j} = hpu_b{j - 1} + hpu_k{j - 1}", at)
    H = _HALF
    writes = gen
    gen = []
    for j, (key, _) in enumerate(order):
        if pieces[key].value is not None:
            gen += _parsed(f"{WORK}[(1 - {SIDE}) * {H} + hpu_b{j}] = hpu_e{j}", at)
    for g, members in enumerate(groups.values()):
        gen += _parsed("\n".join(f"hpu_j{j} = (1 - {SIDE}) * {H} + hpu_b{j}" for j in members),
                       at)
        gen.append(group_loop(g, members,
                              lambda j, v: f"{WORK}[hpu_j{j}] = {v}\nhpu_j{j} += 1"))
    for j, (key, rec) in enumerate(order):     # final pieces: into this half too
        if not rec:
            gen += _parsed(f"for {INDEX} in range(hpu_k{j}):\n"
                           f"    {WORK}[{SIDE} * {H} + hpu_b{j} + {INDEX}] = "
                          f"{WORK}[(1 - {SIDE}) * {H} + hpu_b{j} + {INDEX}]", at)
    guard = _parsed(f"if hpu_t == len({a}):\n    pass", at)[0]
    guard.body = gen
    gen = writes + [guard]
    for j, (key, rec) in enumerate(order):
        if rec:
            gen += _parsed(f"{name}({WORK}, hpu_b{j}, hpu_b{j} + hpu_k{j}, 1 - {SIDE}, "
                           f"{ARENA})", at)
    gen += _parsed("return", at)
    body = out + kept + gen
    # the buffer read directly, not through a view (which costs Numba's compiler 30 s more);
    # a bounds-checked function (lists, as Python checks a list's indices; boundscheck=True
    # or HPU_BOUNDSCHECK=1) keeps the view, whose length the checks read
    from hpu._guard import boundscheck_default

    lists = getattr(dc, "_lists", False)
    checked = lists or (dc._boundscheck if getattr(dc, "_boundscheck", None) is not None
                        else boundscheck_default())
    itself = False
    if not checked:
        body = _flattened(body, a, views) or body
    elif lists:
        # a list's indices are checked as Python checks them: each of the user's own
        # `arr[i]` (in a plain statement) tested before its statement, the rest of the
        # form correct by construction -- so no bounds-checked compile (63 s against 32 s)
        tested = _index_checks(body, a)
        flat = _flattened(tested, a, views) if tested is not None else None
        if flat is not None:
            body, itself = flat, True
    main = ast.FunctionDef(name=name, args=ast.arguments(
        posonlyargs=[], args=[ast.arg(p) for p in (WORK, LO, HI, SIDE, ARENA)],
        kwonlyargs=[], kw_defaults=[], defaults=[]), body=body,
        decorator_list=[], returns=None, type_params=[])
    ast.copy_location(main, node)
    ast.fix_missing_locations(main)
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    new_glb = dict(glb)
    mfn = _function(main, new_glb, filename)
    mfn.__hpu_tree__ = (main, filename, text, start)
    new_glb[name] = mfn
    # the result holds the input's elements (and single values, converted as a store
    # converts them): Numba's typing of the function decides its dtype
    same = all(pieces[k].value is None for k, _ in order)
    return Rewritten(fn=mfn, scalars=0, same_dtype=same, arena=True, partition=True,
                     checks_itself=itself, returns_list=plus)


def _index_checks(body, a: str):
    """``body`` with ``if not (-len(a) <= i < len(a)): raise IndexError(...)`` before each
    plain statement that reads ``a[i]`` (inner reads first), or None where such a read sits
    where Python might not evaluate it (a test, ``and``/``or``, a conditional expression, a
    comprehension) or its index calls a function: there the view, checked, stays."""
    def reads(node):
        found = [n for n in ast.walk(node) if isinstance(n, ast.Subscript) and _is_name(n.value, a)
                 and not isinstance(n.slice, ast.Slice) and not _is_name(n.slice, INDEX)]
        return found[::-1]

    def fix(stmts):
        out = []
        for st in stmts:
            if isinstance(st, (ast.If, ast.While, ast.For)):
                head = st.test if not isinstance(st, ast.For) else ast.Tuple([st.iter], ast.Load())
                if reads(head):
                    return None
                body, orelse = fix(st.body), fix(st.orelse)
                if body is None or orelse is None:
                    return None
                st.body, st.orelse = body, orelse
                out.append(st)
                continue
            found = reads(st)
            if found:
                if not isinstance(st, (ast.Assign, ast.AugAssign, ast.Expr)) or any(
                        isinstance(n, (ast.BoolOp, ast.IfExp, ast.ListComp, ast.GeneratorExp,
                                       ast.Lambda, ast.SetComp, ast.DictComp))
                        for n in ast.walk(st)):
                    return None
                for r in found:
                    if any(isinstance(n, ast.Call) and not _is_name(n.func, "len")
                           for n in ast.walk(r.slice)):
                        return None
                    check = ast.parse(f"if not (-len({a}) <= 0 < len({a})):\n"
                                      f"    raise IndexError('list index out of range')").body[0]
                    check.test.operand.comparators[0] = copy.deepcopy(r.slice)
                    for n in ast.walk(check):
                        ast.copy_location(n, st)
                    out.append(check)
            out.append(st)
        return out

    return fix(copy.deepcopy(body))



def _flattened(body, a: str, views: set):
    """``body`` with the task's input read from the buffer directly -- ``len(a)`` as
    ``hpu_n``, ``a[i]`` as ``hpu_w[hpu_o + i]`` (a negative ``i`` from the end, as on the
    view), each filter's loop over its source's bounds (clamped as Python's slices) -- or
    None where ``a`` (or a name bound to a slice of it) is used otherwise (passed to a
    helper, iterated): then the view stays.  Why: a local view costs Numba's compiler more
    than all the rest of the form (47 s against 17 s for the mask quicksort's first run)."""
    body = copy.deepcopy(body)
    n_, o_ = "hpu_n", "hpu_o"
    slices = {}                 # a view's name -> its Slice of a (rest = a[1:])

    def bound(e, default, where, target):
        """Statements setting ``target`` to the slice bound ``e`` clamped to [0, n]."""
        if e is None:
            return _parsed(f"{target} = {default}", where)
        if isinstance(e, ast.Constant) and type(e.value) is int:
            v = e.value
            return _parsed(f"{target} = min({v}, {n_})" if v >= 0 else
                           f"{target} = max({n_} - {-v}, 0)", where)
        if (isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub)
                and isinstance(e.operand, ast.Constant) and type(e.operand.value) is int):
            return _parsed(f"{target} = max({n_} - {e.operand.value}, 0)", where)
        st = _parsed(f"{target} = 0\nif {target} < 0:\n    {target} += {n_}\n"
                     f"{target} = min(max({target}, 0), {n_})", where)
        st[0].value = copy.deepcopy(e)
        return st

    class Flat(ast.NodeTransformer):
        def visit_Call(self, c):
            if (_is_name(c.func, "len") and len(c.args) == 1 and _is_name(c.args[0], a)
                    and not c.keywords):
                return ast.copy_location(ast.Name(n_, ast.Load()), c)
            return self.generic_visit(c)

        def visit_Attribute(self, e):
            if e.attr == "size" and _is_name(e.value, a):
                return ast.copy_location(ast.Name(n_, ast.Load()), e)
            return self.generic_visit(e)

        def visit_Subscript(self, e):
            if (isinstance(e.slice, ast.Constant) and e.slice.value == 0
                    and isinstance(e.value, ast.Attribute) and e.value.attr == "shape"
                    and _is_name(e.value.value, a)):
                return ast.copy_location(ast.Name(n_, ast.Load()), e)
            if _is_name(e.value, a) and not isinstance(e.slice, ast.Slice):
                i = self.visit(e.slice)
                if isinstance(i, ast.Constant) and type(i.value) is int:
                    idx = (ast.Constant(i.value) if i.value >= 0 else
                           ast.BinOp(ast.Name(n_, ast.Load()), ast.Add(), ast.Constant(i.value)))
                elif _is_name(i, INDEX):            # hpu's own loop index: never negative
                    idx = i
                elif not any(isinstance(n, ast.Call) for n in ast.walk(i)):
                    idx = ast.IfExp(ast.Compare(copy.deepcopy(i), [ast.GtE()], [ast.Constant(0)]),
                                    copy.deepcopy(i),
                                    ast.BinOp(copy.deepcopy(i), ast.Add(), ast.Name(n_, ast.Load())))
                else:
                    return e            # (left as it is: the check below keeps the view)
                new = ast.Subscript(ast.Name(WORK, ast.Load()),
                                    ast.BinOp(ast.Name(o_, ast.Load()), ast.Add(), idx), e.ctx)
                return ast.copy_location(new, e)
            return self.generic_visit(e)

    out = []
    for st in body:
        if (isinstance(st, ast.Assign) and len(st.targets) == 1 and _is_name(st.targets[0], a)
                and _is_name(getattr(st.value, "value", None), WORK)):
            out += _parsed(f"{o_} = {_MINE}\n{n_} = {HI} - {LO}", st)
            continue
        if (isinstance(st, ast.Assign) and len(st.targets) == 1 and _is_name(st.targets[0])
                and st.targets[0].id in views and isinstance(st.value, ast.Subscript)
                and _is_name(st.value.value, a) and isinstance(st.value.slice, ast.Slice)):
            slices[st.targets[0].id] = st.value.slice     # read by the filters' bounds
            continue
        if (isinstance(st, ast.Assign) and len(st.targets) == 1 and _is_name(st.targets[0])
                and st.targets[0].id.startswith("hpu_s")):
            g = st.targets[0].id[len("hpu_s"):]
            src = st.value
            if _is_name(src, a):
                lo_hi = (None, None)
            elif (isinstance(src, ast.Subscript) and _is_name(src.value, a)
                  and isinstance(src.slice, ast.Slice)):
                lo_hi = (src.slice.lower, src.slice.upper)
            elif _is_name(src) and src.id in slices:
                lo_hi = (slices[src.id].lower, slices[src.id].upper)
            else:
                return None
            out += bound(lo_hi[0], "0", st, f"hpu_f{g}") + bound(lo_hi[1], n_, st, f"hpu_g{g}")
            continue
        out.append(st)

    class Loops(ast.NodeTransformer):
        def visit_Call(self, c):         # range(len(hpu_s<g>)) -> range(hpu_f<g>, hpu_g<g>)
            if (_is_name(c.func, "range") and len(c.args) == 1 and isinstance(c.args[0], ast.Call)
                    and _is_name(c.args[0].func, "len") and _is_name(c.args[0].args[0])
                    and c.args[0].args[0].id.startswith("hpu_s")):
                g = c.args[0].args[0].id[len("hpu_s"):]
                c.args = [ast.Name(f"hpu_f{g}", ast.Load()), ast.Name(f"hpu_g{g}", ast.Load())]
                return c
            return self.generic_visit(c)

        def visit_Subscript(self, e):    # hpu_s<g>[hpu_i] -> hpu_w[hpu_o + hpu_i]
            if _is_name(e.value) and e.value.id.startswith("hpu_s") and _is_name(e.slice, INDEX):
                return ast.copy_location(ast.Subscript(
                    ast.Name(WORK, ast.Load()),
                    ast.BinOp(ast.Name(o_, ast.Load()), ast.Add(), ast.Name(INDEX, ast.Load())),
                    e.ctx), e)
            return self.generic_visit(e)

    out = [Loops().visit(Flat().visit(st)) for st in out]
    left = {n.id for st in out for n in ast.walk(st) if isinstance(n, ast.Name)}
    if a in left or left & set(slices) or any(x.startswith("hpu_s") for x in left):
        return None
    for st in out:
        ast.fix_missing_locations(st)
    return out
