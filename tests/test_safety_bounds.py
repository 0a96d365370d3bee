"""Bounds-checked mode: an out-of-range index raises IndexError naming array, index, length, line.

Mirrors ``boundscheck=`` of :func:`hpu.divide_and_conquer`, ``HPU_BOUNDSCHECK``
(:func:`hpu._guard.boundscheck_default`) and the subscript rewrite of
:class:`hpu._codegen._Checked`.  The indices are chosen by Hypothesis, in and
out of range; the plain function (NumPy) is the reference for which ones raise.
The OpenCL device checks through its error channel (the store is skipped, the
host raises after the device's share); since a regression there could corrupt
memory or crash, its cases run in a child process (``INNER``).

An index into a view (:mod:`hpu._views`: ``v = a[lo:hi]; v[i]``, a sliced
parameter) is checked against the *view's* length, as NumPy does, and the
message names the view as written; NumPy on the plain function is the reference.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpu
from hpu import _codegen, _guard

HERE = os.path.abspath(__file__)


def bump(a, i):
    a[i] += 1   # LINE_HELPER


@hpu.divide_and_conquer(b=2, cost="1", boundscheck=True)
def poke(a, idx, lo, hi):
    if hi - lo == 1:
        a[lo + idx[lo]] += 1   # LINE_POKE
        return
    mid = (lo + hi) // 2
    poke(a, idx, lo, mid)
    poke(a, idx, mid, hi)


@hpu.divide_and_conquer(b=2, cost="1", boundscheck=True)
def poke_helper(a, idx, lo, hi):
    if hi - lo == 1:
        bump(a, lo + idx[lo])
        return
    mid = (lo + hi) // 2
    poke_helper(a, idx, lo, mid)
    poke_helper(a, idx, mid, hi)


@hpu.divide_and_conquer(b=2, cost="1")
def poke_unchecked(a, idx, lo, hi):
    if hi - lo == 1:
        a[lo + idx[lo]] += 1
        return
    mid = (lo + hi) // 2
    poke_unchecked(a, idx, lo, mid)
    poke_unchecked(a, idx, mid, hi)


def _line(tag: str) -> int:
    with open(HERE) as fh:
        for k, text in enumerate(fh, 1):
            if text.rstrip().endswith(f"# {tag}"):
                return k
    raise AssertionError(tag)


PATHS = [("sequential", {}), ("cpu", {}), ("hybrid", dict(alpha=1.0, y=2))]
#: leaves and combines on the device (gpu; hybrid with every leaf there; leaves on both)
DEVICE_PATHS = [("gpu", {}), ("hybrid", dict(alpha=0.0, y=1)), ("hybrid", dict(alpha=0.5, y=2))]
#: set in the child process that runs the device cases (a crash there fails one test)
INNER = os.environ.get("HPU_TEST_DEVICE_BOUNDS") == "1"
inner_only = pytest.mark.skipif(not INNER, reason="run in a child process by "
                                "test_device_bounds_in_a_child_process")


def _call(f, args, path, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if path == "sequential":
            return f.sequential(*args)
        return f.run(*args, device=path, **kw).value


@pytest.mark.parametrize("path, kw", PATHS + [pytest.param(*p, marks=inner_only)
                                              for p in DEVICE_PATHS])
@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 40), m=st.integers(2, 40), data=st.data())
def test_out_of_range_indices_raise_index_error(path, kw, n, m, data):
    idx = np.array(data.draw(st.lists(st.integers(-3 * n, 3 * n), min_size=m, max_size=m)))
    a = np.zeros(n, np.int64)
    ref = a.copy()
    try:
        poke.py_func(ref, idx, 0, m)
        python = None
    except IndexError as err:
        python = err
    if python is None:
        _call(poke, (a, idx, 0, m), path, kw)
        assert (a == ref).all()
        return
    bad = [lo + int(i) for lo, i in enumerate(idx) if not -n <= lo + i < n]
    with pytest.raises(IndexError) as err:
        _call(poke, (a, idx, 0, m), path, kw)
    msg = str(err.value)
    assert msg.startswith(f"{HERE}:{_line('LINE_POKE')}: a[lo + idx[lo]]: index ")
    assert f"is out of bounds for length {n}" in msg
    assert int(msg.split(": index ")[1].split()[0]) in bad


@pytest.mark.parametrize("path, kw", PATHS + [pytest.param(*p, marks=inner_only)
                                              for p in DEVICE_PATHS])
def test_a_helper_names_itself_and_the_failing_line(path, kw):
    a = np.zeros(10, np.int64)
    idx = np.array([1, 1, 1, 7])          # a[lo + idx[lo]]: 1, 2, 3, 10
    with pytest.raises(IndexError) as err:
        _call(poke_helper, (a, idx, 0, 4), path, kw)
    assert str(err.value) == (f"{HERE}:{_line('LINE_HELPER')}: in bump(): a[i]: index 10 is "
                              "out of bounds for length 10")


def test_the_environment_switch(monkeypatch):
    monkeypatch.delenv("HPU_BOUNDSCHECK", raising=False)
    assert _guard.boundscheck_default() is False
    monkeypatch.setenv("HPU_BOUNDSCHECK", "1")
    assert _guard.boundscheck_default() is True
    monkeypatch.setenv("HPU_BOUNDSCHECK", "maybe")
    with pytest.raises(ValueError, match="HPU_BOUNDSCHECK='maybe': expected 1 or 0"):
        _guard.boundscheck_default()


def test_unchecked_source_has_no_index_checks_and_checked_has_them(monkeypatch):
    monkeypatch.delenv("HPU_BOUNDSCHECK", raising=False)
    a, idx = np.zeros(4, np.int64), np.zeros(4, np.int64)
    _call(poke_unchecked, (a, idx, 0, 4), "cpu", {})
    _call(poke, (a, idx, 0, 4), "cpu", {})
    for f, checked in ((poke_unchecked, False), (poke, True)):
        program = next(iter(f._programs.values()))
        assert ("hpu__ix(lo + idx[hpu__ix(lo" in program.source) is checked
        # the device's source is never rewritten
        assert "hpu__ix(" not in program.iter_source(8)


SCRIPT = textwrap.dedent('''
    import sys, warnings
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import test_safety_bounds as T
    warnings.simplefilter("ignore")
    a = np.zeros(100, np.int64)
    idx = np.zeros(100, np.int64); idx[37] = 10 ** 9 - 37
    try:
        T.poke_unchecked.run(a, idx, 0, 100, device="cpu")
        print("returned")
    except IndexError as err:
        print("IndexError", err)
''')


def test_the_environment_switch_checks_an_undecided_function(tmp_path):
    env = {**os.environ, "HPU_BOUNDSCHECK": "1", "HPU_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", SCRIPT, os.path.dirname(HERE)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "index 1000000000 is out of bounds for length 100" in out.stdout


@inner_only
@pytest.mark.parametrize("path, kw", DEVICE_PATHS)
def test_the_forced_copy_path_checks_too(discrete, path, kw):
    a = np.zeros(50, np.int64)
    idx = np.zeros(50, np.int64)
    idx[31] = -51 - 31
    with pytest.raises(IndexError, match=r"a\[lo \+ idx\[lo\]\]: index -51 is out of bounds for "
                                         r"length 50"):
        _call(poke, (a, idx, 0, 50), path, kw)
    assert discrete


@inner_only
def test_the_message_is_the_same_on_every_path():
    a = np.zeros(20, np.int64)
    idx = np.zeros(20, np.int64)
    idx[3] = 17
    seen = set()
    for path, kw in PATHS + DEVICE_PATHS:
        with pytest.raises(IndexError) as err:
            _call(poke_helper, (a, idx, 0, 20), path, kw)
        seen.add(str(err.value))
    assert len(seen) == 1, seen


def test_device_bounds_in_a_child_process(tmp_path):
    """The device's cases above, in a child: an unchecked write there could kill the process."""
    env = {**os.environ, "HPU_TEST_DEVICE_BOUNDS": "1"}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", HERE,
                          "-k", "gpu or hybrid or every_path or forced_copy"], env=env,
                         capture_output=True, text=True, timeout=1200,
                         cwd=os.path.dirname(os.path.dirname(HERE)))
    assert out.returncode == 0, (out.returncode, out.stdout[-3000:], out.stderr[-2000:])
    assert " passed" in out.stdout and "skipped" not in out.stdout.splitlines()[-1], out.stdout[-500:]


