"""Exact transition matrices of the kernels on small binary state spaces, by enumeration.

This is an independent, deliberately plain implementation of the proposals (linear-space
weights, explicit loops over every ordered pick) that the tests compare the numba kernels
against.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np

Target = Callable[[np.ndarray], tuple[float, np.ndarray]]


def all_states(n: int) -> np.ndarray:
    """Every point of {0, 1}^n as rows, in binary-counting order (site 0 is the high bit)."""
    return np.array(list(itertools.product((0, 1), repeat=n)), dtype=np.int64)


def state_index(x: np.ndarray) -> int:
    """Row of ``x`` in :func:`all_states`."""
    return int("".join(str(int(v)) for v in x), 2)


def balancing(t: float, weight: str) -> float:
    """g(t) in linear space."""
    if weight == "barker":
        return t / (1.0 + t)
    if weight == "sqrt":
        return math.sqrt(t)
    raise ValueError(weight)


def distribution_over(target: Target, states: np.ndarray) -> np.ndarray:
    """Normalised probabilities of the rows of ``states`` (0 where logp is -inf or NaN)."""
    logps = np.array([target(x)[0] for x in states])
    logps = np.where(np.isfinite(logps), logps, -np.inf)
    p = np.exp(logps - logps.max())
    return p / p.sum()


def target_distribution(target: Target, n: int) -> np.ndarray:
    """Normalised probabilities of every binary state."""
    return distribution_over(target, all_states(n))


def _site_weights(target: Target, x: np.ndarray, weight: str) -> np.ndarray:
    _, ratios = target(x)
    return np.array([0.0 if np.isnan(d) else balancing(math.exp(d), weight) for d in ratios])


def _path_probability(w: np.ndarray, order: tuple[int, ...]) -> float:
    """Probability of drawing ``order`` without replacement with weights ``w``."""
    remaining = float(w.sum())
    prob = 1.0
    for site in order:
        if w[site] == 0.0:
            return 0.0
        prob *= w[site] / remaining
        remaining -= w[site]
    return prob


def albp_matrix(target: Target, n: int, r: int, weight: str) -> np.ndarray:
    """Transition matrix of LBP-R (ordered picks without replacement, eq. 5)."""
    states = all_states(n)
    pi = target_distribution(target, n)
    P = np.zeros((2**n, 2**n))
    for a, x in enumerate(states):
        if pi[a] == 0.0:
            P[a, a] = 1.0
            continue
        w_x = _site_weights(target, x, weight)
        for order in itertools.permutations(range(n), r):
            q_forward = _path_probability(w_x, order)
            if q_forward == 0.0:
                continue
            y = x.copy()
            y[list(order)] = 1 - y[list(order)]
            b = state_index(y)
            if pi[b] == 0.0:
                continue
            q_reverse = _path_probability(_site_weights(target, y, weight), order[::-1])
            accept = min(1.0, pi[b] * q_reverse / (pi[a] * q_forward))
            P[a, b] += q_forward * accept
        P[a, a] += 1.0 - P[a].sum()
    return P


def arwm_matrix(target: Target, n: int, r: int) -> np.ndarray:
    """Transition matrix of RWM-R (R uniform distinct sites flipped)."""
    states = all_states(n)
    pi = target_distribution(target, n)
    P = np.zeros((2**n, 2**n))
    q = 1.0 / math.comb(n, r)
    for a, x in enumerate(states):
        if pi[a] == 0.0:
            P[a, a] = 1.0
            continue
        for sites in itertools.combinations(range(n), r):
            y = x.copy()
            y[list(sites)] = 1 - y[list(sites)]
            b = state_index(y)
            P[a, b] += q * min(1.0, pi[b] / pi[a])
        P[a, a] += 1.0 - P[a].sum()
    return P


def assert_reversible(P: np.ndarray, pi: np.ndarray, atol: float = 1e-10) -> None:
    """Rows sum to one, entries are non-negative, detailed balance and stationarity hold."""
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=atol)
    assert (P >= -atol).all()
    flow = pi[:, None] * P
    np.testing.assert_allclose(flow, flow.T, rtol=0, atol=atol)
    np.testing.assert_allclose(pi @ P, pi, rtol=0, atol=atol)


def assert_frequencies_match(counts: np.ndarray, probs: np.ndarray, n_se: float = 5.0) -> None:
    """Every empirical frequency lies within ``n_se`` binomial standard errors of its
    probability; states of probability zero are never reached."""
    n = counts.sum()
    freq = counts / n
    se = np.sqrt(probs * (1.0 - probs) / n)
    bad = np.abs(freq - probs) > n_se * se + 1e-12
    assert not bad.any(), (
        f"states {np.flatnonzero(bad)}: frequency {freq[bad]} vs probability {probs[bad]} "
        f"(standard error {se[bad]})"
    )


# ---- categorical sites -----------------------------------------------------------------
def categorical_states(ks) -> np.ndarray:
    """Every point of prod_i {0..K_i - 1} as rows (site 0 varies slowest)."""
    return np.array(list(itertools.product(*[range(k) for k in ks])), dtype=np.int64)


def categorical_index(x, ks) -> int:
    """Row of ``x`` in :func:`categorical_states`."""
    index = 0
    for v, k in zip(x, ks):
        index = index * k + int(v)
    return index


def categorical_distribution(target, ks) -> np.ndarray:
    """Normalised probabilities of every categorical state."""
    return distribution_over(target, categorical_states(ks))


def _table_weights(target, x, weight):
    _, table = target(x)
    w = np.zeros(table.shape)
    for i in range(table.shape[0]):
        for c in range(table.shape[1]):
            d = table[i, c]
            if np.isfinite(d):
                w[i, c] = balancing(math.exp(d), weight)
    return w


def categorical_albp_matrix(target, ks, r: int, weight: str) -> np.ndarray:
    """Transition matrix of LBP-R on categorical sites: R ordered sites by site weight,
    a new value within each site by weight, exact reverse path."""
    states = categorical_states(ks)
    pi = categorical_distribution(target, ks)
    size = len(states)
    n = len(ks)
    P = np.zeros((size, size))
    for a, x in enumerate(states):
        if pi[a] == 0.0:
            P[a, a] = 1.0
            continue
        w_x = _table_weights(target, x, weight)
        site_x = w_x.sum(axis=1)
        for order in itertools.permutations(range(n), r):
            q_sites = _path_probability(site_x, order)
            if q_sites == 0.0:
                continue
            for values in itertools.product(*[range(ks[i]) for i in order]):
                if any(v == x[i] for v, i in zip(values, order)):
                    continue
                q_forward = q_sites * np.prod([w_x[i, v] / site_x[i] for v, i in zip(values, order)])
                if q_forward == 0.0:
                    continue
                y = x.copy()
                y[list(order)] = values
                b = categorical_index(y, ks)
                if pi[b] == 0.0:
                    continue
                w_y = _table_weights(target, y, weight)
                site_y = w_y.sum(axis=1)
                q_reverse = _path_probability(site_y, order[::-1]) * np.prod(
                    [w_y[i, x[i]] / site_y[i] for i in order]
                )
                accept = min(1.0, pi[b] * q_reverse / (pi[a] * q_forward))
                P[a, b] += q_forward * accept
        P[a, a] += 1.0 - P[a].sum()
    return P


def categorical_arwm_matrix(target, ks, r: int) -> np.ndarray:
    """Transition matrix of RWM-R on categorical sites (uniform other values)."""
    states = categorical_states(ks)
    pi = categorical_distribution(target, ks)
    size = len(states)
    n = len(ks)
    P = np.zeros((size, size))
    for a, x in enumerate(states):
        if pi[a] == 0.0:
            P[a, a] = 1.0
            continue
        for sites in itertools.combinations(range(n), r):
            choices = [[v for v in range(ks[i]) if v != x[i]] for i in sites]
            q = 1.0 / math.comb(n, r) / np.prod([len(c) for c in choices])
            for values in itertools.product(*choices):
                y = x.copy()
                y[list(sites)] = values
                b = categorical_index(y, ks)
                P[a, b] += q * min(1.0, pi[b] / pi[a])
        P[a, a] += 1.0 - P[a].sum()
    return P
