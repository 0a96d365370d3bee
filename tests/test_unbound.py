"""hpu._unbound: a local read where no statement assigned it raises Python's
UnboundLocalError on every path (Numba gave the variable's zero value: a silently wrong
answer), and the functions that never do so are left as they were."""
from __future__ import annotations

import ast
import inspect
import textwrap

import numpy as np
import pytest

import hpu
import unbound_examples as ex
from hpu._unbound import guard_unbound

PATHS = [{"device": "cpu"}, {"device": "gpu"}, {"device": "hybrid", "alpha": 0.5, "y": 2}]
IDS = ["cpu", "gpu", "hybrid"]


def _tree(fn):
    return ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]


def _line(fn, marker):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, t in enumerate(lines) if marker in t)


def test_a_function_that_assigns_before_it_reads_is_left_as_it_was():
    def msort(a, tmp, lo, hi):
        if hi - lo <= 1:
            return
        mid = (lo + hi) // 2
        msort(a, tmp, lo, mid)
        msort(a, tmp, mid, hi)
        i, j = lo, mid
        for k in range(lo, hi):
            if j >= hi or (i < mid and a[i] <= a[j]):
                tmp[k] = a[i]
                i += 1
            else:
                tmp[k] = a[j]
                j += 1
        for k in range(lo, hi):
            a[k] = tmp[k]

    before = ast.unparse(_tree(msort))
    assert ast.unparse(guard_unbound(_tree(msort))) == before


def test_only_the_variables_a_path_may_leave_unassigned_are_checked():
    text = ast.unparse(guard_unbound(_tree(ex.bonus_sum)))
    assert "hpu_bound_bonus = False" in text and "hpu_bound_bonus = True" in text
    assert "raise UnboundLocalError" in text
    assert "hpu_bound_left" not in text and "hpu_bound_mid" not in text


@pytest.mark.parametrize("config", PATHS, ids=IDS)
def test_an_index_form_function_raises_where_python_does(config):
    f = hpu.divide_and_conquer(ex.bonus_sum)
    ok = np.ones(4000, np.int64)                 # every left half positive: a value
    assert f.options(**config)(ok, 0, 4000) == ex.bonus_sum(ok, 0, 4000)
    bad = -np.ones(4000, np.int64)
    with pytest.raises(UnboundLocalError):
        ex.bonus_sum(bad, 0, 4000)
    with pytest.raises(UnboundLocalError, match="'bonus'") as info:
        f.options(**config)(bad, 0, 4000)
    assert info.value.__notes__ == [
        f"raised at unbound_examples.py:{_line(ex.bonus_sum, 'unbound-here')}"]


@pytest.mark.parametrize("K", [None, 0, 2])
@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_a_functional_function_raises_where_python_does(device, K):
    f = hpu.divide_and_conquer(ex.last_of_loop)
    x = np.arange(1.0, 40002.0)                  # every half has a positive element
    got = f.run(x, device=device, K=K).value if K is not None else f.run(x, device=device).value
    assert np.array_equal(got, ex.last_of_loop(x))
    y = np.arange(40001.0)                       # the first left half of 1 holds 0
    with pytest.raises(UnboundLocalError):
        ex.last_of_loop(y)
    with pytest.raises(UnboundLocalError, match="'last'"):
        f.run(y, device=device, K=K) if K is not None else f.run(y, device=device)


@pytest.mark.parametrize("config", PATHS, ids=IDS)
def test_a_loops_else_and_its_breaks_are_pythons_assignments(config):
    """`for ... else` assigning `found` at the break and in the else: assigned on every
    way out, so the device runs it (its flow analysis, which cannot follow the flag hpu
    makes of the else, sent it to the CPU saying `found` "may be used before it is
    assigned"); where the break path leaves it unassigned, Python's UnboundLocalError on
    every path (a break was taken for the else's assignment, and compiled code returned 0)."""
    has_pair = hpu.divide_and_conquer(ex.has_pair)
    unset = hpu.divide_and_conquer(ex.unset_at_break)
    for x in (np.arange(50), np.repeat(np.arange(40), 2), np.arange(3)):
        run = has_pair.options(**config).run(x, 0, len(x))
        assert run.value is ex.has_pair(x, 0, len(x))
        if config["device"] == "gpu":
            assert run.gpu_tasks > 0 and run.reason is None, run.reason
    x = np.arange(50)
    assert unset.options(**config).run(x, 0, 50).value == 0 == ex.unset_at_break(x, 0, 50)
    x[20] = x[21]
    with pytest.raises(UnboundLocalError) as err:
        unset.options(**config).run(x, 0, 50)
    assert f"unbound_examples.py:{_line(ex.unset_at_break, 'break-here')}" in str(err.value) \
        or "found" in str(err.value), err.value
