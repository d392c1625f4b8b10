"""Exact single-site log-ratios from elementwise log-density terms, by graph colouring.

Write the log density as a sum of M elementwise terms, ``f(x) = sum_k T_k(x)``, and let
``D_i`` be the terms that depend on site i. Two sites that share no term can be flipped
together: each changed term then belongs to exactly one flipped site, so one evaluation
of T at ``x`` with a whole colour class flipped gives the exact change of f for every site
of the class: ``d_i = sum_{k in D_i} T_k(x with class of i flipped) - T_k(x)``. With a
proper colouring of the "share a term" graph, all N exact log-ratios cost (colours + 1)
evaluations of T: O(N) for models with sparse interactions (a lattice needs 2 to 5
colours), and N + 1 evaluations (brute force) when one term depends on every site.

Finding the ``D_i`` (:func:`discover_structure_csr`) is a one-off set-up cost. Moving
every site on its own at each probe point (brute force) costs N evaluations of all M
terms per probe: O(N M), quadratic on a sparse model. When the caller knows a
*superset* of every term's sites (:class:`DependencySuperset`, e.g. read off the model's
symbolic graph), the same answer costs (groups + 1) evaluations per probe: colour the
sites so that no term may depend on two sites of one group, move a whole group at once,
and attribute every changed term to the one site of the group it may depend on. That is
exact, not a heuristic: a term that may depend on only one site of the moved group
changes exactly as if that site had moved alone. Random single-site moves then check
the decoding, and anything the superset cannot explain raises
:class:`StructureMismatch` (the caller falls back to brute force).

Colouring lives in :mod:`~pymc_discrete.kernels.colouring`, the compiled decoding of a
grouped probe in :mod:`~pymc_discrete.kernels.grouped_probes`.

Pure numpy/numba; the caller supplies the batched evaluator of T.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from pymc_discrete.kernels.colouring import greedy_colouring_csr, transpose_csr
from pymc_discrete.kernels.grouped_probes import _check_single, _decode_groups

__all__ = [
    "DependencySuperset",
    "StructureMismatch",
    "TermStructure",
    "build_structure_csr",
    "discover_structure_csr",
]

#: ``states (B, N) int64 -> terms (B, M) float64``
BatchTerms = Callable[[np.ndarray], np.ndarray]
#: Called with a short description of what the discovery is doing (for progress logs).
Progress = Callable[[str], None]

#: Default number of single-site moves that check a grouped discovery, over all probes.
N_CHECKS = 48


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


class DependencySuperset(NamedTuple):
    """Every site each term *may* depend on: a sound over-approximation.

    A site not listed for a term must not affect it, at any state; listing a site that
    does not affect the term only costs speed. :func:`discover_structure_csr` relies on
    this to move many sites at once.

    Attributes
    ----------
    term_ptr, term_sites : ndarray of int64
        CSR lists: the sites term k may depend on are
        ``term_sites[term_ptr[k]:term_ptr[k + 1]]``, sorted.
    """

    term_ptr: np.ndarray
    term_sites: np.ndarray


class StructureMismatch(RuntimeError):
    """A grouped discovery saw a change that its :class:`DependencySuperset` cannot
    explain: the superset is wrong, and the grouped result must not be used."""


def _changed(base: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Terms that differ. NaN on either side counts as a change (NaN != NaN), which is
    conservative; equal infinities (-inf at both) count as unchanged."""
    same = base == other
    return ~same


def build_structure_csr(site_ptr: np.ndarray, site_terms: np.ndarray, n_terms: int
                        ) -> TermStructure:
    """:class:`TermStructure` (with its colouring) from CSR per-site term lists.

    Parameters
    ----------
    site_ptr, site_terms : ndarray of int64
        The terms of site i are ``site_terms[site_ptr[i]:site_ptr[i + 1]]``.
    n_terms : int
        Number of terms M.

    Returns
    -------
    TermStructure
    """
    site_ptr = np.asarray(site_ptr, dtype=np.int64)
    site_terms = np.asarray(site_terms, dtype=np.int64)
    colour, n_colours = greedy_colouring_csr(site_ptr, site_terms, n_terms)
    return TermStructure(site_ptr, site_terms, colour, n_colours)


# ---------------------------------------------------------------------------------------
# Discovery


def _moves(probes: np.ndarray, n_categories: np.ndarray | None, shifts) -> list[tuple]:
    """Every (probe index, shift) pair, with the shifts to use."""
    if n_categories is None:
        shifts = (1,)
    elif shifts is None:  # every other value of every site (see discover_structure_csr)
        shifts = tuple(range(1, max(2, int(np.max(n_categories)))))
    return [(p, int(s)) for p in range(probes.shape[0]) for s in shifts]