# ----------------------------------------------- a float stored into a helper's int array

def put_twice(out, i, v):
    out[i] = v * 2.0   # LINE_HELPER_STORE


@hpu.divide_and_conquer(b=2, cost="1")
def stores_in_helper(x, out, lo, hi):
    if hi - lo == 1:
        put_twice(out, lo, x[lo])
        return
    mid = (lo + hi) // 2
    stores_in_helper(x, out, lo, mid)
    stores_in_helper(x, out, mid, hi)


@pytest.mark.parametrize("path, kw", PATHS + [pytest.param(*p, marks=inner_only)
                                              for p in DEVICE_PATHS])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), 1e19, -1e300])
def test_a_bad_float_stored_into_a_helpers_int_array_raises(path, kw, bad):
    x = np.linspace(-50.7, 50.7, 33)
    out = np.zeros(33, np.int64)
    ref = np.zeros(33, np.int64)
    _call(stores_in_helper, (x, out, 0, 33), path, kw)
    stores_in_helper.py_func(x, ref, 0, 33)
    assert (out == ref).all()  # in range: truncated, as NumPy does
    x[7] = bad
    try:
        stores_in_helper.py_func(x, np.zeros(33, np.int64), 0, 33)
    except (ValueError, OverflowError) as e:
        python, text = type(e), str(e)
    else:
        raise AssertionError("NumPy accepted a bad float")
    with pytest.raises(python) as err:
        _call(stores_in_helper, (x, out, 0, 33), path, kw)
    # the failing line inside the helper, not its def line; NumPy's own text
    assert str(err.value) == f"{HERE}:{_line('LINE_HELPER_STORE')}: in put_twice(): out[i]: {text}"


