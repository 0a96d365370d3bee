"""Quicksort pieces built by loops of appends and by partition helpers, read as filters.

Why
===

The partition form (:mod:`hpu._functional_partition`) runs a quicksort on the device when
its pieces are filters of its input: ``[x for x in arr if x < p]`` or ``arr[arr < p]``.
Two other ways of writing the same pieces are at least as common in published Python::

    less, equal, greater = [], [], []           # before or after the base case
    for x in arr:
        if x < pivot:
            less.append(x)
        elif x == pivot:
            equal.append(x)
        else:
            greater.append(x)

and the same loop, or the masks, in a helper: ``less, equal, greater = partition(arr,
pivot)``.  Each list is a filter of ``arr``: the elements, in order, whose branch is taken --
the branch's condition and the negation of every condition before it.  This module rewrites
such code into the comprehensions the partition form reads (and nothing else): the function
as written still runs on the CPU, and the device form's pieces are the lists the plain
function builds, element for element (a NaN key takes the ``else`` branch in both).

What is read (else the statements are left as they are, and the partition form says why)
----------------------------------------------------------------------------------------

* ``X = []`` (or ``X, Y = [], []``) of names used only by the loops below: moved after the
  base cases when written before them (:func:`sunk_list_inits`);
* a ``for v in S:`` loop (``S`` anything the partition form takes as a source) whose body is
  ``if``/``elif``/``else`` chains, each branch one ``X.append(v)`` of the loop's element,
  each list appended in one branch, the conditions free of calls (they are evaluated once
  per list here, once per element in Python) and of the lists (:func:`appends_as_filters`);
* buffers filled by counts, ``less = np.empty(len(arr), arr.dtype)``, ``i = 0``, branches
  ``less[i] = x; i += 1``, only ``less[:i]`` read after the loop: the same filters, as
  ``np.array`` of each comprehension (:func:`buffers_as_filters`);
* a helper of the function's own file called as a statement, ``l, m, r = part(arr, p)``
  (or ``l = lesser(arr, p)``), whose body is statements and one final ``return`` of names or
  expressions, parameters never reassigned, no nested functions: inlined, its own names
  renamed, its returned lists named as the caller's targets (:func:`inlined_helpers`).
"""
from __future__ import annotations

import ast
import copy
import inspect

from hpu._functional_dps import NotRewritable, _is_name, _mentions, _tree

__all__ = ["sunk_list_inits", "appends_as_filters", "inlined_helpers", "buffers_as_filters"]


def _empty_lists(st) -> list[str] | None:
    """The names of ``X = []`` / ``X, Y = [], []``, else None."""
    if not (isinstance(st, ast.Assign) and len(st.targets) == 1):
        return None
    t, v = st.targets[0], st.value
    if _is_name(t) and isinstance(v, ast.List) and not v.elts:
        return [t.id]
    if (isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple) and len(t.elts) == len(v.elts)
            and all(_is_name(x) for x in t.elts)
            and all(isinstance(x, ast.List) and not x.elts for x in v.elts)):
        return [x.id for x in t.elts]
    return None


def sunk_list_inits(body: list, name: str) -> list:
    """``body`` with leading empty-list assignments moved after the leading base cases
    (``if ...: return ...`` with no recursive call) that do not read them."""
    inits, i = [], 0
    while i < len(body) and _empty_lists(body[i]) is not None:
        inits.append(body[i])
        i += 1
    if not inits:
        return body
    names = {n for st in inits for n in _empty_lists(st)}
    j = i
    while (j < len(body) and isinstance(body[j], ast.If) and not body[j].orelse
           and isinstance(body[j].body[-1], ast.Return)
           and not any(isinstance(n, ast.Call) and _is_name(n.func, name)
                       for n in ast.walk(body[j]))):
        if _mentions(body[j], names):
            return body
        j += 1
    if j == i:
        return body
    return body[i:j] + inits + body[j:]


def _branches(chain):
    """``[(condition or None, body)]`` of an ``if``/``elif``/``else`` chain."""
    out = []
    while True:
        out.append((chain.test, chain.body))
        if len(chain.orelse) == 1 and isinstance(chain.orelse[0], ast.If):
            chain = chain.orelse[0]
            continue
        if chain.orelse:
            out.append((None, chain.orelse))
        return out


