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

The arithmetic of an iteration runs in a few numba-compiled loops (the 3x3 systems by
cofactors); the random draws stay with the caller's ``numpy.random.Generator`` and
``logp`` is called from Python.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from pymc_discrete.kernels.jit import njit_cached

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


# ---------------------------------------------------------------------------------------
# compiled kernels: float64 C arrays, ints, bool flags (student: Student-t proposal)


@njit_cached
def _log_density(quad: float, logdet_cov: float, d: int, student: bool, dof: float) -> float:
    """Log density of a Gaussian or Student-t from its Mahalanobis term (NaN possible)."""
    if not student:
        return -0.5 * (quad + logdet_cov + d * math.log(2.0 * math.pi))
    return (math.lgamma(0.5 * (dof + d)) - math.lgamma(0.5 * dof)
            - 0.5 * d * math.log(dof * math.pi)
            - 0.5 * logdet_cov - 0.5 * (dof + d) * math.log1p(quad / dof))


@njit_cached(fastmath={"contract"})
def _full_log_weights(points, logps, mean, precision, logdet, y, logp_y, student, dof):
    """:func:`substitution_log_weights` for a full covariance: ``b^T P b`` point by point
    and the 3x3 Woodbury correction in closed form (cofactors). Plain loops throughout
    (array expressions and BLAS calls multiply numba's compile time); "contract" lets
    LLVM fuse multiply-adds, as BLAS does, which keeps ``b^T P b`` as accurate as the
    BLAS product."""
    n, d = points.shape
    f = 1.0 + 1.0 / n
    shift = d * math.log(n - 1)
    a = np.empty(d)
    for k in range(d):
        a[k] = y[k] - mean[k]
    pa = np.empty(d)  # P a
    for i in range(d):
        acc = 0.0
        for k in range(d):
            acc += precision[i, k] * a[k]
        pa[i] = acc
    alpha = 0.0
    for k in range(d):
        alpha += a[k] * pa[k]
    out = np.empty(n + 1)
    b = np.empty(d)
    bp = np.empty(d)
    for m in range(n):
        for k in range(d):
            b[k] = points[m, k] - mean[k]
            bp[k] = 0.0
        for i in range(d):  # bp = b^T P, one axpy per row of P (vectorised)
            bi = b[i]
            for k in range(d):
                bp[k] += bi * precision[i, k]
        beta = 0.0
        gamma = 0.0
        for k in range(d):
            beta += b[k] * pa[k]
            gamma += bp[k] * b[k]
        # U = [a, b, a - b], D = diag(1, -1, -1/N): the scatter of S_-n is M + U D U^T,
        # K = D^-1 + U^T P U (symmetric) and det(M + U D U^T) = det M det K / N
        k00 = alpha + 1.0
        k01 = beta
        k02 = alpha - beta
        k11 = gamma - 1.0
        k12 = beta - gamma
        k22 = alpha - 2.0 * beta + gamma - n
        # the adjugate of K (symmetric) and its determinant, by cofactors
        c00 = k11 * k22 - k12 * k12
        c01 = k02 * k12 - k01 * k22
        c02 = k01 * k12 - k02 * k11
        c11 = k00 * k22 - k02 * k02
        c12 = k01 * k02 - k00 * k12
        c22 = k00 * k11 - k01 * k01
        det = k00 * c00 + k01 * c01 + k02 * c02
        if not det > 0.0:  # a degenerate leave-one-in covariance: never chosen
            out[m] = -np.inf
            continue
        # v = theta_n - mean(S_-n) = (1 + 1/N) b - a / N; u = U^T P v
        u0 = f * beta - alpha / n
        u1 = f * gamma - beta / n
        u2 = u0 - u1
        vv = f * f * gamma - 2.0 * f * beta / n + alpha / n**2
        correction = (c00 * u0 * u0 + c11 * u1 * u1 + c22 * u2 * u2
                      + 2.0 * (c01 * u0 * u1 + c02 * u0 * u2 + c12 * u1 * u2)) / det
        quad_scatter = vv - correction  # v^T (M_n)^-1 v
        logdet_scatter = logdet - math.log(n) + math.log(det)
        # C = M / (N - 1): quad_C = (N - 1) quad_M, logdet C = logdet M - d log(N - 1)
        value = (_log_density((n - 1) * quad_scatter, logdet_scatter - shift, d, student, dof)
                 - logps[m])
        out[m] = -np.inf if math.isnan(value) else value
    value = _log_density((n - 1) * alpha, logdet - shift, d, student, dof) - logp_y
    out[n] = -np.inf if math.isnan(value) else value
    return out


@njit_cached
def _diagonal_log_weights(points, logps, mean, scatter, precision, logdet, y, logp_y,
                          student, dof):
    """:func:`substitution_log_weights` for a diagonal covariance, O(N d)."""
    n, d = points.shape
    f = 1.0 + 1.0 / n
    shift = d * math.log(n - 1)
    a = np.empty(d)
    for k in range(d):
        a[k] = y[k] - mean[k]
    out = np.empty(n + 1)
    for m in range(n):
        quad_scatter = 0.0
        # log det of S_-n's scatter as logdet + log prod_k (s_k / scatter_k): one log per
        # point rather than one per coordinate, the product folded into a sum of logs
        # whenever it leaves [1e-100, 1e100]
        ratio = 1.0
        log_ratio = 0.0
        degenerate = False
        for k in range(d):
            ak = a[k]
            bk = points[m, k] - mean[k]
            s = scatter[k] + ak * ak - bk * bk - (ak - bk) ** 2 / n
            if not s > 0.0:
                degenerate = True
                break
            v = f * bk - ak / n
            quad_scatter += v * v / s
            ratio *= s * precision[k]
            if not 1e-100 < ratio < 1e100:
                log_ratio += math.log(ratio)
                ratio = 1.0
        if degenerate:  # a coordinate constant over S_-n: never chosen
            out[m] = -np.inf
            continue
        logdet_scatter = logdet + (log_ratio + math.log(ratio))
        value = (_log_density((n - 1) * quad_scatter, logdet_scatter - shift, d, student, dof)
                 - logps[m])
        out[m] = -np.inf if math.isnan(value) else value
    quad_y = 0.0
    for k in range(d):
        quad_y += a[k] * a[k] * precision[k]
    value = _log_density((n - 1) * quad_y, logdet - shift, d, student, dof) - logp_y
    out[n] = -np.inf if math.isnan(value) else value
    return out


