"""``raise`` and ``assert`` in the numeric subset (hpu/_raises.py): Python's exception -- its
class and arguments -- on every path, a note naming the user's line, the caller's arrays
intact; what cannot be raised everywhere is refused at decoration with the fix."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpu
from hpu import _raises
from hpu._errors import TranslationError

import raise_examples as ex
from functional_examples import merge as merge_new  # the textbook merge into a new array

COMPILES = settings.get_profile("hpu-compiles")
CONFIGS = [{"device": "cpu"}, {"device": "gpu"}, {"device": "hybrid", "alpha": 0.5, "y": 2},
           {"device": "hybrid", "alpha": 0.0, "y": 3}]
IDS = ["cpu", "gpu", "hybrid-0.5-2", "hybrid-0.0-3"]
pytestmark = pytest.mark.opencl


def _outcome(f, *args):
    try:
        return "value", f(*args)
    except Exception as err:  # noqa: BLE001 - compared with the decorated function's
        return type(err), err.args


def _same(dc, config, args):
    plain = _outcome(dc.py_func, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    got = _outcome(dc.options(**config), *args)
    if plain[0] == "value":
        assert got[0] == "value" and got[1] == plain[1], (got, plain)
    else:
        assert got == plain
    return got


def _line_of(text: str) -> int:
    src = open(ex.__file__).read().splitlines()
    return next(i for i, line in enumerate(src, 1) if text in line)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_a_helpers_check_raises_pythons_exception_naming_its_line(config):
    x = np.random.default_rng(0).integers(0, 1000, 20_001)
    assert ex.total.options(**config)(x, 0, len(x)) == int(x.sum())
    y = x.copy()
    y[17_777] = -5
    with pytest.raises(ValueError) as info:
        ex.total.options(**config)(y, 0, len(y))
    assert info.value.args == ("negative key",)
    assert info.value.__notes__ == [f"raised at raise_examples.py:{_line_of('negative key')}"]
    with pytest.raises(AssertionError) as info:
        ex.total.options(**config)(x, 9, 3)
    assert info.value.args == ("bad range",)
    assert info.value.__notes__ == [f"raised at raise_examples.py:{_line_of('bad range')}"]


def test_the_device_raises_through_its_error_channel(monkeypatch):
    """On the device the work-item records the raise (code 9) and the host rebuilds the
    exception from the site's text: not a rerun on the CPU."""
    made = []
    real = _raises.exception_from_site
    monkeypatch.setattr(_raises, "exception_from_site",
                        lambda text: made.append(text) or real(text))
    x = np.random.default_rng(1).integers(0, 1000, 20_001)
    x[3] = -1
    with pytest.raises(ValueError, match="negative key"):
        ex.total.options(device="gpu")(x, 0, len(x))
    assert made and made[0].endswith("raise ValueError('negative key')"), made


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_a_guard_that_raises_and_a_tuple_result(config):
    x = np.random.default_rng(2).integers(-10**6, 10**6, 4097)
    with pytest.raises(ValueError) as info:
        ex.amax.options(**config)(x, 7, 7)
    assert info.value.args == ("empty range",)
    assert ex.amax.options(**config)(x, 0, len(x)) == x.max()
    got = _same(ex.min_max, config, (np.clip(x, -700_000, 700_000), 0, len(x)))
    assert got[0] == "value"
    _same(ex.min_max, config, (x, 0, len(x)))       # ArithmeticError("spread", 1500000)
    big = x.copy()
    big[4000] = 2 * 10**6
    assert _same(ex.min_max, config, (big, 0, len(big)))[0] in (OverflowError, ArithmeticError)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_a_sort_that_raises_leaves_the_callers_array_as_it_was(config):
    x = np.random.default_rng(3).standard_normal(3001)
    a, tmp = x.copy(), np.zeros_like(x)
    ex.msort.options(**config)(a, tmp, 0, len(a))
    assert np.array_equal(a, np.sort(x, kind="stable"))
    bad = x.copy()
    bad[1234] = np.nan
    a, tmp = bad.copy(), np.zeros_like(bad)
    with pytest.raises(AssertionError) as info:
        ex.msort.options(**config)(a, tmp, 0, len(a))
    assert info.value.args == ("NaN key",)
    assert info.value.__notes__ == [f"raised at raise_examples.py:{_line_of('NaN key')}"]
    assert np.array_equal(a, bad, equal_nan=True)    # never half-sorted
    with pytest.raises(IndexError, match="hi < lo"):
        ex.msort.options(**config)(a, tmp, 5, 2)


@COMPILES
@given(n=st.integers(1, 600), neg=st.one_of(st.none(), st.integers(0, 599)),
       config=st.sampled_from(range(len(CONFIGS))), seed=st.integers(0, 2**32 - 1))