def _appended(body, var: str) -> str | None:
    """``X`` of a branch that is exactly ``X.append(var)``."""
    if len(body) != 1 or not isinstance(body[0], ast.Expr):
        return None
    c = body[0].value
    if (isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "append"
            and _is_name(c.func.value) and len(c.args) == 1 and not c.keywords
            and _is_name(c.args[0], var)):
        return c.func.value.id
    return None


#: what a filter's condition may not hold: it is evaluated once per piece, not per element
_IMPURE = (ast.Call, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.Lambda)


def _branch_tests(loop, read):
    """``(tests, impure)`` of a ``for v in S:`` loop whose body is ``if``/``elif``/``else``
    chains, each branch read by ``read(branch, v)`` to a key of its own: ``{key: the
    element test of its branch}`` -- its condition and the negations of those before it in
    its chain -- and ``(key, node)`` of the first condition that calls or assigns, else
    None.  None when the loop is not of that shape."""
    if not (isinstance(loop, ast.For) and _is_name(loop.target) and not loop.orelse
            and loop.body and all(isinstance(s, ast.If) for s in loop.body)):
        return None
    var = loop.target.id
    tests: dict = {}
    impure = None
    for chain in loop.body:
        before: list = []
        for cond, body in _branches(chain):
            key = read(body, var)
            if key is None or key in tests:
                return None
            if cond is not None and impure is None:
                node = next((n for n in ast.walk(cond) if isinstance(n, _IMPURE)), None)
                impure = None if node is None else (key, node)
            parts = [ast.UnaryOp(ast.Not(), copy.deepcopy(c)) for c in before]
            if cond is not None:
                parts.append(copy.deepcopy(cond))
            tests[key] = (ast.Constant(True) if not parts else parts[0] if len(parts) == 1
                          else ast.BoolOp(ast.And(), parts))
            if cond is not None:
                before.append(cond)
    return tests, impure


def _comprehension(target: str, loop, test, wrap: str | None = None):
    """``target = [v for v in S if test]`` (``wrap.array(...)`` of it), at the loop's place."""
    var = loop.target.id
    value = ast.ListComp(ast.Name(var, ast.Load()), [ast.comprehension(
        ast.Name(var, ast.Store()), copy.deepcopy(loop.iter),
        [] if isinstance(test, ast.Constant) else [test], 0)])
    if wrap is not None:
        value = ast.Call(ast.Attribute(ast.Name(wrap, ast.Load()), "array", ast.Load()),
                         [value], [])
    st = ast.Assign([ast.Name(target, ast.Store())], value)
    for n in ast.walk(st):
        ast.copy_location(n, loop)
    return st


def _filters_of(loop) -> dict | None:
    """``{list name: its element test}`` of a loop of appends, else None."""
    got = _branch_tests(loop, _appended)
    if got is None:
        return None
    tests, impure = got
    if impure is not None:
        raise NotRewritable(
            f"the loop on line {loop.lineno} appends to {impure[0]!r} under a condition "
            f"that calls or assigns (`{ast.unparse(impure[1])}`): its pieces are read "
            "as filters, whose conditions are evaluated once per piece; compute the "
            "value in the loop first, or write each piece as a comprehension")
    if any(_mentions(t, set(tests)) for t in tests.values()) or _mentions(loop.iter, set(tests)):
        return None
    return tests


def appends_as_filters(body: list) -> list:
    """``body`` with each loop of appends into lists made empty before it written as one
    comprehension per list, at the loop's place; the empty lists' statements go."""
    out = list(body)
    for loop in body:
        tests = _filters_of(loop)
        if tests is None:
            continue
        # each list: made empty once before the loop, untouched between, used after only
        inits = {}
        for k, st in enumerate(out[:out.index(loop)]):
            for n in _empty_lists(st) or ():
                inits[n] = k
        if not set(tests) <= set(inits):
            continue
        at = out.index(loop)
        if any(_mentions(st, set(tests)) for k, st in enumerate(out[:at])
               if k not in {inits[n] for n in tests}):
            continue
        var = loop.target.id
        if any(_mentions(st, {var}) for st in out[at + 1:]):
            continue            # the loop's last element, read after it: not in a filter
        comps = [_comprehension(lst, loop, test) for lst, test in tests.items()]
        # the inits of these lists go (a tuple init keeps its other names)
        new = []
        for k, st in enumerate(out):
            if st is loop:
                new += comps
                continue
            made = _empty_lists(st)
            if made is not None and k in {inits[n] for n in tests}:
                for n in made:
                    if n not in tests:
                        keep = ast.Assign([ast.Name(n, ast.Store())], ast.List([], ast.Load()))
                        new.append(ast.fix_missing_locations(ast.copy_location(keep, st)))
                continue
            new.append(st)
        out = new
    return out