@njit_cached(fastmath={"contract"})
def _propose(points, mean, sd, z, full, student, t_scale):
    """``mu + B^T z / sqrt(N - 1)`` (full; z in R^N) or ``mu + sd * z`` (diagonal; z in
    R^d), then for a Student-t ``mu + (y - mu) * t_scale``."""
    n, d = points.shape
    y = np.empty(d)
    if full:
        w = np.zeros(d)
        for m in range(n):
            zm = z[m]
            for k in range(d):
                w[k] += (points[m, k] - mean[k]) * zm
        root = math.sqrt(n - 1)
        for k in range(d):
            y[k] = mean[k] + w[k] / root
    else:
        for k in range(d):
            y[k] = mean[k] + sd[k] * z[k]
    if student:
        for k in range(d):
            y[k] = mean[k] + (y[k] - mean[k]) * t_scale
    return y


@njit_cached
def _choose(log_w, u):
    """Normalise the weights (the largest one finite) and pick j by inverting their
    distribution function at the uniform u: returns ``(1 - p_(N+1), j)``."""
    size = log_w.size
    top = -np.inf
    for i in range(size):
        top = max(top, log_w[i])
    probs = np.empty(size)
    total = 0.0
    for i in range(size):
        probs[i] = math.exp(log_w[i] - top)
        total += probs[i]
    mass = 0.0
    for i in range(size):
        probs[i] /= total
        mass += probs[i]
    target = u * mass
    cumulative = 0.0
    for i in range(size):
        cumulative += probs[i]
        if cumulative > target:
            return 1.0 - probs[size - 1], i
    return 1.0 - probs[size - 1], size - 1


@njit_cached
def _full_substitute(points, logps, mean, scatter, precision, logdet, j, y, logp_y):
    """Replace point j by y; mean, scatter, precision and log det by rank-one updates.
    The last output is False when a Sherman-Morrison denominator is not positive (the
    caller then refits)."""
    n, d = points.shape
    points = points.copy()
    logps = logps.copy()
    # the three rank-one terms a a^T, -b b^T, -c c^T / N
    rank_one = np.empty((3, d))
    new_mean = np.empty(d)
    for k in range(d):
        a = y[k] - mean[k]
        b = points[j, k] - mean[k]
        rank_one[0, k] = a
        rank_one[1, k] = b
        rank_one[2, k] = a - b
        new_mean[k] = mean[k] + (a - b) / n
        points[j, k] = y[k]
    logps[j] = logp_y
    new_scatter = np.empty((d, d))
    for i in range(d):
        for k in range(d):
            new_scatter[i, k] = (scatter[i, k] + rank_one[0, i] * rank_one[0, k]
                                 - rank_one[1, i] * rank_one[1, k]
                                 - rank_one[2, i] * rank_one[2, k] / n)
    p = precision.copy()
    pu = np.empty(d)
    for r in range(3):  # Sherman-Morrison, one term after the other
        s = 1.0 if r == 0 else (-1.0 if r == 1 else -1.0 / n)
        for i in range(d):  # P u
            acc = 0.0
            for k in range(d):
                acc += p[i, k] * rank_one[r, k]
            pu[i] = acc
        upu = 0.0
        for k in range(d):
            upu += rank_one[r, k] * pu[k]
        denom = 1.0 + s * upu
        if not denom > 0.0:
            return points, logps, new_mean, new_scatter, p, logdet, False
        scale = s / denom
        for i in range(d):
            for k in range(d):
                p[i, k] = p[i, k] - pu[i] * pu[k] * scale
        logdet += math.log(denom)
    return points, logps, new_mean, new_scatter, p, logdet, True


@njit_cached
def _diagonal_substitute(points, logps, mean, scatter, j, y, logp_y):
    """Replace point j by y, updating the mean and the per-coordinate scatter. The last
    output is False when a coordinate's scatter is not positive (the caller refits)."""
    n, d = points.shape
    points = points.copy()
    logps = logps.copy()
    new_mean = np.empty(d)
    new_scatter = np.empty(d)
    precision = np.empty(d)
    logdet = 0.0
    ok = True
    for k in range(d):
        a = y[k] - mean[k]
        b = points[j, k] - mean[k]
        c = a - b
        new_mean[k] = mean[k] + c / n
        new_scatter[k] = scatter[k] + a * a - b * b - c * c / n
        points[j, k] = y[k]
        ok = ok and new_scatter[k] > 0.0
        precision[k] = 1.0 / new_scatter[k] if ok else 0.0
        logdet += math.log(new_scatter[k]) if ok else 0.0
    logps[j] = logp_y
    return points, logps, new_mean, new_scatter, precision, logdet, ok


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