def _moved_values(x: np.ndarray, shift: int, n_categories: np.ndarray | None) -> np.ndarray:
    if n_categories is None:
        return 1 - x
    return (x + shift) % n_categories


def discover_structure_csr(
    batch_terms: BatchTerms,
    probes: np.ndarray,
    rows_per_call: int,
    n_categories: np.ndarray | None = None,
    superset: DependencySuperset | None = None,
    shifts: Sequence[int] | None = None,
    n_checks: int = N_CHECKS,
    seed: int = 0,
    progress: Progress | None = None,
    report: dict | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Find the terms each site's move changes, at every probe point (CSR result).

    The result is the brute-force one: term k is listed for site i iff moving site i
    alone changes term k (``!=``, so NaN counts as a change) at some probe point and
    shift. With ``superset`` it is computed in (groups + 1) evaluations per probe and
    shift instead of N + 1 (see the module docstring); terms that are NaN at a probe are
    then listed only for the sites the superset allows, not for every site.

    Parameters
    ----------
    batch_terms : callable
        Batched evaluator of the term vector.
    probes : ndarray of int64, shape (P, N)
        Points to probe; a dependency seen at any of them is kept (an interaction
        ``x_i x_j`` only shows when ``x_j = 1``, so probe at several points, e.g. all
        zeros, all ones and random points).
    rows_per_call : int
        Batch size of ``batch_terms`` calls (bounds memory).
    n_categories : ndarray of int64, optional
        Number of values of every site (default: binary, a site is probed by flipping
        it). A categorical site is probed by moving it to ``(x_i + s) mod K_i`` for
        every shift s.
    superset : DependencySuperset, optional
        Sites every term may depend on; None probes every site on its own.
    shifts : sequence of int, optional
        Shifts of a categorical site (default: 1 .. max(K) - 1, every other value, so
        that a term that changes only between some values is not missed). Ignored for
        binary sites.
    n_checks : int
        Single-site moves (over all probes and shifts) that check a grouped discovery.
    seed : int
        Seed of the choice of checked sites.
    progress : callable, optional
        Called with a description of the current stage.
    report : dict, optional
        Filled with ``groups`` (sites moved together per row: N groups when probing
        site by site) and ``checks`` (single-site moves that checked them).

    Returns
    -------
    site_ptr, site_terms : ndarray of int64
        The terms of site i, sorted: ``site_terms[site_ptr[i]:site_ptr[i + 1]]``.

    Raises
    ------
    StructureMismatch
        If a grouped discovery saw a change the superset cannot explain.
    """
    probes = np.asarray(probes, dtype=np.int64)
    ks = None if n_categories is None else np.asarray(n_categories, dtype=np.int64)
    moves = _moves(probes, ks, shifts)
    rows_per_call = max(1, int(rows_per_call))
    report = {} if report is None else report
    if superset is None:
        report.update(groups=probes.shape[1], checks=0)
        return _brute_force(batch_terms, probes, rows_per_call, ks, moves, progress)
    return _grouped(batch_terms, probes, rows_per_call, ks, moves, superset, n_checks, seed,
                    progress, report)


def _rows_with_base(x: np.ndarray, count: int) -> np.ndarray:
    """``count + 1`` copies of ``x``: row 0 stays the unmoved base of the batch.

    The base is evaluated in the same batched call as the moved rows, as the sampler
    does (``colour_states``): a batched matrix product may round differently for
    different batch sizes, and a base from a separate call would then "change" in the
    last bit where nothing moved.
    """
    return np.repeat(x[None, :], count + 1, axis=0)


def _brute_force(batch_terms, probes, rows_per_call, ks, moves, progress):
    """Move every site on its own: N evaluations of the M terms per probe and shift."""
    n = probes.shape[1]
    keys: list[np.ndarray] = []
    m = 1
    per_call = max(1, rows_per_call - 1)
    for step, (p, shift) in enumerate(moves):
        x = probes[p]
        target = _moved_values(x, shift, ks)
        sites = np.flatnonzero(target != x)
        for start in range(0, sites.size, per_call):
            if progress is not None:
                progress(f"probing every site on its own: probe {step + 1}/{len(moves)}, "
                         f"site {start}/{sites.size}")
            chunk = sites[start:start + per_call]
            states = _rows_with_base(x, chunk.size)
            states[np.arange(1, chunk.size + 1), chunk] = target[chunk]
            terms = batch_terms(states)
            m = terms.shape[1]
            r, k = np.nonzero(_changed(terms[:1], terms[1:]))
            keys.append(chunk[r] * m + k)
        keys = [np.unique(np.concatenate(keys))] if keys else []
    flat = keys[0] if keys else np.empty(0, np.int64)
    site_ptr = np.zeros(n + 1, dtype=np.int64)
    site_ptr[1:] = np.cumsum(np.bincount(flat // m, minlength=n))
    return site_ptr, (flat % m).astype(np.int64)


def _grouped(batch_terms, probes, rows_per_call, ks, moves, superset, n_checks, seed,
             progress, report):
    """Move groups of sites that share no term of the superset: (groups + 1) evaluations
    per probe and shift, then check single-site moves against the decoding."""
    n = probes.shape[1]
    term_ptr = np.asarray(superset.term_ptr, dtype=np.int64)
    term_sites = np.asarray(superset.term_sites, dtype=np.int64)
    m = term_ptr.size - 1
    if progress is not None:
        progress(f"colouring {n} sites by the {term_sites.size} possible dependencies")
    site_ptr, site_terms = transpose_csr(term_ptr, term_sites, n)
    group, n_groups = greedy_colouring_csr(site_ptr, site_terms, m)
    group_sites = np.argsort(group, kind="stable")
    group_ptr = np.zeros(n_groups + 1, dtype=np.int64)
    group_ptr[1:] = np.cumsum(np.bincount(group, minlength=n_groups))
    report.update(groups=n_groups, checks=0)
    found = np.zeros(term_sites.size, dtype=np.bool_)
    rng = np.random.default_rng(seed)
    per_move = min(n, math.ceil(n_checks / len(moves))) if n_checks > 0 else 0
    per_call = max(1, rows_per_call - 1)
    for step, (p, shift) in enumerate(moves):
        if progress is not None:
            progress(f"probing {n_groups} groups of sites: probe {step + 1}/{len(moves)}")
        x = probes[p]
        target = _moved_values(x, shift, ks)
        moved = target != x
        found_here = np.zeros(term_sites.size, dtype=np.bool_)
        strong_here = np.zeros(term_sites.size, dtype=np.bool_)
        for g0 in range(0, n_groups, per_call):
            g1 = min(n_groups, g0 + per_call)
            states = _rows_with_base(x, g1 - g0)
            for g in range(g0, g1):
                sites = group_sites[group_ptr[g]:group_ptr[g + 1]]
                states[g - g0 + 1, sites] = target[sites]
            terms = batch_terms(states)
            if terms.shape[1] != m:
                raise ValueError(f"the superset lists {m} terms, batch_terms gives "
                                 f"{terms.shape[1]}")
            err = _decode_groups(terms, g0, term_ptr, term_sites, group, group_ptr,
                                 group_sites, moved, found_here, strong_here)
            if err >= 0:
                g, k = g0 + err // m - 1, err % m
                raise StructureMismatch(
                    f"term {k} changed when group {g} moved (probe {p}, shift {shift}), "
                    f"but it may depend on no site of that group: the dependency superset "
                    "is wrong")
        candidates = np.flatnonzero(moved)
        if per_move and candidates.size:
            sites = np.sort(rng.choice(candidates, min(per_move, candidates.size),
                                       replace=False))
            for start in range(0, sites.size, per_call):
                chunk = sites[start:start + per_call]
                states = _rows_with_base(x, chunk.size)
                states[np.arange(1, chunk.size + 1), chunk] = target[chunk]
                err = _check_single(batch_terms(states), chunk, term_ptr, term_sites,
                                    found_here, strong_here)
                report["checks"] += chunk.size
                if err >= 0:
                    raise StructureMismatch(
                        f"moving site {chunk[err // m - 1]} alone (probe {p}, shift {shift}) "
                        f"changes term {err % m} differently from the grouped probe: the "
                        "dependency superset is wrong")
        found |= found_here
    # (term, site) pairs found -> per-site sorted term lists
    terms_of_pair = np.repeat(np.arange(m, dtype=np.int64), np.diff(term_ptr))[found]
    sites_of_pair = term_sites[found]
    order = np.lexsort((terms_of_pair, sites_of_pair))
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    out_ptr[1:] = np.cumsum(np.bincount(sites_of_pair, minlength=n))
    return out_ptr, terms_of_pair[order]