def _stored(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, (ast.Store, ast.Del))}


def _helper_tree(h, filename: str):
    """The helper's def (file lines, docstring dropped), or None when it is not a plain
    function of ``filename`` hpu can read."""
    if not inspect.isfunction(h) or getattr(h, "__code__", None) is None \
            or h.__code__.co_filename != filename or hasattr(h, "py_func"):
        return None
    try:
        node, _, _ = _tree(h)
    except Exception:       # no source (a REPL), or one the frontend cannot read
        return None
    return node


def inlined_helpers(body: list, glb: dict, filename: str, name: str, caller) -> list:
    """``body`` with each statement ``targets = helper(args)`` (a helper as the module
    docstring describes) replaced by the helper's statements; ``caller`` the function's
    def, whose names a helper's globals must not meet."""
    out = []
    counter = iter(range(1_000_000))
    stored = _stored(caller) | {p.arg for p in caller.args.args}
    for st in body:
        got = _inline(st, glb, filename, name, counter, stored)
        out += got if got is not None else [st]
    return out


def _inline(st, glb, filename, name, counter, caller_stored):
    if not (isinstance(st, ast.Assign) and len(st.targets) == 1
            and isinstance(st.value, ast.Call) and _is_name(st.value.func)
            and not st.value.keywords and st.value.func.id != name
            and not any(isinstance(x, ast.Starred) for x in st.value.args)):
        return None
    h = glb.get(st.value.func.id)
    node = _helper_tree(h, filename) if h is not None else None
    if node is None or node.args.vararg or node.args.kwarg or node.args.kwonlyargs \
            or node.args.posonlyargs or node.args.defaults \
            or len(node.args.args) != len(st.value.args) or not node.body:
        return None
    ret = node.body[-1]
    if not isinstance(ret, ast.Return) or ret.value is None:
        return None
    rest = node.body[:-1]
    if any(isinstance(n, (ast.Return, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                          ast.ClassDef, ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom))
           for s in rest for n in ast.walk(s)):
        return None
    params = [p.arg for p in node.args.args]
    if _stored(ast.Module(rest, [])) & set(params):
        return None
    target = st.targets[0]
    if _is_name(target):
        targets, values = [target.id], [ret.value]
    elif (isinstance(target, ast.Tuple) and all(_is_name(x) for x in target.elts)
          and isinstance(ret.value, ast.Tuple) and len(ret.value.elts) == len(target.elts)):
        targets, values = [x.id for x in target.elts], list(ret.value.elts)
    else:
        return None
    if len(set(targets)) != len(targets):
        return None
    k = next(counter)
    caller_reads = {n.id for a in st.value.args for n in ast.walk(a) if isinstance(n, ast.Name)}
    if set(targets) & caller_reads:
        return None
    # parameters: a name argument is the caller's name; another argument is bound once
    rename: dict[str, str] = {}
    binds = []
    for p, a in zip(params, st.value.args):
        if _is_name(a):
            rename[p] = a.id
        else:
            fresh = f"hpu_h{k}_{p}"
            rename[p] = fresh
            b = ast.Assign([ast.Name(fresh, ast.Store())], copy.deepcopy(a))
            binds.append(ast.fix_missing_locations(ast.copy_location(b, st)))
    # the helper's own names: fresh, except a local it returns bare, which is the target
    local = _stored(ast.Module(rest, []))       # comprehensions' variables are Store too
    free = {n.id for s in [*rest, ret] for n in ast.walk(s) if isinstance(n, ast.Name)} \
        - local - set(params)
    if free & caller_stored:            # a global of the helper the caller's name would hide
        return None
    direct = {}
    for t, v in zip(targets, values):
        if _is_name(v) and v.id in local and v.id not in direct:
            direct[v.id] = t
    for n in local:
        rename.setdefault(n, direct.get(n, f"hpu_h{k}_{n}"))
    used_by_caller = set(targets) - set(direct.values())
    if any(rename.get(n) in used_by_caller for n in local):
        return None

    def renamed(x):
        x = copy.deepcopy(x)
        for n in ast.walk(x):
            if isinstance(n, ast.Name) and n.id in rename:
                n.id = rename[n.id]
        return x

    stmts = binds + [renamed(s) for s in rest]
    for t, v in zip(targets, values):
        if _is_name(v) and direct.get(v.id) == t:
            continue
        a = ast.Assign([ast.Name(t, ast.Store())], renamed(v))
        stmts.append(ast.fix_missing_locations(ast.copy_location(a, ret)))
    return stmts


