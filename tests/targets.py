"""Small binary targets as plain numpy callables ``x -> (logp, local log-ratios)``."""

from __future__ import annotations

import numpy as np


def ising_target(n: int, seed: int):
    """Fields plus random symmetric couplings: logp = h.x + x'Jx/2 (zero diagonal).

    Multilinear in x, so the gradient ratios (1 - 2x) * (h + Jx) are exact.
    """
    rng = np.random.default_rng(seed)
    h = rng.normal(0.0, 1.0, n)
    J = np.triu(rng.normal(0.0, 0.8, (n, n)), 1)
    J = J + J.T

    def target(x):
        x = np.asarray(x, dtype=float)
        return float(h @ x + 0.5 * x @ J @ x), (1.0 - 2.0 * x) * (h + J @ x)

    return target


def gaussian_target(n: int, seed: int, n_obs: int = 6, sigma: float = 0.7):
    """Gaussian likelihood of a linear function of x: the gradient ratios are inexact."""
    rng = np.random.default_rng(seed)
    A = rng.normal(0.0, 1.0, (n_obs, n))
    y = A @ (rng.random(n) < 0.5) + rng.normal(0.0, sigma, n_obs)
    h = rng.normal(0.0, 0.5, n)

    def target(x):
        x = np.asarray(x, dtype=float)
        resid = y - A @ x
        grad = h + A.T @ resid / sigma**2
        return float(h @ x - 0.5 * resid @ resid / sigma**2), (1.0 - 2.0 * x) * grad

    return target


def forbidden_state_target(n: int, seed: int):
    """The Ising target with the all-ones state forbidden: its logp is -inf and its
    ratios NaN, as a model whose density vanishes there returns."""
    base = ising_target(n, seed)

    def target(x):
        if np.all(np.asarray(x) == 1):
            return -np.inf, np.full(n, np.nan)
        return base(x)

    return target


def exact_ratios(target, x):
    """Exact single-flip log-ratios of ``target`` at ``x`` (for reference)."""
    x = np.asarray(x)
    f0 = target(x)[0]
    out = np.empty(x.size)
    for i in range(x.size):
        y = x.copy()
        y[i] = 1 - y[i]
        out[i] = target(y)[0] - f0
    return out


def potts_target(ks, seed: int, exact: bool = True):
    """Categorical sites with fields h[i, c] and pairwise couplings J[i, j] * [x_i == x_j]
    plus a table interaction between sites 0 and 1. Returns ``x -> (logp, (N, K) table)``
    with NaN at the current values and -inf at padded categories; with ``exact=False`` the
    table is the exact one plus a deterministic distortion (an inexact estimate, as a
    gradient would give)."""
    rng = np.random.default_rng(seed)
    n, kmax = len(ks), max(ks)
    h = rng.normal(0.0, 0.8, (n, kmax))
    J = np.triu(rng.normal(0.0, 0.7, (n, n)), 1)
    J = J + J.T
    table01 = rng.normal(0.0, 0.5, (ks[0], ks[1]))

    def logp(x):
        lp = sum(h[i, x[i]] for i in range(n))
        lp += sum(J[i, j] * (x[i] == x[j]) for i in range(n) for j in range(i + 1, n))
        return float(lp + table01[x[0], x[1]])

    def target(x):
        x = np.asarray(x)
        base = logp(x)
        table = np.full((n, kmax), -np.inf)
        for i in range(n):
            for c in range(ks[i]):
                if c == x[i]:
                    table[i, c] = np.nan
                    continue
                y = x.copy()
                y[i] = c
                table[i, c] = logp(y) - base
                if not exact:
                    table[i, c] += 0.3 * np.sin(3.0 * c + i + x.sum())
        return base, table

    return target
