"""Forward filtering, backward sampling of a chain-structured block, against enumeration:
the order found from the structure, the tables read off the terms, the normaliser and
the distribution of the draws."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from pymc_discrete.kernels.chain import (
    ChainState,
    chain_gibbs_step,
    chain_logp,
    chain_marginals,
    chain_order,
    chain_tables,
    ffbs,
    forward_filter,
    pair_states,
)


def _csr(term_sites: list[list[int]], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-site CSR lists of the terms each site touches."""
    per_site = [[t for t, sites in enumerate(term_sites) if i in sites] for i in range(n)]
    ptr = np.cumsum([0] + [len(s) for s in per_site])
    return ptr.astype(np.int64), np.array(sum(per_site, []), dtype=np.int64)


def _random_chain(n: int, rng: np.random.Generator, shuffle: bool = True):
    """A chain of n sites in a random block order: unary terms on every site (some on
    none), pair terms between neighbours (two on one pair), as (term sites, functions)."""
    perm = rng.permutation(n) if shuffle else np.arange(n)
    term_sites, tables = [], []
    for p in range(n):
        if p != 1:  # position 1 has no unary term
            term_sites.append([int(perm[p])])
            tables.append(rng.normal(size=4))
    for p in range(n - 1):
        for _ in range(2 if p == 0 else 1):
            term_sites.append([int(perm[p]), int(perm[p + 1])])
            tables.append(rng.normal(size=(4, 4)))
    return perm, term_sites, tables


def _terms(states: np.ndarray, term_sites, tables) -> np.ndarray:
    out = np.empty((states.shape[0], len(term_sites)))
    for t, (sites, table) in enumerate(zip(term_sites, tables)):
        out[:, t] = table[tuple(states[:, s] for s in sites)]
    return out


def test_chain_order_walks_a_shuffled_path_and_refuses_other_graphs():
    rng = np.random.default_rng(0)
    perm, term_sites, _ = _random_chain(7, rng)
    layout = chain_order(*_csr(term_sites, 7), len(term_sites))
    assert layout is not None
    assert layout.order.tolist() in (perm.tolist(), perm[::-1].tolist())
    assert layout.linked.all()
    # two paths: one order, unlinked where they meet
    two = chain_order(*_csr([[0, 1], [1, 2], [3, 4]], 5), 3)
    assert sorted(two.order.tolist()) == list(range(5)) and two.linked.sum() == 3
    assert chain_order(*_csr([[0, 1], [1, 2], [2, 0]], 3), 3) is None  # a cycle
    assert chain_order(*_csr([[0, 1], [0, 2], [0, 3]], 4), 3) is None  # a branch
    assert chain_order(*_csr([[0, 1, 2]], 3), 1) is None  # a term of three sites
    single = chain_order(*_csr([[0], [0]], 1), 2)
    assert single.order.tolist() == [0] and not single.term_pair.any()


