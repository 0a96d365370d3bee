"""Generated source: deterministic, readable, inside the numeric subset, and correct.

The iterative solver (what OpenCL will run, since OpenCL has no recursion) is
checked against the original recursive function in plain Python and compiled
by Numba, on Hypothesis-chosen inputs, and its stack overflow must be reported.
The per-task functions are also run as plain Python through the real driver
(a synchronous debugging backend), so that their semantics are checked apart
from Numba.
"""
from __future__ import annotations

import ast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dc_examples as E
from hpu._codegen import core_source, make_layout, plain_namespace
from hpu._cpu import CpuBackend, StackOverflowError
from hpu._driver import execute, level_env
from hpu._frontend import resolve

COMPILES = settings.get_profile("hpu-compiles")

TASK_FUNCTIONS = ("count_task", "fill_task", "combine_task", "leaf_task_iter", "solve_iter")


def ints(min_size=0, max_size=1500, lo=-500, hi=500):
    n = st.one_of(st.integers(min_size, 30), st.integers(min_size, max_size))
    return hnp.arrays(np.int64, n, elements=st.integers(lo, hi))


def program_of(f, *args):
    program, values = f._program_for(*args)
    return program, [values[p] for p in program.spec.params]


def test_source_is_deterministic_and_names_the_users_lines():
    f = E.mergesort
    spec = f.spec
    closure = resolve(f.py_func, spec)
    lay = make_layout(spec, {"a", "tmp"})
    src1 = core_source(spec, closure, lay)
    src2 = core_source(f.spec, resolve(f.py_func, f.spec), make_layout(f.spec, ["tmp", "a"]))
    assert src1 == src2
    compile(src1, "<generated>", "exec")
    merge_line = spec.combine[0].lineno
    assert f"# line {merge_line}: merge(a, tmp, lo, mid, hi)" in src1
    assert f"# child 1: line {spec.calls[0].lineno}: mergesort(a, tmp, lo, mid)" in src1
    assert "CUTOFF = 8" in src1
    # the level arrays of the varying parameters and the carried name
    assert lay.varying == ("lo", "hi") and lay.carried == ("mid",) and lay.shared == ("a", "tmp")
    assert "def fill_task(tid__, in__lo, in__hi, off__, out__lo, out__hi, loc__mid, a, tmp):" in src1


def _functions(source):
    return {n.name: n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize("f, args", [
    (E.maxsub, lambda x: (x, 0, len(x))),
    (E.mergesort, lambda x: (x, np.empty_like(x), 0, len(x))),
    (E.find_first, lambda x: (x, 0, len(x), 3)),
    (E.count8, lambda x: (x, 0, len(x), 3)),
])
def test_task_functions_stay_in_the_numeric_subset(f, args):
    """No tuples, no allocation (but the solver's fixed stacks), scalar returns only."""
    x = np.arange(10, dtype=np.int64)
    program, _ = program_of(f, *args(x))
    funcs = _functions(program.iter_source(depth=16))
    user_names = {h.name for h in program.closure.helpers} | {f.spec.name}
    for name in TASK_FUNCTIONS:
        fn = funcs[name]
        for node in (n for stmt in fn.body for n in ast.walk(stmt)):
            assert not isinstance(node, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.Tuple,
                                         ast.GeneratorExp, ast.Lambda, ast.Slice)), \
                (name, ast.unparse(node))
            if isinstance(node, ast.Return) and node.value is not None:
                assert name == "count_task" and isinstance(node.value, ast.Constant)
            if isinstance(node, ast.Call):
                fname = ast.unparse(node.func)
                if fname == "np.empty":
                    assert name == "solve_iter"
                    size, dtype = node.args
                    assert isinstance(size, ast.Constant) and isinstance(size.value, int)
                    assert ast.unparse(dtype).startswith("np.")
                else:
                    assert fname in user_names | {"solve_iter", "range", "max", "min"}, fname
    # the recursive function is not called by what OpenCL runs
    for name in ("solve_iter", "leaf_task_iter"):
        called = {ast.unparse(c.func) for c in ast.walk(funcs[name]) if isinstance(c, ast.Call)}
        assert f.spec.name not in called


def _solve(ns_or_mod, program, args, depth_err=None):
    """Call solve_iter; returns (value, err)."""
    r = program.layout.result_arity
    outs = [np.zeros(1, dt) for dt in program.types.results]
    err = np.zeros(1, np.int64)
    solve = ns_or_mod["solve_iter"] if isinstance(ns_or_mod, dict) else ns_or_mod.solve_iter
    solve(*args, *outs, 0, err)
    vals = [o[0].item() for o in outs]
    value = None if r == 0 else vals[0] if r == 1 else tuple(vals)
    return value, int(err[0])


