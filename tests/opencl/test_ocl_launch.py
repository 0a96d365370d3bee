"""The launch shape of a level's kernel (:func:`hpu._opencl._backend.launch_shape`).

A GPU runs a work-group on one compute unit, so a level's tasks are spread over
groups; the global size is padded to a whole number of groups and the kernel's
``index < hpu_stop`` test idles the work-items past the last task.  These tests
check the shape's arithmetic, then run kernels whose task counts are not a
multiple of the group on the real device, with the GPU shape forced.
"""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpu
from hpu._opencl._backend import GROUP_CAP, launch_shape

COMPILES = settings.get_profile("hpu-compiles")


@given(tasks=st.integers(1, 10**7), units=st.integers(1, 512),
       limit=st.integers(1, 2048))
def test_a_gpu_launch_covers_every_task_with_whole_groups_spread_over_the_units(tasks, units,
                                                                                 limit):
    (glob,), (local,) = launch_shape(tasks, units, cpu=False, group_limit=limit)
    assert glob >= tasks and glob % local == 0 and glob - tasks < local
    assert local & (local - 1) == 0 and 1 <= local <= min(GROUP_CAP, limit)
    # groups of at most tasks // units: every unit gets a group before any gets two
    assert local <= max(1, tasks // units)
    assert local * 2 > min(max(1, tasks // units), GROUP_CAP, limit)


def test_a_level_with_fewer_tasks_than_units_gets_one_task_per_group():
    assert launch_shape(128, 132, cpu=False) == ((128,), (1,))
    assert launch_shape(1, 132, cpu=False) == ((1,), (1,))
    assert launch_shape(1000, 132, cpu=False) == ((1000,), (4,))
    assert launch_shape(1 << 20, 132, cpu=False) == ((1 << 20,), (GROUP_CAP,))
    assert launch_shape(1 << 20, 132, cpu=False, group_limit=48) == ((1 << 20,), (32,))


def test_a_cpu_device_runs_groups_of_one_and_an_empty_level_launches_nothing():
    assert launch_shape(1000, 2, cpu=True) == ((1000,), (1,))
    assert launch_shape(0, 132, cpu=False) == ((0,), (1,))


def _sum(a, lo, hi):
    if hi - lo <= 3:
        s = 0
        for i in range(lo, hi):
            s += a[i]
        return s
    mid = (lo + hi) // 2
    return _sum(a, lo, mid) + _sum(a, mid, hi)


tree_sum = hpu.divide_and_conquer(span=("lo", "hi"))(_sum)


@settings(COMPILES, suppress_health_check=[*COMPILES.suppress_health_check,
                                          HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 3000), config=st.sampled_from([("gpu", None, None), ("hybrid", 0.5, 2),
                                                       ("hybrid", 0.0, 3)]),
       seed=st.integers(0, 2**32 - 1))
def test_padded_launches_give_the_plain_answer_on_the_device(discrete, n, config, seed):
    """With the GPU shape forced (the ``discrete`` fixture), levels of any task count --
    odd ones, fewer than a group, many groups -- run every task once and no other."""
    a = np.random.default_rng(seed).integers(-1000, 1000, n).astype(np.int64)
    device, alpha, y = config
    opts = {"device": device} if alpha is None else {"device": device, "alpha": alpha, "y": y}
    run = tree_sum.options(**opts).run(a, 0, n)
    assert run.value == int(a.sum())
    assert not run.fallbacks
    assert discrete and all(not b._cpu_device for b in discrete)
