"""numpy's pairwise summation, compiled, to the bit.

numpy sums a float64 array pairwise (blocks of at most 128 values summed with eight
interleaved partial sums, longer ranges split in two halves); a plain loop in numba
rounds differently. :func:`row_total` sums a row the way ``terms[row].sum()`` does, so
that the compiled loops (:mod:`~pymc_discrete.kernels.exact_loop`,
:mod:`~pymc_discrete.kernels.gibbs_loop`) give the log densities of the Python path to the
last bit.

Pure numpy/numba.
"""

from __future__ import annotations

import numpy as np

from pymc_discrete.kernels.jit import njit_cached

__all__ = ["row_total"]


@njit_cached
def _block_sum(a: np.ndarray, start: int, n: int) -> float:
    """numpy's sum of a block of at most 128 values: eight interleaved partial sums."""
    if n < 8:
        res = 0.0
        for i in range(start, start + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[start], a[start + 1], a[start + 2], a[start + 3]
    r4, r5, r6, r7 = a[start + 4], a[start + 5], a[start + 6], a[start + 7]
    stop = n - n % 8
    i = 8
    while i < stop:
        b = start + i
        r0 += a[b]
        r1 += a[b + 1]
        r2 += a[b + 2]
        r3 += a[b + 3]
        r4 += a[b + 4]
        r5 += a[b + 5]
        r6 += a[b + 6]
        r7 += a[b + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[start + i]
        i += 1
    return res


@njit_cached
def _pairwise_sum(a: np.ndarray) -> float:
    """numpy's pairwise summation of ``a``: ranges of more than 128 values split in two
    halves (the first a multiple of 8 long) summed apart, blocks as :func:`_block_sum`.
    Iterative, with explicit stacks (numba cannot link a cached recursive function)."""
    starts = np.empty(64, np.int64)
    sizes = np.empty(64, np.int64)
    stages = np.empty(64, np.int64)  # 0: left half next, 1: right half next, 2: add
    values = np.empty(64)
    depth, n_values = 0, 0
    starts[0], sizes[0], stages[0] = 0, a.size, 0
    depth = 1
    while depth:
        f = depth - 1
        n = sizes[f]
        if n <= 128:
            values[n_values] = _block_sum(a, starts[f], n)
            n_values += 1
            depth -= 1
            continue
        half = n // 2
        half -= half % 8
        if stages[f] == 0:
            stages[f] = 1
            starts[depth], sizes[depth], stages[depth] = starts[f], half, 0
            depth += 1
        elif stages[f] == 1:
            stages[f] = 2
            starts[depth], sizes[depth], stages[depth] = starts[f] + half, n - half, 0
            depth += 1
        else:
            n_values -= 1
            values[n_values - 1] = values[n_values - 1] + values[n_values]
            depth -= 1
    return values[0]


@njit_cached
def row_total(terms: np.ndarray, row: int) -> float:
    """The sum of one row, to the bit what ``terms[row].sum()`` gives in numpy (its
    pairwise summation): the compiled sweep's log densities equal the Python sweep's.

    Examples
    --------
    >>> import numpy as np
    >>> row_total(np.array([[1.0, 2.0], [3.0, 4.0]]), 1)
    7.0
    """
    return _pairwise_sum(terms[row])
