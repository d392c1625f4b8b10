"""Sample Adaptive MCMC (Zhu, NeurIPS 2019): a population of N points on R^d, a proposal
fitted to their mean and covariance, and a substitution step that replaces at most one
point per iteration.

One iteration (Algorithm 1 of the paper): draw ``y ~ q(. | mu(S), C(S))`` from the
Gaussian (or Student-t) with the population's mean and covariance; for every n let
``S_-n`` be the population with point n replaced by y (``S_-(N+1) = S``) and ::

    lambda_n = q(theta_n | mu(S_-n), C(S_-n)) / p(theta_n),    n = 1, ..., N + 1

with ``theta_(N+1) = y``; the next population is ``S_-j`` with probability proportional to
``lambda_j``. The chain leaves ``pi^N`` invariant (Proposition 1). Everything is done in
log space.

Cost per iteration, full covariance: the population keeps its mean ``mu``, its scatter
matrix ``M = sum_n (theta_n - mu)(theta_n - mu)^T``, the inverse ``P = M^-1`` and
``log det M``, all updated by rank-one (Sherman-Morrison) updates when a point is
substituted, O(d^2), and refreshed from the points every ``refresh`` substitutions against
round-off. The N leave-one-in densities come from one product ``B P`` (B the centred
points) and a 3x3 Woodbury correction per point: O(N d^2). A proposal is drawn without any
factorisation as ``mu + B^T z / sqrt(N - 1)``, z standard normal in R^N, which has exactly
the covariance ``M / (N - 1)``. Diagonal covariance: O(N d).

The arithmetic of an iteration runs in a few numba-compiled loops
(:mod:`~pymc_discrete.samcmc.kernel_loops`, the 3x3 systems by cofactors); the random
draws stay with the caller's ``numpy.random.Generator`` and ``logp`` is called from
Python.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from pymc_discrete.samcmc.kernel_loops import (
    _choose,
    _diagonal_log_weights,
    _diagonal_substitute,
    _full_log_weights,
    _full_substitute,
    _propose,
)

__all__ = [
    "PopulationState",
    "SAInfo",
    "init_population",
    "substitution_log_weights",
    "samcmc_step",
]

PROPOSALS = ("gaussian", "student_t")
COVARIANCES = ("full", "diagonal")


class PopulationState(NamedTuple):
    """State of a Sample Adaptive MCMC chain.

    Attributes
    ----------
    points : ndarray, shape (N, d)
    logps : ndarray, shape (N,)
        Log densities of the points.
    mean : ndarray, shape (d,)
    scatter : ndarray, shape (d, d) or (d,)
        ``sum_n (theta_n - mean)(theta_n - mean)^T`` (full) or its diagonal.
    precision : ndarray, shape (d, d) or (d,)
        Inverse of ``scatter`` (of its diagonal entries, for a diagonal covariance).
    logdet : float
        ``log det scatter``.
    updates : int
        Substitutions since the statistics were last computed from the points.

    Examples
    --------
    >>> import numpy as np
    >>> pts = np.random.default_rng(0).normal(size=(8, 2))
    >>> state = init_population(pts, -0.5 * (pts**2).sum(1), "full")
    >>> state.mean.shape, state.scatter.shape
    ((2,), (2, 2))
    """

    points: np.ndarray
    logps: np.ndarray
    mean: np.ndarray
    scatter: np.ndarray
    precision: np.ndarray
    logdet: float
    updates: int


class SAInfo(NamedTuple):
    """What one iteration did.

    Attributes
    ----------
    accept_prob : float
        Probability that the proposed point entered the population, ``1 - lambda_(N+1) /
        sum lambda``.
    accepted : bool
    replaced : int
        Index of the substituted point, -1 if the proposal was rejected.

    Examples
    --------
    >>> SAInfo(0.7, True, 3).replaced
    3
    """

    accept_prob: float
    accepted: bool
    replaced: int


def init_population(points: np.ndarray, logps: np.ndarray, covariance: str) -> PopulationState:
    """Population statistics computed from the points.

    Parameters
    ----------
    points : ndarray, shape (N, d)
        N > d + 1 points for a full covariance (N >= 3 for a diagonal one).
    logps : ndarray, shape (N,)
        Their log densities (finite).
    covariance : {"full", "diagonal"}

    Returns
    -------
    PopulationState

    Raises
    ------
    ValueError
        If the points' scatter matrix is singular (too few or degenerate points).

    Examples
    --------
    >>> import numpy as np
    >>> pts = np.array([[0.0], [1.0], [2.0]])
    >>> state = init_population(pts, np.zeros(3), "diagonal")
    >>> state.mean.tolist(), state.scatter.tolist()
    ([1.0], [2.0])
    """
    # C-contiguous float64 throughout: the compiled kernels then have one signature each
    points = np.array(points, dtype=np.float64, order="C")
    logps = np.array(logps, dtype=np.float64, order="C")
    mean = points.mean(axis=0)
    centred = points - mean
    if covariance == "full":
        scatter = np.ascontiguousarray(centred.T @ centred)
        sign, logdet = np.linalg.slogdet(scatter)
        if sign <= 0 or not np.isfinite(logdet):
            raise ValueError(
                f"the {points.shape[0]} points span fewer than {points.shape[1]} dimensions: "
                "use more points or a diagonal covariance"
            )
        precision = np.ascontiguousarray(np.linalg.inv(scatter))
    else:
        scatter = (centred**2).sum(axis=0)
        if not np.all(scatter > 0):
            raise ValueError("some coordinate is the same in every point")
        precision = 1.0 / scatter
        logdet = float(np.log(scatter).sum())
    return PopulationState(points, logps, mean, scatter, precision, float(logdet), 0)


def substitution_log_weights(
    state: PopulationState, y: np.ndarray, logp_y: float, proposal: str = "gaussian",
    covariance: str = "full", dof: float = 5.0,
) -> np.ndarray:
    """``log lambda_n`` for n = 1..N (replace point n by y) and N + 1 (reject y).

    Parameters
    ----------
    state : PopulationState
    y : ndarray, shape (d,)
        The proposed point.
    logp_y : float
        Its log density (-inf or NaN: it can never enter).
    proposal : {"gaussian", "student_t"}
    covariance : {"full", "diagonal"}
    dof : float
        Degrees of freedom of the Student-t.

    Returns
    -------
    ndarray, shape (N + 1,)

    Examples
    --------
    >>> import numpy as np
    >>> pts = np.random.default_rng(1).normal(size=(6, 2))
    >>> state = init_population(pts, -0.5 * (pts**2).sum(1), "full")
    >>> substitution_log_weights(state, np.zeros(2), 0.0).shape
    (7,)
    """
    y = np.ascontiguousarray(y, dtype=np.float64)
    if not float(logp_y) > -np.inf:  # NaN or -inf: only "reject y" has weight
        out = np.full(state.points.shape[0] + 1, -np.inf)
        out[-1] = 0.0
        return out
    return _log_weights(state, y, float(logp_y), proposal == "student_t",
                        covariance == "full", float(dof))


def _log_weights(state: PopulationState, y: np.ndarray, logp_y: float, student: bool,
                 full: bool, dof: float) -> np.ndarray:
    """:func:`substitution_log_weights` with checked arguments and flags."""
    if full:
        return _full_log_weights(state.points, state.logps, state.mean, state.precision,
                                 state.logdet, y, logp_y, student, dof)
    return _diagonal_log_weights(state.points, state.logps, state.mean, state.scatter,
                                 state.precision, state.logdet, y, logp_y, student, dof)


def _substitute(state: PopulationState, j: int, y: np.ndarray, logp_y: float,
                covariance: str, refresh: int) -> PopulationState:
    """Replace point j by y, updating the statistics by rank-one updates."""
    if state.updates + 1 >= refresh:
        points = state.points.copy()
        logps = state.logps.copy()
        points[j] = y
        logps[j] = logp_y
        return init_population(points, logps, covariance)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if covariance == "full":
        points, logps, mean, scatter, precision, logdet, ok = _full_substitute(
            state.points, state.logps, state.mean, state.scatter, state.precision,
            state.logdet, int(j), y, float(logp_y))
    else:
        points, logps, mean, scatter, precision, logdet, ok = _diagonal_substitute(
            state.points, state.logps, state.mean, state.scatter, int(j), y, float(logp_y))
    if not ok:
        return init_population(points, logps, covariance)
    return PopulationState(points, logps, mean, scatter, precision, logdet, state.updates + 1)


def samcmc_step(
    state: PopulationState,
    rng: np.random.Generator,
    logp: Callable[[np.ndarray], float],
    proposal: str = "gaussian",
    covariance: str = "full",
    dof: float = 5.0,
    refresh: int = 500,
) -> tuple[PopulationState, SAInfo]:
    """One iteration of Sample Adaptive MCMC (one evaluation of ``logp``).

    Parameters
    ----------
    state : PopulationState
    rng : numpy.random.Generator
    logp : callable
        ``theta -> log density`` (-inf or NaN: the point is never accepted).
    proposal : {"gaussian", "student_t"}
        Family fitted to the population's mean and covariance.
    covariance : {"full", "diagonal"}
    dof : float
        Degrees of freedom of the Student-t proposal.
    refresh : int
        Recompute the statistics from the points after this many substitutions.

    Returns
    -------
    new_state : PopulationState
    info : SAInfo

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> logp = lambda t: -0.5 * float(t @ t)
    >>> pts = rng.normal(size=(10, 3))
    >>> state = init_population(pts, [logp(p) for p in pts], "full")
    >>> state, info = samcmc_step(state, rng, logp)
    >>> 0.0 <= info.accept_prob <= 1.0
    True
    """
    n, d = state.points.shape
    full = covariance == "full"
    student = proposal == "student_t"
    dof = float(dof)
    # the draws, in this order: z, the chi-square of a Student-t, then one uniform
    if full:
        z = rng.standard_normal(n)
        sd = state.mean  # not read for a full covariance
    else:
        z = rng.standard_normal(d)
        sd = np.sqrt(state.scatter / (n - 1))
    t_scale = math.sqrt(dof / rng.chisquare(dof)) if student else 1.0
    y = _propose(state.points, state.mean, sd, z, full, student, t_scale)
    logp_y = float(logp(y))
    if not logp_y > -np.inf:  # NaN or -inf: y cannot enter
        rng.random()  # keep the stream's length independent of the outcome
        return state, SAInfo(0.0, False, -1)
    log_w = _log_weights(state, y, logp_y, student, full, dof)
    # the largest weight is finite (log_w[n], y having finite density)
    accept, j = _choose(log_w, rng.random())
    if j == n:
        return state, SAInfo(accept, False, -1)
    return _substitute(state, j, y, logp_y, covariance, refresh), SAInfo(accept, True, j)