@pytest.mark.parametrize("n", [1, 2, 5, 6])
def test_tables_reproduce_the_log_density_at_every_state(n):
    """The tables read off the terms at the 2 K^2 pair states give l(z) exactly at all
    K^n states, with fewer values on one site (-inf beyond them)."""
    rng = np.random.default_rng(n)
    perm, term_sites, tables = _random_chain(n, rng)
    layout = chain_order(*_csr(term_sites, n), len(term_sites))
    n_values = np.full(n, 4, dtype=np.int64)
    n_values[perm[n // 2]] = 3
    x = rng.integers(0, 3, n)
    states = pair_states(x, layout, n_values)
    k = int(n_values.max())
    assert states.shape == (2 * k * k, n) and np.all(states < n_values)
    unary, pair = chain_tables(_terms(states, term_sites, tables), layout, n_values)
    every = np.array(list(itertools.product(range(k), repeat=n)))
    expected = _terms(every, term_sites, tables).sum(axis=1)
    possible = np.all(every < n_values, axis=1)
    got = np.array([chain_logp(z[layout.order], unary, pair) for z in every])
    np.testing.assert_allclose(got[possible], expected[possible], rtol=1e-12, atol=1e-12)
    assert np.all(got[~possible] == -np.inf)
    _, log_z = forward_filter(unary, pair)
    np.testing.assert_allclose(log_z, logsumexp(expected[possible]), rtol=1e-12)


def test_ffbs_draws_the_joint_distribution():
    """Frequencies of the 3^4 states over 40,000 draws within 4.5 standard errors of
    their probabilities (a sticky chain with an impossible value and an impossible
    pair), and the chi-square over all states within its 99.9% bound."""
    rng = np.random.default_rng(3)
    n, k = 4, 3
    unary = rng.normal(size=(n, k))
    unary[2, 1] = -np.inf
    pair = np.log(np.full((n - 1, k, k), 0.05) + 0.9 * np.eye(k))
    pair[0, 0, 2] = -np.inf
    every = np.array(list(itertools.product(range(k), repeat=n)))
    logp = np.array([chain_logp(z, unary, pair) for z in every])
    probs = np.exp(logp - logsumexp(logp))
    draws = 40_000
    index = {tuple(z): i for i, z in enumerate(every)}
    counts = np.zeros(len(every))
    for _ in range(draws):
        z, _ = ffbs(unary, pair, rng)
        counts[index[tuple(z)]] += 1
    freq = counts / draws
    se = np.sqrt(probs * (1 - probs) / draws)
    assert np.all(counts[probs == 0] == 0)
    assert np.all(np.abs(freq - probs) <= 4.5 * se + 1e-12)
    live = probs > 0
    chi2 = float(((counts[live] - draws * probs[live]) ** 2 / (draws * probs[live])).sum())
    assert chi2 < 130.0, chi2  # 99.9% quantile of chi-square with ~53 d.o.f. is ~90


def test_a_long_sticky_chain_is_stable():
    """Log space: 5,000 sites of a very sticky chain with large terms give a finite
    normaliser equal to the sum done in two halves' forward passes, and draws."""
    rng = np.random.default_rng(4)
    n, k = 5000, 3
    unary = 50.0 * rng.normal(size=(n, k))
    pair = np.log(np.full((n - 1, k, k), 1e-6) + np.eye(k))
    alpha, log_z = forward_filter(unary, pair)
    assert np.isfinite(log_z) and np.all(np.isfinite(alpha))
    z, _ = ffbs(unary, pair, rng)
    assert z.shape == (n,) and np.isfinite(chain_logp(z, unary, pair))


@pytest.mark.parametrize("n", [1, 2, 5])
def test_marginals_are_the_derivatives_of_the_log_normaliser(n):
    """The forward and backward passes against enumeration of the 3^n states: log Z,
    P(z_p = a) and P(z_p = a, z_{p+1} = b) to 1e-12, with values a site does not have
    (-inf) and a pair that is impossible."""
    rng = np.random.default_rng(7 + n)
    k = 3
    unary = rng.normal(size=(n, k))
    unary[n // 2, 1] = -np.inf
    pair = rng.normal(size=(n - 1, k, k))
    if n > 2:
        pair[0, 2, 0] = -np.inf
    log_z, gamma, xi = chain_marginals(unary, pair)
    states = np.array(list(itertools.product(range(k), repeat=n)))
    log_p = unary[np.arange(n), states].sum(1)
    if n > 1:
        log_p = log_p + pair[np.arange(n - 1), states[:, :-1], states[:, 1:]].sum(1)
    assert abs(log_z - logsumexp(log_p)) < 1e-12
    p = np.exp(log_p - logsumexp(log_p))
    expect_gamma = np.stack([np.bincount(states[:, q], p, minlength=k) for q in range(n)])
    np.testing.assert_allclose(gamma, expect_gamma, rtol=0, atol=1e-12)
    for q in range(n - 1):
        joint = np.bincount(states[:, q] * k + states[:, q + 1], p, minlength=k * k)
        np.testing.assert_allclose(xi[q], joint.reshape(k, k), rtol=0, atol=1e-12)


def test_marginals_of_a_long_sticky_chain_are_probabilities():
    """5,000 sites of a very sticky chain with large terms: every position's marginal
    sums to 1 and is the pair marginal summed over the next site."""
    rng = np.random.default_rng(4)
    n, k = 5000, 3
    unary = 50.0 * rng.normal(size=(n, k))
    pair = np.log(np.full((n - 1, k, k), 1e-6) + np.eye(k))
    log_z, gamma, xi = chain_marginals(unary, pair)
    assert abs(log_z - forward_filter(unary, pair)[1]) < 1e-9 * abs(log_z)
    np.testing.assert_allclose(gamma.sum(1), 1.0, atol=1e-10)
    np.testing.assert_allclose(xi.sum(2), gamma[:-1], atol=1e-10)


def test_a_chain_of_no_possible_state_has_zero_marginals():
    unary = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    pair = np.array([[[0.0, -np.inf], [0.0, 0.0]]])
    log_z, gamma, xi = chain_marginals(unary, pair)
    assert log_z == -np.inf and not gamma.any() and not xi.any()


def test_the_step_is_a_draw_whatever_the_state():
    rng = np.random.default_rng(5)
    perm, term_sites, tables = _random_chain(5, rng)
    layout = chain_order(*_csr(term_sites, 5), len(term_sites))
    n_values = np.full(5, 4, dtype=np.int64)
    x = np.zeros(5, dtype=np.int64)
    unary, pair = chain_tables(_terms(pair_states(x, layout, n_values), term_sites, tables),
                               layout, n_values)
    state = ChainState(x, chain_logp(x[layout.order], unary, pair))
    new, info = chain_gibbs_step(state, rng, unary, pair, layout)
    assert info.accept_prob == 1.0 and info.accepted
    assert info.n_proposed == int(np.count_nonzero(new.x != x))
    expected = _terms(new.x[None, :], term_sites, tables).sum()
    np.testing.assert_allclose(new.logp, expected, rtol=1e-12)
    with pytest.raises(ValueError, match="no state of positive probability"):
        ffbs(np.full((3, 2), -np.inf), np.zeros((2, 2, 2)), rng)
