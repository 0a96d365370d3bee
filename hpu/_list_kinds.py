"""A list made as ``[0] * n`` holds what is stored into it, as in Python.

Why
===

The mergesort printed by the most-read tutorial copies its halves into lists made of zeros::

    def merge(arr, l, m, r):
        L = [0] * (m - l + 1)
        R = [0] * (r - m)
        for i in range(0, len(L)):
            L[i] = arr[l + i]
        ...

In Python the list holds whatever is stored into it: floats, from a float array.  Numba types
a list once, from how it is made: ``[0] * n`` is a list of int64, and storing a float into it
truncates, silently -- compiled, the sort of ``[3.75, -1.5]`` gave ``[-1.0, 3.0]``.

So, before Numba sees a function (:func:`hpu._functional._clone`), a list made of int (or
bool) constants -- ``[0] * n``, ``n * [0]``, ``[0, 0]``, ``[0 for _ in range(n)]`` -- whose stored values are read from
the function's parameters (``L[i] = arr[l + i]``, ``L[i] = x``) is made of zeros of *their*
kind: ``[hpu__zero_as(0, arr)] * n``, the constant converted to ``arr``'s dtype where that is
a float or complex one (the kind Python's list ends up holding), and left as it is otherwise.
Any other store into such a list, and every ``append`` to it, goes through ``hpu__kept``,
which refuses at typing time a float or complex value stored into a list of ints: Numba then
cannot compile the function, and the plain Python function runs (with its reason), slower
but right.  A list made any other way (``[]``, ``[0.0] * n``, from a comprehension) already
has the kind of its values, or Numba refuses it by itself.

A list of places to fill, ``[None] * n`` (the merge of a much-copied collection of Python
algorithms), is such a list of zeros where the function has no other ``None`` (nothing asks
whether a slot is still empty): Numba cannot type a list of ``None``, and the function ran
as plain Python.  A slot never filled holds a zero, not ``None`` -- only a function that
returns a list with holes differs, and its caller could not compare them anyway.

The caller's lists are guarded the same way: a store into an element of a parameter
(``tmp[k] = a[i]`` into the caller's ``tmp = [0] * n``) goes through ``hpu__kept`` too, so a
float sorted through an int list given as scratch runs the plain function, right, instead of
coming back truncated.  On an array ``hpu__kept`` is the value itself.
"""
from __future__ import annotations

import ast

__all__ = ["lists_keep_kinds", "zero_as", "kept", "zeros_list", "element_source",
           "slots_as_zeros"]

ZERO_AS = "hpu__zero_as"
KEPT = "hpu__kept"


def _int_constant(e) -> bool:
    return (isinstance(e, ast.Constant) and type(e.value) in (int, bool)) or (
        isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub) and _int_constant(e.operand))


def _made_of_ints(e):
    """The constant elements' list node of ``[c] * n``, ``n * [c]``, ``[c, d]`` (int or bool
    constants), else None."""
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult):
        for side in (e.left, e.right):
            if isinstance(side, ast.List) and side.elts and all(map(_int_constant, side.elts)):
                return side
        return None
    if isinstance(e, ast.List) and e.elts and all(map(_int_constant, e.elts)):
        return e
    if _zeros_comprehension(e) is not None:
        return e
    return None


def _zeros_comprehension(e):
    """``n`` of ``[c for _ in range(n)]`` (an int constant ``c``, one ``for``, no ``if``),
    else None."""
    if (isinstance(e, ast.ListComp) and _int_constant(e.elt) and len(e.generators) == 1):
        g = e.generators[0]
        if (not g.ifs and not g.is_async and isinstance(g.target, ast.Name)
                and isinstance(g.iter, ast.Call) and isinstance(g.iter.func, ast.Name)
                and g.iter.func.id == "range" and len(g.iter.args) == 1
                and not g.iter.keywords):
            return g.iter.args[0]
    return None


def zeros_list(e):
    """``n`` of ``[0] * n``, ``n * [0]`` or ``[0 for _ in range(n)]``, else None."""
    n = _zeros_comprehension(e)
    if (n is not None and isinstance(e.elt, ast.Constant) and e.elt.value == 0
            and type(e.elt.value) is int):
        return n
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult):
        for side, count in ((e.left, e.right), (e.right, e.left)):
            if (isinstance(side, ast.List) and len(side.elts) == 1
                    and isinstance(side.elts[0], ast.Constant) and side.elts[0].value == 0
                    and type(side.elts[0].value) is int):
                return count
    return None


