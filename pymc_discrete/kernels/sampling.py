"""Ordered sampling of sites without replacement (Plackett-Luce) and its exact log-probability."""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["gumbel_top_r", "ordered_picks_logprob"]


@numba.njit(cache=True)
def gumbel_top_r(log_w: np.ndarray, u: np.ndarray, r: int) -> np.ndarray:
    """Draw ``r`` distinct sites in order, each with probability proportional to its weight
    among the sites not yet drawn.

    The ordered draw equals the ``r`` largest values of ``log_w + Gumbel`` sorted in
    descending order (the Gumbel top-k trick for Plackett-Luce), which costs O(N) plus
    O(r log r) for the final sort.

    Parameters
    ----------
    log_w : ndarray of float64, shape (N,)
        Log weights; ``-inf`` marks sites that may not be drawn.
    u : ndarray of float64, shape (N,)
        Uniform draws on [0, 1), turned into Gumbel noise.
    r : int
        Number of sites to draw, ``1 <= r <= N``.

    Returns
    -------
    ndarray of int64, shape (r,) or (0,)
        The sites in the order they were drawn; empty when fewer than ``r`` sites
        have positive weight (no such ordered draw exists).
    """
    n = log_w.size
    neg_keys = np.empty(n)
    n_positive = 0
    for i in range(n):
        if log_w[i] == -np.inf or u[i] <= 0.0:
            neg_keys[i] = np.inf
        else:
            neg_keys[i] = -(log_w[i] - np.log(-np.log(u[i])))
            n_positive += 1
    if n_positive < r:
        return np.empty(0, np.int64)
    if r < n:
        threshold = np.partition(neg_keys, r - 1)[r - 1]
    else:
        threshold = np.inf
    picks = np.empty(r, np.int64)
    m = 0
    for i in range(n):
        if neg_keys[i] <= threshold and m < r:
            picks[m] = i
            m += 1
    order = np.argsort(neg_keys[picks])
    return picks[order]


@numba.njit(cache=True)
def ordered_picks_logprob(log_w: np.ndarray, picks: np.ndarray, reverse: bool) -> float:
    """Exact log-probability of drawing ``picks`` in order without replacement.

    The r-th draw has probability ``w[u_r] / (S - sum_{k<r} w[u_k])``. The
    denominators are accumulated as (weight of the sites never drawn) plus the
    weights of the drawn sites still in the pool, a sum of positive terms that
    loses no precision, scaled by the largest weight.

    Parameters
    ----------
    log_w : ndarray of float64, shape (N,)
        Log weights of every site.
    picks : ndarray of int64, shape (R,)
        Distinct sites.
    reverse : bool
        If True, score the draw order ``picks[::-1]`` (the reverse path).

    Returns
    -------
    float
        The log-probability, ``-inf`` if any drawn site has zero weight.
    """
    n = log_w.size
    r = picks.size
    top = -np.inf
    for i in range(n):
        if log_w[i] > top:
            top = log_w[i]
    if top == -np.inf:
        return -np.inf
    drawn = np.zeros(n, np.bool_)
    for j in range(r):
        drawn[picks[j]] = True
    pool = 0.0
    for i in range(n):
        if not drawn[i]:
            pool += np.exp(log_w[i] - top)
    logq = 0.0
    # walk the draw order backwards: the pool at draw j holds the never-drawn
    # sites plus the draws j, j+1, ..., r-1 of that order
    for j in range(r - 1, -1, -1):
        site = picks[r - 1 - j] if reverse else picks[j]
        lw = log_w[site]
        if lw == -np.inf:
            return -np.inf
        pool += np.exp(lw - top)
        logq += lw - top - np.log(pool)
    return logq
