"""One Metropolis-Hastings step of ALBP and ARWM on categorical sites.

Site i takes values ``0 .. K_i - 1``; the block is padded to ``K = max K_i`` columns. The
local log-ratios form an (N, K) table ``d(i, c) ~ logp(x with x_i = c) - logp(x)``; the
entries of the current values and of padded categories are NaN or -inf (weight zero). ALBP
draws R distinct sites in order with probability proportional to the site weights
``W_i = sum_c g(exp(d(i, c)))``, then a new value for each with probability
``g(exp(d(i, c))) / W_i``; the reverse path visits the same sites in reverse order from y,
returning each to its old value, with the weights at y. Binary sites keep their own,
cheaper kernel (:mod:`pymc_discrete.kernels.binary`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numba
import numpy as np

from pymc_discrete.kernels.common import (
    STAY,
    StepInfo,
    metropolis_hastings,
    draw_proposal_size,
    step_result,
)
from pymc_discrete.kernels.sampling import ordered_picks_logprob, sample_ordered_core
from pymc_discrete.kernels.weights import balanced_weights, rebalanced_weights

__all__ = [
    "CategoricalLBState",
    "CategoricalRWState",
    "init_categorical_lb_state",
    "categorical_albp_step",
    "categorical_arwm_step",
]

#: ``x -> (log density, (N, K) local log-ratios)``
LogpAndTable = Callable[[np.ndarray], tuple[float, np.ndarray]]


class CategoricalLBState(NamedTuple):
    """State of a locally balanced chain on categorical sites.

    Attributes
    ----------
    x : ndarray of int64, shape (N,)
    logp : float
    log_ratios : ndarray of float64, shape (N, K)
    weights : ndarray of float64, shape (N, K)
        Scaled locally balanced weights of every (site, new value).
    site_weights : ndarray of float64, shape (N,)
        Row sums of ``weights``.
    log_scale : float
        The scale of ``weights`` (:func:`~pymc_discrete.kernels.weights.balanced_weights`).

    Examples
    --------
    >>> import numpy as np
    >>> table = np.array([[np.nan, 0.3, -0.2], [1.0, np.nan, -np.inf]])  # site 1 has 2 values
    >>> state = init_categorical_lb_state(np.array([0, 1]), lambda x: (0.0, table), 1)
    >>> state.site_weights.shape
    (2,)
    """

    x: np.ndarray
    logp: float
    log_ratios: np.ndarray
    weights: np.ndarray
    site_weights: np.ndarray
    log_scale: float


class CategoricalRWState(NamedTuple):
    """State of a random-walk chain on categorical sites.

    Examples
    --------
    >>> import numpy as np
    >>> CategoricalRWState(np.array([0, 2]), -1.5).x.tolist()
    [0, 2]
    """

    x: np.ndarray
    logp: float


@numba.njit(cache=True)
def _table_weights(log_ratios, code):
    weights, log_scale = balanced_weights(log_ratios, code)
    return weights, weights.sum(axis=1), log_scale


def init_categorical_lb_state(
    x: np.ndarray, logp_and_table: LogpAndTable, code: int
) -> CategoricalLBState:
    """Build the state of a locally balanced chain at ``x``.

    Parameters
    ----------
    x : ndarray of int64, shape (N,)
        A point: site i takes a value in ``0 .. K_i - 1``.
    logp_and_table : callable
        ``x -> (logp, (N, K) local log-ratios)`` with NaN at the current values and -inf
        at padded categories.
    code : int
        Weight function code.

    Returns
    -------
    CategoricalLBState

    Examples
    --------
    >>> import numpy as np
    >>> table = np.array([[np.nan, 0.0], [0.0, np.nan]])
    >>> state = init_categorical_lb_state(np.array([0, 1]), lambda x: (0.0, table), 0)
    >>> float(state.weights[0, 0]), bool(state.weights[0, 1] > 0)
    (0.0, True)
    """
    x = np.asarray(x, dtype=np.int64)
    logp, table = logp_and_table(x)
    table = np.asarray(table, dtype=np.float64)
    weights, site_weights, log_scale = _table_weights(table, code)
    return CategoricalLBState(x, float(logp), table, weights, site_weights, float(log_scale))


@numba.njit(cache=True)
def _forward(x, weights, site_weights, r, seed):
    np.random.seed(seed)
    picks = sample_ordered_core(site_weights, r)
    y = x.copy()
    if picks.size == 0:
        return y, picks, 0.0
    logq = ordered_picks_logprob(site_weights, picks, False)
    k = weights.shape[1]
    for j in range(picks.size):
        i = picks[j]
        target = np.random.random() * site_weights[i]
        acc = 0.0
        c = -1
        for v in range(k):
            if weights[i, v] > 0.0:
                c = v
                acc += weights[i, v]
                if target < acc:
                    break
        y[i] = c
        logq += np.log(weights[i, c]) - np.log(site_weights[i])
    return y, picks, logq


@numba.njit(cache=True)
def _reverse(x, table_y, table_x, weights_x, log_scale_x, code, picks):
    """Weights at y (reusing x's where a ratio is unchanged) and the log-probability of
    the reverse path."""
    weights_y, log_scale_y = rebalanced_weights(table_y, table_x, weights_x, log_scale_x, code)
    site_weights_y = weights_y.sum(axis=1)
    logq = ordered_picks_logprob(site_weights_y, picks, True)
    for j in range(picks.size):
        i = picks[j]
        w = weights_y[i, x[i]]
        if not w > 0.0:
            return weights_y, site_weights_y, log_scale_y, -np.inf
        logq += np.log(w) - np.log(site_weights_y[i])
    return weights_y, site_weights_y, log_scale_y, logq


def categorical_albp_step(
    state: CategoricalLBState,
    scale: float,
    rng: np.random.Generator,
    logp_and_table: LogpAndTable,
    code: int,
) -> tuple[CategoricalLBState, StepInfo]:
    """One M-H step of the locally balanced proposal on categorical sites.

    Parameters
    ----------
    state : CategoricalLBState
    scale : float
        Real-valued scale R_t >= 1.
    rng : numpy.random.Generator
    logp_and_table : callable
        ``y -> (logp(y), (N, K) local log-ratios at y)``; called once, at the proposal.
    code : int
        Weight function code.

    Returns
    -------
    new_state : CategoricalLBState
    info : StepInfo

    Examples
    --------
    Three sites with three values each and a flat target:

    >>> import numpy as np
    >>> def target(x):
    ...     table = np.zeros((3, 3))
    ...     table[np.arange(3), x] = np.nan
    ...     return 0.0, table
    >>> rng = np.random.default_rng(1)
    >>> state = init_categorical_lb_state(np.zeros(3, dtype=np.int64), target, 1)
    >>> state, info = categorical_albp_step(state, 2.0, rng, target, 1)
    >>> info.accepted, info.jump_distance
    (True, 2)
    """
    n = state.x.size
    r, u_accept, seed = draw_proposal_size(scale, rng, n)
    if r == 0:
        return state, STAY
    y, picks, logq_forward = _forward(state.x, state.weights, state.site_weights, r, seed)
    if picks.size == 0:
        return state, StepInfo(0.0, False, r, 0)
    logp_y, table_y = logp_and_table(y)
    logp_y = float(logp_y)
    table_y = np.asarray(table_y, dtype=np.float64)
    weights_y, site_weights_y, log_scale_y, logq_reverse = _reverse(
        state.x, table_y, state.log_ratios, state.weights, state.log_scale, code, picks
    )
    accepted, prob = metropolis_hastings(state.logp, logp_y, logq_reverse - logq_forward, u_accept)
    proposed = CategoricalLBState(y, logp_y, table_y, weights_y, site_weights_y, log_scale_y)
    return step_result(state, proposed, accepted, prob, r)


def categorical_arwm_step(
    state: CategoricalRWState,
    scale: float,
    rng: np.random.Generator,
    logp: Callable[[np.ndarray], float],
    n_categories: np.ndarray,
) -> tuple[CategoricalRWState, StepInfo]:
    """One M-H step of random-walk Metropolis on categorical sites: R uniformly chosen
    distinct sites, each moved to a uniformly chosen *other* value (symmetric).

    Parameters
    ----------
    state : CategoricalRWState
    scale : float
    rng : numpy.random.Generator
    logp : callable
        ``y -> logp(y)``.
    n_categories : ndarray of int64, shape (N,)
        Number of values of every site (>= 2).

    Returns
    -------
    new_state : CategoricalRWState
    info : StepInfo

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> state = CategoricalRWState(np.zeros(4, dtype=np.int64), 0.0)
    >>> state, info = categorical_arwm_step(state, 1.0, rng, lambda x: 0.0, np.full(4, 3))
    >>> info.accepted, int((state.x != 0).sum())
    (True, 1)
    """
    n = state.x.size
    r, u_accept, _ = draw_proposal_size(scale, rng, n)
    if r == 0:
        return state, STAY
    picks = rng.choice(n, size=r, replace=False)
    y = state.x.copy()
    shift = 1 + (rng.random(r) * (n_categories[picks] - 1)).astype(np.int64)
    y[picks] = (y[picks] + shift) % n_categories[picks]
    logp_y = float(logp(y))
    accepted, prob = metropolis_hastings(state.logp, logp_y, 0.0, u_accept)
    return step_result(state, CategoricalRWState(y, logp_y), accepted, prob, r)