# ------------------------------------------------------- views: against the view's length

def bump_view(x, i):
    s = 1
    x[i] += s   # LINE_VIEW_HELPER


@hpu.divide_and_conquer(b=2, cost="1", boundscheck=True)
def vtouch(a, k, how):
    """Leaves are views of 1 or 2 elements (2 when len(a) is a power of 2); ``how``
    picks the access at index ``k``: a read, a write, a named view, a helper's view."""
    if len(a) <= 2:
        if how == 0:
            return a[k]   # LINE_VIEW_READ
        if how == 1:
            a[k] = 7   # LINE_VIEW_WRITE
        elif how == 2:
            last = a[len(a) - 1:]
            a[0] = last[k] + 1   # LINE_VIEW_NAMED
        else:
            bump_view(a, k)
        return 0
    m = len(a) // 2
    return vtouch(a[:m], k, how) + vtouch(a[m:], k, how)


#: how -> (the line's tag, the subscript as the message names it)
VIEW_SITES = {0: ("LINE_VIEW_READ", "a[k]"), 1: ("LINE_VIEW_WRITE", "a[k]"),
              2: ("LINE_VIEW_NAMED", "last[k]"), 3: ("LINE_VIEW_HELPER", "in bump_view(): x[i]")}
ALL_PATHS = PATHS + [pytest.param(*p, marks=inner_only) for p in DEVICE_PATHS]


