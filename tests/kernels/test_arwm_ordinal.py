"""ARWM's random walk on ordinal integer sites against its exact transition matrix: every
set of picked sites, every step and its reflection enumerated, independently of the
kernel's vectorised draws.

Two ordinal sites of 6 values with a coupled joint distribution, and a mixed block (an
ordinal site of 5 values, a categorical site of 3 and a binary site), with both laws of
the distance: log-uniform (no width) and uniform on 1 .. w.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pymc_discrete.kernels.arwm import RWState, arwm_step, ordinal_moves
from tests.exact import (
    assert_frequencies_match,
    assert_irreducible_and_aperiodic,
    assert_reversible,
    categorical_index,
    categorical_states,
    changes_probabilities,
)

N_REPEATS = 20_000
KIND_ORDINAL, KIND_CATEGORICAL, KIND_BINARY = "ordinal", "categorical", "binary"


def _coupled_logp(ks):
    """A joint distribution with no product form: random site terms, a pairwise coupling
    of every two sites' values, and a term on the first two sites' distance."""
    rng = np.random.default_rng(7)
    singles = [rng.normal(0.0, 1.0, k) for k in ks]
    pairs = {(i, j): rng.normal(0.0, 0.7, (ks[i], ks[j]))
             for i, j in itertools.combinations(range(len(ks)), 2)}

    def logp(x):
        total = sum(s[v] for s, v in zip(singles, x))
        total += sum(table[x[i], x[j]] for (i, j), table in pairs.items())
        return float(total - 0.3 * abs(int(x[0]) - int(x[1])))

    return logp


BLOCKS = {
    # name: (K of every site, kind of every site)
    "two-ordinal": ((6, 6), (KIND_ORDINAL, KIND_ORDINAL)),
    "mixed": ((5, 3, 2), (KIND_ORDINAL, KIND_CATEGORICAL, KIND_BINARY)),
}


def _reflect(z: int, k: int) -> int:
    """z folded into 0 .. k-1 by mirrors that repeat the end values, one bounce at a time
    (the kernel folds by a period of 2k)."""
    while z < 0 or z > k - 1:
        z = -z - 1 if z < 0 else 2 * k - 1 - z
    return z


def _distance_probabilities(k: int, width: int | None) -> dict[int, float]:
    """P(m) of the distance: log-uniform on 1 .. k-1, or uniform on 1 .. width."""
    if width is None:
        return {m: math.log((m + 1) / m) / math.log(k) for m in range(1, k)}
    return {m: 1.0 / width for m in range(1, width + 1)}


def _site_moves(v: int, k: int, kind: str, width: int | None) -> dict[int, float]:
    """New value -> probability, for one picked site at value v."""
    if kind == KIND_BINARY:
        return {1 - v: 1.0}
    if kind == KIND_CATEGORICAL:
        return {c: 1.0 / (k - 1) for c in range(k) if c != v}
    moves: dict[int, float] = {}
    for m, p in _distance_probabilities(k, width).items():
        for d in (-m, m):
            y = _reflect(v + d, k)
            moves[y] = moves.get(y, 0.0) + p / 2.0
    return moves


def _proposal_matrix(ks, kinds, widths, r: int) -> np.ndarray:
    """Q[x, y]: probability that a proposal changing r picked sites goes from x to y."""
    states = categorical_states(ks)
    n = len(ks)
    Q = np.zeros((len(states), len(states)))
    for a, x in enumerate(states):
        for sites in itertools.combinations(range(n), r):
            q_sites = 1.0 / math.comb(n, r)
            per_site = [
                list(_site_moves(int(x[i]), ks[i], kinds[i],
                                 None if widths is None else widths[i]).items())
                for i in sites
            ]
            for choice in itertools.product(*per_site):
                y = x.copy()
                q = q_sites
                for i, (value, p) in zip(sites, choice):
                    y[i] = value
                    q *= p
                Q[a, categorical_index(y, ks)] += q
    return Q


def _transition_matrix(ks, kinds, widths, scale: float, logp):
    """Exact transition matrix of one step at ``scale``: the mixture over the number of
    picked sites of proposal x Metropolis acceptance; and the target."""
    states = categorical_states(ks)
    logps = np.array([logp(x) for x in states])
    pi = np.exp(logps - logps.max())
    pi /= pi.sum()
    probs = changes_probabilities(scale, len(ks))
    P = probs[0] * np.eye(len(states))
    for r in range(1, len(ks) + 1):
        Q = _proposal_matrix(ks, kinds, widths, r)
        accept = np.minimum(1.0, pi[None, :] / pi[:, None])
        moves = Q * accept
        np.fill_diagonal(moves, 0.0)
        P += probs[r] * (moves + np.diag(1.0 - moves.sum(axis=1)))
    return P, pi


def _ordinal_mask(kinds) -> np.ndarray:
    return np.array([kind == KIND_ORDINAL for kind in kinds])


CASES = [
    # block, widths (None: log-uniform), scale
    ("two-ordinal", None, 1.0),
    ("two-ordinal", None, 2.0),
    ("two-ordinal", (2, 3), 1.0),
    ("two-ordinal", (5, 1), 2.0),  # w = K - 1 and w = 1
    ("mixed", None, 2.0),
    ("mixed", (2, 1, 1), 1.5),
]


@pytest.mark.parametrize("block,widths,r", [(b, w, r) for b, w, _ in CASES for r in (1, 2)])
def test_the_proposal_is_symmetric(block, widths, r):
    ks, kinds = BLOCKS[block]
    Q = _proposal_matrix(ks, kinds, widths, r)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, rtol=0, atol=1e-14)
    np.testing.assert_allclose(Q, Q.T, rtol=0, atol=1e-15)


@pytest.mark.parametrize("block,widths,scale", CASES)
def test_the_transition_matrix_is_reversible_irreducible_and_aperiodic(block, widths, scale):
    ks, kinds = BLOCKS[block]
    P, pi = _transition_matrix(ks, kinds, widths, scale, _coupled_logp(ks))
    assert pi.min() > 1e-4  # a joint distribution of no product form, every state likely
    assert_reversible(P, pi, atol=1e-14)
    assert_irreducible_and_aperiodic(P, pi)


@pytest.mark.parametrize("block,widths,scale", CASES)
def test_the_kernel_matches_its_transition_matrix(block, widths, scale):
    """One step from a middle state and from a corner (the reflections): sampled
    frequencies of the next state against the matrix's row, within 4 standard errors."""
    ks, kinds = BLOCKS[block]
    logp = _coupled_logp(ks)
    P, _ = _transition_matrix(ks, kinds, widths, scale, logp)
    k_array = np.array(ks, dtype=np.int64)
    ordinal = _ordinal_mask(kinds)
    w = None if widths is None else np.array(widths, dtype=np.int64)
    rng = np.random.default_rng(len(block) + int(10 * scale))
    for x0 in (np.array([k // 2 for k in ks]), np.array([0] + [k - 1 for k in ks[1:]])):
        state0 = RWState(x0, logp(x0))
        counts = np.zeros(P.shape[0])
        for _ in range(N_REPEATS):
            new, info = arwm_step(state0, scale, rng, logp, k_array, ordinal, w)
            counts[categorical_index(new.x, ks)] += 1
            changed = int(np.count_nonzero(new.x != x0))
            assert changed == (info.n_proposed if info.accepted else 0)
        assert_frequencies_match(counts, P[categorical_index(x0, ks)], n_se=4.0)


def test_log_uniform_distances_have_their_stated_probabilities():
    """floor(K ** u) on a fine grid of u, upward from 0 (no fold): frequencies
    log((m + 1) / m) / log(K)."""
    k = 41
    u = (np.arange(400_000) + 0.5) / 400_000
    moved = ordinal_moves(np.zeros(u.size, dtype=np.int64), np.full(u.size, k), u,
                          np.full(u.size, 0.9))
    frequencies = np.bincount(moved, minlength=k) / u.size
    expected = [math.log((m + 1) / m) / math.log(k) for m in range(1, k)]
    assert frequencies[0] == 0.0
    np.testing.assert_allclose(frequencies[1:], expected, rtol=0, atol=1e-5)


def test_steps_stay_in_range_and_widths_bound_the_distance():
    rng = np.random.default_rng(0)
    k = np.full(10_000, 7, dtype=np.int64)
    x = rng.integers(0, 7, k.size)
    for width in (None, np.full(k.size, 2)):
        y = ordinal_moves(x, k, rng.random(k.size), rng.random(k.size), width)
        assert y.min() >= 0 and y.max() <= 6
        if width is not None:
            assert np.abs(y - x).max() <= 2
