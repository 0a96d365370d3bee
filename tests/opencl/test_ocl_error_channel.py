"""The translator's checked mode: the error channel a kernel reports the user's mistakes through.

Mirrors ``checked=``/``bounds=`` of :func:`hpu._opencl._translate.translate`,
the ``hpu_raise``/``hpu_divisor_*``/``hpu_toint_*``/``hpu_index_chk*`` helpers
of :mod:`hpu._opencl._prelude` and :func:`hpu._opencl._backend.device_error`.
Each kernel is run on PoCL; its results are compared with plain Python on
the same input, the error buffer with what the first failing check records.
"""
from __future__ import annotations

import ast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpu._opencl._backend import device_error
from hpu._opencl._translate import FLOAT64, INT64, Array, translate

from ocl_support import PoclBackend

I64 = Array(np.int64)
F64 = Array(np.float64)


def quot(x, y):
    return x // y


def divide_task(t, a, d, out):
    out[t] = quot(a[t], d[t])


def convert_task(t, x, out):
    out[t] = int(x[t])


def store_task(t, x, out):
    out[t] = x[t]


def poke_task(t, idx, out):
    out[idx[t]] = t + 1


class Sites:
    """Records each checked node's text; the index is what the kernel reports."""

    def __init__(self):
        self.texts = []

    def __call__(self, typing, node):
        self.texts.append(f"{typing.name}: {ast.unparse(node)}")
        return len(self.texts) - 1


def _pocl():
    backend = PoclBackend()
    if backend.unavailable_reason is not None:
        pytest.skip(backend.unavailable_reason)
    return backend


def test_checked_mode_passes_the_channel_down_and_plain_mode_has_none():
    plain = translate([(divide_task, (INT64, I64, I64, I64))], kernels={"k": "divide_task"})
    assert "hpu_err" not in plain.source and "hpu_raise" not in plain.source
    sites = Sites()
    checked = translate([(divide_task, (INT64, I64, I64, I64))], kernels={"k": "divide_task"},
                        checked=sites)
    assert "__global long *hpu_err)" in checked.source   # the helper quot takes it too
    assert "hpu_divisor_l(" in checked.source
    assert [p.name for p in checked.kernels["k"]][-4:] == ["hpu__err", "hpu__err_len",
                                                             "hpu_start", "hpu_stop"]
    assert sites.texts == ["quot: x // y"]


@settings(max_examples=10, deadline=None)
@given(d=st.lists(st.integers(-5, 5), min_size=1, max_size=30), data=st.data())
def test_division_by_zero_is_recorded_and_the_others_computed(d, data):
    backend = _pocl()
    a = data.draw(st.lists(st.integers(-1000, 1000), min_size=len(d), max_size=len(d)))
    sites = Sites()
    prog = translate([(divide_task, (INT64, I64, I64, I64))], kernels={"k": "divide_task"},
                     checked=sites)
    got = backend.run(prog, "k", {"a": a, "d": d, "out": np.zeros(len(d)),
                                  "hpu__err": np.zeros(4)}, {}, 0, len(d))
    for t, (x, y) in enumerate(zip(a, d)):
        if y != 0:
            assert got["out"][t] == x // y
    err = device_error(got["hpu__err"], tuple(sites.texts))
    if 0 in d:
        assert isinstance(err, ZeroDivisionError)
        assert str(err) == "quot: x // y: integer division or modulo by zero"
    else:
        assert err is None


@pytest.mark.parametrize("task", [convert_task, store_task])
@pytest.mark.parametrize("bad, cls", [(float("nan"), ValueError), (float("inf"), OverflowError),
                                      (-1e19, OverflowError), (9.3e18, OverflowError)])
def test_a_bad_float_to_int_is_recorded(task, bad, cls):
    backend = _pocl()
    x = [1.5, -2.7, 3.0, bad, 4.2]
    sites = Sites()
    prog = translate([(task, (INT64, F64, I64))], kernels={"k": task.__name__}, checked=sites)
    got = backend.run(prog, "k", {"x": x, "out": np.zeros(5), "hpu__err": np.zeros(4)}, {},
                      0, 5)
    assert list(got["out"][[0, 1, 2, 4]]) == [1, -2, 3, 4]   # in range: truncated
    err = device_error(got["hpu__err"], tuple(sites.texts))
    assert isinstance(err, cls), err
    with pytest.raises(cls):  # NumPy refuses the same store (Python's int is unbounded)
        np.zeros(1, np.int64)[0] = bad


