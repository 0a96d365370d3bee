"""Shared strategies and independent references for the tests of algorithms/.

Arrays come in two flavours: small ones (up to 300 elements) drawn element by
element by Hypothesis, so that edge values (dtype extremes, NaN, ±inf, -0.0,
ties) show up and shrink well; and large ones (1023 … 100000 elements) built by
NumPy from a seed Hypothesis draws, which keeps generation fast.  Sizes are
mostly small; every test sees a few large ones.

``DEVICES`` is what the tests parametrize ``device`` over; the OpenCL and
hybrid issues add "gpu" and "hybrid" here.
"""
from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

DEVICES = ["cpu"]

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float32", "float64"]
DTYPES = INT_DTYPES + FLOAT_DTYPES

SMALL_MAX = 300

#: cut-off levels K for ``.run``: the default, none (the root solves everything),
#: shallow, and deeper than small trees reach
CUT_OFFS = st.sampled_from([None, 0, 1, 3, 12])
LARGE_SIZES = [1023, 4097, 65537, 100000]


def sizes():
    """Mostly small sizes (odd ones included), sometimes a large one."""
    small = st.integers(0, SMALL_MAX)
    return st.one_of(small, small, small, st.sampled_from(LARGE_SIZES))


def _int_range(dtype, bound):
    info = np.iinfo(dtype)
    if bound is None:
        return int(info.min), int(info.max)
    return max(int(info.min), -bound), min(int(info.max), bound)


@st.composite
def arrays(draw, dtype, *, size=None, bound=None, specials=True, min_size=0):
    """A 1-D array of ``dtype``.

    ``bound``: integers and floats kept within [-bound, bound] (and finite);
    ``specials``: floats may hold NaN, ±inf and -0.0 (ignored when bounded).
    """
    dtype = np.dtype(dtype)
    n = draw(size if size is not None else sizes())
    n = max(n, min_size)
    if dtype.kind == "f":
        finite = bound is not None or not specials
        width = 8 * dtype.itemsize
        if bound is not None:
            elements = st.floats(-bound, bound, width=width)
        else:
            elements = st.floats(width=width, allow_nan=not finite, allow_infinity=not finite)
    else:
        lo, hi = _int_range(dtype, bound)
        elements = st.integers(lo, hi)
    if n <= SMALL_MAX:
        # ties matter for a stable sort: sometimes draw from a handful of values
        if draw(st.booleans()):
            pool = draw(st.lists(elements, min_size=1, max_size=5))
            elements = st.sampled_from(pool)
        return draw(hnp.arrays(dtype, n, elements=elements))
    seed = draw(st.integers(0, 2**32 - 1))
    shape = draw(st.sampled_from(["random", "few_values", "sorted", "reversed"]))
    return _large(np.random.default_rng(seed), dtype, n, bound, specials, shape)


def _large(rng, dtype, n, bound, specials, shape):
    if dtype.kind == "f":
        scale = 1e6 if bound is None else bound
        x = np.clip(rng.standard_normal(n) * scale / 4, -scale, scale).astype(dtype)
        if bound is None and specials:
            picks = rng.integers(0, n, size=max(1, n // 100))
            x[picks] = rng.choice(np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], dtype=dtype), picks.size)
    else:
        lo, hi = _int_range(dtype, bound)
        x = rng.integers(lo, hi, size=n, endpoint=True, dtype=dtype)
    if shape == "few_values":
        x = rng.choice(x[:7], n)
    elif shape == "sorted":
        x = np.sort(x)
    elif shape == "reversed":
        x = np.sort(x)[::-1].copy()
    return x


def same_bits(got, want):
    """``got`` equals ``want`` element for element, bit for bit (NaN payloads, -0.0)."""
    got = np.asarray(got)
    want = np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    unsigned = np.dtype(f"u{got.dtype.itemsize}")
    return bool(np.array_equal(got.view(unsigned), want.view(unsigned)))


def same_scalar(got, want):
    """Two scalars are equal, NaN equal to NaN and 0.0 distinguished from -0.0."""
    if isinstance(got, float) or isinstance(want, float) or isinstance(got, np.floating):
        g, w = float(got), float(want)
        if math.isnan(g) or math.isnan(w):
            return math.isnan(g) and math.isnan(w)
        return g == w and math.copysign(1, g) == math.copysign(1, w)
    return int(got) == int(want)


# ---------------------------------------------------------------- references

def inversions_reference(x):
    """Pairs i < j with x[i] > x[j] in np.sort's order, counted independently.

    Keys are replaced by dense ranks (NaNs last and equal, -0.0 == 0.0, as
    np.unique orders them); small blocks by brute force over all pairs, larger
    ones by halves whose cross pairs ``np.searchsorted`` counts.
    """
    ranks = np.unique(np.asarray(x), return_inverse=True)[1].astype(np.int64).ravel()
    return _count(ranks)


def _count(r):
    n = r.size
    if n <= 64:
        return int(np.count_nonzero(np.triu(r[:, None] > r[None, :], 1)))
    left, right = r[: n // 2], r[n // 2 :]
    cross = int(np.sum(left.size - np.searchsorted(np.sort(left), right, side="right")))
    return _count(left) + _count(right) + cross


def kadane_reference(values):
    """(total, best prefix, best suffix, best) of a non-empty sequence, by direct scans."""
    values = list(values)
    total = sum(values)
    prefix = best_prefix = values[0]
    for v in values[1:]:
        prefix += v
        best_prefix = max(best_prefix, prefix)
    suffix = best_suffix = values[-1]
    for v in reversed(values[:-1]):
        suffix += v
        best_suffix = max(best_suffix, suffix)
    best = current = values[0]  # Kadane: best sum of a subarray ending here
    for v in values[1:]:
        current = max(v, current + v)
        best = max(best, current)
    return total, best_prefix, best_suffix, best


def as_python(x):
    """The elements of ``x`` as Python ints or floats (exact for integers)."""
    return x.tolist()
