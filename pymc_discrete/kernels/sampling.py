"""Ordered sampling of sites without replacement (Plackett-Luce) and its exact log-probability."""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["race_top_r", "ordered_picks_logprob"]


@numba.njit(cache=True)
def race_top_r(weights: np.ndarray, exponentials: np.ndarray, r: int) -> np.ndarray:
    """Draw ``r`` distinct sites in order, each with probability proportional to its weight
    among the sites not yet drawn.

    Exponential race: site i "arrives" at ``E_i / w_i`` with ``E_i ~ Exp(1)``; the order of
    the first ``r`` arrivals is exactly the ordered draw without replacement (equivalently,
    the top r of ``log w + Gumbel``). O(N) selection plus O(r log r) for the final sort.

    Parameters
    ----------
    weights : ndarray of float64, shape (N,)
        Non-negative weights (any common scale); zero marks sites that may not be drawn.
    exponentials : ndarray of float64, shape (N,)
        Independent standard exponential draws.
    r : int
        Number of sites to draw, ``1 <= r <= N``.

    Returns
    -------
    ndarray of int64, shape (r,) or (0,)
        The sites in the order they were drawn; empty when fewer than ``r`` sites have
        positive weight (no such ordered draw exists).
    """
    n = weights.size
    arrival = np.empty(n)
    n_positive = 0
    for i in range(n):
        if weights[i] > 0.0:
            arrival[i] = exponentials[i] / weights[i]
            n_positive += 1
        else:
            arrival[i] = np.inf
    if n_positive < r:
        return np.empty(0, np.int64)
    threshold = np.partition(arrival, r - 1)[r - 1] if r < n else np.inf
    picks = np.empty(r, np.int64)
    m = 0
    for i in range(n):
        if arrival[i] <= threshold and m < r:
            picks[m] = i
            m += 1
    order = np.argsort(arrival[picks])
    return picks[order]


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
    # walk the draw order backwards: the pool at draw j holds the never-drawn sites plus
    # the draws j, j+1, ..., r-1 of that order
    for j in range(r - 1, -1, -1):
        w = weights[picks[r - 1 - j]] if reverse else weights[picks[j]]
        if not w > 0.0:
            return -np.inf
        pool += w
        logq += np.log(w) - np.log(pool)
    return logq
