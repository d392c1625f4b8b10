"""Small binary and categorical targets as numba functions ``(x as float64, *params) -> (logp, ratios)``,
the form of PyTensor's NUMBA-mode functions, for the compiled-loop kernels."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def quadratic(x, h, J):
    """``h.x + x'Jx/2``: multilinear, the gradient ratios are exact."""
    g = h + J @ x
    return np.array(h @ x + 0.5 * x @ J @ x), (1.0 - 2.0 * x) * g


@numba.njit(cache=True)
def gaussian(x, h, A, y, sigma):
    """Gaussian likelihood of ``A x``: first-order ratios only."""
    resid = y - A @ x
    grad = h + A.T @ resid / sigma**2
    return h @ x - 0.5 * (resid @ resid) / sigma**2, (1.0 - 2.0 * x) * grad


@numba.njit(cache=True)
def forbidden(x, h, J):
    """``quadratic`` with the all-ones state forbidden (logp -inf, ratios NaN there) and
    site 0 pinned at 0 (its flip has ratio -inf)."""
    n = x.size
    if x[0] > 0.5 or np.all(x > 0.5):
        return np.array(-np.inf), np.full(n, np.nan)
    logp, ratios = quadratic(x, h, J)
    ratios[0] = -np.inf
    return logp, ratios


@numba.njit(cache=True)
def potts_table(x, h, J):
    """Categorical sites with fields ``h`` (N, K) and couplings ``J`` (N, N) between equal
    values: ``sum_i h[i, x_i] + sum_{i<j} J_ij [x_i = x_j]``. Returns the exact (N, K)
    table of local log-ratios, NaN at the current values; site 0 cannot take value K - 1
    (-inf)."""
    n, k = h.shape
    xi = np.empty(n, np.int64)
    for i in range(n):
        xi[i] = np.int64(x[i] + 0.5)
    logp = 0.0
    for i in range(n):
        logp += h[i, xi[i]]
        for j in range(i + 1, n):
            if xi[i] == xi[j]:
                logp += J[i, j]
    if xi[0] == k - 1:
        return np.array(-np.inf), np.full((n, k), np.nan)
    table = np.empty((n, k))
    for i in range(n):
        for c in range(k):
            if c == xi[i]:
                table[i, c] = np.nan
                continue
            d = h[i, c] - h[i, xi[i]]
            for j in range(n):
                if j != i:
                    d += J[i, j] * ((xi[j] == c) - (xi[j] == xi[i]))
            table[i, c] = d
    table[0, k - 1] = -np.inf
    return np.array(logp), table


def make_categorical_target(n: int, k: int, seed: int):
    """``(potts_table, its parameters, numpy wrapper x -> (logp, table))``."""
    rng = np.random.default_rng(seed)
    J = np.triu(rng.normal(0.0, 0.8, (n, n)), 1)
    extra = (rng.normal(0.0, 1.0, (n, k)), J + J.T)

    def numpy_target(x):
        logp, table = potts_table(np.asarray(x, dtype=np.float64), *extra)
        return float(logp), np.asarray(table, dtype=np.float64)

    return potts_table, extra, numpy_target


def make_target(name: str, n: int, seed: int):
    """``(compiled target, its parameters, numpy wrapper x -> (logp, ratios))``."""
    rng = np.random.default_rng(seed)
    if name == "gaussian":
        A = rng.normal(0.0, 1.0, (6, n))
        y = A @ (rng.random(n) < 0.5) + rng.normal(0.0, 0.7, 6)
        target, extra = gaussian, (rng.normal(0.0, 0.5, n), A, y, 0.7)
    else:
        J = np.triu(rng.normal(0.0, 0.8, (n, n)), 1)
        target = quadratic if name == "quadratic" else forbidden
        extra = (rng.normal(0.0, 1.0, n), J + J.T)

    def numpy_target(x):
        logp, ratios = target(np.asarray(x, dtype=np.float64), *extra)
        return float(logp), np.asarray(ratios, dtype=np.float64)

    return target, extra, numpy_target
