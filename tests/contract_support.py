"""What every device path of every ready algorithm must satisfy, written once.

The contract (issue 5): whatever ``device`` ("cpu", "gpu", "hybrid") and split
(α, y) a run uses, its result is the reference's, and its :class:`hpu.Run`
says truthfully where the work went:

* level y's ``m`` tasks split as the issue states: the first ⌈α·m⌉ on the
  CPU, the rest on the device (computed here from α and the level's size,
  with exact decimal arithmetic, not with hpu's code);
* levels above y run on the CPU only; below y each side works exactly when
  its share of level y is non-empty (every task has a descendant at the
  cut-off level K, base cases being passed down);
* ``device="gpu"`` is α = 0, y = 0: every leaf and combine on the device;
  ``device="cpu"`` and α = 1 never touch the device.

The algorithms' strategies and references come from ``tests/algorithms/
alg_support.py`` (that folder is put on ``sys.path`` here, because its
conftest is not loaded when only these tests run).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
from hypothesis import strategies as st

_ALG_TESTS = str(Path(__file__).resolve().parent / "algorithms")
if _ALG_TESTS not in sys.path:
    sys.path.insert(0, _ALG_TESTS)

from alg_support import (arrays, inversions_reference, kadane_reference,  # noqa: E402
                         same_bits, same_scalar)

import hpu  # noqa: E402
from hpu import _profile  # noqa: E402
from algorithms.inversions import count_inversions, inversions  # noqa: E402
from algorithms.maxsubarray import max_subarray, max_subarray_sum  # noqa: E402
from algorithms.mergesort import mergesort, sort  # noqa: E402
from algorithms.mergesort3 import mergesort3, sort3  # noqa: E402
from algorithms.sum import dc_sum  # noqa: E402

__all__ = ["CASES", "CONFIGS", "Case", "Config", "SIZES", "arrays", "builtin_profile",
           "check_report", "device_share", "inversions_reference", "level_sizes",
           "same_bits", "same_scalar", "same_values", "split_ranges"]


@pytest.fixture(scope="module", autouse=True)
def builtin_profile(tmp_path_factory):
    """No calibration in a test module that imports this: hpu's built-in profile, from an
    empty folder (module-scoped, so Hypothesis tests may use it)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HPU_NO_AUTOCALIBRATE", "1")
        mp.delenv("HPU_PROFILE", raising=False)
        folder = tmp_path_factory.mktemp("profiles")
        mp.setattr(_profile, "profiles_dir", lambda: folder)
        mp.setattr(_profile, "_unsaved", {})
        yield


# ------------------------------------------------------------------ device configurations

@dataclass(frozen=True)
class Config:
    """One way to run: ``device`` and, for the hybrid, the split (α, y)."""

    device: str
    alpha: float | None = None
    y: int | None = None

    @property
    def options(self) -> dict:
        opts = {"device": self.device}
        if self.device == "hybrid":
            opts.update(alpha=self.alpha, y=self.y)
        return opts

    def __str__(self) -> str:
        if self.device != "hybrid":
            return self.device
        return f"hybrid-a{self.alpha}-y{self.y}"


CONFIGS = [
    Config("cpu"),
    Config("gpu"),
    Config("hybrid", 0.0, 3),    # α = 0: level 3 entirely on the device
    Config("hybrid", 1.0, 2),    # α = 1: the CPU alone
    Config("hybrid", 0.5, 0),    # y = 0: the root's one task, ⌈0.5⌉ = 1 -> the CPU
    Config("hybrid", 0.0, 0),    # α = 0, y = 0: what device="gpu" does
    Config("hybrid", 0.5, 60),   # y beyond every tree's depth: split at the cut-off level
    Config("hybrid", 0.3, 2),    # interior points
    Config("hybrid", 0.6, 4),
]

#: Mostly small sizes (trees of a few levels, edge cases near the base case), some large.
SIZES = st.one_of(st.integers(0, 300), st.integers(0, 300), st.integers(0, 300),
                  st.sampled_from([1000, 4097, 20000]))


# ------------------------------------------------------------------ what a Run must say

def level_sizes(run) -> dict[int, int]:
    """Tasks per level 0..K, read from the leaf/combine records (first record of a level)."""
    sizes: dict[int, int] = {}
    for r in run.levels:
        if r.phase in ("leaf", "combine") and r.level not in sizes:
            sizes[r.level] = r.tasks
    return sizes


