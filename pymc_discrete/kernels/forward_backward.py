"""The forward and backward passes over a chain's tables, compiled.

A chain of T categorical sites with log density

    l(z) = sum_p phi_p(z_p) + sum_p psi_p(z_p, z_{p+1})

(the unary table ``phi`` of shape (T, K), the pair table ``psi`` of shape (T - 1, K, K))
is summed out and drawn in O(T K^2): the forward pass computes ``alpha_p(b) = phi_p(b) +
logsumexp_a(alpha_{p-1}(a) + psi_{p-1}(a, b))`` (in log space, stable for chains of any
length), and ``logsumexp(alpha_{T-1})`` is the block summed out (:func:`forward_filter`,
the forward algorithm). The backward pass draws the last site from
``softmax(alpha_{T-1})`` and each earlier one from ``softmax(alpha_p(a) + psi_p(a,
z_{p+1}))`` (``_backward``), or computes the marginals of every site and of every pair
of neighbours (``_marginals``). :mod:`pymc_discrete.kernels.chain` builds the tables and
draws with these passes.

Pure numpy/numba.
"""

from __future__ import annotations

import numpy as np

from pymc_discrete.kernels.jit import njit_cached

__all__ = ["forward_filter"]


@njit_cached
def _forward(unary: np.ndarray, pair: np.ndarray) -> np.ndarray:
    n, k = unary.shape
    alpha = np.empty((n, k))
    alpha[0] = unary[0]
    scratch = np.empty(k)
    for p in range(1, n):
        for b in range(k):
            top = -np.inf
            for a in range(k):
                scratch[a] = alpha[p - 1, a] + pair[p - 1, a, b]
                if scratch[a] > top:
                    top = scratch[a]
            if top == -np.inf:
                alpha[p, b] = -np.inf
                continue
            total = 0.0
            for a in range(k):
                total += np.exp(scratch[a] - top)
            alpha[p, b] = unary[p, b] + top + np.log(total)
    return alpha


@njit_cached
def _draw_categorical(logits: np.ndarray, u: float) -> int:
    k = logits.size
    top = -np.inf
    for a in range(k):
        if logits[a] > top:
            top = logits[a]
    total = 0.0
    for a in range(k):
        total += np.exp(logits[a] - top)
    target = u * total
    cumulative = 0.0
    last = 0
    for a in range(k):
        w = np.exp(logits[a] - top)
        if w > 0.0:
            last = a
            cumulative += w
            if target < cumulative:
                return a
    return last


@njit_cached
def _backward(alpha: np.ndarray, pair: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    n, k = alpha.shape
    z = np.empty(n, dtype=np.int64)
    z[n - 1] = _draw_categorical(alpha[n - 1], uniforms[n - 1])
    logits = np.empty(k)
    for p in range(n - 2, -1, -1):
        for a in range(k):
            logits[a] = alpha[p, a] + pair[p, a, z[p + 1]]
        z[p] = _draw_categorical(logits, uniforms[p])
    return z


@njit_cached
def _logsumexp(values: np.ndarray) -> float:
    top = -np.inf
    for v in values:
        if v > top:
            top = v
    if top == -np.inf:
        return -np.inf
    total = 0.0
    for v in values:
        total += np.exp(v - top)
    return top + np.log(total)


@njit_cached
def _marginals(unary: np.ndarray, pair: np.ndarray) -> tuple:
    n, k = unary.shape
    alpha = _forward(unary, pair)
    log_z = _logsumexp(alpha[n - 1])
    gamma = np.zeros((n, k))
    xi = np.zeros((max(n - 1, 0), k, k))
    if not np.isfinite(log_z):  # no state of positive probability: no derivative
        return log_z, gamma, xi
    # beta_p(a) = logsumexp_b (psi_p(a, b) + phi_{p+1}(b) + beta_{p+1}(b)), beta_{T-1} = 0
    beta = np.zeros((n, k))
    ahead = np.empty(k)
    scratch = np.empty(k)
    for p in range(n - 2, -1, -1):
        for b in range(k):
            ahead[b] = unary[p + 1, b] + beta[p + 1, b]
        for a in range(k):
            for b in range(k):
                scratch[b] = pair[p, a, b] + ahead[b]
            beta[p, a] = _logsumexp(scratch)
        for a in range(k):
            if alpha[p, a] == -np.inf:
                continue
            for b in range(k):
                xi[p, a, b] = np.exp(alpha[p, a] + pair[p, a, b] + ahead[b] - log_z)
    for p in range(n):
        for a in range(k):
            if alpha[p, a] > -np.inf and beta[p, a] > -np.inf:
                gamma[p, a] = np.exp(alpha[p, a] + beta[p, a] - log_z)
    return log_z, gamma, xi


def forward_filter(unary: np.ndarray, pair: np.ndarray) -> tuple[np.ndarray, float]:
    """The forward pass: ``alpha`` (T, K) and the log of the block summed out.

    Parameters
    ----------
    unary : ndarray, shape (T, K)
    pair : ndarray, shape (T - 1, K, K)

    Returns
    -------
    alpha : ndarray, shape (T, K)
    log_normaliser : float
        ``logsumexp(alpha[-1])``: log of the sum of ``exp(l(z))`` over every state.

    Examples
    --------
    >>> unary = np.log([[0.5, 0.5], [0.2, 0.8]])
    >>> pair = np.log([[[0.9, 0.1], [0.1, 0.9]]])
    >>> _, log_z = forward_filter(unary, pair)
    >>> round(float(np.exp(log_z)), 4)  # sum over the 4 states
    0.5
    """
    alpha = _forward(np.ascontiguousarray(unary, dtype=np.float64),
                     np.ascontiguousarray(pair, dtype=np.float64).reshape(
                         max(unary.shape[0] - 1, 0), unary.shape[1], unary.shape[1]))
    return alpha, float(_logsumexp(alpha[-1]))
