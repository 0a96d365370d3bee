"""Runaway and very deep recursion: a RecursionError that is an HpuError, never a crash.

Mirrors the depth limit of the CPU module (:func:`hpu._codegen._depth_limited_source`,
:data:`hpu._guard.DEFAULT_MAX_DEPTH`).  Before it, these cases killed the
process with a segfault (exit 139); each runs in a subprocess so that a
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
    f = T.quicksort if which == "quicksort" else T.total
    args = (x, 0, n)
    warnings.simplefilter("ignore")
    try:
        if path == "sequential":
            value = f.sequential(*args)
        else:
            value = f.run(*args, device=path, **kw).value
        out = {"kind": "returned", "value": None if value is None else int(value),
               "sorted": bool((x == np.arange(n)).all())}
    except Exception as err:
        out = {"kind": type(err).__name__, "hpu": isinstance(err, hpu.HpuError),
               "recursion": isinstance(err, RecursionError), "message": str(err)}
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


@pytest.mark.parametrize("path, kw", PATHS[:2])
def test_too_deep_a_legit_recursion_raises_instead_of_crashing(path, kw):
    """First-element-pivot quicksort on sorted keys recurses n deep."""
    got = _run("quicksort", path, kw, 4000, env={"HPU_MAX_DEPTH": "1000"})
    assert got["kind"] == "HpuRecursionError" and got["recursion"], got
    assert f"{HERE}:{_line('LINE_QS')}: quicksort() recursed 1000 calls deep" in got["message"]


@pytest.mark.parametrize("path, kw", PATHS[:2])
def test_deep_recursion_below_the_limit_succeeds(path, kw):
    got = _run("quicksort", path, kw, 6000)
    assert got == {"kind": "returned", "value": None, "sorted": True}


def test_the_default_limit_stops_before_the_stack_overflows():
    got = _run("total", "cpu", {}, 0)
    assert got["kind"] == "HpuRecursionError", got
    assert "recursed 10000 calls deep" in got["message"]


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
