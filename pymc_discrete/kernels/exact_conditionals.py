"""Compiled pieces of the exact conditionals of one colour's sites.

:func:`~pymc_discrete.kernels.exact_tables.colour_conditionals` evaluates the block's
terms at ``x`` and with the whole colour at each value (:func:`colour_value_states`), or
at the value states alone when the colouring is proven and no parameter check reads the
sites (:func:`value_rows`), and reads the conditional log-ratios ``d(i, v)`` off them
(:func:`colour_conditional_table`, :func:`value_row_conditionals`). The compiled Gibbs
sweep (:mod:`~pymc_discrete.kernels.gibbs_loop`) calls the same functions.

Pure numpy/numba.
"""

from __future__ import annotations

import numpy as np

from pymc_discrete.kernels.jit import njit_cached
from pymc_discrete.kernels.pairwise_sum import _pairwise_sum

__all__ = [
    "colour_conditional_table",
    "colour_value_states",
    "value_row_conditionals",
    "value_rows",
]


@njit_cached
def colour_value_states(x: np.ndarray, sites: np.ndarray, n_categories: np.ndarray,
                        k: int) -> np.ndarray:
    """``x``, then for every value v the state with every site of ``sites`` set to v
    (sites with at most v values unchanged): shape (1 + K, N), row ``1 + v``.

    Examples
    --------
    >>> import numpy as np
    >>> colour_value_states(np.array([1, 0, 1]), np.array([0, 2]), np.array([2, 2, 2]),
    ...                     2).tolist()
    [[1, 0, 1], [0, 0, 0], [1, 0, 1]]
    """
    return _value_states(x, sites, n_categories, k, 1)


@njit_cached
def value_rows(x: np.ndarray, sites: np.ndarray, n_categories: np.ndarray,
               k: int) -> np.ndarray:
    """For every value v, ``x`` with every site of ``sites`` set to v (sites with at most
    v values unchanged): :func:`colour_value_states` without its first row, shape (K, N).

    Examples
    --------
    >>> import numpy as np
    >>> value_rows(np.array([1, 0, 1]), np.array([0, 2]), np.array([2, 2, 2]), 2).tolist()
    [[0, 0, 0], [1, 0, 1]]
    """
    return _value_states(x, sites, n_categories, k, 0)


@njit_cached
def _value_states(x: np.ndarray, sites: np.ndarray, n_categories: np.ndarray, k: int,
                  first: int) -> np.ndarray:
    """``first`` rows of ``x`` (0 or 1), then for every value v the state with every
    site of ``sites`` set to v (sites with at most v values unchanged)."""
    states = np.empty((first + k, x.size), dtype=x.dtype)
    for row in range(first + k):
        for i in range(x.size):  # element by element: numba's slice copy costs more at these sizes
            states[row, i] = x[i]
    for j in range(sites.size):
        i = sites[j]
        for v in range(n_categories[i]):
            states[first + v, i] = v
    return states


@njit_cached
def value_row_conditionals(terms: np.ndarray, site_ptr: np.ndarray, site_terms: np.ndarray,
                           sites: np.ndarray, x: np.ndarray, n_categories: np.ndarray,
                           k: int) -> tuple[float, np.ndarray]:
    """The log density at ``x`` and the conditional log-ratios ``d(i, v)`` of the sites
    of one colour, from the terms at the rows of :func:`value_rows` alone.

    Valid when every term touches at most one site of the colour (a proven colouring):
    a term touching site i has its current value in row ``x_i``, a term touching no
    site of the colour the same value in every row. The numbers are those of
    :func:`colour_conditional_table` and of the first row's sum with ``x`` evaluated
    too, term for term, in the same order.

    Parameters
    ----------
    terms : ndarray of float64, shape (K, M)
        The model's terms with the colour set to each value.
    site_ptr, site_terms : ndarray of int64
        CSR lists of the terms of every site.
    sites : ndarray of int64, shape (n_c,)
    x : ndarray of int64, shape (N,)
    n_categories : ndarray of int64, shape (N,)
    k : int

    Returns
    -------
    logp : float
        Sum of the terms at ``x`` (numpy's pairwise order, :func:`row_total`).
    table : ndarray of float64, shape (n_c, K)
        0 at the current value, -inf at values a site does not have and where the log
        density is -inf or NaN.

    Examples
    --------
    Two sites of one colour, each with a term of its own, and a term of neither:

    >>> import numpy as np
    >>> terms = np.array([[0.0, 2.0, 5.0], [1.0, 3.0, 5.0]])
    >>> ptr, st = np.array([0, 1, 2]), np.array([0, 1])
    >>> logp, table = value_row_conditionals(terms, ptr, st, np.array([0, 1]),
    ...                                      np.array([1, 0]), np.array([2, 2]), 2)
    >>> logp, table.tolist()
    (8.0, [[-1.0, 0.0], [0.0, 1.0]])
    """
    current = terms[0].copy()
    for j in range(sites.size):
        i = sites[j]
        for p in range(site_ptr[i], site_ptr[i + 1]):
            current[site_terms[p]] = terms[x[i], site_terms[p]]
    table = _conditional_table(terms, site_ptr, site_terms, sites, x, n_categories, k, 0)
    return _pairwise_sum(current), table


@njit_cached
def colour_conditional_table(terms: np.ndarray, site_ptr: np.ndarray,
                             site_terms: np.ndarray, sites: np.ndarray, x: np.ndarray,
                             n_categories: np.ndarray, k: int) -> np.ndarray:
    """Log-ratios ``d(i, v)`` of the sites of one colour from the terms at the rows of
    :func:`colour_value_states`.

    Parameters
    ----------
    terms : ndarray of float64, shape (1 + K, M)
        The model's terms at x (row 0) and with the colour set to each value.
    site_ptr, site_terms : ndarray of int64
        CSR lists of the terms of every site.
    sites : ndarray of int64, shape (n_c,)
        The colour's sites.
    x : ndarray of int64, shape (N,)
    n_categories : ndarray of int64, shape (N,)
    k : int
        Largest number of values.

    Returns
    -------
    ndarray of float64, shape (n_c, K)
        0 at the current value, -inf at values a site does not have and where the log
        density is -inf or NaN.
    """
    return _conditional_table(terms, site_ptr, site_terms, sites, x, n_categories, k, 1)


@njit_cached
def _conditional_table(terms: np.ndarray, site_ptr: np.ndarray, site_terms: np.ndarray,
                       sites: np.ndarray, x: np.ndarray, n_categories: np.ndarray, k: int,
                       first: int) -> np.ndarray:
    """``d(i, v)`` of the sites of one colour, site i's terms summed in their order:
    value v's row is ``first + v``; x's row is 0 when ``first`` is 1 (x evaluated
    itself), else ``x_i``'s value row (:func:`value_row_conditionals`). 0 at the
    current value, -inf at values a site does not have and where the log density is
    -inf or NaN."""
    out = np.full((sites.size, k), -np.inf)
    for j in range(sites.size):
        i = sites[j]
        base = 0 if first else x[i]
        for v in range(n_categories[i]):
            if v == x[i]:
                out[j, v] = 0.0
                continue
            total = 0.0
            for p in range(site_ptr[i], site_ptr[i + 1]):
                t = site_terms[p]
                total += terms[first + v, t] - terms[base, t]
            if total > -np.inf:  # NaN and -inf: the value is impossible
                out[j, v] = total
    return out