def _view_lengths(n, how):
    """The lengths of the views ``vtouch`` indexes for an ``n``-element array."""
    if how == 2:
        return {1}
    return {n} if n <= 2 else _view_lengths(n // 2, how) | _view_lengths(n - n // 2, how)


def _plain_vtouch(a, k, how):
    """NumPy's answer (the result or the IndexError) and the array after it."""
    b = a.copy()
    try:
        return vtouch.py_func(b, k, how), b
    except IndexError as err:
        return err, b


def _after_error(path, before, plain):
    """The caller's array after an error: as before the call (hpu restores it), except on
    ``.sequential``, the plain function compiled, which leaves what NumPy leaves."""
    return plain if path == "sequential" else before


@pytest.mark.parametrize("path, kw", ALL_PATHS)
@pytest.mark.parametrize("how", sorted(VIEW_SITES))
@pytest.mark.parametrize("side", ["past the end", "before the start"])
def test_one_past_a_views_end_and_before_its_start_raise(path, kw, how, side):
    """Every view indexed has the same length L inside a 16-element array: ``v[L]`` and
    ``v[-L - 1]`` are inside the array (its own check would pass them), not the view."""
    (length,) = _view_lengths(16, how)
    k = length if side == "past the end" else -length - 1
    a = np.arange(16, dtype=np.int64) * 3
    before = a.copy()
    python, plain = _plain_vtouch(a, k, how)
    assert isinstance(python, IndexError)
    for inside in (length - 1, -length):  # the last and the first element: NumPy's answer
        want, after = _plain_vtouch(a, inside, how)
        assert _call(vtouch, (a.copy(), inside, how), path, kw) == want
    with pytest.raises(IndexError) as err:
        _call(vtouch, (a, k, how), path, kw)
    tag, text = VIEW_SITES[how]
    assert str(err.value) == (f"{HERE}:{_line(tag)}: {text}: index {k} is out of bounds "
                              f"for length {length}")
    assert (a == _after_error(path, before, plain)).all()


@pytest.mark.parametrize("path, kw", ALL_PATHS)
@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 40), k=st.integers(-5, 5), how=st.sampled_from(sorted(VIEW_SITES)))
def test_view_indices_as_numpy(path, kw, n, k, how):
    """In range: NumPy's result and array; out of range of some leaf's view: IndexError
    naming the view, an index and a length that NumPy refuses, the array restored."""
    a = np.arange(n, dtype=np.int64) * 5 - 7
    before = a.copy()
    want, after = _plain_vtouch(a, k, how)
    if not isinstance(want, IndexError):
        assert _call(vtouch, (a, k, how), path, kw) == want
        assert (a == after).all()
        return
    with pytest.raises(IndexError) as err:
        _call(vtouch, (a, k, how), path, kw)
    tag, text = VIEW_SITES[how]
    msg = str(err.value)
    assert msg.startswith(f"{HERE}:{_line(tag)}: {text}: index {k} is out of bounds for length ")
    length = int(msg.rsplit(" ", 1)[1])
    assert length in _view_lengths(n, how) and not -length <= k < length
    assert (a == _after_error(path, before, after)).all()


def test_unchecked_views_compile_as_before():
    """Bounds-checked mode marks a view's index (hpu__vix on the CPU, hpu__view_index for
    the translator); unchecked, the same function's modules have neither: the CPU's takes
    the wrapped index into the base array as unsigned (hpu._guard.base_index), the
    device's the wrapped index as it is."""
    a = np.arange(4, dtype=np.int64)
    _call(vtouch, (a, 0, 0), "cpu", {})
    program = next(iter(vtouch._programs.values()))
    assert "hpu__vix(hpu__as_index(k), a__n, " in program.source
    assert "hpu__vix(hpu__as_index(i), x__n, " in program.source
    assert "hpu__view_index(k, a__n)" in program.iter_source(8)
    assert "hpu__view_index(i, x__n)" in program.iter_source(8)
    plain = _codegen.core_source(program.spec, program.closure, program.layout, False)
    assert "hpu__vix(" not in plain.replace("def hpu__vix(", "")
    assert ("a[hpu__base(a__o + (hpu__as_index(k) + a__n if hpu__as_index(k) < 0 "
            "else hpu__as_index(k)))]") in plain
    it = _codegen.iter_source(program.spec, program.closure, program.layout, program.types, 8)
    assert "hpu__view_index" not in it and "a[a__o + (k + a__n if k < 0 else k)]" in it


# ------------------------------- a Python list: its indices checked, as Python checks them

