"""Ready divide-and-conquer algorithms, written only against hpu's public API.

Each module holds a plain recursive function decorated with
``@hpu.divide_and_conquer`` and a convenience wrapper that takes a 1-D NumPy
array of any supported dtype (int8…int64, uint8…uint64, float32, float64),
never modifies it, passes ``**run_options`` (``device``, ``alpha``, ``y``, ...)
to ``.run`` and, with ``return_run=True``, also returns the :class:`hpu.Run`.

``mergesort``
    ``mergesort(a, tmp, lo, hi)``, a = 2, b = 2, f(n) = n; ``sort(x)``: a stable
    sorted copy, NaNs last, bit for bit ``np.sort(x, kind="stable")``.
``sum``
    ``dc_sum(a, lo, hi)``, the paper's Algorithm 4, a = 2, b = 2, f(n) = 1;
    ``total(x)``: what ``np.sum(x)`` returns (exactly, for integers).
``inversions``
    ``inversions(a, tmp, lo, hi)``, a = 2, b = 2, f(n) = n;
    ``count_inversions(x)``: the number of pairs i < j with x[i] > x[j].
``maxsubarray``
    ``max_subarray_sum(a, lo, hi)``, a = 2, b = 2, f(n) = 1, returning the 4-tuple
    (total, best prefix, best suffix, best); ``max_subarray(x)``: a ``MaxSubarray``.
``mergesort3``
    ``mergesort3(a, tmp, lo, hi)``, a = 3, b = 3, f(n) = n, uneven thirds;
    ``sort3(x)``: as ``sort``.

Importing this package imports nothing; import the module you need
(``from algorithms.mergesort import sort``), which imports hpu.
"""
