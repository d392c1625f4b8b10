"""Greedy colouring of sites that share a term, from CSR lists.

Two sites that share a term of the log density get different colours, so the sites of
one colour can be moved together and every changed term still belongs to one moved
site (:mod:`pymc_discrete.kernels.structure`). Terms with identical site lists are
merged before colouring, so a dense model does not pay for its repeated terms.
:func:`transpose_csr` turns per-site term lists into per-term site lists and back.

Pure numpy/numba.
"""

from __future__ import annotations

import numpy as np

from pymc_discrete.kernels.jit import njit_cached

__all__ = ["greedy_colouring_csr", "transpose_csr"]


# ---------------------------------------------------------------------------------------
# CSR helpers


def transpose_csr(
    ptr: np.ndarray, flat: np.ndarray, n_cols: int
) -> tuple[np.ndarray, np.ndarray]:
    """Transpose CSR lists (rows -> columns), each output list sorted.

    Parameters
    ----------
    ptr, flat : ndarray of int64
        Row i holds ``flat[ptr[i]:ptr[i + 1]]``, entries in ``[0, n_cols)``.
    n_cols : int
        Number of columns.

    Returns
    -------
    ptr_t, flat_t : ndarray of int64
        Column j holds the rows that list j, in increasing order.
    """
    rows = np.repeat(np.arange(ptr.size - 1, dtype=np.int64), np.diff(ptr))
    order = np.argsort(flat, kind="stable")  # stable: rows stay increasing per column
    ptr_t = np.zeros(n_cols + 1, dtype=np.int64)
    ptr_t[1:] = np.cumsum(np.bincount(flat, minlength=n_cols))
    return ptr_t, rows[order]


# ---------------------------------------------------------------------------------------
# Colouring


@njit_cached
def _hash_rows(ptr, flat):
    out = np.empty(ptr.size - 1, dtype=np.uint64)
    for k in range(ptr.size - 1):
        h = np.uint64(1469598103934665603)
        for p in range(ptr[k], ptr[k + 1]):
            h = (h ^ np.uint64(flat[p] + 1)) * np.uint64(1099511628211)
        out[k] = h ^ np.uint64(ptr[k + 1] - ptr[k])
    return out


@njit_cached
def _distinct_rows(ptr, flat, hashes, order):
    """Keep one row of every set of identical rows (and no empty row): rows sorted by
    hash, every row compared exactly with the kept rows of its hash (collisions are
    rare, so this is linear in practice)."""
    m = ptr.size - 1
    keep = np.zeros(m, dtype=np.bool_)
    start = 0
    while start < m:
        stop = start + 1
        while stop < m and hashes[order[stop]] == hashes[order[start]]:
            stop += 1
        for a in range(start, stop):
            k = order[a]
            n_k = ptr[k + 1] - ptr[k]
            if n_k == 0:
                continue
            duplicate = False
            for b in range(start, a):
                j = order[b]
                if not keep[j] or ptr[j + 1] - ptr[j] != n_k:
                    continue
                same = True
                for q in range(n_k):
                    if flat[ptr[k] + q] != flat[ptr[j] + q]:
                        same = False
                        break
                if same:
                    duplicate = True
                    break
            keep[k] = not duplicate
        start = stop
    return keep


@njit_cached
def _greedy_colour(n, site_ptr, site_terms, term_ptr, term_sites):
    """Smallest colour not used by an earlier site sharing a term, in site order. Costs
    the sum over terms of (sites of the term)^2."""
    colour = np.full(n, -1, dtype=np.int64)
    taken = np.full(n + 1, -1, dtype=np.int64)  # taken[c] == i: colour c is used near i
    for i in range(n):
        for p in range(site_ptr[i], site_ptr[i + 1]):
            k = site_terms[p]
            for q in range(term_ptr[k], term_ptr[k + 1]):
                c = colour[term_sites[q]]
                if c >= 0:
                    taken[c] = i
        c = 0
        while taken[c] == i:
            c += 1
        colour[i] = c
    return colour


def greedy_colouring_csr(
    site_ptr: np.ndarray, site_terms: np.ndarray, n_terms: int
) -> tuple[np.ndarray, int]:
    """Colour sites so that two sites sharing a term get different colours (greedy, in
    site order), from CSR lists.

    Terms with identical site lists are merged first (they add no constraint), so a
    model where M terms all depend on the same N sites costs O(N^2), not O(M N^2).

    Parameters
    ----------
    site_ptr, site_terms : ndarray of int64
        The terms of site i are ``site_terms[site_ptr[i]:site_ptr[i + 1]]``.
    n_terms : int
        Number of terms M.

    Returns
    -------
    colour : ndarray of int64, shape (N,)
    n_colours : int
    """
    n = site_ptr.size - 1
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0
    site_ptr = np.asarray(site_ptr, dtype=np.int64)
    site_terms = np.asarray(site_terms, dtype=np.int64)
    term_ptr, term_sites = transpose_csr(site_ptr, site_terms, n_terms)
    hashes = _hash_rows(term_ptr, term_sites)
    keep = _distinct_rows(term_ptr, term_sites, hashes, np.argsort(hashes, kind="stable"))
    kept = keep[site_terms]
    site_of_entry = np.repeat(np.arange(n, dtype=np.int64), np.diff(site_ptr))
    ptr = np.zeros(n + 1, dtype=np.int64)
    ptr[1:] = np.cumsum(np.bincount(site_of_entry[kept], minlength=n))
    colour = _greedy_colour(n, ptr, site_terms[kept], term_ptr, term_sites)
    return colour, int(colour.max()) + 1
