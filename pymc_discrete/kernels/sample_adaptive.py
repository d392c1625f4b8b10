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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy.special import gammaln, logsumexp

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
    points = np.array(points, dtype=np.float64)
    logps = np.array(logps, dtype=np.float64)
    mean = points.mean(axis=0)
    centred = points - mean
    if covariance == "full":
        scatter = centred.T @ centred
        sign, logdet = np.linalg.slogdet(scatter)
        if sign <= 0 or not np.isfinite(logdet):
            raise ValueError(
                f"the {points.shape[0]} points span fewer than {points.shape[1]} dimensions: "
                "use more points or a diagonal covariance"
            )
        precision = np.linalg.inv(scatter)
    else:
        scatter = (centred**2).sum(axis=0)
        if not np.all(scatter > 0):
            raise ValueError("some coordinate is the same in every point")
        precision = 1.0 / scatter
        logdet = float(np.log(scatter).sum())
    return PopulationState(points, logps, mean, scatter, precision, float(logdet), 0)


def _log_density(quad: np.ndarray, logdet_cov: np.ndarray, d: int, proposal: str,
                 dof: float) -> np.ndarray:
    """Log density of a Gaussian or Student-t from its Mahalanobis terms."""
    if proposal == "gaussian":
        return -0.5 * (quad + logdet_cov + d * math.log(2.0 * math.pi))
    return (gammaln(0.5 * (dof + d)) - gammaln(0.5 * dof) - 0.5 * d * math.log(dof * math.pi)
            - 0.5 * logdet_cov - 0.5 * (dof + d) * np.log1p(quad / dof))


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
    n, d = state.points.shape
    a = y - state.mean
    b = state.points - state.mean  # (N, d)
    f = 1.0 + 1.0 / n
    if covariance == "full":
        P = state.precision
        Pa = P @ a
        alpha = float(a @ Pa)
        beta = b @ Pa  # (N,)
        gamma = np.einsum("nd,nd->n", b @ P, b)
        # U = [a, b, a - b], D = diag(1, -1, -1/N): scatter of S_-n = M + U D U^T
        uu = np.empty((n, 3, 3))
        uu[:, 0, 0] = alpha
        uu[:, 0, 1] = uu[:, 1, 0] = beta
        uu[:, 0, 2] = uu[:, 2, 0] = alpha - beta
        uu[:, 1, 1] = gamma
        uu[:, 1, 2] = uu[:, 2, 1] = beta - gamma
        uu[:, 2, 2] = alpha - 2.0 * beta + gamma
        K = uu.copy()
        K[:, 0, 0] += 1.0
        K[:, 1, 1] -= 1.0
        K[:, 2, 2] -= float(n)
        # v = theta_n - mean(S_-n) = (1 + 1/N) b - a / N
        uv = np.empty((n, 3))
        uv[:, 0] = f * beta - alpha / n
        uv[:, 1] = f * gamma - beta / n
        uv[:, 2] = uv[:, 0] - uv[:, 1]
        vv = f * f * gamma - 2.0 * f * beta / n + alpha / n**2
        sign, logdet_k = np.linalg.slogdet(K)
        correction = np.einsum("ni,ni->n", uv, np.linalg.solve(K, uv[..., None])[..., 0])
        quad_scatter = vv - correction  # v^T (M_n)^-1 v
        logdet_scatter = state.logdet - math.log(n) + logdet_k
        logdet_scatter = np.where(sign > 0, logdet_scatter, np.nan)
        quad_y = alpha
    else:
        prec = state.precision
        scatter_n = state.scatter + a * a - b * b - (a - b) ** 2 / n  # (N, d)
        v = f * b - a / n
        quad_scatter = (v * v / scatter_n).sum(axis=1)
        logdet_scatter = np.log(scatter_n).sum(axis=1)
        quad_y = float((a * a * prec).sum())
    # C = M / (N - 1): quad_C = (N - 1) quad_M, logdet C = logdet M - d log(N - 1)
    shift = d * math.log(n - 1)
    log_q = _log_density((n - 1) * quad_scatter, logdet_scatter - shift, d, proposal, dof)
    log_q_y = _log_density(np.array((n - 1) * quad_y), np.array(state.logdet - shift), d,
                           proposal, dof)
    out = np.empty(n + 1)
    out[:n] = log_q - state.logps
    out[n] = float(log_q_y) - logp_y
    out[np.isnan(out)] = -np.inf  # a degenerate leave-one-in covariance: never chosen
    return out


def _substitute(state: PopulationState, j: int, y: np.ndarray, logp_y: float,
                covariance: str, refresh: int) -> PopulationState:
    """Replace point j by y, updating the statistics by rank-one updates."""
    n = state.points.shape[0]
    points = state.points.copy()
    logps = state.logps.copy()
    a = y - state.mean
    b = points[j] - state.mean
    points[j] = y
    logps[j] = logp_y
    if state.updates + 1 >= refresh:
        return init_population(points, logps, covariance)
    mean = state.mean + (a - b) / n
    c = a - b
    if covariance == "full":
        scatter = state.scatter + np.outer(a, a) - np.outer(b, b) - np.outer(c, c) / n
        P, logdet = state.precision, state.logdet
        for u, s in ((a, 1.0), (b, -1.0), (c, -1.0 / n)):  # Sherman-Morrison, in turn
            Pu = P @ u
            denom = 1.0 + s * float(u @ Pu)
            if not denom > 0.0:
                return init_population(points, logps, covariance)
            P = P - np.outer(Pu, Pu) * (s / denom)
            logdet += math.log(denom)
        precision = P
    else:
        scatter = state.scatter + a * a - b * b - c * c / n
        if not np.all(scatter > 0):
            return init_population(points, logps, covariance)
        precision = 1.0 / scatter
        logdet = float(np.log(scatter).sum())
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
    centred = state.points - state.mean
    if covariance == "full":
        y = state.mean + centred.T @ rng.standard_normal(n) / math.sqrt(n - 1)
    else:
        y = state.mean + np.sqrt(state.scatter / (n - 1)) * rng.standard_normal(d)
    if proposal == "student_t":
        y = state.mean + (y - state.mean) * math.sqrt(dof / rng.chisquare(dof))
    logp_y = float(logp(y))
    if not logp_y > -np.inf:  # NaN or -inf: y cannot enter
        rng.random()  # keep the stream's length independent of the outcome
        return state, SAInfo(0.0, False, -1)
    log_w = substitution_log_weights(state, y, logp_y, proposal, covariance, dof)
    log_total = logsumexp(log_w)
    probs = np.exp(log_w - log_total)
    accept = float(1.0 - probs[n])
    j = int(np.searchsorted(np.cumsum(probs), rng.random() * probs.sum(), side="right"))
    j = min(j, n)
    if j == n:
        return state, SAInfo(accept, False, -1)
    return _substitute(state, j, y, logp_y, covariance, refresh), SAInfo(accept, True, j)
