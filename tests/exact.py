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


def changes_probabilities(scale: float, n: int) -> np.ndarray:
    """``P(R = r)`` for r = 0 .. n of the number of changes of a step at ``scale``
    (:func:`pymc_discrete.kernels.common.number_of_changes`, computed independently from
    scipy's Poisson distribution): ``R = 1 + Poisson(max(scale - 1, 0.05))``, and 0 (the
    step stays) when that exceeds n."""
    from scipy import stats

    lam = max(scale - 1.0, 0.05)
    probs = np.zeros(n + 1)
    probs[1:] = stats.poisson.pmf(np.arange(n), lam)
    probs[0] = stats.poisson.sf(n - 1, lam)
    return probs


def mixture_matrix(matrix_of: Callable[[int], np.ndarray], scale: float, n: int) -> np.ndarray:
    """Transition matrix of a step whose number of changes is random
    (:func:`changes_probabilities`): the mixture of the matrices ``matrix_of(r)``."""
    probs = changes_probabilities(scale, n)
    P = None
    for r in range(1, n + 1):
        if probs[r] < 1e-300:
            continue
        term = probs[r] * matrix_of(r)
        P = term if P is None else P + term
    return P + probs[0] * np.eye(P.shape[0])


def assert_irreducible_and_aperiodic(P: np.ndarray, pi: np.ndarray) -> None:
    """On the support of ``pi``: every state reaches every other (irreducible) and no
    eigenvalue other than the simple 1 lies on the unit circle (aperiodic)."""
    support = np.flatnonzero(pi > 0)
    Q = P[np.ix_(support, support)]
    reach = (Q > 0).astype(float) + np.eye(len(support))
    for _ in range(int(np.ceil(np.log2(len(support)))) + 1):
        reach = np.minimum(reach @ reach, 1.0)
    assert np.all(reach > 0), "the chain is reducible on the support of the target"
    moduli = np.sort(np.abs(np.linalg.eigvals(Q)))[::-1]
    assert abs(moduli[0] - 1.0) < 1e-9
    if len(moduli) > 1:
        assert moduli[1] < 1.0 - 1e-9, f"periodic or reducible: |eigenvalue| {moduli[1]}"


def mean_standard_error(P: np.ndarray, pi: np.ndarray, f: np.ndarray, n_draws: int) -> np.ndarray:
    """Exact standard error of the mean of ``f`` (states x functions) over ``n_draws``
    draws of the stationary chain with transition matrix ``P``: the asymptotic variance
    ``2 <f, Z f>_pi - <f, f>_pi`` of the centred f, Z the fundamental matrix. Batch
    means underestimate it badly for rare states; this does not."""
    size = len(pi)
    Z = np.linalg.inv(np.eye(size) - P + np.outer(np.ones(size), pi))
    f = np.asarray(f, dtype=float).reshape(size, -1)
    centred = f - pi @ f
    weighted = pi[:, None] * centred
    variance = 2.0 * np.sum(weighted * (Z @ centred), axis=0) - np.sum(weighted * centred, axis=0)
    return np.sqrt(np.maximum(variance, 0.0) / n_draws)


def albp_matrix(target: Target, n: int, r: int, weight: str) -> np.ndarray:
    """Transition matrix of LBP-R (ordered picks without replacement, eq. 5)."""
    states = all_states(n)
    pi = target_distribution(target, n)
    P = np.zeros((2**n, 2**n))
    # every state's weights are needed once as a start and once per path reaching it:
    # computed at first use, then reused
    weights: dict[int, np.ndarray] = {}

    def weights_at(index: int) -> np.ndarray:
        if index not in weights:
            weights[index] = _site_weights(target, states[index].copy(), weight)
        return weights[index]

    for a in range(len(states)):
        if pi[a] == 0.0:
            P[a, a] = 1.0
            continue
        w_x = weights_at(a)
        for order in itertools.permutations(range(n), r):
            q_forward = _path_probability(w_x, order)
            if q_forward == 0.0:
                continue
            # flipping site i toggles bit n - 1 - i of the row index (see state_index)
            b = a ^ sum(1 << (n - 1 - i) for i in order)
            if pi[b] == 0.0:
                continue
            q_reverse = _path_probability(weights_at(b), order[::-1])
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
    """Every empirical count is as likely as a deviation of ``n_se`` standard errors.

    For each state the count must not lie in either binomial tail of probability below
    that of ``n_se`` normal standard deviations (2.9e-7 for 5): the exact form of "within
    5 standard errors", which stays right for rare states where the normal approximation
    fails (one visit to a state of expected count 0.03 is not a 5-sigma event). States of
    probability zero are never reached.
    """
    from scipy import stats

    n = int(counts.sum())
    counts = counts.astype(np.int64)
    tail = stats.norm.sf(n_se)
    lower = stats.binom.cdf(counts, n, probs)  # P(X <= k)
    upper = stats.binom.sf(counts - 1, n, probs)  # P(X >= k)
    bad = (lower < tail) | (upper < tail)
    freq = counts / n
    se = np.sqrt(probs * (1.0 - probs) / n)
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
    # each state's value and site weights, computed at first use (as a start or as the
    # end of a path) and reused for every other path through it
    weights: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def weights_at(index: int) -> tuple[np.ndarray, np.ndarray]:
        if index not in weights:
            w = _table_weights(target, states[index].copy(), weight)
            weights[index] = (w, w.sum(axis=1))
        return weights[index]

    for a, x in enumerate(states):
        if pi[a] == 0.0:
            P[a, a] = 1.0
            continue
        w_x, site_x = weights_at(a)
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
                w_y, site_y = weights_at(b)
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