@hpu.divide_and_conquer
def list_total(a, lo, hi):
    if hi - lo <= 1:
        return a[lo]   # LINE_LIST_TOTAL
    mid = (lo + hi) // 2
    return list_total(a, lo, mid) + list_total(a, mid, hi)


@hpu.divide_and_conquer
def list_copy_sum(a):
    if len(a) <= 2:
        b = a.copy()    # (it allocates: the functional path)
        return b[0] + b[len(b) - 1 + (len(b) == 2)]   # LINE_LIST_COPY
    mid = len(a) // 2
    return list_copy_sum(a[:mid]) + list_copy_sum(a[mid:])


@hpu.divide_and_conquer(boundscheck=False)
def list_total_unchecked(a, lo, hi):
    if hi - lo <= 1:
        return a[lo]
    mid = (lo + hi) // 2
    return list_total_unchecked(a, lo, mid) + list_total_unchecked(a, mid, hi)


@pytest.mark.parametrize("path, kw", ALL_PATHS)
@settings(max_examples=8, deadline=None)
@given(items=st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=300),
       past=st.integers(-2, 3), as_tuple=st.booleans())
def test_an_index_past_a_list_raises_as_python(path, kw, items, past, as_tuple):
    """A list (or tuple) given where the function indexes an array is converted to one;
    an index past it raises IndexError at the user's line, as Python does on the list,
    where an unchecked array would read past its end.  In range: Python's answer."""
    given_ = tuple(items) if as_tuple else list(items)
    hi = len(items) + past
    try:
        want = list_total.py_func(given_, 0, hi)
    except IndexError:
        want = IndexError
    if want is IndexError:
        with pytest.raises(IndexError) as err:
            _call(list_total, (given_, 0, hi), path, kw)
        assert str(err.value).startswith(f"{HERE}:{_line('LINE_LIST_TOTAL')}: a[lo]: index ")
        assert str(err.value).endswith(f"is out of bounds for length {len(items)}")
    else:
        assert _call(list_total, (given_, 0, hi), path, kw) == want
    assert list(given_) == items


@pytest.mark.parametrize("path, kw", ALL_PATHS)
@pytest.mark.parametrize("n", [2, 3, 1000])
def test_an_index_past_a_list_raises_in_a_function_that_allocates(path, kw, n):
    """The functional path (``a.copy()`` in the function): the copy of a list's slice of
    two items read at index 2 raises, as Python's list does; one item is read in range."""
    items = list(range(n))
    with pytest.raises(IndexError) as err:
        list_copy_sum.py_func(items)
    with pytest.raises(IndexError) as err:
        _call(list_copy_sum, (items,), path, kw)
    assert str(err.value).startswith(f"{HERE}:{_line('LINE_LIST_COPY')}: ")
    assert items == list(range(n))
    assert _call(list_copy_sum, ([7],), path, kw) == list_copy_sum.py_func([7]) == 14


def test_only_lists_take_the_checked_function_and_false_is_kept(monkeypatch):
    """Arrays run the function as decorated; a list runs its bounds-checked twin (one,
    reused); ``boundscheck=False`` is the user's choice (no twin); ``HPU_BOUNDSCHECK=1``
    checks the function itself."""
    arr = np.arange(4)
    assert list_total._as_called((arr, 0, 4), {}) is list_total
    twin = list_total._as_called(([1, 2], 0, 2), {})
    assert twin is not list_total and twin._boundscheck is True
    assert list_total._as_called(((1, 2),), {"lo": 0, "hi": 2}) is twin
    assert list_total_unchecked._as_called(([1, 2], 0, 2), {}) is list_total_unchecked
    monkeypatch.setenv("HPU_BOUNDSCHECK", "1")
    assert list_total._as_called(([1, 2], 0, 2), {}) is list_total


# ------------------------- a constant index (`a[1]`), which a tuple would need as it is

@hpu.divide_and_conquer(boundscheck=True)
def second_of_leaf(a):
    if len(a) <= 1:
        return a[1]   # LINE_CONST_INDEX
    mid = len(a) // 2
    return max(second_of_leaf(a[:mid]), second_of_leaf(a[mid:]))