def device_share(alpha: float, m: int) -> tuple[int, int]:
    """``(s, m)``: the issue's rule, the first ⌈α·m⌉ of level y's ``m`` tasks on the CPU."""
    s = math.ceil(Fraction(str(alpha)) * m)
    return min(s, m), m


def check_report(run, config: Config) -> tuple[int, int]:
    """Assert that ``run`` reports the split ``config`` asks for; return level y's ``(s, m)``.

    ``s`` is how many of level y's ``m`` tasks the CPU kept (``s == m``: the device did nothing).
    """
    assert isinstance(run, hpu.Run)
    assert run.device == config.device
    assert run.fallbacks == []
    sizes = level_sizes(run)
    K = run.K
    assert sorted(sizes) == list(range(K + 1)), run.summary()
    leaf = [r for r in run.levels if r.phase == "leaf"]
    assert len(leaf) == 1 and leaf[0].level == K
    leaf = leaf[0]
    assert (leaf.cpu_tasks, leaf.gpu_tasks) == (run.cpu_tasks, run.gpu_tasks)
    assert run.cpu_tasks + run.gpu_tasks == sizes[K] >= 1
    # the tree is expanded on the host: counting and filling never go to the device
    assert all(r.gpu_tasks == 0 for r in run.levels if r.phase in ("count", "fill"))

    if config.device == "cpu" or (config.device == "hybrid" and config.alpha == 1.0):
        assert run.alpha == 1.0
        assert run.y == (None if config.device == "cpu" else min(config.y, K)), run.summary()
        assert run.gpu_tasks == 0 and all(r.gpu_tasks == 0 for r in run.levels)
        assert run.transfers == ()
        return sizes[0], sizes[0]

    alpha, y = (0.0, 0) if config.device == "gpu" else (config.alpha, config.y)
    assert run.alpha == alpha
    assert run.y == min(y, K), run.summary()
    s, m = device_share(alpha, sizes[run.y])
    at_y = next(r for r in run.levels if r.level == run.y and r.phase in ("leaf", "combine"))
    assert (at_y.cpu_tasks, at_y.gpu_tasks) == (s, m - s), run.summary()
    for r in run.levels:
        if r.phase not in ("leaf", "combine"):
            continue
        if r.level < run.y:
            assert r.gpu_tasks == 0, run.summary()      # the CPU finishes levels y-1..0
        elif r.level > run.y:
            assert (r.gpu_tasks > 0) == (s < m), run.summary()
            assert (r.cpu_tasks > 0) == (s > 0), run.summary()
    if 0 < s < m:  # both shares non-empty: both devices did work
        assert run.cpu_tasks > 0 and run.gpu_tasks > 0
        assert any(r.gpu_tasks > 0 for r in run.levels)
        assert any(r.cpu_tasks > 0 for r in run.levels)
    if config.device == "gpu":
        assert run.cpu_tasks == 0 and run.gpu_tasks == sizes[K] > 0
        assert all(r.cpu_tasks == 0 for r in run.levels if r.phase in ("leaf", "combine"))
    if s < m:  # the device ran: one transfer each way
        assert sorted(t.direction for t in run.transfers) == ["device->host", "host->device"]
    else:
        assert run.transfers == ()
    return s, m