# ---- path auxiliary samplers -----------------------------------------------------------
def _local_ratio(target_out, x, i, c) -> float:
    """The target's log-ratio of moving site i of x to c (binary targets give a vector)."""
    ratios = target_out[1]
    if c == x[i]:
        return 0.0
    d = ratios[i] if np.ndim(ratios) == 1 else ratios[i, c]
    return float(d) if d > -np.inf else -np.inf  # NaN: impossible


def _move_weights(anchor_ratios, z, ks, weight) -> dict:
    """Linear-space weights of every single-site move from z, with log-ratios
    ``r(i, c) - r(i, z_i)`` from the ratios ``r`` at the anchor (r(i, anchor_i) = 0)."""
    out = {}
    for i, k in enumerate(ks):
        for c in range(k):
            if c == z[i]:
                continue
            d = anchor_ratios(i, c) - anchor_ratios(i, z[i])
            out[(i, c)] = 0.0 if not d > -np.inf else balancing(math.exp(d), weight)
    return out


def _anchor(target, x):
    out = target(x)
    x = np.array(x)
    return lambda i, c: _local_ratio(out, x, i, c)


class _MoveWeights:
    """:func:`_move_weights` and their total for a (anchor, point) pair, computed once:
    the paths of :func:`path_matrix` pass the same pairs many times."""

    def __init__(self, target, ks, weight):
        self.target, self.ks, self.weight = target, ks, weight
        self.anchors: dict[tuple, Callable] = {}
        self.weights: dict[tuple, tuple[dict, float]] = {}

    def at(self, anchor: tuple, z: np.ndarray) -> tuple[dict, float]:
        key = (anchor, tuple(z.tolist()))
        if key not in self.weights:
            if anchor not in self.anchors:
                self.anchors[anchor] = _anchor(self.target, np.array(anchor, dtype=np.int64))
            w = _move_weights(self.anchors[anchor], z, self.ks, self.weight)
            self.weights[key] = (w, sum(w.values()))
        return self.weights[key]


def _walk_probability(cache: _MoveWeights, start, moves, linearised) -> float:
    """Probability of the proposal walking ``moves`` from ``start``: anchored once at
    ``start`` (linearised) or afresh at every point (exact)."""
    z = np.array(start)
    anchor = tuple(z.tolist())
    prob = 1.0
    for i, c in moves:
        if not linearised:
            anchor = tuple(z.tolist())
        w, total = cache.at(anchor, z)
        if total == 0.0 or w[(i, c)] == 0.0:
            return 0.0
        prob *= w[(i, c)] / total
        z[i] = c
    return prob


def path_matrix(target, ks, half: int, weight: str, linearised: bool) -> np.ndarray:
    """Transition matrix of PAS (exact ratios at every point) or PAFS (linearised at the
    two ends) with path length uniform on {1, ..., 2 * half - 1}: every path of every
    length enumerated, each accepted with the path auxiliary ratio."""
    ks = tuple(ks)
    states = categorical_states(ks)
    pi = categorical_distribution(target, ks)
    size = len(states)
    moves_all = [(i, c) for i, k in enumerate(ks) for c in range(k)]
    lengths = range(1, 2 * half)
    P = np.zeros((size, size))
    cache = _MoveWeights(target, ks, weight)
    for a, x in enumerate(states):
        if pi[a] == 0.0:
            P[a, a] = 1.0
            continue
        for length in lengths:
            for moves in itertools.product(moves_all, repeat=length):
                z = x.copy()
                back = []
                valid = True
                for i, c in moves:
                    if z[i] == c:
                        valid = False
                        break
                    back.append((i, int(z[i])))
                    z[i] = c
                if not valid:
                    continue
                q_forward = _walk_probability(cache, x, moves, linearised)
                if q_forward == 0.0:
                    continue
                b = categorical_index(z, ks)
                if pi[b] == 0.0:
                    continue
                q_reverse = _walk_probability(cache, z, back[::-1], linearised)
                accept = min(1.0, pi[b] * q_reverse / (pi[a] * q_forward))
                P[a, b] += q_forward * accept / len(lengths)
        P[a, a] += 1.0 - P[a].sum()
    return P
