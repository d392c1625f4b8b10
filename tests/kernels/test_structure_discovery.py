"""Grouped discovery of the term structure (which terms each site changes) against the
brute-force probing it replaces: same result, with a number of batched evaluations that
does not grow with the number of sites on sparse models.

Plain numpy term functions: each builds its term vector from a list of small terms, and
knows exactly which sites each term reads (the dependency superset).
"""

from __future__ import annotations

import numpy as np
import pytest

from pymc_discrete.kernels.structure import (
    DependencySuperset,
    StructureMismatch,
    discover_structure_csr,
)
from tests.structure_lists import build_structure, discover_structure, greedy_colouring


def brute_force_reference(batch_terms, probes, n_categories=None, shifts=(1,)):
    """The original set-up, one site at a time (kept verbatim in spirit): at every probe
    point and shift, move each site alone and record the terms that change."""
    n = probes.shape[1]
    found = [set() for _ in range(n)]
    for x in probes:
        base = batch_terms(x[None, :])[0]
        for shift in shifts:
            for i in range(n):
                y = x.copy()
                y[i] = 1 - y[i] if n_categories is None else (y[i] + shift) % n_categories[i]
                if y[i] == x[i]:
                    continue
                changed = ~(batch_terms(y[None, :])[0] == base)
                found[i].update(np.flatnonzero(changed).tolist())
    return [np.array(sorted(s), dtype=np.int64) for s in found]


def brute_force_colouring(terms_of_site, n_terms):
    """The original greedy colouring, in Python."""
    sites_of_term = [[] for _ in range(n_terms)]
    for i, terms in enumerate(terms_of_site):
        for k in terms:
            sites_of_term[k].append(i)
    colour = np.full(len(terms_of_site), -1)
    for i, terms in enumerate(terms_of_site):
        taken = {colour[j] for k in terms for j in sites_of_term[k] if colour[j] >= 0}
        c = 0
        while c in taken:
            c += 1
        colour[i] = c
    return colour


class TermModel:
    """``f(x) = sum_k T_k(x)`` with every term a function of a few named sites.

    ``terms`` is a list of ``(sites, function)``; the function maps the (B, len(sites))
    values of its sites to (B,) term values.
    """

    def __init__(self, n, terms):
        self.n = n
        self.terms = terms
        self.rows = 0

    def __call__(self, states):
        states = np.asarray(states)
        self.rows += states.shape[0]
        return np.stack([fn(states[:, sites]) for sites, fn in self.terms], axis=1)

    def superset(self, extra=None, rng=None):
        """The exact sites of every term, plus ``extra`` random sites per term (a sound
        but loose superset)."""
        lists = []
        for sites, _ in self.terms:
            s = set(np.asarray(sites).tolist())
            if extra:
                s.update(rng.integers(0, self.n, extra).tolist())
            lists.append(np.array(sorted(s), dtype=np.int64))
        ptr = np.zeros(len(lists) + 1, dtype=np.int64)
        ptr[1:] = np.cumsum([s.size for s in lists])
        return DependencySuperset(ptr, np.concatenate(lists))


