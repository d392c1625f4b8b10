"""ALBP: one Metropolis-Hastings step of the adaptive locally balanced proposal, on binary
or categorical sites.

A state carries the point, its log density, its local log-ratios and their locally
balanced weights, so each step evaluates the model once, at the proposal. The ratios
follow the contract of :mod:`pymc_discrete.kernels.ratios`: a vector of single-flip
log-ratios for binary sites (the fast path), an (N, K) table ``d(i, c)`` for categorical
sites. A step draws R (:func:`~pymc_discrete.kernels.common.number_of_changes`: random,
with mean the scale) distinct sites in order with probability proportional to their
weights among the sites not yet drawn, moves each (a binary site flips; a categorical site
takes a new value c with probability ``g(exp(d(i, c))) / W_i``, ``W_i = sum_c
g(exp(d(i, c)))``), and accepts with the Metropolis-Hastings ratio of the ordered path and
its reverse (eq. 5 of the optimal-scaling paper). The several-steps compiled loop is
:mod:`pymc_discrete.kernels.albp_loop`.

The kernels take plain callables and an ``np.random.Generator`` (how randomness enters
the compiled parts: :mod:`pymc_discrete.kernels`, "Randomness"); they know nothing of PyMC.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from pymc_discrete.kernels.common import (
    STAY,
    StepInfo,
    draw_proposal_size,
    metropolis_hastings,
    step_result,
)
from pymc_discrete.kernels.jit import njit_cached
from pymc_discrete.kernels.sampling import ordered_picks_logprob, sample_ordered_core
from pymc_discrete.kernels.weights import balanced_weights, rebalanced_weights

__all__ = [
    "BinaryLBState",
    "CategoricalLBState",
    "LBState",
    "LogpAndRatios",
    "albp_step",
    "binary_albp_step",
    "categorical_albp_step",
    "init_lb_state",
]

#: ``x -> (log density, local log-ratios)``: a vector (binary) or an (N, K) table
LogpAndRatios = Callable[[np.ndarray], tuple[float, np.ndarray]]


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
    >>> state = init_lb_state(np.array([0, 1]), lambda x: (0.0, table), 1)
    >>> state.site_weights.shape
    (2,)
    """

    x: np.ndarray
    logp: float
    log_ratios: np.ndarray
    weights: np.ndarray
    site_weights: np.ndarray
    log_scale: float


#: Either state; the type of the state selects the binary fast path.
LBState = BinaryLBState | CategoricalLBState


def init_lb_state(x: np.ndarray, logp_and_ratios: LogpAndRatios, code: int) -> LBState:
    """Build the state of a locally balanced chain at ``x``.

    Parameters
    ----------
    x : ndarray of int64, shape (N,)
        A point: a binary site takes 0 or 1, categorical site i a value in
        ``0 .. K_i - 1``.
    logp_and_ratios : callable
        ``x -> (logp, local log-ratios)``: a vector of N single-flip log-ratios (binary
        sites) or an (N, K) table with NaN at the current values and -inf at values a
        site does not have (categorical sites).
    code : int
        Weight function code (:data:`~pymc_discrete.kernels.weights.WEIGHT_CODES`).

    Returns
    -------
    BinaryLBState or CategoricalLBState
        Binary for a vector of ratios, categorical for a table.

    Examples
    --------
    >>> import numpy as np
    >>> def target(x):
    ...     x = np.asarray(x)
    ...     return 0.5 * x.sum(), 0.5 * (1 - 2 * x)
    >>> init_lb_state(np.array([0, 1]), target, 1).log_ratios.tolist()
    [0.5, -0.5]
    >>> table = np.array([[np.nan, 0.0], [0.0, np.nan]])
    >>> state = init_lb_state(np.array([0, 1]), lambda x: (0.0, table), 0)
    >>> float(state.weights[0, 0]), bool(state.weights[0, 1] > 0)
    (0.0, True)
    """
    x = np.asarray(x, dtype=np.int64)
    logp, ratios = logp_and_ratios(x)
    ratios = np.asarray(ratios, dtype=np.float64)
    if ratios.ndim == 1:
        weights, log_scale = balanced_weights(ratios, code)
        return BinaryLBState(x, float(logp), ratios, weights, float(log_scale))
    weights, site_weights, log_scale = _table_weights(ratios, code)
    return CategoricalLBState(x, float(logp), ratios, weights, site_weights, float(log_scale))


@njit_cached
def _table_weights(log_ratios, code):
    weights, log_scale = balanced_weights(log_ratios, code)
    return weights, weights.sum(axis=1), log_scale


@njit_cached
def _flip(x: np.ndarray, picks: np.ndarray) -> np.ndarray:
    y = x.copy()
    for j in range(picks.size):
        y[picks[j]] = 1 - y[picks[j]]
    return y


