"""Supported element types and their OpenCL C spellings, in one table.

One dtype -> C type map is shared by the frontend (which refuses other dtypes),
the translator (which declares buffers with it) and the executors.
"""
from __future__ import annotations

import numpy as np

__all__ = ["ARRAY_DTYPES", "C_TYPES", "dtype_name_list", "is_supported_dtype"]

#: 1-D contiguous arrays of these element types are accepted.
ARRAY_DTYPES: tuple[np.dtype, ...] = tuple(np.dtype(t) for t in (
    "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64",
    "float32", "float64",
))

#: OpenCL C type of each supported NumPy dtype (and of the scalar types).
C_TYPES: dict[np.dtype, str] = {
    np.dtype("bool"): "bool",
    np.dtype("int8"): "char",
    np.dtype("int16"): "short",
    np.dtype("int32"): "int",
    np.dtype("int64"): "long",
    np.dtype("uint8"): "uchar",
    np.dtype("uint16"): "ushort",
    np.dtype("uint32"): "uint",
    np.dtype("uint64"): "ulong",
    np.dtype("float32"): "float",
    np.dtype("float64"): "double",
}


def is_supported_dtype(dtype) -> bool:
    return np.dtype(dtype) in ARRAY_DTYPES


def dtype_name_list() -> str:
    """The supported dtypes as a readable list, for error messages."""
    return ", ".join(d.name for d in ARRAY_DTYPES)