def element_source(tree, name: str) -> str | None:
    """The parameter every value stored into the list ``name`` is read from (``name[i] =
    arr[j]``: ``arr``), where ``name`` is used only as ``name[i]`` and ``len(name)`` and
    assigned once, else None: then the list can be a part of an array of that parameter's
    dtype (:mod:`hpu._scratch_form`)."""
    params = {a.arg for a in tree.args.args}
    assigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Store)}
    steady = params - assigned
    bound = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name
             and isinstance(n.ctx, ast.Store)]
    if len(bound) != 1:
        return None
    allowed = {id(bound[0])}
    sources = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) \
                and n.value.id == name and not isinstance(n.slice, ast.Slice):
            allowed.add(id(n.value))
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len"
              and len(n.args) == 1 and isinstance(n.args[0], ast.Name)
              and n.args[0].id == name):
            allowed.add(id(n.args[0]))
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                        and t.value.id == name):
                    v = n.value
                    if len(n.targets) == 1 and isinstance(v, ast.Subscript) \
                            and isinstance(v.value, ast.Name) and v.value.id in steady \
                            and not isinstance(v.slice, ast.Slice):
                        sources.add(v.value.id)
                    else:
                        return None
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Subscript) \
                and isinstance(n.target.value, ast.Name) and n.target.value.id == name:
            return None
    if any(isinstance(n, ast.Name) and n.id == name and id(n) not in allowed
           for n in ast.walk(tree)):
        return None
    return sources.pop() if len(sources) == 1 else None


def _param_reads(v, steady: set) -> set | None:
    """The parameters ``v`` is made of -- their elements or themselves, int constants,
    ``+``, ``-``, ``*`` -- whose kinds give ``v``'s (NumPy's promotion); else None."""
    if _int_constant(v):
        return set()
    if isinstance(v, ast.Name):
        return {v.id} if v.id in steady else None
    if isinstance(v, ast.Subscript):
        ok = (isinstance(v.value, ast.Name) and v.value.id in steady
              and not isinstance(v.slice, ast.Slice))
        return {v.value.id} if ok else None
    if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.USub):
        return _param_reads(v.operand, steady)
    if isinstance(v, ast.BinOp) and isinstance(v.op, (ast.Add, ast.Sub, ast.Mult)):
        left, right = _param_reads(v.left, steady), _param_reads(v.right, steady)
        return None if left is None or right is None else left | right
    return None


def lists_keep_kinds(tree, glb: dict) -> int:
    """Rewrite ``tree`` (a function's def, in place) as the module says; the number of lists
    changed.  ``glb``: the globals it runs in, given ``hpu__zero_as`` and ``hpu__kept``."""
    slots_as_zeros(tree)
    params = {a.arg for a in tree.args.args}
    assigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Store)}
    steady = params - assigned            # parameters never rebound: in scope everywhere
    made: dict[str, list] = {}            # list name -> its constant-list nodes
    other = set()                         # names also bound otherwise
    for n in ast.walk(tree):
        targets = (n.targets if isinstance(n, ast.Assign) else
                   [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For))
                   else [])
        for t in targets:
            for x in ast.walk(t):
                if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store):
                    node = _made_of_ints(n.value) if (
                        isinstance(n, ast.Assign) and len(n.targets) == 1 and t is x) else None
                    if node is not None:
                        made.setdefault(x.id, []).append(node)
                    else:
                        other.add(x.id)
    for n in ast.walk(tree):     # `a = L[i] = v`: the value named once, left as it is
        if isinstance(n, ast.Assign) and len(n.targets) > 1:
            other |= {t.value.id for t in n.targets if isinstance(t, ast.Subscript)
                      and isinstance(t.value, ast.Name)}
    lists = {k: v for k, v in made.items() if k not in other}
    kept_params = _guard_parameter_stores(tree, steady - set(lists))
    if not lists:
        if kept_params:
            ast.fix_missing_locations(tree)
            glb[KEPT] = kept
        return 0
    sources: dict[str, set] = {k: set() for k in lists}
    guarded = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                        and t.value.id in lists and not isinstance(t.slice, ast.Slice)):
                    v = n.value
                    if _int_constant(v):
                        continue
                    if isinstance(v, ast.Name) and v.id in steady:
                        sources[t.value.id].add(v.id)
                    elif (isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name)
                          and v.value.id in steady and not isinstance(v.slice, ast.Slice)):
                        sources[t.value.id].add(v.value.id)
                    else:
                        guarded.append((n, t.value.id))
        elif (isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Subscript)
              and isinstance(n.target.value, ast.Name) and n.target.value.id in lists
              and not isinstance(n.target.slice, ast.Slice)):
            # `out[i + j] += A[i] * B[j]` (a polynomial product into `[0] * n`): zeros of
            # the kind of the parameters the value is made of, by + - *; anything else
            # (a `/`, a call) through hpu__kept -- compiled as int it was truncated, silently
            reads = (_param_reads(n.value, steady)
                     if isinstance(n.op, (ast.Add, ast.Sub, ast.Mult)) else None)
            if isinstance(n.op, ast.Div):
                # `/=` makes a float even of ints: the value as one (`v / 1`, the same
                # quotient) through hpu__kept, which a list of ints refuses
                n.value = ast.copy_location(ast.BinOp(n.value, ast.Div(), ast.Constant(1)),
                                            n.value)
                guarded.append((n, n.target.value.id))
            elif reads is None:
                guarded.append((n, n.target.value.id))
            else:
                sources[n.target.value.id] |= reads
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and n.func.attr in ("append", "insert") and isinstance(n.func.value, ast.Name)
              and n.func.value.id in lists and n.args):
            v = n.args[-1]
            if not _int_constant(v):
                n.args[-1] = ast.copy_location(ast.Call(
                    ast.Name(KEPT, ast.Load()), [ast.Name(n.func.value.id, ast.Load()), v], []),
                    v)
    for st, name in guarded:
        st.value = ast.copy_location(ast.Call(
            ast.Name(KEPT, ast.Load()), [ast.Name(name, ast.Load()), st.value], []), st.value)
    def as_sources(c, name):
        e = c
        for p in sorted(sources[name]):
            e = ast.Call(ast.Name(ZERO_AS, ast.Load()), [e, ast.Name(p, ast.Load())], [])
        return ast.copy_location(e, c)

    for name, nodes in lists.items():
        for node in nodes:
            if isinstance(node, ast.ListComp):
                node.elt = as_sources(node.elt, name)
            else:
                node.elts = [as_sources(c, name) for c in node.elts]
    ast.fix_missing_locations(tree)
    glb[ZERO_AS] = zero_as
    glb[KEPT] = kept
    return len(lists)