def random_binary_model(n, seed):
    """Fields, pairwise spin couplings, products of three sites (visible only when the
    other two are 1), a switch on two sites, and a pair term that is 0 at one state."""
    rng = np.random.default_rng(seed)
    terms = [(np.array([i]), lambda v, a=rng.normal(): a * v[:, 0]) for i in range(n)]
    for _ in range(2 * n):
        i, j = rng.choice(n, 2, replace=False)
        terms.append((np.array([i, j]),
                      lambda v, w=rng.normal(): w * (2 * v[:, 0] - 1) * (2 * v[:, 1] - 1)))
    for _ in range(n // 3):
        terms.append((rng.choice(n, 3, replace=False),
                      lambda v, w=rng.normal(): w * v[:, 0] * v[:, 1] * v[:, 2]))
    for _ in range(n // 4):
        terms.append((rng.choice(n, 2, replace=False),
                      lambda v: np.where(v[:, 0] + v[:, 1] == 2, 0.7, -0.2)))
    return TermModel(n, terms)


def random_categorical_model(n, k, seed):
    """Fields by value, Potts couplings, table lookups between pairs, and terms that
    change only between particular values (``[z_i == 2][z_j == 1]``)."""
    rng = np.random.default_rng(seed)
    terms = []
    for i in range(n):
        table = rng.normal(size=k)
        terms.append((np.array([i]), lambda v, t=table: t[v[:, 0]]))
    for _ in range(2 * n):
        i, j = rng.choice(n, 2, replace=False)
        terms.append((np.array([i, j]), lambda v, w=rng.normal(): w * (v[:, 0] == v[:, 1])))
    for _ in range(n // 2):
        i, j = rng.choice(n, 2, replace=False)
        table = rng.normal(size=(k, k))
        terms.append((np.array([i, j]), lambda v, t=table: t[v[:, 0], v[:, 1]]))
    for _ in range(n // 2):
        i, j = rng.choice(n, 2, replace=False)
        terms.append((np.array([i, j]), lambda v: 1.5 * ((v[:, 0] == 2) & (v[:, 1] == 1))))
    return TermModel(n, terms)


def ising_lattice(side):
    """Prior, field and nearest-neighbour couplings of a side x side lattice."""
    n = side * side
    idx = np.arange(n).reshape(side, side)
    pairs = np.concatenate([np.stack([idx[:, 1:].ravel(), idx[:, :-1].ravel()], 1),
                            np.stack([idx[1:].ravel(), idx[:-1].ravel()], 1)])
    alpha = np.random.default_rng(side).normal(size=n)
    terms = [(np.array([i]), lambda v, a=alpha[i]: a * (2 * v[:, 0] - 1)) for i in range(n)]
    terms += [(p, lambda v: 0.3 * (2 * v[:, 0] - 1) * (2 * v[:, 1] - 1)) for p in pairs]
    return TermModel(n, terms)


def binary_probes(n, seed):
    rng = np.random.default_rng(seed)
    return np.vstack([np.zeros(n), np.ones(n), rng.integers(0, 2, (3, n))]).astype(np.int64)


def categorical_probes(ks, seed):
    rng = np.random.default_rng(seed)
    n = ks.size
    return np.vstack([np.zeros(n), ks - 1] + [rng.integers(0, ks) for _ in range(4)]
                     ).astype(np.int64)


def _same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("extra", [0, 2])
def test_grouped_discovery_equals_brute_force_on_random_binary_models(seed, extra):
    model = random_binary_model(40, seed)
    probes = binary_probes(40, seed)
    superset = model.superset(extra, np.random.default_rng(seed))
    truth = brute_force_reference(model, probes)
    grouped = discover_structure(model, probes, 7, superset=superset, seed=seed)
    assert _same(grouped, truth)
    assert _same(discover_structure(model, probes, 7), truth)  # no superset: site by site
    # the colouring built on it is the original greedy colouring
    structure = build_structure(grouped, len(model.terms))
    np.testing.assert_array_equal(structure.colour,
                                  brute_force_colouring(truth, len(model.terms)))


@pytest.mark.parametrize("seed", [0, 1])
def test_grouped_discovery_equals_brute_force_on_random_categorical_models(seed):
    """Every other value of every site is probed (shifts 1 .. K - 1): a superset of the
    original next-value probing, which misses terms that change only between some
    values."""
    rng = np.random.default_rng(seed)
    ks = rng.integers(2, 5, 30)
    ks[:3] = 4
    model = random_categorical_model(30, 4, seed)
    probes = categorical_probes(ks, seed)
    superset = model.superset(1, rng)
    truth = brute_force_reference(model, probes, ks, shifts=(1, 2, 3))
    grouped = discover_structure(model, probes, 5, n_categories=ks, superset=superset)
    assert _same(grouped, truth)
    assert _same(discover_structure(model, probes, 5, n_categories=ks), truth)
    next_value_only = brute_force_reference(model, probes, ks, shifts=(1,))
    assert all(set(a) <= set(b) for a, b in zip(next_value_only, grouped))
    assert any(set(a) < set(b) for a, b in zip(next_value_only, grouped))


def test_a_dependency_seen_at_only_some_probes_is_kept():
    """x0 x1 x2 changes with x0 only when x1 = x2 = 1 (the all-ones probe), and
    [x3 + x4 == 2] only when the other is 1: neither is missed, and the grouped
    discovery does not merge sites that only a few probes connect."""
    n = 12
    model = TermModel(n, [(np.array([i]), lambda v: 0.1 * v[:, 0]) for i in range(n)] + [
        (np.array([0, 1, 2]), lambda v: 2.0 * v[:, 0] * v[:, 1] * v[:, 2]),
        (np.array([3, 4]), lambda v: np.where(v[:, 0] + v[:, 1] == 2, 1.0, 0.0)),
    ])
    probes = np.vstack([np.zeros(n), np.ones(n)]).astype(np.int64)
    grouped = discover_structure(model, probes, 4, superset=model.superset())
    assert all(n in grouped[i] for i in (0, 1, 2))
    assert all(n + 1 in grouped[i] for i in (3, 4))
    # at the zero probe alone the products never change: the dependency is not seen
    zero_only = discover_structure(model, probes[:1], 4, superset=model.superset())
    assert all(n not in zero_only[i] for i in (0, 1, 2))
    structure = build_structure(grouped, len(model.terms))
    assert len({structure.colour[i] for i in (0, 1, 2)}) == 3


@pytest.mark.parametrize("side", [10, 50])
def test_rows_evaluated_do_not_grow_with_the_lattice(side):
    """Grouped: (groups + 1) rows per probe plus a fixed number of checks, the same on
    100 and 2500 sites; site by site: N + 1 per probe."""
    model = ising_lattice(side)
    n = side * side
    probes = binary_probes(n, 0)
    report = {}
    grouped = discover_structure_csr(model, probes, 64, superset=model.superset(),
                                     report=report)
    assert report["groups"] == 2  # a lattice is bipartite
    # per probe: the probe itself and the 2 groups in one call, then the checked sites
    # with the probe again as the base of their call
    assert model.rows == probes.shape[0] * (report["groups"] + 2) + report["checks"]
    assert model.rows <= 70  # 5 probes x 4 rows + 50 checks, at any N
    if side == 10:  # the reference is quadratic: compare on the small lattice only
        model.rows = 0
        brute = discover_structure_csr(model, probes, 64)
        assert model.rows == probes.shape[0] * (n + 2)  # 2 calls of 63 moved + 1 base
        for a, b in zip(grouped, brute):
            np.testing.assert_array_equal(a, b)


def test_a_superset_that_misses_a_dependency_is_caught():
    model = random_binary_model(30, 3)
    probes = binary_probes(30, 3)
    good = model.superset()
    # drop the second site of the first pair term from its list
    k = 30
    lists = [good.term_sites[good.term_ptr[j]:good.term_ptr[j + 1]]
             for j in range(good.term_ptr.size - 1)]
    lists[k] = lists[k][:1]
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([s.size for s in lists])
    wrong = DependencySuperset(ptr, np.concatenate(lists))
    with pytest.raises(StructureMismatch):
        discover_structure(model, probes, 8, superset=wrong)


def test_terms_nan_at_a_probe_stay_within_the_superset():
    """A term that is NaN at a probe "changes" whichever site moves (NaN != NaN): the
    site-by-site probe lists it for every site, the grouped one only for the sites it
    may depend on."""
    n = 6
    model = TermModel(n, [(np.array([i]), lambda v: 0.5 * v[:, 0]) for i in range(n)] + [
        (np.array([1, 2]), lambda v: np.where(v[:, 0] + v[:, 1] == 0, np.nan, v[:, 0] * 1.0)),
    ])
    probes = np.zeros((1, n), dtype=np.int64)
    grouped = discover_structure(model, probes, 4, superset=model.superset())
    brute = discover_structure(model, probes, 4)
    assert [i for i in range(n) if n in grouped[i]] == [1, 2]
    assert [i for i in range(n) if n in brute[i]] == list(range(n))


def test_dense_term_probes_every_site_alone():
    """One term on every site: n groups of one site, the brute-force cost and result."""
    n = 15
    w = np.random.default_rng(0).normal(size=n)
    model = TermModel(n, [(np.arange(n), lambda v: np.sin(v @ w)),
                          (np.array([3]), lambda v: 1.0 * v[:, 0])])
    probes = binary_probes(n, 1)
    report = {}
    grouped = discover_structure(model, probes, 4, superset=model.superset(), report=report)
    assert report["groups"] == n
    assert _same(grouped, brute_force_reference(model, probes))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_colouring_is_the_original_one(seed):
    rng = np.random.default_rng(seed)
    n, m = 60, 90
    lists = [[] for _ in range(n)]
    for k in range(m):
        for i in rng.choice(n, rng.integers(1, 5), replace=False):
            lists[i].append(k)
    # duplicated terms (the same sites) change nothing
    for i in range(n):
        lists[i] += [m + t for t in range(3)] if i % 7 == 0 else []
    terms = [np.array(sorted(t), dtype=np.int64) for t in lists]
    colour, n_colours = greedy_colouring(terms, m + 3)
    np.testing.assert_array_equal(colour, brute_force_colouring(terms, m + 3))
    assert n_colours == colour.max() + 1