def _counted_store(body, var: str):
    """``(B, c)`` of a branch that is exactly ``B[c] = var`` then ``c += 1`` (``c = c + 1``)."""
    if len(body) != 2 or not isinstance(body[0], ast.Assign) or len(body[0].targets) != 1:
        return None
    t, step = body[0].targets[0], body[1]
    if not (isinstance(t, ast.Subscript) and _is_name(t.value) and _is_name(t.slice)
            and _is_name(body[0].value, var)):
        return None
    c = t.slice.id
    one = ast.Constant(1)
    if isinstance(step, ast.AugAssign) and _is_name(step.target, c) \
            and isinstance(step.op, ast.Add) and ast.dump(step.value) == ast.dump(one):
        return t.value.id, c
    if (isinstance(step, ast.Assign) and len(step.targets) == 1 and _is_name(step.targets[0], c)
            and isinstance(step.value, ast.BinOp) and isinstance(step.value.op, ast.Add)
            and _is_name(step.value.left, c) and ast.dump(step.value.right) == ast.dump(one)):
        return t.value.id, c
    return None


def _buffer_of(st, base: str, nps) -> str | None:
    """``B`` of ``B = np.empty(len(base), base.dtype)`` (``np.zeros``, ``dtype=``), or of
    ``np.empty_like(base)`` / ``np.zeros_like(base)``: room for every element of ``base``,
    of its dtype."""
    if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and _is_name(st.targets[0])
            and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute)
            and _is_name(st.value.func.value) and st.value.func.value.id in nps):
        return None
    v, what = st.value, st.value.func.attr
    if what in ("empty_like", "zeros_like") and len(v.args) == 1 and not v.keywords \
            and _is_name(v.args[0], base):
        return st.targets[0].id
    if what not in ("empty", "zeros") or not v.args or len(v.args) > 2:
        return None
    size = v.args[0]
    dtype = v.args[1] if len(v.args) == 2 else next(
        (k.value for k in v.keywords if k.arg == "dtype"), None)
    if any(k.arg != "dtype" for k in v.keywords) or dtype is None:
        return None
    if not (isinstance(size, ast.Call) and _is_name(size.func, "len") and len(size.args) == 1
            and _is_name(size.args[0], base)):
        return None
    if not (isinstance(dtype, ast.Attribute) and dtype.attr == "dtype"
            and _is_name(dtype.value, base)):
        return None
    return st.targets[0].id


def _zeros(st) -> list[str] | None:
    """The names ``i = 0``, ``i = j = 0``, ``i, j = 0, 0`` set to zero, else None."""
    if not isinstance(st, ast.Assign):
        return None
    names = []
    for t in st.targets:
        if _is_name(t) and isinstance(st.value, ast.Constant) and st.value.value == 0 \
                and type(st.value.value) is int:
            names.append(t.id)
        elif (isinstance(t, ast.Tuple) and isinstance(st.value, ast.Tuple)
              and len(t.elts) == len(st.value.elts) and all(_is_name(x) for x in t.elts)
              and all(isinstance(x, ast.Constant) and type(x.value) is int and x.value == 0
                      for x in st.value.elts)):
            names += [x.id for x in t.elts]
        else:
            return None
    return names


