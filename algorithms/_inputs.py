"""Checking and copying the arrays the ready algorithms' wrappers accept.

Every wrapper (``sort``, ``total``, ``count_inversions``, ``max_subarray``,
``sort3``) takes a caller's array, must never modify it, and hands hpu a
private, contiguous, native-byte-order copy of one of the dtypes hpu compiles
for.  Doing that in one place keeps the error messages the same everywhere:
each names the offending type, dtype or shape, what is accepted, and the fix.
"""
from __future__ import annotations

import numpy as np

__all__ = ["SUPPORTED_DTYPES", "as_sortable", "checked_array", "nans_last"]

#: the element types every ready algorithm accepts (hpu's array dtypes)
SUPPORTED_DTYPES = tuple(
    np.dtype(name)
    for name in (
        "int8", "int16", "int32", "int64",
        "uint8", "uint16", "uint32", "uint64",
        "float32", "float64",
    )
)

_NAMES = ", ".join(d.name for d in SUPPORTED_DTYPES)


def checked_array(x, who):
    """Return ``x`` as a 1-D NumPy array of a supported dtype (a view, not a copy).

    Raises ``TypeError`` for a non-array or an unsupported dtype and
    ``ValueError`` for a shape other than 1-D, naming what was given and the fix.
    """
    if not isinstance(x, np.ndarray):
        raise TypeError(
            f"{who}() expects a 1-D NumPy array, got {type(x).__name__}; "
            f"convert it first, e.g. {who}(np.asarray(values, dtype=np.float64))"
        )
    if x.ndim != 1:
        raise ValueError(
            f"{who}() expects a 1-D array, got shape {x.shape}; "
            f"pass x.ravel() to treat it as one sequence, or call it once per row"
        )
    if x.dtype.newbyteorder("=") not in SUPPORTED_DTYPES:
        raise TypeError(
            f"{who}() does not support dtype {x.dtype}; supported dtypes are {_NAMES}; "
            f"convert first, e.g. x.astype(np.int64) or x.astype(np.float64)"
        )
    return x


def as_sortable(x, who):
    """A private, contiguous, native-byte-order copy of ``x`` with ``x``'s dtype."""
    x = checked_array(x, who)
    return np.array(x, dtype=x.dtype.newbyteorder("="), order="C", copy=True)


def nans_last(a):
    """Move the NaNs of the private copy ``a`` to its end, keeping their order.

    Returns ``(array, number of non-NaN keys)``; the non-NaN keys come first in
    their original order.  Integer arrays have no NaNs and come back as they are.
    This is where ``np.sort`` puts NaNs, and a comparison sort cannot place
    them itself (every comparison with NaN is false).
    """
    if a.dtype.kind != "f":
        return a, a.size
    nan = np.isnan(a)
    n_nan = int(np.count_nonzero(nan))
    if n_nan == 0:
        return a, a.size
    return np.concatenate((a[~nan], a[nan])), a.size - n_nan
