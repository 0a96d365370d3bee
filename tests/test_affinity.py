"""hpu._affinity: every thread on one core inside the block, each thread's cores back after."""
from __future__ import annotations

import contextlib
import os
import threading

import pytest

from hpu import _affinity

linux_multi = pytest.mark.skipif(
    not _affinity.available() or len(_affinity.allowed_cores()) < 2,
    reason="pinning needs Linux and at least two allowed cores (CI's machine has two)")


def _mask(tid: int) -> set[int]:
    return set(os.sched_getaffinity(tid))


@contextlib.contextmanager
def _waiting_thread():
    """A thread that records its id and its cores as it starts, then waits for the block's
    end; yields what it recorded once it has."""
    stop, started = threading.Event(), threading.Event()
    seen = {}

    def worker():
        seen["tid"] = threading.get_native_id()
        seen["inside"] = _mask(0)
        started.set()
        stop.wait(10)

    t = threading.Thread(target=worker)
    t.start()
    try:
        assert started.wait(10)
        yield seen
    finally:
        stop.set()
        t.join()


@linux_multi
def test_pinned_moves_every_thread_and_puts_each_back():
    cores = _affinity.allowed_cores()
    with _waiting_thread() as seen:
        # a thread with cores of its own keeps them after the block
        os.sched_setaffinity(seen["tid"], {cores[0]})
        with _affinity.pinned(cores[-1]):
            assert _mask(0) == {cores[-1]}
            assert _mask(seen["tid"]) == {cores[-1]}
        assert _mask(0) == set(cores)
        assert _mask(seen["tid"]) == {cores[0]}


@linux_multi
def test_a_thread_started_while_pinned_gets_the_process_cores_after():
    cores = _affinity.allowed_cores()
    with contextlib.ExitStack() as stack:
        with _affinity.pinned(cores[0]):
            seen = stack.enter_context(_waiting_thread())
        assert seen["inside"] == {cores[0]}          # inherited the pin...
        assert _mask(seen["tid"]) == set(cores)      # ...and lost it with the block


@linux_multi
def test_pinned_restores_after_an_exception():
    cores = _affinity.allowed_cores()
    with pytest.raises(KeyError):
        with _affinity.pinned(cores[1]):
            raise KeyError("x")
    assert _mask(0) == set(cores)


@linux_multi
def test_rotating_changes_core_every_two_rounds_and_visits_each():
    cores = _affinity.allowed_cores()
    around = _affinity.rotating(cores)
    got = []
    for k in range(2 * len(cores)):
        with around(k):
            got.append(_mask(0))
    assert got[0::2] == got[1::2]                    # both orders of a pair's sides on one core
    assert [next(iter(m)) for m in got[0::2]] == cores


def test_rotating_is_a_no_op_with_one_core():
    around = _affinity.rotating([0])
    before = _affinity.allowed_cores()
    with around(0):
        assert _affinity.allowed_cores() == before
    assert isinstance(around(3), contextlib.nullcontext)