def same_values(got, want) -> bool:
    """Bit for bit, except that any NaN equals any NaN (payloads may differ by operand order)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype.kind != "f":
        return bool(np.array_equal(got, want))
    both_nan = np.isnan(got) & np.isnan(want)
    unsigned = np.dtype(f"u{got.dtype.itemsize}")
    return bool(np.all((got.view(unsigned) == want.view(unsigned)) | both_nan))


def split_ranges(lo: int, hi: int, level: int, base: int = 16) -> list[tuple[int, int]]:
    """The ``[lo, hi)`` of mergesort's tasks at ``level``, split as the function splits
    (at ``(lo + hi) // 2``; ranges of at most ``base`` keys are base cases, passed down)."""
    tasks = [(lo, hi)]
    for _ in range(level):
        nxt = []
        for a, b in tasks:
            if b - a <= base:
                nxt.append((a, b))
            else:
                mid = (a + b) // 2
                nxt += [(a, mid), (mid, b)]
        tasks = nxt
    return tasks


# ------------------------------------------------------------------ the algorithms

@dataclass(frozen=True)
class Case:
    """One algorithm: the dtypes it is tested on, how to draw data, and one checked run.

    ``check(x, options)`` runs the algorithm on (a copy of) ``x`` with ``.run``
    options, asserts the result equals the reference, and returns the
    :class:`hpu.Run` (``None`` when the wrapper needed no run).
    """

    name: str
    dtypes: tuple[str, ...]
    draw: Callable
    check: Callable
    function: object  #: the decorated function (for the default-split test)
    args: Callable    #: x -> the decorated function's arguments (a fresh copy of the data)


def _plain(f, *args):
    """The original Python function, with NumPy's scalar wrap-around and inf - inf silenced."""
    with np.errstate(over="ignore", invalid="ignore"):
        return f.py_func(*args)


def _check_sort(wrapper):
    def check(x, options):
        before = x.copy()
        got, run = wrapper(x, return_run=True, **options)
        assert same_bits(got, np.sort(before, kind="stable"))
        assert same_bits(x, before)  # the wrapper never modifies its input
        return run
    return check


def _check_inversions(x, options):
    before = x.copy()
    count, got, run = count_inversions(x, return_sorted=True, return_run=True, **options)
    assert count == inversions_reference(before)
    assert same_bits(got, np.sort(before, kind="stable"))
    assert same_bits(x, before)
    return run


def _check_sum(x, options):
    a = x.copy()
    run = dc_sum.run(a, 0, a.size, **options)
    want = x.copy()
    want_value = _plain(dc_sum, want, 0, want.size)
    # every partial sum Algorithm 4 stores into a, in a's own dtype, as the plain function does
    assert same_values(a, want)
    if x.dtype.kind == "f":  # same order of additions: bit for bit (any NaN equals any NaN)
        assert same_scalar(run.value, want_value)
    else:  # integers: modulo 2**bits, independent of the order of the additions
        assert int(run.value) == int(np.sum(x, dtype=x.dtype)) == int(a[0])
    return run


def _check_max_subarray(x, options):
    before = x.copy()
    if x.dtype in (np.int64, np.float64):  # what the wrapper computes in: through it
        got, run = max_subarray(x, return_run=True, **options)
        fields = (got.total, got.best_prefix, got.best_suffix, got.best)
    else:  # another dtype: the decorated function on the raw array
        run = max_subarray_sum.run(x, 0, x.size, **options)
        fields = tuple(run.value)
    if x.dtype.kind == "f":  # the same additions in the same order: exact
        want = _plain(max_subarray_sum, x.copy(), 0, x.size)
        assert tuple(float(v) for v in fields) == tuple(float(v) for v in want)
    else:
        assert tuple(int(v) for v in fields) == kadane_reference(x.tolist())
    assert same_bits(x, before)
    return run


def _draw_max_subarray(data, dtype):
    bound = 1000 if np.dtype(dtype).kind == "f" else 2**40  # exact in int64 / no inf
    return data.draw(arrays(dtype, size=SIZES, bound=bound, min_size=1))


def _sort_args(x):
    a = x.copy()
    return a, np.zeros_like(a), 0, a.size  # zeros: scratch contents comparable


def _range_args(x):
    a = x.copy()
    return a, 0, a.size


CASES = [
    Case("mergesort", ("int32", "int64", "float64", "uint8"),
         lambda data, dt: data.draw(arrays(dt, size=SIZES)), _check_sort(sort),
         mergesort, _sort_args),
    Case("mergesort3", ("int64", "float64", "int8"),
         lambda data, dt: data.draw(arrays(dt, size=SIZES)), _check_sort(sort3),
         mergesort3, _sort_args),
    Case("inversions", ("int32", "int64", "float32"),
         lambda data, dt: data.draw(arrays(dt, size=SIZES)), _check_inversions,
         inversions, _sort_args),
    Case("dc_sum", ("int8", "int64", "float32", "float64"),
         lambda data, dt: data.draw(arrays(dt, size=SIZES, min_size=1)), _check_sum,
         dc_sum, _range_args),
    Case("max_subarray_sum", ("int64", "float64", "float32"),
         _draw_max_subarray, _check_max_subarray, max_subarray_sum, _range_args),
]
