"""Exact single-site log-ratios from elementwise log-density terms, by graph colouring.

Write the log density as a sum of M elementwise terms, ``f(x) = sum_k T_k(x)``, and let
``D_i`` be the terms that depend on site i. Two sites that share no term can be flipped
together: each changed term then belongs to exactly one flipped site, so one evaluation
of T at ``x`` with a whole colour class flipped gives the exact change of f for every site
of the class: ``d_i = sum_{k in D_i} T_k(x with class of i flipped) - T_k(x)``. With a
proper colouring of the "share a term" graph, all N exact log-ratios cost (colours + 1)
evaluations of T: O(N) for models with sparse interactions (a lattice needs 2 to 5
colours), and N + 1 evaluations (brute force) when one term depends on every site.

Pure numpy/numba; the caller supplies the batched evaluator of T.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numba
import numpy as np

__all__ = ["TermStructure", "discover_structure", "greedy_colouring", "colour_ratios"]

#: ``states (B, N) int64 -> terms (B, M) float64``
BatchTerms = Callable[[np.ndarray], np.ndarray]


class TermStructure(NamedTuple):
    """Which terms each site touches, and a colouring of the sites.

    Attributes
    ----------
    site_ptr, site_terms : ndarray of int64
        CSR lists: the terms of site i are ``site_terms[site_ptr[i]:site_ptr[i + 1]]``.
    colour : ndarray of int64, shape (N,)
        Colour of every site; sites of one colour share no term.
    n_colours : int
        Number of colours.
    """

    site_ptr: np.ndarray
    site_terms: np.ndarray
    colour: np.ndarray
    n_colours: int


def _changed(base: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Terms that differ (NaN or inf on either side counts as a change: conservative)."""
    same = base == other
    return ~same


def discover_structure(
    batch_terms: BatchTerms,
    probes: np.ndarray,
    rows_per_call: int,
    n_categories: np.ndarray | None = None,
) -> list[np.ndarray]:
    """Find the terms each site's flip changes, at every probe point.

    Parameters
    ----------
    batch_terms : callable
        Batched evaluator of the term vector.
    probes : ndarray of int64, shape (P, N)
        Binary points to probe; a dependency seen at any of them is kept (an interaction
        ``x_i x_j`` only shows when ``x_j = 1``, so probe at several points, e.g. all
        zeros, all ones and random points).
    rows_per_call : int
        Batch size of ``batch_terms`` calls (bounds memory).
    n_categories : ndarray of int64, optional
        Number of values of every site (default: binary). A site is probed by moving it
        to its next value, ``(x_i + 1) mod K_i``.

    Returns
    -------
    list of ndarray of int64
        ``terms[i]``: the sorted terms that depend on site i.
    """
    n = probes.shape[1]
    found: list[set] = [set() for _ in range(n)]
    for x in probes:
        base = batch_terms(x[None, :])[0]
        for start in range(0, n, rows_per_call):
            sites = np.arange(start, min(n, start + rows_per_call))
            states = np.repeat(x[None, :], sites.size, axis=0)
            rows = np.arange(sites.size)
            if n_categories is None:
                states[rows, sites] = 1 - states[rows, sites]
            else:
                states[rows, sites] = (states[rows, sites] + 1) % n_categories[sites]
            changed = _changed(base[None, :], batch_terms(states))
            for row, site in enumerate(sites):
                found[site].update(np.flatnonzero(changed[row]).tolist())
    return [np.array(sorted(s), dtype=np.int64) for s in found]


def greedy_colouring(terms_of_site: list[np.ndarray], n_terms: int) -> tuple[np.ndarray, int]:
    """Colour sites so that two sites sharing a term get different colours (greedy, in
    site order).

    Parameters
    ----------
    terms_of_site : list of ndarray of int64
        The terms of every site.
    n_terms : int
        Number of terms M.

    Returns
    -------
    colour : ndarray of int64, shape (N,)
    n_colours : int
    """
    n = len(terms_of_site)
    sites_of_term: list[list[int]] = [[] for _ in range(n_terms)]
    for i, terms in enumerate(terms_of_site):
        for k in terms:
            sites_of_term[k].append(i)
    colour = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        taken = {colour[j] for k in terms_of_site[i] for j in sites_of_term[k] if colour[j] >= 0}
        c = 0
        while c in taken:
            c += 1
        colour[i] = c
    return colour, int(colour.max()) + 1 if n else 0


def build_structure(terms_of_site: list[np.ndarray], n_terms: int) -> TermStructure:
    """CSR lists and colouring from the per-site term lists."""
    ptr = np.zeros(len(terms_of_site) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([t.size for t in terms_of_site])
    flat = np.concatenate(terms_of_site) if terms_of_site else np.empty(0, np.int64)
    colour, n_colours = greedy_colouring(terms_of_site, n_terms)
    return TermStructure(ptr, flat.astype(np.int64), colour, n_colours)


def colour_states(x: np.ndarray, structure: TermStructure) -> np.ndarray:
    """``x`` followed by ``x`` with each colour class flipped: shape (colours + 1, N)."""
    states = np.repeat(x[None, :], structure.n_colours + 1, axis=0)
    rows = structure.colour + 1
    sites = np.arange(x.size)
    states[rows, sites] = 1 - x
    return states


@numba.njit(cache=True)
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
        row = colour[i] + 1
        total = 0.0
        for p in range(site_ptr[i], site_ptr[i + 1]):
            k = site_terms[p]
            total += terms[row, k] - terms[0, k]
        out[i] = total
    return out


def categorical_colour_states(
    x: np.ndarray, structure: TermStructure, n_categories: np.ndarray
) -> np.ndarray:
    """``x``, then for every colour c and value v the state with every site of colour c
    set to v (sites with fewer values, or already at v, unchanged): row ``1 + c K + v``
    with ``K = max(n_categories)``."""
    return _categorical_colour_states(
        x, structure.colour, structure.n_colours, n_categories, int(n_categories.max())
    )


@numba.njit(cache=True)
def _categorical_colour_states(x, colour, n_colours, n_categories, k):
    n = x.size
    states = np.empty((n_colours * k + 1, n), dtype=x.dtype)
    for row in range(states.shape[0]):
        states[row] = x
    for i in range(n):
        for v in range(n_categories[i]):
            states[1 + colour[i] * k + v, i] = v
    return states


@numba.njit(cache=True)
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
            row = 1 + colour[i] * k + v
            total = 0.0
            for p in range(site_ptr[i], site_ptr[i + 1]):
                t = site_terms[p]
                total += terms[row, t] - terms[0, t]
            out[i, v] = total
    return out