@njit_cached
def _binary_forward(x, weights, r, seed):
    """Ordered picks at x, the flipped point and the forward log-probability."""
    np.random.seed(seed)
    picks = sample_ordered_core(weights, r)
    if picks.size == 0:
        return x, picks, 0.0
    return _flip(x, picks), picks, ordered_picks_logprob(weights, picks, False)


@njit_cached
def _binary_reverse(ratios_y, ratios_x, weights_x, log_scale_x, code, picks):
    """Weights at y (reusing x's where a ratio is unchanged) and the log-probability of
    the reverse ordered path."""
    weights_y, log_scale_y = rebalanced_weights(ratios_y, ratios_x, weights_x, log_scale_x, code)
    return weights_y, log_scale_y, ordered_picks_logprob(weights_y, picks, True)


@njit_cached
def _categorical_forward(x, weights, site_weights, r, seed):
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


@njit_cached
def _categorical_reverse(x, table_y, table_x, weights_x, log_scale_x, code, picks):
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


def albp_step(
    state: LBState,
    scale: float,
    rng: np.random.Generator,
    logp_and_ratios: LogpAndRatios,
    code: int,
) -> tuple[LBState, StepInfo]:
    """One M-H step of the locally balanced proposal LBP-R (module docstring).

    Parameters
    ----------
    state : BinaryLBState or CategoricalLBState
        Current state (its type selects binary or categorical moves).
    scale : float
        Real-valued scale R_t >= 1.
    rng : numpy.random.Generator
        Source of randomness (3 uniforms: the number of changes, the acceptance, the
        seed of the compiled picks).
    logp_and_ratios : callable
        ``y -> (logp(y), local log-ratios at y)`` in the state's layout; called once, at
        the proposal.
    code : int
        Weight function code.

    Returns
    -------
    new_state : BinaryLBState or CategoricalLBState
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

    Three categorical sites with three values each and a flat target:

    >>> def flat(x):
    ...     table = np.zeros((3, 3))
    ...     table[np.arange(3), x] = np.nan
    ...     return 0.0, table
    >>> rng = np.random.default_rng(1)
    >>> state = init_lb_state(np.zeros(3, dtype=np.int64), flat, 1)
    >>> new_state, info = albp_step(state, 2.0, rng, flat, 1)
    >>> info.accepted, int(np.count_nonzero(new_state.x != state.x))
    (True, 2)
    """
    return _albp_step(state, scale, rng, logp_and_ratios, code,
                      isinstance(state, BinaryLBState))


def binary_albp_step(state: BinaryLBState, scale: float, rng: np.random.Generator,
                     logp_and_ratios: LogpAndRatios, code: int) -> tuple[BinaryLBState, StepInfo]:
    """:func:`albp_step` on binary sites (for a caller that knows the block is binary)."""
    return _albp_step(state, scale, rng, logp_and_ratios, code, True)


def categorical_albp_step(state: CategoricalLBState, scale: float, rng: np.random.Generator,
                          logp_and_ratios: LogpAndRatios,
                          code: int) -> tuple[CategoricalLBState, StepInfo]:
    """:func:`albp_step` on categorical sites (for a caller that knows the block is
    categorical)."""
    return _albp_step(state, scale, rng, logp_and_ratios, code, False)


def _albp_step(state, scale, rng, logp_and_ratios, code, binary: bool):
    n = state.x.size
    r, u_accept, seed = draw_proposal_size(scale, rng, n)
    if r == 0:
        return state, STAY
    if binary:
        y, picks, logq_forward = _binary_forward(state.x, state.weights, r, seed)
    else:
        y, picks, logq_forward = _categorical_forward(
            state.x, state.weights, state.site_weights, r, seed
        )
    if picks.size == 0:
        return state, StepInfo(0.0, False, r)
    logp_y, ratios_y = logp_and_ratios(y)
    logp_y = float(logp_y)
    ratios_y = np.asarray(ratios_y, dtype=np.float64)
    if binary:
        weights_y, log_scale_y, logq_reverse = _binary_reverse(
            ratios_y, state.log_ratios, state.weights, state.log_scale, code, picks
        )
        proposed = BinaryLBState(y, logp_y, ratios_y, weights_y, log_scale_y)
    else:
        weights_y, site_weights_y, log_scale_y, logq_reverse = _categorical_reverse(
            state.x, ratios_y, state.log_ratios, state.weights, state.log_scale, code, picks
        )
        proposed = CategoricalLBState(y, logp_y, ratios_y, weights_y, site_weights_y,
                                      log_scale_y)
    accepted, prob = metropolis_hastings(state.logp, logp_y, logq_reverse - logq_forward, u_accept)
    return step_result(state, proposed, accepted, prob, r)
