"""The contract of local log-ratios: what a log density hands the kernels.

Every locally balanced kernel is driven by a callable ``x -> (logp, ratios)``, where
``ratios`` holds the local log-ratios ``d = logp(neighbour) - logp(x)`` of the moves that
change one site, in one of two layouts:

* **binary sites** (the fast path): a vector of shape (N,), ``d[i]`` the ratio of
  flipping site i;
* **categorical sites**: a table of shape (N, K), K the largest number of values,
  ``d[i, c]`` the ratio of setting site i to c; the entry of the current value is NaN
  (no move) and values a site does not have are -inf.

In both, NaN or -inf marks a move that is impossible (its log density is -inf or NaN):
it gets weight zero and is never proposed. The ratios may be exact or a first-order
estimate (the gradient of a relaxation); the kernels' Metropolis-Hastings test always
uses the exact log density, so an estimate costs acceptance, never correctness.

The path sampler works with the *potential table* anchored at a point a
(:func:`potential_table`): ``P[i, a_i] = 0`` and ``P[i, c]`` the ratio of moving site i
from ``a_i`` to c, which both layouts convert to (a binary block becomes an (N, 2)
table).
"""

from __future__ import annotations

import numpy as np

from pymc_discrete.kernels.jit import njit_cached

__all__ = ["potential_table"]


def potential_table(x: np.ndarray, ratios: np.ndarray) -> np.ndarray:
    """Potential table anchored at ``x`` from local log-ratios.

    Parameters
    ----------
    x : ndarray of int64, shape (N,)
    ratios : ndarray of float64, shape (N,) or (N, K)
        Binary flip ratios, or a categorical table (any value at ``[i, x_i]``).

    Returns
    -------
    ndarray of float64, shape (N, K)
        ``P[i, x_i] = 0``, ``P[i, c]`` the ratio of moving site i to c, ``-inf`` where
        the ratio is NaN or -inf.

    Examples
    --------
    >>> potential_table(np.array([0, 1]), np.array([0.5, -1.0])).tolist()
    [[0.0, 0.5], [-1.0, 0.0]]
    """
    x = np.asarray(x, dtype=np.int64)
    ratios = np.asarray(ratios, dtype=np.float64)
    if ratios.ndim == 1:
        return _potentials_from_flips(x, ratios)
    return _potentials_from_table(x, ratios)


@njit_cached
def _potentials_from_flips(x, ratios):
    table = np.zeros((x.size, 2))
    for i in range(x.size):
        d = ratios[i]
        table[i, 1 - x[i]] = d if d > -np.inf else -np.inf  # NaN: impossible
    return table


@njit_cached
def _potentials_from_table(x, ratios):
    n, k = ratios.shape
    table = np.empty((n, k))
    for i in range(n):
        for c in range(k):
            d = ratios[i, c]
            table[i, c] = d if d > -np.inf else -np.inf
        table[i, x[i]] = 0.0
    return table