def test_the_decorated_function_raises_what_the_plain_one_does(n, neg, config, seed):
    x = np.random.default_rng(seed).integers(0, 100, n)
    if neg is not None and neg < n:
        x[neg] = -1
    _same(ex.total, CONFIGS[config], (x, 0, n))
    _same(ex.amax, CONFIGS[config], (x, 0, n))


def test_sequential_names_the_line_too():
    x = np.array([1, 2, -3, 4, 5, 6])
    with pytest.raises(ValueError, match="negative key") as info:
        ex.total.sequential(x, 0, len(x))
    assert info.value.__notes__ == [f"raised at raise_examples.py:{_line_of('negative key')}"]


class OwnError(Exception):
    pass


def _raises_computed(a, lo, hi):
    if hi < lo:
        raise ValueError(f"hi={hi} < lo={lo}")
    if hi - lo <= 1:
        return 0
    mid = (lo + hi) // 2
    return _raises_computed(a, lo, mid) + _raises_computed(a, mid, hi)


def _raises_own(a, lo, hi):
    if hi < lo:
        raise OwnError("hi < lo")
    if hi - lo <= 1:
        return 0
    mid = (lo + hi) // 2
    return _raises_own(a, lo, mid) + _raises_own(a, mid, hi)


def _asserts_computed(a, lo, hi):
    assert hi >= lo, "hi=" + str(hi)
    if hi - lo <= 1:
        return 0
    mid = (lo + hi) // 2
    return _asserts_computed(a, lo, mid) + _asserts_computed(a, mid, hi)


@pytest.mark.parametrize("fn, shown, why", [
    (_raises_own, "raise OwnError('hi < lo')", "not one of Python's built-in exception"),
])
def test_what_cannot_be_raised_everywhere_is_refused_at_decoration_with_the_fix(fn, shown, why):
    with pytest.raises(TranslationError) as info:
        hpu.divide_and_conquer(fn)
    text = str(info.value)
    assert f"`{shown}`" in text and why in text and "constant message" in text
    assert "test_raises.py:" in text


def _leaf_check(a, lo, hi):
    if hi - lo == 1:
        if a[lo] < 0:
            raise ValueError(f"negative key {a[lo]} at {lo}")  # computed-here
        a[lo] = a[lo] * 2
        return a[lo]
    mid = (lo + hi) // 2
    return _leaf_check(a, lo, mid) + _leaf_check(a, mid, hi)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
@pytest.mark.parametrize("fn, args, text", [
    (_raises_computed, lambda: (np.zeros(3), 5, 2), "hi=2 < lo=5"),
    (_asserts_computed, lambda: (np.zeros(3), 5, 2), "hi=2"),
    (_leaf_check, lambda: (np.r_[np.arange(3000.0), -4.0, np.arange(2000.0)], 0, 5001),
     "negative key -4.0 at 3000"),
])
def test_a_message_computed_at_run_time_is_pythons_at_the_users_line(config, fn, args, text):
    """``raise ValueError(f"...")`` and ``assert t, "..." + str(x)``: the compiled paths
    cannot build the message, so the call runs again as the plain function, which raises
    the exception Python raises -- its message, its traceback ending at the user's line --
    from the caller's arrays as they were (the compiled leaves had doubled keys Python's
    order never reaches): the array ends as Python leaves it."""
    import traceback

    given, mine = args(), args()
    with pytest.raises((ValueError, AssertionError)) as plain:
        fn(*mine)
    f = hpu.divide_and_conquer(fn).options(**config)
    with pytest.raises((ValueError, AssertionError)) as info:
        f.run(*given)
    # (pytest's own rewriting of the assert adds its explanation, in Python as here)
    assert str(info.value) == str(plain.value) and str(info.value).startswith(text)
    assert type(info.value) is (AssertionError if fn is _asserts_computed else ValueError)
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert last.filename == __file__ and last.name == fn.__name__, last
    assert np.array_equal(given[0], mine[0])   # as Python left it: from the caller's array
    with pytest.raises(type(info.value)) as called:
        f(*args())
    assert str(called.value) == str(plain.value)
    # the plain function's answer where nothing raises
    ok = (np.arange(3000.0), 0, 3000)
    assert f.run(*ok).value == fn(np.arange(3000.0), 0, 3000)


def test_exception_from_site_rebuilds_only_builtin_constant_raises():
    made = _raises.exception_from_site("f.py:3: raise ValueError('x', 2)")
    assert type(made) is ValueError and made.args == ("x", 2)
    made = _raises.exception_from_site("f.py:3: in merge(): raise KeyError()")
    assert type(made) is KeyError and made.args == ()
    for bad in ("f.py:3: a // b", "f.py:3: raise OwnError('x')", "f.py:3: raise ValueError(x)",
                "f.py:3: raise ValueError(('"):
        assert _raises.exception_from_site(bad) is None


