"""The breadth-first driver on the CPU backend, against independent references.

Every example function of ``dc_examples`` is run with Hypothesis-chosen inputs
and several cut-off levels K (0, inside the tree, automatic, beyond the
tree's depth); the result must equal plain NumPy / Python, and the original,
``.py_func``, ``.sequential`` and ``.run(device="cpu")`` must agree.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dc_examples as E
from hpu._cpu import CpuBackend
from hpu._driver import execute
from hpu._run import PHASES

COMPILES = settings.get_profile("hpu-compiles")
K_VALUES = st.sampled_from([0, 1, 2, 5, None, 60])


def int_arrays(max_size=2000, dtype=np.int64, lo=-1000, hi=1000, min_size=0):
    n = st.one_of(st.integers(min_size, 40), st.integers(min_size, max_size))
    return hnp.arrays(dtype, n, elements=st.integers(lo, hi))


def float_arrays(max_size=2000, min_size=0):
    n = st.one_of(st.integers(min_size, 40), st.integers(min_size, max_size))
    return hnp.arrays(np.float64, n, elements=st.floats(-1e3, 1e3, allow_subnormal=False))


def call_all(f, args, mutable=()):
    """Run the original, .py_func, .sequential, .run(): return (values, mutated arrays)."""
    out = []
    for how in ("call", "py_func", "sequential", "run"):
        a = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
        if how == "call":
            v = f(*a)
        elif how == "py_func":
            v = f.py_func(*a)
        elif how == "sequential":
            v = f.sequential(*a)
        else:
            v = f.run(*a, device="cpu").value
        out.append((v, [a[i] for i in mutable]))
    return out


@settings(COMPILES)
@given(x=int_arrays(), K=K_VALUES)
def test_mergesort_sorts_in_place_for_every_K(x, K):
    a = x.copy()
    run = E.mergesort.run(a, np.empty_like(a), 0, len(a), K=K)
    assert run.value is None
    np.testing.assert_array_equal(a, np.sort(x))
    for v, (arr,) in call_all(E.mergesort, (x, np.empty_like(x), 0, len(x)), mutable=(0,)):
        assert v is None
        np.testing.assert_array_equal(arr, np.sort(x))


@settings(COMPILES, max_examples=15)
@given(x=float_arrays())
def test_mergesort_on_floats(x):
    a = x.copy()
    E.mergesort(a, np.empty_like(a), 0, len(a))
    np.testing.assert_array_equal(a, np.sort(x))


@settings(COMPILES)
@given(x=int_arrays(), K=K_VALUES)
def test_sum_returns_a_scalar(x, K):
    assert E.dsum.run(x, 0, len(x), K=K).value == int(x.sum())
    values = [v for v, _ in call_all(E.dsum, (x, 0, len(x)))]
    assert values == [int(x.sum())] * 4


@settings(COMPILES)
@given(x=int_arrays(min_size=1), K=K_VALUES)
def test_max_subarray_returns_a_4_tuple(x, K):
    want = E.ref_maxsub(x)
    assert E.maxsub.run(x, 0, len(x), K=K).value == want
    for v, _ in call_all(E.maxsub, (x, 0, len(x))):
        assert tuple(v) == want


@settings(COMPILES)
@given(x=float_arrays(), K=K_VALUES)
def test_a3_uneven_thirds_float_sum(x, K):
    got = E.sum3.run(x, 0, len(x), K=K).value
    assert got == pytest.approx(float(np.sum(x)), abs=1e-6)
    for v, _ in call_all(E.sum3, (x, 0, len(x))):
        assert v == pytest.approx(got, abs=1e-6)


@settings(COMPILES)
@given(x=int_arrays(dtype=np.int32), K=K_VALUES)
def test_a4_uneven_quarters_float_max(x, K):
    want = float(x.max()) if x.size else -np.inf
    assert E.max4.run(x, 0, len(x), K=K).value == want
    assert [v for v, _ in call_all(E.max4, (x, 0, len(x)))] == [want] * 4


@settings(COMPILES)
@given(x=int_arrays(), t=st.integers(-1000, 1000), K=K_VALUES)
def test_a8_with_an_extra_scalar_passed_through(x, t, K):
    want = int((x > t).sum())
    assert E.count8.run(x, 0, len(x), t, K=K).value == want
    assert [v for v, _ in call_all(E.count8, (x, 0, len(x), t))] == [want] * 4


@settings(COMPILES)
@given(x=int_arrays(lo=0, hi=5), sort_first=st.booleans(), K=K_VALUES)
def test_bool_result(x, sort_first, K):
    if sort_first:
        x = np.sort(x)
    want = bool(np.all(x[:-1] <= x[1:])) if x.size > 1 else True
    got = E.is_sorted.run(x, 0, len(x), K=K).value
    assert got is want
    assert [v for v, _ in call_all(E.is_sorted, (x, 0, len(x)))] == [want] * 4


@settings(COMPILES)
@given(x=float_arrays(), scale=st.floats(-4, 4), K=K_VALUES)
def test_float_scalar_passed_by_keyword(x, scale, K):
    want = float(np.sum(scale * x * x))
    got = E.sumsq.run(x, 0, len(x), scale, K=K).value
    assert got == pytest.approx(want, rel=1e-9, abs=1e-6)
    assert E.sumsq.run(x, lo=0, hi=len(x), scale=scale, K=K).value == got


@settings(COMPILES)
@given(x=int_arrays(lo=0, hi=30), v=st.integers(0, 30), K=K_VALUES)
def test_returns_inside_loops(x, v, K):
    want = E.ref_find_first(x, v)
    assert E.find_first.run(x, 0, len(x), v, K=K).value == want
    assert [r for r, _ in call_all(E.find_first, (x, 0, len(x), v))] == [want] * 4


@settings(COMPILES)
@given(x=int_arrays(), K=K_VALUES)
def test_divide_that_writes_arrays(x, K):
    a = x.copy()
    E.quicksort.run(a, 0, len(a), K=K)
    np.testing.assert_array_equal(a, np.sort(x))


def _internal_mids(lo, hi, out):
    if hi - lo <= 1:
        return
    mid = (lo + hi) // 2
    out.append(mid)
    _internal_mids(lo, mid, out)
    _internal_mids(mid, hi, out)


@settings(COMPILES, max_examples=10)
@given(n=st.integers(0, 3000), K=K_VALUES)
def test_the_divide_runs_exactly_once_per_task(n, K):
    visits = np.zeros(max(n, 1), np.int64)
    E.visit_count.run(visits, 0, n, K=K)
    want = np.zeros_like(visits)
    mids = []
    _internal_mids(0, n, mids)
    want[mids] = 1
    np.testing.assert_array_equal(visits, want)


@pytest.mark.parametrize("n", [65537, 100000])
def test_large_inputs(n):
    rng = np.random.default_rng(n)
    x = rng.integers(-2**40, 2**40, n)
    a = x.copy()
    run = E.mergesort.run(a, np.empty_like(a), 0, n)
    np.testing.assert_array_equal(a, np.sort(x))
    assert run.value is None and run.K >= 1
    assert E.dsum.run(x, 0, n).value == int(x.sum())
    assert E.maxsub(x, 0, n) == E.ref_maxsub(x)


def test_run_report_levels_and_auto_K():
    import numba

    n = 1 << 16  # large enough to be split: a few thousand keys run as one task (K = 0)
    x = np.random.default_rng(7).integers(0, 100, n)
    a = x.copy()
    run = E.mergesort.run(a, np.empty_like(a), 0, n, device="cpu")
    p = numba.get_num_threads()
    # auto K: the first level with >= 8 p tasks (mergesort's tree is complete that far)
    assert 2 ** run.K >= 8 * p > 2 ** (run.K - 1)
    assert run.device == "cpu" and run.alpha == 1.0 and run.y is None
    assert run.fallbacks == [] and run.transfers == () and run.gpu_tasks == 0
    assert run.cpu_tasks == 2 ** run.K
    phases = [(r.level, r.phase) for r in run.levels]
    want = [(i, ph) for i in range(run.K) for ph in ("count", "fill")] + [(run.K, "leaf")] + \
           [(i, "combine") for i in range(run.K - 1, -1, -1)]
    assert phases == want
    for r in run.levels:
        assert r.phase in PHASES and r.cpu_tasks == 2 ** r.level and r.gpu_tasks == 0
        assert r.cpu_seconds >= 0 and r.gpu_seconds == 0
    assert run.seconds >= sum(r.cpu_seconds for r in run.levels)


def test_expansion_stops_when_every_task_is_a_base_case():
    x = np.arange(20)
    run = E.dsum.run(x, 0, 20, K=60)
    # 20 -> 10 -> 5 -> 2/3 -> 1/1/1/2 -> 1: the tree has 6 levels (0..5)
    assert run.K == 5 and run.value == int(x.sum())
    assert run.levels[-1].phase == "combine" and run.levels[-1].level == 0


@pytest.mark.parametrize("K", [0, 3, 6])
def test_parameter_storage_depends_on_K_not_n(K):
    """Level arrays for levels 0..K only: the same bytes for n = 10^3 and 10^5."""
    sizes = []
    for n in (1000, 100000):
        x = np.random.default_rng(n).integers(0, 10, n)
        program, values = E.mergesort._program_for(x, np.empty_like(x), 0, n)
        ex = execute(program.layout, program.types, values, CpuBackend(program), K=K)
        assert ex.K == K and ex.level_sizes == tuple(2 ** i for i in range(K + 1))
        np.testing.assert_array_equal(values["a"], np.sort(x))
        sizes.append(ex.allocated_bytes)
    lay = program.layout
    per_task = 8 * (len(lay.varying) + len(lay.carried) + lay.result_arity + 1)
    bound = per_task * sum(lay.a ** i for i in range(K + 1)) + 8 * (K + 1)
    assert sizes[0] == sizes[1] <= bound


@settings(COMPILES, max_examples=15)
@given(x=int_arrays(min_size=1), K=st.sampled_from([0, 2, None]))
def test_iterative_leaf_solver_through_the_driver(x, K):
    """The stack-based solver (what OpenCL will run) as the CPU's leaf solver."""
    program, values = E.maxsub._program_for(x, 0, len(x))
    ex = execute(program.layout, program.types, values, CpuBackend(program, leaf="iterative"),
                 K=K, min_tasks=4)
    assert ex.value == E.ref_maxsub(x)
    a = x.copy()
    program, values = E.mergesort._program_for(a, np.empty_like(a), 0, len(a))
    execute(program.layout, program.types, values, CpuBackend(program, leaf="iterative"), K=K)
    np.testing.assert_array_equal(a, np.sort(x))


def test_split_level_ranges_give_the_same_result():
    """A level may be split into several ranges (what the hybrid backend will do)."""
    x = np.random.default_rng(3).integers(-100, 100, 3001)
    program, values = E.maxsub._program_for(x, 0, len(x))
    be = CpuBackend(program)

    def assign(level, phase, m):
        s = m // 3
        return [(be, 0, s), (be, s, m)]

    ex = execute(program.layout, program.types, values, be, K=5, assign=assign)
    assert ex.value == E.ref_maxsub(x)
    assert all(r.cpu_tasks == 2 ** r.level for r in ex.levels)
