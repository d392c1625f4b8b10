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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from pymc_discrete.kernels.jit import njit_cached
from pymc_discrete.kernels.structure import TermStructure

__all__ = [
    "BatchTerms",
    "TermLayout",
    "binary_colour_states",
    "categorical_colour_ratios",
    "categorical_colour_states",
    "categorical_colour_value_states",
    "colour_conditional_table",
    "colour_conditionals",
    "colour_ratios",
    "colour_states",
    "colour_value_states",
    "failed_colours",
    "local_ratios",
    "patch_site_ratios",
    "row_total",
    "site_by_site_states",
    "site_by_site_table",
    "site_term_change",
    "sites_of_colour",
    "value_row_conditionals",
    "value_rows",
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


def colour_states(x: np.ndarray, structure: TermStructure) -> np.ndarray:
    """``x`` followed by ``x`` with each colour class flipped: shape (colours + 1, N)."""
    return binary_colour_states(x, structure.colour, structure.n_colours)


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


def categorical_colour_states(
    x: np.ndarray, structure: TermStructure, n_categories: np.ndarray
) -> np.ndarray:
    """``x``, then for every colour c and value v the state with every site of colour c
    set to v (sites with fewer values, or already at v, unchanged): row ``1 + c K + v``
    with ``K = max(n_categories)``."""
    return categorical_colour_value_states(
        x, structure.colour, structure.n_colours, n_categories, int(n_categories.max())
    )


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