@pytest.mark.parametrize("config", CONFIGS[1:], ids=IDS[1:])
def test_on_a_discrete_device_too(discrete, config):
    """Forced copies and a GPU's launches: the raise from the device's share, the caller's
    array as it was."""
    x = np.random.default_rng(4).standard_normal(5001)
    x[4321] = np.nan
    a, tmp = x.copy(), np.zeros_like(x)
    with pytest.raises(AssertionError) as info:
        ex.msort.options(**config)(a, tmp, 0, len(a))
    assert info.value.args == ("NaN key",)
    assert np.array_equal(a, x, equal_nan=True)
    assert discrete and all(not b.unified for b in discrete)


LIMIT = 10 ** 6
MESSAGE = "over the limit"


@hpu.divide_and_conquer
def _folds_constants(a, lo, hi):
    if hi - lo == 1:
        if a[lo] > LIMIT:
            raise OverflowError(MESSAGE, 10 ** 6, -2.5)
        return a[lo]
    mid = (lo + hi) // 2
    u = _folds_constants(a, lo, mid)
    w = _folds_constants(a, mid, hi)
    if u + w < 0:
        raise OverflowError(MESSAGE, 10 ** 6, -2.5)
    return u + w


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_constant_arguments_may_be_expressions_and_module_constants(config):
    """``10 ** 6``, ``-2.5`` and a module's string are constants: raised as Python makes
    them, and two raises of one exception are both named, in line order."""
    x = np.arange(1000)
    x[700] = 2 * 10 ** 6
    with pytest.raises(OverflowError) as info:
        _folds_constants.options(**config)(x, 0, len(x))
    assert info.value.args == ("over the limit", 10 ** 6, -2.5)
    lines = [i for i, t in enumerate(open(__file__).read().splitlines(), 1)
             if t.strip().startswith("raise OverflowError(MESSAGE")]
    assert info.value.__notes__ == [
        "raised at " + " or ".join(f"test_raises.py:{n}" for n in lines)]


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_a_functional_sort_that_raises_runs_its_device_form(config):
    x = np.random.default_rng(6).standard_normal(4001)
    run = ex.fsort.options(**config).run(x)
    assert np.array_equal(run.value, np.sort(x))
    assert not run.fallbacks
    if config["device"] == "gpu":
        assert run.gpu_tasks > 0
    y = x.copy()
    y[2024] = np.nan
    with pytest.raises(ValueError) as info:
        ex.fsort.options(**config)(y)
    assert info.value.args == ("NaN in fsort",)
    assert info.value.__notes__ == [f"raised at raise_examples.py:{_line_of('NaN in fsort')}"]
    assert np.array_equal(y[:2024], x[:2024]) and np.isnan(y[2024])


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
@pytest.mark.parametrize("name", ["all_positive", "first_positive"])
@pytest.mark.parametrize("n", [3, 100, 20001])
def test_a_call_python_skips_raises_nothing(name, n, config):
    f = hpu.divide_and_conquer(getattr(ex, name))
    a = np.arange(1, n + 1)
    a[0] = -1 if name == "all_positive" else 5      # the left answers; the right raises
    a[n // 2 + 1:] = 0
    got = _same(f, config, (a, 0, n))
    assert got[0] == "value"
    b = a.copy()
    b[0] = 1 if name == "all_positive" else 0       # now Python makes the call, and raises
    with pytest.raises(ValueError, match="zero key"):
        f.options(**config)(b, 0, n)


def _sorted_checked(a):
    if len(a) <= 1:
        if len(a) and a[0] != a[0]:
            raise ValueError(f"a NaN among {len(a)} keys")  # computed-here
        return a.copy()
    m = len(a) // 2
    return merge_new(_sorted_checked(a[:m]), _sorted_checked(a[m:]))


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_a_computed_message_from_a_functional_sort_is_pythons_at_the_users_line(config):
    """The functional form (arrays returned, the device's in-place form): the same replay,
    the traceback ending at the user's ``raise``; without a NaN, the sorted keys."""
    import traceback

    x = np.random.default_rng(6).random(5000)
    f = hpu.divide_and_conquer(_sorted_checked).options(**config)
    assert np.array_equal(f.run(x).value, np.sort(x))
    x[1234] = np.nan
    with pytest.raises(ValueError, match="a NaN among 1 keys") as info:
        f.run(x)
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert last.filename == __file__ and last.name == "_sorted_checked", last