def buffers_as_filters(body: list, nps: set) -> list:
    """``body`` with a loop that fills buffers by counts -- ``less = np.empty(len(arr),
    arr.dtype)``, ``i = 0``, then ``for x in arr: if x < p: less[i] = x; i += 1 ...`` and
    ``less[:i]`` read after it -- written as ``less = np.array([x for x in arr if x < p])``
    (its filter, an array as NumPy's slice is), ``less[:i]`` as ``less``, and a later
    ``lo = less[:i]`` as the comprehension's own name."""
    if not nps:
        return body
    np_name = sorted(nps)[0]
    out = list(body)
    for loop in [st for st in body if isinstance(st, ast.For)]:
        got = _branch_tests(loop, _counted_store)         # keys: (buffer, count)
        if got is None or got[1] is not None:
            continue
        src = loop.iter
        base = src
        while isinstance(base, ast.Subscript) and isinstance(base.slice, ast.Slice):
            base = base.value
        pairs = list(got[0])
        if not _is_name(base) or len({b for b, _ in pairs}) != len(pairs) \
                or len({c for _, c in pairs}) != len(pairs):
            continue
        stores = {b: (b, c) for b, c in pairs}
        tests = {b: t for (b, _), t in got[0].items()}
        at = out.index(loop)
        bufs = set(stores)
        counts = {c for _, c in stores.values()}
        if any(_mentions(t, bufs | counts) for t in tests.values()) \
                or _mentions(src, bufs | counts):
            continue
        # before the loop: each buffer allocated once, each count set to 0, nothing else
        allocs, zeros = {}, {}
        for k, st in enumerate(out[:at]):
            b = _buffer_of(st, base.id, nps)
            if b is not None and b in bufs:
                allocs[b] = k
                continue
            z = _zeros(st)
            if z is not None and set(z) & counts:
                if not set(z) <= counts:
                    allocs = None
                    break
                for n in z:
                    zeros[n] = k
                continue
            if _mentions(st, bufs | counts):
                allocs = None
                break
        if allocs is None or set(allocs) != bufs or set(zeros) != counts:
            continue
        # after it: only `B[:c]` (lower 0 or none), each buffer with its own count
        after = out[at + 1:]
        slices = []
        bad = False
        for st in after:
            for n in ast.walk(st):
                if isinstance(n, ast.Subscript) and _is_name(n.value) and n.value.id in bufs:
                    sl = n.slice
                    if (isinstance(sl, ast.Slice) and sl.step is None
                            and (sl.lower is None or (isinstance(sl.lower, ast.Constant)
                                                      and sl.lower.value == 0))
                            and _is_name(sl.upper, stores[n.value.id][1])
                            and isinstance(n.ctx, ast.Load)):
                        slices.append(n)
                    else:
                        bad = True
        inside = {id(x) for s in slices for x in ast.walk(s)}
        if bad or any(isinstance(n, ast.Name) and n.id in bufs | counts and id(n) not in inside
                      for st in after for n in ast.walk(st)):
            continue
        # rewrite: the comprehensions at the loop, the slices as the buffers' names
        comps = [_comprehension(b, loop, tests[b], np_name) for b in stores]

        class Unslice(ast.NodeTransformer):
            def visit_Subscript(self, n):
                if any(n is s for s in slices):
                    return ast.copy_location(ast.Name(n.value.id, ast.Load()), n)
                return self.generic_visit(n)

        dropped = set(allocs.values()) | set(zeros.values())
        new = [st for k, st in enumerate(out[:at]) if k not in dropped] + comps
        new += [Unslice().visit(st) for st in after]
        out = _aliases_named(new, comps)
    return out


def _aliases_named(body: list, comps: list) -> list:
    """``lo = less`` after ``less = np.array([...])``, with ``lo`` untouched between and
    ``less`` read nowhere else: the comprehension assigned to ``lo`` instead."""
    out = list(body)
    for comp in comps:
        b = comp.targets[0].id
        at = next(i for i, st in enumerate(out) if st is comp)
        uses = [(i, st) for i, st in enumerate(out) if i != at and _mentions(st, {b})]
        if len(uses) != 1:
            continue
        i, st = uses[0]
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and _is_name(st.targets[0])
                and _is_name(st.value, b)):
            continue
        t = st.targets[0].id
        if any(_mentions(x, {t}) for x in out[at + 1:i]) or _mentions(comp.value, {t}):
            continue
        comp.targets = [ast.copy_location(ast.Name(t, ast.Store()), comp.targets[0])]
        del out[i]
    return out