def slots_as_zeros(tree) -> None:
    """``[None] * n`` (``n * [None]``) as ``[0] * n`` where it is the function's only
    ``None``s (see the module's docstring)."""
    nones = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value is None]
    slots = [side.elts[0] for n in ast.walk(tree)
             if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult)
             for side in (n.left, n.right)
             if isinstance(side, ast.List) and len(side.elts) == 1
             and isinstance(side.elts[0], ast.Constant) and side.elts[0].value is None]
    if slots and len(slots) == len(nones):
        for c in slots:
            c.value = 0


def _guard_parameter_stores(tree, params: set) -> int:
    """Every store of a value that is not an int constant into an element of a parameter
    never rebound (``tmp[k] = a[i]``, ``tmp[k] += x``, ``out.append(x)``) through
    ``hpu__kept``: the caller's list ``[0] * n`` is a list of ints to Numba, and a float
    stored into it would be truncated where Python's list holds the float (a float sort
    with the caller's ``tmp = [0] * n`` came back as ints).  On an array, or a list of
    the value's kind, ``hpu__kept`` is the value itself; the number of stores guarded."""
    count = 0

    def wrap(name, v):
        return ast.copy_location(ast.Call(ast.Name(KEPT, ast.Load()),
                                          [ast.Name(name, ast.Load()), v], []), v)

    for n in ast.walk(tree):
        if isinstance(n, (ast.Assign, ast.AugAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            hit = [t.value.id for t in targets
                   if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                   and t.value.id in params and not isinstance(t.slice, ast.Slice)]
            if len(hit) == 1 and len(targets) == 1 and not _int_constant(n.value):
                n.value = wrap(hit[0], n.value)
                count += 1
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and n.func.attr in ("append", "insert") and isinstance(n.func.value, ast.Name)
              and n.func.value.id in params and n.args and not _int_constant(n.args[-1])):
            n.args[-1] = wrap(n.func.value.id, n.args[-1])
            count += 1
    return count


def zero_as(c, like):
    """``c`` as an element of ``like`` (an array, a list, a number) would be, where that is a
    float or complex kind, else ``c`` (in Python: ``c`` itself)."""
    return c


def kept(lst, v):
    """``v``, to be stored into ``lst`` (in Python: ``v`` itself)."""
    return v


def _register() -> None:
    from numba.core import types
    from numba.core.errors import TypingError
    from numba.extending import overload
    from numba.np.numpy_support import as_dtype

    def kind(t):
        t = getattr(t, "dtype", t) if isinstance(t, (types.Array, types.List)) else t
        return t if isinstance(t, (types.Float, types.Complex)) else None

    @overload(zero_as, jit_options={"cache": True})
    def _zero_as(c, like):
        k = kind(like)
        if k is None or isinstance(c, (types.Float, types.Complex)):
            return lambda c, like: c
        make = as_dtype(k).type
        return lambda c, like: make(c)

    @overload(kept, jit_options={"cache": True})
    def _kept(lst, v):
        held = getattr(lst, "dtype", None)
        if (isinstance(lst, types.List) and isinstance(held, (types.Integer, types.Boolean))
                and isinstance(v, (types.Float, types.Complex))):
            raise TypingError(f"hpu: a {v} stored into a list of {held} made of int "
                              "constants: Python's list would hold it as it is, Numba's "
                              "would convert it")
        return lambda lst, v: v


try:
    _register()
except ImportError:  # pragma: no cover - Numba is a dependency
    pass
