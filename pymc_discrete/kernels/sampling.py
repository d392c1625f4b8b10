"""Ordered sampling of sites without replacement (Plackett-Luce) and its exact log-probability."""

from __future__ import annotations

import numba
import numpy as np

from pymc_discrete.kernels.common import kernel_seed, seed_numba

__all__ = ["sample_ordered", "sample_ordered_core", "ordered_picks_logprob"]


def sample_ordered(weights: np.ndarray, r: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``r`` distinct sites in order, each with probability proportional to its weight
    among the sites not yet drawn (ordered sampling without replacement, Plackett-Luce).

    Each draw inverts the cumulative weights of all sites (a search started from a guide
    table of N / 4 buckets: O(1) expected steps) and is redrawn if it lands on a site
    already drawn: exactly a draw from the remaining sites. When the drawn sites hold
    more than half the weight the cumulative sums are rebuilt over the remaining sites, so
    a draw never needs more than two tries on average. A uniform value falls in each
    bucket with probability 1 / (N / 4) and its search passes at most the sites of its
    bucket, so a lookup takes about 5 steps on average whatever the weights: expected
    cost O(N + r), with r + (retries) uniforms from ``rng``.

    Parameters
    ----------
    weights : ndarray of float64, shape (N,)
        Non-negative weights (any common scale); zero marks sites that may not be drawn.
    r : int
        Number of sites to draw, ``1 <= r <= N``.
    rng : numpy.random.Generator
        Source of the uniforms (numba draws from the same stream as numpy would).

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


#: cumulative sums per bucket of the guide table (see :func:`_build_guide`)
_SITES_PER_BUCKET = 4


#: fewer draws than this search by bisection (no guide table)
_GUIDED_FROM = 96


@numba.njit(cache=True)
def _build_guide(cumulative: np.ndarray, total: float, guide: np.ndarray) -> None:
    """Fill the guide table of an inverse-CDF lookup: ``guide[k]`` is the first index whose
    cumulative sum exceeds ``k * total / m`` (m buckets). A value in bucket k then starts its
    search there instead of bisecting the whole array (Chen and Asau's guide table)."""
    m = guide.size
    if m == 0:
        return
    n = cumulative.size
    step = total / m
    i = 0
    for k in range(m):
        threshold = k * step
        while i < n and cumulative[i] <= threshold:
            i += 1
        guide[k] = i


@numba.njit(cache=True)
def _first_above(cumulative: np.ndarray, guide: np.ndarray, total: float, value: float) -> int:
    """The first index whose cumulative sum exceeds ``value``: ``np.searchsorted(cumulative,
    value, side="right")`` exactly, for any start the guide table gives (the search walks
    back over sums above ``value`` and forward over sums at or below it), in O(1)
    expected steps instead of a bisection's log2(N) dependent loads; an empty ``guide``
    means bisection."""
    n = cumulative.size
    m = guide.size
    if m == 0:  # no guide table: bisection
        return np.searchsorted(cumulative, value, side="right")
    k = int(value / total * m)
    if k >= m:
        k = m - 1
    if k < 0:
        k = 0
    i = guide[k]
    while i > 0 and cumulative[i - 1] > value:  # the bucket's rounding put us too far
        i -= 1
    while i < n and cumulative[i] <= value:
        i += 1
    return i


@numba.njit(cache=True)
def sample_ordered_core(weights: np.ndarray, r: int) -> np.ndarray:
    """:func:`sample_ordered` inside compiled kernels: draws from numba's internal
    generator (seeded by the caller)."""
    n = weights.size
    cumulative = np.empty(n)
    total = 0.0
    n_positive = 0
    for i in range(n):
        total += weights[i]
        cumulative[i] = total
        if weights[i] > 0.0:
            n_positive += 1
    if n_positive < r:
        return np.empty(0, np.int64)
    # the table costs O(N) to build: it pays for itself only over many draws
    guide = np.empty(max(1, n // _SITES_PER_BUCKET) if r >= _GUIDED_FROM else 0, np.int64)
    _build_guide(cumulative, total, guide)
    picks = np.empty(r, np.int64)
    drawn = np.zeros(n, np.bool_)
    drawn_weight = 0.0
    for j in range(r):
        if drawn_weight > 0.5 * total:
            total = 0.0
            for i in range(n):
                if not drawn[i]:
                    total += weights[i]
                cumulative[i] = total
            _build_guide(cumulative, total, guide)
            drawn_weight = 0.0
        while True:
            site = _first_above(cumulative, guide, total, np.random.random() * total)
            if site < n and weights[site] > 0.0 and not drawn[site]:
                break
        drawn[site] = True
        picks[j] = site
        drawn_weight += weights[site]
    return picks


#: a product of probabilities is flushed into its log below this (far from underflow)
_SMALLEST_PRODUCT = 1e-280


@numba.njit(cache=True)
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
    pool = 0.0
    for i in range(n):
        if not drawn[i]:
            pool += weights[i]
    logq = 0.0
    # the probabilities w / pool multiply into ``product``, whose log is taken only before
    # it would underflow: one log per ~600 orders of magnitude instead of two per draw
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
