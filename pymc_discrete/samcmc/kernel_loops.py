"""The numba-compiled arithmetic of one Sample Adaptive MCMC iteration.

:func:`~pymc_discrete.samcmc.kernel.samcmc_step` draws the random numbers and calls
``logp`` in Python; the loops here do the rest, on float64 C arrays, ints and bool
flags (``student``: a Student-t proposal, ``full``: a full covariance): the proposal
``mu + B^T z / sqrt(N - 1)`` (``_propose``), the N + 1 leave-one-in log weights
(``_full_log_weights`` with the 3x3 Woodbury correction by cofactors,
``_diagonal_log_weights`` in O(N d)), the choice of the substituted point (``_choose``),
and the rank-one (Sherman-Morrison) updates of the population's statistics when a point
is replaced (``_full_substitute``, ``_diagonal_substitute``).

Pure numpy/numba.
"""

from __future__ import annotations

import math

import numpy as np

from pymc_discrete.kernels.jit import njit_cached


@njit_cached
def _log_density(quad: float, logdet_cov: float, d: int, student: bool, dof: float) -> float:
    """Log density of a Gaussian or Student-t from its Mahalanobis term (NaN possible)."""
    if not student:
        return -0.5 * (quad + logdet_cov + d * math.log(2.0 * math.pi))
    return (math.lgamma(0.5 * (dof + d)) - math.lgamma(0.5 * dof)
            - 0.5 * d * math.log(dof * math.pi)
            - 0.5 * logdet_cov - 0.5 * (dof + d) * math.log1p(quad / dof))


@njit_cached
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


@njit_cached
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