@hpu.divide_and_conquer
def second_of_leaf_unchecked(a):
    if len(a) <= 1:
        return a[1]   # LINE_CONST_INDEX_LIST
    mid = len(a) // 2
    return max(second_of_leaf_unchecked(a[:mid]), second_of_leaf_unchecked(a[mid:]))


@hpu.divide_and_conquer(boundscheck=True)
def sort_count_checked(a):
    if len(a) <= 1:
        return a.copy(), 0
    mid = len(a) // 2
    left = sort_count_checked(a[:mid])
    right = sort_count_checked(a[mid:])
    lo, hi = left[0], right[0]          # a tuple of an array and an int: constant indices
    out = np.empty(len(a), a.dtype)
    i = j = inv = 0
    for k in range(len(a)):
        if j >= len(hi) or (i < len(lo) and lo[i] <= hi[j]):
            out[k] = lo[i]
            i += 1
        else:
            out[k] = hi[j]
            inv += len(lo) - i
            j += 1
    return out, left[1] + right[1] + inv


@pytest.mark.parametrize("path, kw", ALL_PATHS)
@pytest.mark.parametrize("n", [1, 7])
def test_a_constant_index_past_a_view_names_the_line(path, kw, n):
    """``a[1]`` of a one-element view: the CPU module checked it, but the rerun in Python's
    order (the compiled function as written) left a constant index to Numba, whose
    ``IndexError: index is out of bounds`` replaced the message naming the line."""
    with pytest.raises(IndexError) as err:
        _call(second_of_leaf, (np.arange(n, dtype=np.int64),), path, kw)
    assert str(err.value) == (f"{HERE}:{_line('LINE_CONST_INDEX')}: a[1]: index 1 is out "
                              "of bounds for length 1")
    with pytest.raises(IndexError) as err:
        _call(second_of_leaf_unchecked, (list(range(n)),), path, kw)   # a list: checked
    assert str(err.value).startswith(f"{HERE}:{_line('LINE_CONST_INDEX_LIST')}: a[1]: ")


@pytest.mark.parametrize("path, kw", PATHS)
def test_constant_indices_of_a_returned_tuple_still_compile_checked(path, kw):
    x = np.array([5, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5], dtype=np.int64)
    got = _call(sort_count_checked, (x,), path, kw)
    inversions = sum(int(x[i] > x[j]) for i in range(len(x)) for j in range(i + 1, len(x)))
    assert np.array_equal(got[0], np.sort(x)) and got[1] == inversions


def largest_of(a, lo, hi):
    if lo == hi:
        return a[lo]
    mid = (lo + hi) // 2
    return max(largest_of(a, lo, mid), largest_of(a, mid + 1, hi))


def sorted_copy(a):
    if len(a) <= 1:
        return a.copy()
    m = len(a) // 2
    left, right = sorted_copy(a[:m]), sorted_copy(a[m:])
    out = np.empty(len(a), a.dtype)
    i = j = 0
    for k in range(len(a)):
        if j == len(right) or (i < len(left) and left[i] <= right[j]):
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
    return out


@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_an_empty_array_gets_pythons_answer_or_its_index_error_on_every_path(device):
    """``largest_of(a, 0, len(a) - 1)`` of no elements: Python raises IndexError at
    ``a[lo]``; unchecked compiled code read past the array's end and returned what it found
    there.  Arrays that are all empty run bounds-checked, as lists do, on every path."""
    f = hpu.divide_and_conquer(largest_of).options(device=device)
    line = largest_of.__code__.co_firstlineno + 2
    for dtype in (np.int32, np.float64):
        a = np.zeros(0, dtype)
        with pytest.raises(IndexError, match=rf"test_safety_bounds.py:{line}: .*out of bounds"):
            f(a, 0, 0)
        assert f(np.array([4, 9, 2], dtype), 0, 2) == 9
    g = hpu.divide_and_conquer(sorted_copy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hpu.HpuPerformanceWarning)
        run = g.run(np.zeros(0, np.int16), device=device)
    assert run.value.dtype == np.int16 and run.value.size == 0
