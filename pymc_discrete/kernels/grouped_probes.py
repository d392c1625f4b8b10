"""Decoding of a grouped probe of the term structure, compiled.

When a :class:`~pymc_discrete.kernels.structure.DependencySuperset` is known, the
discovery (:func:`~pymc_discrete.kernels.structure.discover_structure_csr`) moves whole
groups of sites at once, groups in which no term may depend on two sites. The functions
here read such a batch of evaluated terms: :func:`_decode_groups` attributes every
changed term to the one moved site of the group it may depend on, and
:func:`_check_single` compares single-site moves with that decoding. Both return the
position of a change the superset cannot explain, for the caller to raise
:class:`~pymc_discrete.kernels.structure.StructureMismatch`.

Pure numpy/numba.
"""

from __future__ import annotations

import numpy as np

from pymc_discrete.kernels.jit import njit_cached

__all__ = ["NOISE"]


#: A change of a term by more than this (relative to max(1, |value|)) cannot be rounding
#: noise of a batched evaluation. Only the *checks* use it (a smaller change that the
#: superset cannot explain is not taken as proof that the superset is wrong); which
#: terms a site changes is decided by exact comparison, as brute force does.
NOISE = 1e-9


@njit_cached
def _significant(t, b):
    """``t`` differs from ``b`` by more than rounding noise (NaN or inf: yes)."""
    return not (abs(t - b) <= NOISE * max(1.0, abs(b)))


@njit_cached
def _position_in_group(k, g, term_ptr, term_sites, group, group_ptr, group_sites):
    """Position (in term_sites) of the one site of group g that term k may depend on,
    or -1. Scans the shorter list: a lattice term lists 1-2 sites of large groups, a
    dense term all N sites of one-site groups."""
    lo, hi = term_ptr[k], term_ptr[k + 1]
    glo, ghi = group_ptr[g], group_ptr[g + 1]
    if hi - lo <= 16 or hi - lo <= (ghi - glo) * 8:
        for q in range(lo, hi):
            if group[term_sites[q]] == g:
                return q
        return -1
    for a in range(glo, ghi):
        site = group_sites[a]
        q = lo + np.searchsorted(term_sites[lo:hi], site)
        if q < hi and term_sites[q] == site:
            return q
    return -1


@njit_cached
def _decode_groups(terms, first_group, term_ptr, term_sites, group, group_ptr,
                   group_sites, moved, found, strong):
    """Row 0 of ``terms`` is the base, row r >= 1 has group ``first_group + r - 1``
    moved. Attribute every changed term to the one moved site of the group it may
    depend on (``found``; ``strong`` if beyond rounding noise). Returns the flat
    (row, term) index of a significant change no moved site can explain, or -1."""
    m = terms.shape[1]
    for r in range(1, terms.shape[0]):
        g = first_group + r - 1
        for k in range(m):
            b = terms[0, k]
            t = terms[r, k]
            if t == b:
                continue
            q = _position_in_group(k, g, term_ptr, term_sites, group, group_ptr, group_sites)
            if q >= 0 and moved[term_sites[q]]:
                found[q] = True
                if _significant(t, b):
                    strong[q] = True
            elif b == b and _significant(t, b):
                # (a term NaN at the probe "changes" in every row: not an error)
                return r * m + k
    return -1


@njit_cached
def _check_single(terms, sites, term_ptr, term_sites, found, strong):
    """Row 0 of ``terms`` is the base, row r >= 1 has ``sites[r - 1]`` moved alone.
    Compare with the grouped decoding: a significant single-site change the groups did
    not attribute to the site, or a significant grouped change the site alone does not
    make, means the superset is wrong. Returns the flat (row, term) index of the first
    such disagreement, or -1. Terms NaN at the probe are skipped."""
    m = terms.shape[1]
    for r in range(1, terms.shape[0]):
        i = sites[r - 1]
        for k in range(m):
            b = terms[0, k]
            if b != b:
                continue
            t = terms[r, k]
            lo, hi = term_ptr[k], term_ptr[k + 1]
            q = lo + np.searchsorted(term_sites[lo:hi], i)
            listed = q < hi and term_sites[q] == i
            if t != b and _significant(t, b) and not (listed and found[q]):
                return r * m + k
            if listed and strong[q] and t == b:
                return r * m + k
    return -1
