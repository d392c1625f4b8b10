"""Compiled pieces of the exact single-site log-ratios, read off colour moves.

:func:`~pymc_discrete.kernels.exact_tables.local_ratios` evaluates the block's terms at
``x`` and at ``x`` with each colour moved as a whole (:func:`binary_colour_states`, one
flip per colour; :func:`categorical_colour_value_states`, every value per colour) and
reads every site's log-ratio off its own terms (:func:`colour_ratios`,
:func:`categorical_colour_ratios`). Where a parameter check failed at a colour's states
(:func:`failed_colours`), that colour's ratios are taken site by site and written over
the colour-move ones (:func:`patch_site_ratios`). The compiled exact ratios
(:mod:`~pymc_discrete.kernels.exact_loop`) call the same functions.

Pure numpy/numba.
"""

from __future__ import annotations

import numpy as np

from pymc_discrete.kernels.jit import njit_cached

__all__ = [
    "binary_colour_states",
    "categorical_colour_ratios",
    "categorical_colour_value_states",
    "colour_ratios",
    "failed_colours",
    "patch_site_ratios",
    "site_term_change",
    "sites_of_colour",
]


@njit_cached
def failed_colours(terms: np.ndarray, n_colours: int, rows_per_colour: int) -> np.ndarray:
    """The colours whose rows of colour states (row ``1 + c * rows_per_colour + v``) have
    every term -inf: a parameter check failed there (the batched terms set such rows to
    -inf), possibly because of another site of the colour than the one a ratio is for, so
    their ratios must be taken site by site (:func:`site_by_site_states`). A row that is
    -inf for another reason is only recomputed, exactly, the same way.

    Examples
    --------
    >>> import numpy as np
    >>> terms = np.array([[0.0, 1.0], [-np.inf, -np.inf], [0.5, 1.0]])
    >>> failed_colours(terms, 2, 1).tolist()
    [0]
    """
    out = np.zeros(n_colours, np.bool_)
    for r in range(1, terms.shape[0]):
        failed = True
        for m in range(terms.shape[1]):
            if terms[r, m] > -np.inf:
                failed = False
                break
        if failed:
            out[(r - 1) // rows_per_colour] = True
    return np.flatnonzero(out)


@njit_cached
def sites_of_colour(colour: np.ndarray, c: int) -> np.ndarray:
    """The sites of colour ``c``, in increasing order."""
    return np.flatnonzero(colour == c)


@njit_cached
def patch_site_ratios(ratios: np.ndarray, table: np.ndarray, x: np.ndarray,
                      sites: np.ndarray) -> None:
    """Write the site-by-site table of ``sites`` (:func:`site_by_site_table`) into local
    ratios: the flip ratio of a binary block (``ratios`` of shape (N,)), or the rows of an
    (N, K) table with NaN at the current values."""
    for j in range(sites.size):
        i = sites[j]
        if ratios.ndim == 1:
            ratios.ravel()[i] = table[j, 1 - x[i]]
        else:
            for v in range(table.shape[1]):
                ratios.reshape((ratios.shape[0], -1))[i, v] = (
                    np.nan if v == x[i] else table[j, v])


@njit_cached
def binary_colour_states(x: np.ndarray, colour: np.ndarray, n_colours: int) -> np.ndarray:
    """:func:`colour_states` from the colour of every site (compiled code can call it)."""
    n = x.size
    states = np.empty((n_colours + 1, n), dtype=x.dtype)
    for row in range(n_colours + 1):
        for i in range(n):  # element by element: numba's row assignment is far slower
            states[row, i] = x[i]
    for i in range(n):
        states[colour[i] + 1, i] = 1 - x[i]
    return states


@njit_cached
def site_term_change(terms: np.ndarray, row: int, site_ptr: np.ndarray,
                     site_terms: np.ndarray, i: int) -> float:
    """Change of site i's terms between row 0 of ``terms`` and ``row``: the exact
    log-ratio of site i's move in that row, when no other site moved there touches them."""
    total = 0.0
    for p in range(site_ptr[i], site_ptr[i + 1]):
        k = site_terms[p]
        total += terms[row, k] - terms[0, k]
    return total


@njit_cached
def colour_ratios(
    terms: np.ndarray, site_ptr: np.ndarray, site_terms: np.ndarray, colour: np.ndarray
) -> np.ndarray:
    """Exact log-ratios from the terms at x (row 0) and at each colour flip (row c + 1).

    Parameters
    ----------
    terms : ndarray of float64, shape (colours + 1, M)
    site_ptr, site_terms, colour : ndarray of int64
        From :class:`TermStructure`.

    Returns
    -------
    ndarray of float64, shape (N,)
        ``d_i = f(x with site i flipped) - f(x)``; NaN where a changed term is NaN,
        ``-inf`` where the flip makes a term -inf.
    """
    n = colour.size
    out = np.zeros(n)
    for i in range(n):
        out[i] = site_term_change(terms, colour[i] + 1, site_ptr, site_terms, i)
    return out


@njit_cached
def categorical_colour_value_states(x, colour, n_colours, n_categories, k):
    """:func:`categorical_colour_states` from the colour of every site (compiled code can
    call it)."""
    n = x.size
    states = np.empty((n_colours * k + 1, n), dtype=x.dtype)
    for row in range(states.shape[0]):
        for i in range(n):  # element by element: numba's row assignment is far slower
            states[row, i] = x[i]
    for i in range(n):
        for v in range(n_categories[i]):
            states[1 + colour[i] * k + v, i] = v
    return states


@njit_cached
def categorical_colour_ratios(
    terms: np.ndarray,
    site_ptr: np.ndarray,
    site_terms: np.ndarray,
    colour: np.ndarray,
    x: np.ndarray,
    n_categories: np.ndarray,
    k: int,
) -> np.ndarray:
    """Exact (N, K) table ``d(i, v) = f(x with x_i = v) - f(x)`` from the terms at the rows
    of :func:`categorical_colour_states`; NaN at the current values, -inf at values a site
    does not have."""
    n = colour.size
    out = np.full((n, k), -np.inf)
    for i in range(n):
        for v in range(n_categories[i]):
            if v == x[i]:
                out[i, v] = np.nan
                continue
            out[i, v] = site_term_change(terms, 1 + colour[i] * k + v, site_ptr, site_terms, i)
    return out
