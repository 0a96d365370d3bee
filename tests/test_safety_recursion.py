"""Runaway and very deep recursion: a RecursionError that is an HpuError, never a crash.

Mirrors the CPU module's solver (:func:`hpu._codegen.cpu_source`: native
recursion to :data:`hpu._guard.NATIVE_DEPTH`, then a growable explicit stack
up to :func:`hpu._guard.depth_limits`).  Before the depth limit these cases
killed the process with a segfault (exit 139), and before the explicit stack a
legitimately deep recursion raised; each runs in a subprocess so that a
regression fails here instead of killing the suite.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hpu

HERE = os.path.abspath(__file__)


def partition(a, lo, hi):
    p = a[lo]
    i = lo + 1
    for j in range(lo + 1, hi):
        if a[j] < p:
            t = a[i]
            a[i] = a[j]
            a[j] = t
            i += 1
    t = a[lo]
    a[lo] = a[i - 1]
    a[i - 1] = t
    return i - 1


@hpu.divide_and_conquer(b=2, cost="n")
def quicksort(a, lo, hi):   # LINE_QS
    if hi - lo <= 1:
        return
    m = partition(a, lo, hi)
    quicksort(a, lo, m)
    quicksort(a, m + 1, hi)


@hpu.divide_and_conquer(b=2, cost="1")
def total(a, lo, hi):   # LINE_TOTAL
    if hi - lo == 1:    # never true for an empty range: n = 0 recurses forever
        return a[lo]
    mid = (lo + hi) // 2
    s1 = total(a, lo, mid)
    s2 = total(a, mid, hi)
    return s1 + s2


@hpu.divide_and_conquer(b=2, cost="1")
def chain(a, lo, hi):   # LINE_CHAIN
    if hi - lo <= 1:
        return a[lo] if hi > lo else 0
    s1 = chain(a, lo, lo + 1)   # one element, then the rest: n calls deep
    s2 = chain(a, lo + 1, hi)
    return s1 + s2


PATHS = [("sequential", {}), ("cpu", {}), ("gpu", {}), ("hybrid", dict(alpha=0.0, y=2)),
         ("hybrid", dict(alpha=0.5, y=3))]

SCRIPT = textwrap.dedent('''
    import json, sys, warnings
    import numpy as np
    import hpu
    sys.path.insert(0, sys.argv[1])
    import test_safety_recursion as T
    which, path, kw, n = sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), int(sys.argv[5])
    x = np.arange(n)
    f = {"quicksort": T.quicksort, "total": T.total, "chain": T.chain}[which]
    if which == "chain":
        x = np.random.default_rng(n).integers(-1000, 1000, n)
    expected = int(x.sum())
    args = (x, 0, n)
    warnings.simplefilter("always")
    caught = warnings.catch_warnings(record=True)
    seen = caught.__enter__()
    try:
        if path == "sequential":
            value = f.sequential(*args)
        else:
            value = f.run(*args, device=path, **kw).value
        out = {"kind": "returned", "value": None if value is None else int(value),
               "expected": expected,
               "sorted": bool((x == np.arange(n)).all())}
    except Exception as err:
        out = {"kind": type(err).__name__, "hpu": isinstance(err, hpu.HpuError),
               "recursion": isinstance(err, RecursionError), "message": str(err)}
    out["warnings"] = [str(w.message) for w in seen]
    print(json.dumps(out))
''')


def _run(which, path, kw, n, env=None):
    proc = subprocess.run([sys.executable, "-c", SCRIPT, os.path.dirname(HERE), which, path,
                           json.dumps(kw), str(n)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _line(tag: str) -> int:
    with open(HERE) as fh:
        for k, text in enumerate(fh, 1):
            if text.rstrip().endswith(f"# {tag}"):
                return k
    raise AssertionError(tag)


@pytest.mark.parametrize("path, kw", PATHS)
def test_a_guard_that_never_stops_raises_recursion_error(path, kw):
    got = _run("total", path, kw, 0, env={"HPU_MAX_DEPTH": "3000"})
    assert got["kind"] == "HpuRecursionError" and got["hpu"] and got["recursion"], got
    msg = got["message"]
    assert f"{HERE}:{_line('LINE_TOTAL')}: total() recursed 3000 calls deep" in msg
    assert "base case is never reached" in msg
    # the device's stack overflow is redone on the CPU first: no advice to raise depth=
    assert not any("depth=" in w for w in got["warnings"]), got["warnings"]


@pytest.mark.parametrize("path, kw", PATHS[:2])
def test_too_deep_a_legit_recursion_raises_instead_of_crashing(path, kw):
    """First-element-pivot quicksort on sorted keys recurses n deep."""
    got = _run("quicksort", path, kw, 4000, env={"HPU_MAX_DEPTH": "1000"})
    assert got["kind"] == "HpuRecursionError" and got["recursion"], got
    assert f"{HERE}:{_line('LINE_QS')}: quicksort() recursed 1000 calls deep" in got["message"]


@pytest.mark.parametrize("path, kw", PATHS)
def test_a_deep_recursion_succeeds_on_every_path(path, kw):
    """200 000 calls deep: past the native part, on the growable explicit stack.

    On the device paths the device's fixed stack is too shallow: its share is
    redone on the CPU (a warning), which must then succeed.
    """
    n = 200_000
    got = _run("chain", path, kw, n)
    assert got["kind"] == "returned" and got["value"] == got["expected"], got
    if path in ("gpu", "hybrid") and kw.get("alpha", 0) < 1:  # the device's share: too deep
        assert any("larger depth=" in w and "redone on the CPU" in w
                   for w in got["warnings"]), got["warnings"]


@pytest.mark.parametrize("path, kw", [PATHS[1]])
def test_quicksort_of_200000_sorted_keys_succeeds(path, kw):
    """The first-element-pivot quicksort of issue 11: 200 000 calls deep (and quadratic:
    ~20 s, so on the CPU path only; ``chain`` above takes every path as deep)."""
    got = _run("quicksort", path, kw, 200_000)
    assert got["kind"] == "returned" and got["sorted"], got


def test_the_default_limit_stops_a_runaway_recursion():
    """Without HPU_MAX_DEPTH: the explicit stack stops at its byte budget, in bounded time."""
    from hpu._codegen import frame_bytes, make_layout, Types
    from hpu._guard import depth_limits

    lay = make_layout(total.spec, ["a"])
    i8 = np.dtype(np.int64)
    limit = depth_limits(frame_bytes(lay, Types((i8, i8), (), (i8,))))[1]
    assert 1_000_000 <= limit <= 10_000_000
    got = _run("total", "cpu", {}, 0)
    assert got["kind"] == "HpuRecursionError", got
    assert f"recursed {limit} calls deep" in got["message"]


def test_a_bad_limit_is_refused(monkeypatch):
    from hpu import _guard
    monkeypatch.setenv("HPU_MAX_DEPTH", "lots")
    with pytest.raises(ValueError, match="HPU_MAX_DEPTH='lots': expected an integer >= 1"):
        _guard.max_depth()


def test_results_are_unchanged_in_process():
    x = np.random.default_rng(1).integers(0, 1000, 3000)
    a = x.copy()
    quicksort(a, 0, len(a))
    assert (a == np.sort(x)).all()
    assert total(x, 0, len(x)) == x.sum()


@hpu.divide_and_conquer
def stern(n):
    """Stern's diatomic sequence: the call Python skips for an even n (the conditional
    expression's other branch) calls itself without end at n = 2."""
    if n < 2:
        return n
    return stern(n // 2) if n % 2 == 0 else stern(n // 2) + stern(n // 2 + 1)


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_a_runaway_call_python_skips_gives_python_s_answer(device):
    """A level runs both branches' calls; one Python never makes recursed without end, and
    the HpuRecursionError reached the caller where Python returns a value (every n, as
    each run meets stern(2)).  Run again as written, in Python's order: Python's answer."""
    import warnings

    for n in (2, 9, 1000, 99_999):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = stern.options(device=device).run(n)
        assert run.value == stern.py_func(n)
        assert "HpuRecursionError" in run.reason and "Python does not make" in run.reason