CASES = {
    "maxsub": (E.maxsub, lambda x: (x, 0, len(x)), 1),
    "dsum": (E.dsum, lambda x: (x, 0, len(x)), 0),
    "find_first": (E.find_first, lambda x: (x, 0, len(x), 7), 0),
    "count8": (E.count8, lambda x: (x, 0, len(x), 0), 0),
    "is_sorted": (E.is_sorted, lambda x: (np.sort(x), 0, len(x)), 0),
    "sum3": (E.sum3, lambda x: (x.astype(np.float64), 0, len(x)), 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
@settings(COMPILES, max_examples=20)
@given(x=ints(lo=-20, hi=20), data=st.data())
def test_iterative_solver_equals_the_recursive_function(name, x, data):
    f, make, min_size = CASES[name]
    if len(x) < min_size:
        x = np.zeros(min_size, np.int64)
    args = make(x)
    program, values = program_of(f, *args)
    want = f.py_func(*values)
    plain = plain_namespace(program.iter_source(64))
    assert _solve(plain, program, values) == (want, 0)
    compiled = program.iter_module(64)
    got, err = _solve(compiled, program, values)
    assert err == 0
    assert got == pytest.approx(want) if isinstance(want, float) else got == want


@settings(COMPILES, max_examples=15)
@given(x=ints())
def test_iterative_solver_sorts_in_place(x):
    # quicksort gets distinct keys: on repeated keys its depth grows like n, beyond the stack
    for f, x in ((E.mergesort, x), (E.quicksort, np.argsort(x, kind="stable"))):
        a = x.copy()
        args = (a, np.empty_like(a), 0, len(a)) if f is E.mergesort else (a, 0, len(a))
        program, values = program_of(f, *args)
        _, err = _solve(program.iter_module(64), program, values)
        assert err == 0
        np.testing.assert_array_equal(a, np.sort(x))
        b = x.copy()
        vals = [b if v is a else (np.empty_like(b) if isinstance(v, np.ndarray) else v)
                for v in values]
        _, err = _solve(plain_namespace(program.iter_source(64)), program, vals)
        assert err == 0
        np.testing.assert_array_equal(b, np.sort(x))


def test_stack_overflow_is_reported_never_silent():
    x = np.arange(1000, dtype=np.int64)[::-1].copy()
    program, values = program_of(E.dsum, x, 0, len(x))   # depth ~ log2(1000) + 1 = 11
    for solver in (plain_namespace(program.iter_source(4)), program.iter_module(4)):
        _, err = _solve(solver, program, values)
        assert err == 1
    for solver in (plain_namespace(program.iter_source(12)), program.iter_module(12)):
        assert _solve(solver, program, values) == (int(x.sum()), 0)
    with pytest.raises(StackOverflowError, match="deeper than"):
        execute(program.layout, program.types, dict(zip(program.spec.params, values)),
                CpuBackend(program, leaf="iterative", depth=4), K=2)


def test_depth_must_be_a_positive_int():
    x = np.arange(4, dtype=np.int64)
    program, _ = program_of(E.dsum, x, 0, 4)
    with pytest.raises(ValueError, match="depth"):
        program.iter_source(0)


class PlainBackend:
    """The generated per-task functions run as plain Python, one task at a time."""

    kind = "cpu"

    def __init__(self, program):
        self.lay = program.layout
        self.ns = plain_namespace(program.source)

    def _call(self, fn, names, level, child, start, stop, shared, out=None):
        env = {**level_env(level, child), **shared}
        for t in range(start, stop):
            v = self.ns[fn](t, *[env[n] for n in names])
            if out is not None:
                out[t + 1] = v

    def count(self, level, start, stop, shared):
        self._call("count_task", self.lay.count_args(), level, None, start, stop, shared,
                   out=level.offsets)

    def fill(self, level, child, start, stop, shared):
        self._call("fill_task", self.lay.fill_args(), level, child, start, stop, shared)

    def leaf(self, level, start, stop, shared):
        self._call("leaf_task", self.lay.leaf_args(), level, None, start, stop, shared)

    def combine(self, level, child, start, stop, shared):
        self._call("combine_task", self.lay.combine_args(), level, child, start, stop, shared)


@settings(COMPILES, max_examples=15)
@given(x=ints(min_size=1, max_size=600), K=st.sampled_from([0, 1, 3, 30]))
def test_generated_task_functions_as_plain_python(x, K):
    program, values = program_of(E.maxsub, x, 0, len(x))
    ex = execute(program.layout, program.types, dict(zip(program.spec.params, values)),
                 PlainBackend(program), K=K)
    assert ex.value == E.ref_maxsub(x)
    a = x.copy()
    program, values = program_of(E.quicksort, a, 0, len(a))
    execute(program.layout, program.types, dict(zip(program.spec.params, values)),
            PlainBackend(program), K=K)
    np.testing.assert_array_equal(a, np.sort(x))


def _thirds(a, lo, hi):
    if hi - lo <= 1:
        return a[lo] * 3 // 2 if hi > lo else 0
    mid = (lo + hi) // 2
    return _thirds(a, lo, mid) + _thirds(a, mid, hi)


def _halves(a, lo, hi):
    if hi - lo <= 2:
        return a[lo] * 3 // 2 - a[hi - 1] * 3 // 2
    mid = (lo + hi) // 2
    return _halves(a, lo, mid) + _halves(a, mid, hi)


def test_the_checks_are_compiled_once_for_every_module():
    """A generated CPU module calls hpu._module_checks' checks (``hpu__mul``,
    ``hpu__floordiv``...) rather than defining its own: Numba compiles them once per
    process and kind of arguments, not once per decorated function."""
    import hpu
    from hpu import _module_checks

    x = np.arange(1, 40, dtype=np.int64)
    mul_kinds = None
    for fn in (_thirds, _halves):
        f = hpu.divide_and_conquer(fn)
        assert f.options(device="cpu")(x, 0, len(x)) == fn(x, 0, len(x))
        program = next(iter(f._programs.values()))
        module = program.cpu_module
        assert "def hpu__mul(" not in program.source
        assert module.hpu__mul is _module_checks.mul
        assert module.hpu__floordiv is _module_checks.floordiv
        if mul_kinds is None:       # (a constant operand is typed as its literal value)
            mul_kinds = list(_module_checks.mul.signatures)
        assert list(_module_checks.mul.signatures) == mul_kinds   # the second compiled none
