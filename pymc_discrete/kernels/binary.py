"""One Metropolis-Hastings step of ALBP and ARWM on binary sites.

The kernels take plain callables and an ``np.random.Generator``; they know nothing of
PyMC. A state carries the point, its log density and (for ALBP) its local log-ratios,
so each step evaluates the model once, at the proposal.
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
    "LogpAndRatios",
    "LogpFn",
    "BinaryLBState",
    "BinaryRWState",
    "init_lb_state",
    "albp_step",
    "arwm_step",
]

#: ``x -> (log density, local log-ratios of every single-site flip)``
LogpAndRatios = Callable[[np.ndarray], tuple[float, np.ndarray]]
#: ``x -> log density``
LogpFn = Callable[[np.ndarray], float]


class BinaryLBState(NamedTuple):
    """State of a locally balanced chain on {0, 1}^N.

    Attributes
    ----------
    x : ndarray of int64, shape (N,)
        The point.
    logp : float
        Its log density.
    log_ratios : ndarray of float64, shape (N,)
        Local log-ratios ``d_i ~ logp(x with site i flipped) - logp(x)``, exact or a
        first-order estimate.
    weights : ndarray of float64, shape (N,)
        Locally balanced weights ``g(exp(d_i)) / exp(log_scale)``
        (:func:`~pymc_discrete.kernels.weights.balanced_weights`).
    log_scale : float
        The scale of ``weights``.

    Examples
    --------
    >>> import numpy as np
    >>> def target(x):  # independent sites with log-odds 0.5
    ...     x = np.asarray(x)
    ...     return 0.5 * x.sum(), 0.5 * (1 - 2 * x)
    >>> state = init_lb_state(np.zeros(4, dtype=np.int64), target, 0)
    >>> state.log_ratios.tolist()
    [0.5, 0.5, 0.5, 0.5]
    """

    x: np.ndarray
    logp: float
    log_ratios: np.ndarray
    weights: np.ndarray
    log_scale: float


class BinaryRWState(NamedTuple):
    """State of a random-walk chain on {0, 1}^N: the point and its log density.

    Examples
    --------
    >>> import numpy as np
    >>> BinaryRWState(np.zeros(3, dtype=np.int64), 0.0).logp
    0.0
    """

    x: np.ndarray
    logp: float


def init_lb_state(x: np.ndarray, logp_and_ratios: LogpAndRatios, code: int) -> BinaryLBState:
    """Build the state of a locally balanced chain at ``x``.

    Parameters
    ----------
    x : ndarray of int64, shape (N,)
        A point in {0, 1}^N.
    logp_and_ratios : callable
        ``x -> (logp, local log-ratios)``.
    code : int
        Weight function code (:data:`~pymc_discrete.kernels.weights.WEIGHT_CODES`).

    Returns
    -------
    BinaryLBState

    Examples
    --------
    >>> import numpy as np
    >>> def target(x):
    ...     x = np.asarray(x)
    ...     return 0.5 * x.sum(), 0.5 * (1 - 2 * x)
    >>> init_lb_state(np.array([0, 1]), target, 1).log_ratios.tolist()
    [0.5, -0.5]
    """
    x = np.asarray(x, dtype=np.int64)
    logp, ratios = logp_and_ratios(x)
    ratios = np.asarray(ratios, dtype=np.float64)
    weights, log_scale = balanced_weights(ratios, code)
    return BinaryLBState(x, float(logp), ratios, weights, float(log_scale))


@numba.njit(cache=True)
def _flip(x: np.ndarray, picks: np.ndarray) -> np.ndarray:
    y = x.copy()
    for j in range(picks.size):
        y[picks[j]] = 1 - y[picks[j]]
    return y


@numba.njit(cache=True)
def _albp_forward(x, weights, r, seed):
    """Ordered picks at x, the flipped point and the forward log-probability."""
    np.random.seed(seed)
    picks = sample_ordered_core(weights, r)
    if picks.size == 0:
        return x, picks, 0.0
    return _flip(x, picks), picks, ordered_picks_logprob(weights, picks, False)


@numba.njit(cache=True)
def _albp_reverse(ratios_y, ratios_x, weights_x, log_scale_x, code, picks):
    """Weights at y (reusing x's where a ratio is unchanged) and the log-probability of
    the reverse ordered path."""
    weights_y, log_scale_y = rebalanced_weights(ratios_y, ratios_x, weights_x, log_scale_x, code)
    return weights_y, log_scale_y, ordered_picks_logprob(weights_y, picks, True)


def albp_step(
    state: BinaryLBState,
    scale: float,
    rng: np.random.Generator,
    logp_and_ratios: LogpAndRatios,
    code: int,
) -> tuple[BinaryLBState, StepInfo]:
    """One M-H step of the locally balanced proposal LBP-R on binary sites.

    R (:func:`~pymc_discrete.kernels.common.number_of_changes`: random, with mean
    ``scale``) distinct sites are drawn in order
    with probability proportional to their locally balanced weights among the sites
    not yet drawn, all of them are flipped, and the move is accepted with the
    Metropolis-Hastings ratio of the ordered path and its reverse (eq. 5 of the
    optimal-scaling paper).

    Parameters
    ----------
    state : BinaryLBState
        Current state.
    scale : float
        Real-valued scale R_t >= 1.
    rng : numpy.random.Generator
        Source of randomness (2 uniforms, then about R more for the ordered picks).
    logp_and_ratios : callable
        ``y -> (logp(y), local log-ratios at y)``; called once, at the proposal.
    code : int
        Weight function code.

    Returns
    -------
    new_state : BinaryLBState
    info : StepInfo

    Examples
    --------
    >>> import numpy as np
    >>> def target(x):
    ...     x = np.asarray(x)
    ...     return 0.5 * x.sum(), 0.5 * (1 - 2 * x)
    >>> rng = np.random.default_rng(0)
    >>> state = init_lb_state(np.zeros(10, dtype=np.int64), target, 0)
    >>> state, info = albp_step(state, 3.0, rng, target, 0)
    >>> 0 <= info.n_proposed <= 10, 0.0 <= info.accept_prob <= 1.0
    (True, True)
    """
    n = state.x.size
    r, u_accept, seed = draw_proposal_size(scale, rng, n)
    if r == 0:
        return state, STAY
    y, picks, logq_forward = _albp_forward(state.x, state.weights, r, seed)
    if picks.size == 0:
        return state, StepInfo(0.0, False, r, 0)
    logp_y, ratios_y = logp_and_ratios(y)
    logp_y = float(logp_y)
    ratios_y = np.asarray(ratios_y, dtype=np.float64)
    weights_y, log_scale_y, logq_reverse = _albp_reverse(
        ratios_y, state.log_ratios, state.weights, state.log_scale, code, picks
    )
    accepted, prob = metropolis_hastings(state.logp, logp_y, logq_reverse - logq_forward, u_accept)
    proposed = BinaryLBState(y, logp_y, ratios_y, weights_y, log_scale_y)
    return step_result(state, proposed, accepted, prob, r)


def arwm_step(
    state: BinaryRWState,
    scale: float,
    rng: np.random.Generator,
    logp: LogpFn,
) -> tuple[BinaryRWState, StepInfo]:
    """One M-H step of random-walk Metropolis RWM-R on binary sites.

    R (:func:`~pymc_discrete.kernels.common.number_of_changes`: random, with mean
    ``scale``) sites are drawn uniformly without replacement and flipped; the proposal
    is symmetric.

    Parameters
    ----------
    state : BinaryRWState
        Current state.
    scale : float
        Real-valued scale R_t >= 1.
    rng : numpy.random.Generator
        Source of randomness.
    logp : callable
        ``y -> logp(y)``; called once, at the proposal.

    Returns
    -------
    new_state : BinaryRWState
    info : StepInfo

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> logp = lambda x: 0.5 * float(np.sum(x))
    >>> state = BinaryRWState(np.zeros(10, dtype=np.int64), 0.0)
    >>> state, info = arwm_step(state, 2.0, rng, logp)
    >>> 0 <= info.n_proposed <= 10
    True
    """
    n = state.x.size
    r, u_accept, _ = draw_proposal_size(scale, rng, n)
    if r == 0:
        return state, STAY
    picks = rng.choice(n, size=r, replace=False)
    y = _flip(state.x, picks)
    logp_y = float(logp(y))
    accepted, prob = metropolis_hastings(state.logp, logp_y, 0.0, u_accept)
    return step_result(state, BinaryRWState(y, logp_y), accepted, prob, r)
