"""Exact local log-ratio and conditional tables from the model's batched terms.

The glue (:class:`~pymc_discrete.pymc.exact.ExactRatios`) compiles the terms that depend
on a block as one function batched over states, ``batch(states) -> (terms, held)``
(``terms`` -inf at a state where a parameter check failed, ``held`` whether every check
held at every row), and reads which terms each site changes and a colouring of the sites
(:mod:`pymc_discrete.kernels.structure`). The functions here turn one batched evaluation
into tables:

* :func:`local_ratios`: the log density at ``x`` and every single-site log-ratio, from
  ``x`` and ``x`` with each colour moved as a whole (``1 + colours`` states for binary
  sites, ``1 + colours * K`` for categorical ones);
* :func:`colour_conditionals`: the conditional log-ratios ``d(i, v)`` of the sites of one
  colour, from ``x`` and ``x`` with the whole colour at each value (``1 + K`` states), or
  from the K value states alone when the colouring is proven and no parameter check
  reads the sites (:func:`value_row_conditionals`: each term then touches at most one
  site of the colour, so the state with that site at its current value holds the term's
  current value).

Where a check failed at a state that moved a whole colour, the failure may come from
another site than the one a ratio is for, so that colour's ratios are taken one site at a
time (exact, whatever the checks couple). The compiled loops
(:mod:`~pymc_discrete.kernels.exact_loop`, :mod:`~pymc_discrete.kernels.gibbs_loop`) call
the same compiled pieces, so both paths give the same numbers to the bit.

The compiled pieces live beside this module: those of the local ratios in
:mod:`~pymc_discrete.kernels.exact_local_ratios`, those of the conditionals in
:mod:`~pymc_discrete.kernels.exact_conditionals`, and numpy's pairwise sum in
:mod:`~pymc_discrete.kernels.pairwise_sum`; the site-by-site tables that both fall back
on are here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from pymc_discrete.kernels.exact_conditionals import (
    colour_conditional_table,
    colour_value_states,
    value_row_conditionals,
    value_rows,
)
from pymc_discrete.kernels.exact_local_ratios import (
    binary_colour_states,
    categorical_colour_ratios,
    categorical_colour_value_states,
    colour_ratios,
    failed_colours,
    patch_site_ratios,
    sites_of_colour,
)
from pymc_discrete.kernels.jit import njit_cached
from pymc_discrete.kernels.pairwise_sum import row_total
from pymc_discrete.kernels.structure import TermStructure

__all__ = [
    "BatchTerms",
    "TermLayout",
    "categorical_colour_states",
    "colour_conditionals",
    "colour_states",
    "local_ratios",
    "site_by_site_states",
    "site_by_site_table",
]

#: ``states (rows, N) of site indices -> (terms (rows, M), whether every parameter check
#: held at every row)``, the terms -inf in every row where a check failed
BatchTerms = Callable[[np.ndarray], tuple[np.ndarray, bool]]


class TermLayout(NamedTuple):
    """What the tables read of a block's terms and their colouring.

    Attributes
    ----------
    structure : TermStructure
        Terms of every site (CSR ``site_ptr``/``site_terms``) and the colouring.
    n_categories : ndarray of int64 or None
        Number of values of every site; None for a binary block (then the ratios are a
        vector of single-flip log-ratios, else an (N, K) table).
    site_values : ndarray of int64
        Number of values of every site (2 for binary sites).
    max_values : int
        Largest number of values of a site (K).
    value_rows_only : bool
        Whether a colour's conditionals may be read off the K value states alone
        (:func:`value_row_conditionals`): the colouring is proven, so every term touches
        at most one site of a colour, and no parameter check reads the block's sites, so
        the checks that held at those states hold at ``x``.
    """

    structure: TermStructure
    n_categories: np.ndarray | None
    site_values: np.ndarray
    max_values: int
    value_rows_only: bool = False

    @property
    def rows_per_conditional(self) -> int:
        """States evaluated for one colour's conditionals: K, or ``1 + K`` with ``x``."""
        return self.max_values + (0 if self.value_rows_only else 1)

    @property
    def rows_per_colour(self) -> int:
        """Rows of colour states per colour: 1 (a flip) or K (each value)."""
        return 1 if self.n_categories is None else self.max_values


def local_ratios(batch: BatchTerms, layout: TermLayout,
                 x: np.ndarray) -> tuple[float, np.ndarray]:
    """The log density of the block's terms at ``x`` and every exact local log-ratio.

    Parameters
    ----------
    batch : BatchTerms
        The block's batched terms.
    layout : TermLayout
        Terms of every site and the colouring.
    x : ndarray of int64, shape (N,)
        The current sites.

    Returns
    -------
    logp : float
        Sum of the terms at ``x``.
    ratios : ndarray
        For binary sites the single-flip log-ratios, shape (N,); for categorical sites an
        (N, K) table ``d(i, v)`` with NaN at the current values and -inf at values a site
        does not have.
    """
    s = layout.structure
    ks = layout.n_categories
    if ks is None:
        terms, held = batch(colour_states(x, s))
        ratios = colour_ratios(terms, s.site_ptr, s.site_terms, s.colour)
    else:
        terms, held = batch(categorical_colour_states(x, s, ks))
        ratios = categorical_colour_ratios(
            terms, s.site_ptr, s.site_terms, s.colour, x, ks, int(ks.max())
        )
    if not held and not np.isneginf(terms[0]).all():
        # a check failed where a whole colour moved, maybe because of another site than
        # the one a ratio is for: that colour's ratios are taken site by site (else a
        # site could be kept from ever moving: a reducible chain)
        x = np.asarray(x, dtype=np.int64)
        for c in failed_colours(terms, s.n_colours, layout.rows_per_colour):
            sites = sites_of_colour(s.colour, c)
            site_terms, _ = batch(
                site_by_site_states(x, sites, layout.site_values, layout.max_values))
            _, table = site_by_site_table(site_terms, x, sites, layout.site_values,
                                          layout.max_values)
            patch_site_ratios(ratios, table, x, sites)
    return float(terms[0].sum()), ratios


