"""The wrappers of algorithms/ refuse what they cannot handle, saying what and how to fix it."""
from __future__ import annotations

import numpy as np
import pytest

from algorithms.inversions import count_inversions
from algorithms.maxsubarray import max_subarray
from algorithms.mergesort import sort
from algorithms.mergesort3 import sort3
from algorithms.sum import total

WRAPPERS = [sort, sort3, total, count_inversions, max_subarray]


@pytest.mark.parametrize("wrapper", WRAPPERS, ids=lambda f: f.__name__)
def test_a_list_is_refused_with_the_conversion_to_write(wrapper):
    with pytest.raises(TypeError, match=rf"{wrapper.__name__}\(\) expects a 1-D NumPy array, got list.*np\.asarray"):
        wrapper([3, 1, 2])


@pytest.mark.parametrize("wrapper", WRAPPERS, ids=lambda f: f.__name__)
def test_a_2d_array_is_refused_naming_its_shape(wrapper):
    x = np.zeros((3, 4), dtype=np.int32)
    with pytest.raises(ValueError, match=r"1-D array, got shape \(3, 4\).*ravel"):
        wrapper(x)


@pytest.mark.parametrize("wrapper", WRAPPERS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", ["complex128", "bool", "object", "float16", "<U3", "datetime64[s]"])
def test_an_unsupported_dtype_is_refused_naming_it_and_the_choices(wrapper, dtype):
    x = np.zeros(5, dtype=dtype)
    with pytest.raises(TypeError) as info:
        wrapper(x)
    message = str(info.value)
    assert f"does not support dtype {np.dtype(dtype)}" in message
    assert "int8" in message and "float64" in message and "astype" in message


@pytest.mark.parametrize("wrapper", WRAPPERS, ids=lambda f: f.__name__)
def test_refusal_leaves_the_input_alone(wrapper):
    x = np.array([[2, 1], [4, 3]], dtype=np.int64)
    with pytest.raises(ValueError):
        wrapper(x)
    assert x.tolist() == [[2, 1], [4, 3]]
