"""Ordered sampling of sites without replacement (Plackett-Luce) and its exact log-probability."""

from __future__ import annotations

import numpy as np

from pymc_discrete.kernels.common import kernel_seed, seed_numba, sum_unmasked
from pymc_discrete.kernels.jit import njit_cached

__all__ = ["sample_ordered", "sample_ordered_core", "ordered_picks_logprob"]


def sample_ordered(weights: np.ndarray, r: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``r`` distinct sites in order, each with probability proportional to its weight
    among the sites not yet drawn (ordered sampling without replacement, Plackett-Luce).

    Each draw inverts the cumulative weights of all sites and is redrawn if it lands on a
    site already drawn: exactly a draw from the remaining sites. When the drawn sites hold
    more than half the weight the cumulative sums are rebuilt over the remaining sites, so
    a draw never needs more than two tries on average. The uniforms are drawn
    :data:`_BATCH` at a time and their bisections run side by side (independent chains of
    loads that the processor overlaps, instead of one chain of log2(N) dependent loads per
    draw); they are used in order, so the picks are those of one draw at a time. Expected
    cost O(N + r log N); up to ``_BATCH - 1`` more uniforms are drawn than used.

    Parameters
    ----------
    weights : ndarray of float64, shape (N,)
        Non-negative weights (any common scale); zero marks sites that may not be drawn.
    r : int
        Number of sites to draw, ``1 <= r <= N``.
    rng : numpy.random.Generator
        Source of the seed of numba's generator, which draws the uniforms (see
        :mod:`pymc_discrete.kernels`, "Randomness").

    Returns
    -------
    ndarray of int64, shape (r,) or (0,)
        The sites in the order they were drawn; empty when fewer than ``r`` sites have
        positive weight (no such ordered draw exists).

    Examples
    --------
    >>> import numpy as np
    >>> picks = sample_ordered(np.array([1.0, 0.0, 2.0, 3.0]), 3, np.random.default_rng(0))
    >>> sorted(picks.tolist())  # site 1 has weight zero
    [0, 2, 3]
    """
    seed_numba(kernel_seed(rng))
    return sample_ordered_core(weights, r)


#: uniforms drawn, and searched for, together
_BATCH = 8


@njit_cached
def _locate(cumulative: np.ndarray, uniforms: np.ndarray, total: float, start: int,
            sites: np.ndarray) -> None:
    """``sites[k] = np.searchsorted(cumulative, uniforms[k] * total, side="right")`` for
    ``k >= start``, exactly: branch-free bisections of equal depth, one per uniform, run
    in lockstep so that their loads overlap."""
    n = cumulative.size
    m = uniforms.size
    # sites[k] is the base of search k: the first index whose sum exceeds the value lies
    # in [base, base + length] (no scratch arrays: this runs ~r / 8 times per draw)
    for k in range(start, m):
        sites[k] = 0
    length = n
    while length > 1:
        half = length >> 1
        for k in range(start, m):
            b = sites[k]
            sites[k] = b + half * (cumulative[b + half - 1] <= uniforms[k] * total)
        length -= half
    for k in range(start, m):
        sites[k] += cumulative[sites[k]] <= uniforms[k] * total


@njit_cached
def sample_ordered_core(weights: np.ndarray, r: int) -> np.ndarray:
    """:func:`sample_ordered` inside compiled kernels: draws from numba's internal
    generator, which the calling compiled function has seeded from its ``seed`` argument."""
    n = weights.size
    cumulative = np.empty(n)
    total = 0.0
    n_positive = 0
    for i in range(n):
        w = weights[i]
        total += w
        cumulative[i] = total
        n_positive += w > 0.0
    if n_positive < r:
        return np.empty(0, np.int64)
    picks = np.empty(r, np.int64)
    drawn = np.zeros(n, np.bool_)
    drawn_weight = 0.0
    uniforms = np.empty(_BATCH)
    sites = np.empty(_BATCH, np.int64)
    used = _BATCH  # uniforms of the current batch already used
    j = 0
    while j < r:
        if drawn_weight > 0.5 * total:
            total = 0.0
            for i in range(n):
                if not drawn[i]:
                    total += weights[i]
                cumulative[i] = total
            drawn_weight = 0.0
            if used < _BATCH:  # the batch's unused uniforms map through the new sums
                _locate(cumulative, uniforms, total, used, sites)
        if used == _BATCH:
            for k in range(_BATCH):
                uniforms[k] = np.random.random()
            _locate(cumulative, uniforms, total, 0, sites)
            used = 0
        site = sites[used]
        used += 1
        if site < n and weights[site] > 0.0 and not drawn[site]:
            drawn[site] = True
            picks[j] = site
            drawn_weight += weights[site]
            j += 1
    return picks


#: a product of probabilities is flushed into its log below this (far from underflow)
_SMALLEST_PRODUCT = 1e-280


@njit_cached
def ordered_picks_logprob(weights: np.ndarray, picks: np.ndarray, reverse: bool) -> float:
    """Exact log-probability of drawing ``picks`` in order without replacement.

    The r-th draw has probability ``w[u_r] / (S - sum_{k<r} w[u_k])``. The denominators are
    accumulated as (weight of the sites never drawn) plus the weights of the drawn sites
    still in the pool: a sum of non-negative terms, with no cancellation.

    Parameters
    ----------
    weights : ndarray of float64, shape (N,)
        Non-negative weights of every site (any common scale).
    picks : ndarray of int64, shape (R,)
        Distinct sites.
    reverse : bool
        If True, score the draw order ``picks[::-1]`` (the reverse path).

    Returns
    -------
    float
        The log-probability, ``-inf`` if any drawn site has zero weight.

    Examples
    --------
    >>> import numpy as np
    >>> w = np.array([1.0, 1.0, 2.0])
    >>> float(np.exp(ordered_picks_logprob(w, np.array([2, 0]), False)))  # 2/4 * 1/2
    0.25
    """
    n = weights.size
    r = picks.size
    drawn = np.zeros(n, np.bool_)
    for j in range(r):
        drawn[picks[j]] = True
    pool = sum_unmasked(weights, drawn)
    logq = 0.0
    # the probabilities w / pool multiply into ``product``, whose log is taken only before
    # it would underflow: one log per 280 orders of magnitude instead of two per draw
    product = 1.0
    # walk the draw order backwards: the pool at draw j holds the never-drawn sites plus
    # the draws j, j+1, ..., r-1 of that order
    for j in range(r - 1, -1, -1):
        w = weights[picks[r - 1 - j]] if reverse else weights[picks[j]]
        if not w > 0.0:
            return -np.inf
        pool += w
        candidate = product * (w / pool)
        if candidate > _SMALLEST_PRODUCT:
            product = candidate
        else:  # flush (and take this draw's log exactly, however small w / pool is)
            logq += np.log(product) + (np.log(w) - np.log(pool))
            product = 1.0
    return logq + np.log(product)