def colour_conditionals(batch: BatchTerms, layout: TermLayout, x: np.ndarray,
                        sites: np.ndarray) -> tuple[float, np.ndarray, bool]:
    """The conditional log-ratios of the sites of one colour, from one batched
    evaluation at ``1 + K`` states.

    Parameters
    ----------
    batch : BatchTerms
        The block's batched terms.
    layout : TermLayout
        Terms of every site and the colouring.
    x : ndarray of int64, shape (N,)
        The current sites.
    sites : ndarray of int64
        The sites of one colour.

    Returns
    -------
    logp : float
        Sum of the terms at ``x``.
    table : ndarray, shape (len(sites), K)
        ``d(i, v)`` (:func:`colour_conditional_table`).
    proven : bool
        Whether every parameter check held at those states: the table is then exact
        under a colouring read off the check-free graph. Where a check failed, the table
        is taken one state per site and value instead (:func:`site_by_site_table`), and
        the sites of the colour are not independent, so the caller corrects the joint draw.
    """
    ks, k = layout.site_values, layout.max_values
    s = layout.structure
    if layout.value_rows_only:
        terms, held = batch(value_rows(x, sites, ks, k))
        if held:
            logp, table = value_row_conditionals(terms, s.site_ptr, s.site_terms, sites, x,
                                                 ks, k)
            return logp, table, True
    else:
        terms, held = batch(colour_value_states(x, sites, ks, k))
    if not held:
        terms, _ = batch(site_by_site_states(x, sites, ks, k))
        logp, table = site_by_site_table(terms, x, sites, ks, k)
        return logp, table, False
    table = colour_conditional_table(terms, s.site_ptr, s.site_terms, sites, x, ks, k)
    return float(terms[0].sum()), table, True  # = row_total(terms, 0)


@njit_cached
def site_by_site_states(x: np.ndarray, sites: np.ndarray, n_categories: np.ndarray,
                        k: int) -> np.ndarray:
    """``x``, then for every site of ``sites`` and every value v < K the state with that
    site alone set to v (unchanged where the site has at most v values): shape
    (1 + n_c K, N), the row of site ``sites[j]`` and value v at ``1 + j K + v``.

    Examples
    --------
    >>> import numpy as np
    >>> site_by_site_states(np.array([1, 0]), np.array([1]), np.array([2, 2]), 2).tolist()
    [[1, 0], [1, 0], [1, 1]]
    """
    states = np.empty((1 + sites.size * k, x.size), dtype=x.dtype)
    for row in range(states.shape[0]):
        for m in range(x.size):
            states[row, m] = x[m]
    for j in range(sites.size):
        i = sites[j]
        for v in range(k):
            row = 1 + j * k + v
            if v < n_categories[i]:
                states[row, i] = v
    return states


@njit_cached
def site_by_site_table(terms: np.ndarray, x: np.ndarray, sites: np.ndarray,
                       n_categories: np.ndarray, k: int) -> tuple[float, np.ndarray]:
    """The log density at x and the (n_c, K) table of log-ratios ``d(i, v)`` from the
    terms at the rows of :func:`site_by_site_states` (each row summed whole: exact
    whatever the sites share), -inf where a value is impossible.

    Examples
    --------
    >>> import numpy as np
    >>> terms = np.array([[0.0, 1.0], [0.0, 1.0], [0.5, 1.0]])
    >>> logp, table = site_by_site_table(terms, np.array([1, 0]), np.array([1]),
    ...                                  np.array([2, 2]), 2)
    >>> logp, table.tolist()
    (1.0, [[0.0, 0.5]])
    """
    logp = row_total(terms, 0)
    table = np.full((sites.size, k), -np.inf)
    for j in range(sites.size):
        i = sites[j]
        for v in range(n_categories[i]):
            if v == x[i]:
                table[j, v] = 0.0
                continue
            d = row_total(terms, 1 + j * k + v) - logp
            if d > -np.inf:  # NaN and -inf: the value is impossible
                table[j, v] = d
    return logp, table


def colour_states(x: np.ndarray, structure: TermStructure) -> np.ndarray:
    """``x`` followed by ``x`` with each colour class flipped: shape (colours + 1, N)."""
    return binary_colour_states(x, structure.colour, structure.n_colours)


def categorical_colour_states(
    x: np.ndarray, structure: TermStructure, n_categories: np.ndarray
) -> np.ndarray:
    """``x``, then for every colour c and value v the state with every site of colour c
    set to v (sites with fewer values, or already at v, unchanged): row ``1 + c K + v``
    with ``K = max(n_categories)``."""
    return categorical_colour_value_states(
        x, structure.colour, structure.n_colours, n_categories, int(n_categories.max())
    )