@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 20), data=st.data())
def test_an_out_of_range_store_is_recorded_and_never_performed(n, data):
    backend = _pocl()
    idx = data.draw(st.lists(st.integers(-3 * n, 3 * n), min_size=1, max_size=20))
    sites = Sites()
    prog = translate([(poke_task, (INT64, I64, I64))], kernels={"k": "poke_task"},
                     checked=sites, bounds=True)
    got = backend.run(prog, "k", {"idx": idx, "out": np.zeros(n), "hpu__err": np.zeros(4)},
                      {}, 0, len(idx))
    ref = np.zeros(n, np.int64)
    bad = [i for i in idx if not -n <= i < n]
    for t, i in enumerate(idx):
        if -n <= i < n and ref[i] == 0:  # some task wrote there; any of them may win
            ref[i] = -1
    for k in range(n):
        if ref[k] == -1:
            assert got["out"][k] in [t + 1 for t, i in enumerate(idx) if i % n == k
                                     and -n <= i < n]
        else:
            assert got["out"][k] == 0
    err = device_error(got["hpu__err"], tuple(sites.texts))
    if bad:
        assert isinstance(err, IndexError)
        value = int(str(err).split(": index ")[1].split()[0])
        assert value in bad and str(err).endswith(f"is out of bounds for length {n}")
    else:
        assert err is None


def copy_task(t, src, out):
    out[t + 10] = src[t + 10]


def test_the_value_is_checked_before_the_store_as_python_evaluates_it():
    """``out[k] = src[i]`` with both out of range: Python evaluates (and refuses) the value
    first, so the device reports ``src[...]``, not the store."""
    backend = _pocl()
    sites = Sites()
    prog = translate([(copy_task, (INT64, I64, I64))], kernels={"k": "copy_task"},
                     checked=sites, bounds=True)
    got = backend.run(prog, "k", {"src": np.zeros(3), "out": np.zeros(3),
                                  "hpu__err": np.zeros(4)}, {}, 0, 1)
    err = device_error(got["hpu__err"], tuple(sites.texts))
    assert isinstance(err, IndexError) and "src[t + 10]" in str(err), err
    with pytest.raises(IndexError, match="axis 0 with size 3"):
        out, src = np.zeros(3), np.zeros(3)
        out[10] = src[10]


def slice_copy_task(t, nd, ns, out):
    out[t] = hpu__slice_copy(nd[t], ns[t])  # noqa: F821 (the translator's own operation)


@settings(max_examples=10, deadline=None)
@given(pairs=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=20))
def test_a_slice_assignments_lengths_are_checked_as_numpy_does(pairs):
    """``dst[...] = src[...]``'s check (hpu._views.SLICE_COPY): the count to copy, len(dst),
    when the lengths are equal or src has one element; else ValueError recorded, 0 copied."""
    backend = _pocl()
    nd, ns = (np.array(c, np.int64) for c in zip(*pairs))
    sites = Sites()
    prog = translate([(slice_copy_task, (INT64, I64, I64, I64))],
                     kernels={"k": "slice_copy_task"}, checked=sites)
    got = backend.run(prog, "k", {"nd": nd, "ns": ns, "out": np.full(len(nd), -1),
                                  "hpu__err": np.zeros(4)}, {}, 0, len(nd))
    ok = (ns == nd) | (ns == 1)
    assert list(got["out"]) == list(np.where(ok, nd, 0))
    err = device_error(got["hpu__err"], tuple(sites.texts))
    if ok.all():
        assert err is None
    else:
        assert isinstance(err, ValueError)
        shapes = str(err).split(": could not broadcast input array from shape (")[1]
        s, d = (int(v) for v in shapes.replace(",) into shape (", " ").rstrip(",)").split())
        assert (d, s) in [(d_, s_) for d_, s_ in zip(nd, ns) if s_ != d_ and s_ != 1]
        with pytest.raises(ValueError, match=r"could not broadcast input array from shape "
                           rf"\({s},\) into shape \({d},\)"):
            np.zeros(d)[:] = np.zeros(s)
    plain = translate([(slice_copy_task, (INT64, I64, I64, I64))],
                      kernels={"k": "slice_copy_task"})
    got = backend.run(plain, "k", {"nd": nd, "ns": ns, "out": np.full(len(nd), -1)}, {},
                      0, len(nd))
    assert list(got["out"]) == list(np.where(ok, nd, 0))   # unchecked: nothing copied either


def test_device_error_decodes_each_code():
    sites = ("f.py:3: a // b",)
    assert device_error(np.zeros(4, np.int64), sites) is None
    for code, cls in ((1, ZeroDivisionError), (2, ValueError), (3, OverflowError),
                      (4, IndexError), (5, ValueError)):
        err = np.array([0, 0, 7, 5], np.int64)
        err.view(np.int32)[0] = code
        got = device_error(err, sites)
        assert type(got) is cls and str(got).startswith("f.py:3: a // b: ")
    err = np.array([0, 0, 7, 5], np.int64)
    err.view(np.int32)[0] = 4
    assert str(device_error(err, sites)).endswith("index 7 is out of bounds for length 5")
    err.view(np.int32)[0] = 5
    assert str(device_error(err, sites)).endswith(
        "could not broadcast input array from shape (7,) into shape (5,)")
