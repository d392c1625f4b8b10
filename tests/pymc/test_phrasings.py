"""The same lattice written the ways users write it has the same structure: a linear term
is separable whether it is a sum of products or a dot product with constants, and the
exact ratios of every phrasing are the single-site changes of the log density."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pymc.pytensorf import make_shared_replacements

import pymc_discrete as pmd
from pymc_discrete.pymc.exact import ExactRatios

L = 5
N = L * L
_rng = np.random.default_rng(0)
ALPHA = _rng.normal(size=N)
DESIGN = _rng.normal(size=(3, N))

#: the field of an Ising lattice, written as users write it (s = 2x - 1, a vector)
FIELDS = {
    "sum": lambda s: pt.sum(ALPHA * s),
    "dot": lambda s: pt.dot(ALPHA, s),
    "matmul": lambda s: ALPHA @ s,
    "tensordot": lambda s: pt.tensordot(ALPHA, s, axes=1),
    "einsum": lambda s: pt.einsum("i,i->", ALPHA, s),
    "matrix-vector": lambda s: pt.sum(pt.as_tensor(DESIGN) @ s),
    "transposed": lambda s: pt.sum(pt.dot(s.reshape((L, L)).T, ALPHA.reshape((L, L))[:, :1])),
}


def _lattice(field) -> pm.Model:
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.5, shape=N)
        s = 2 * x - 1
        grid = s.reshape((L, L))
        pm.Potential("couplings", 0.3 * ((grid[1:] * grid[:-1]).sum()
                                         + (grid[:, 1:] * grid[:, :-1]).sum()))
        pm.Potential("field", field(s))
    return model


def _exact(model) -> ExactRatios:
    point = model.initial_point()
    value_vars = [model.rvs_to_values[model["x"]]]
    return ExactRatios(model, value_vars, point,
                       make_shared_replacements(point, value_vars, model))


@pytest.mark.parametrize("phrasing", sorted(FIELDS))
def test_a_linear_term_couples_no_sites(phrasing):
    model = _lattice(FIELDS[phrasing])
    exact = _exact(model)
    assert exact.structure.n_colours == 2, phrasing
    assert exact.setup_report["structure"] == "graph"
    logp = model.compile_logp()
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.integers(0, 2, N)
        total, ratios = exact(x)
        base = logp({"x": x})
        for i in range(N):
            y = x.copy()
            y[i] = 1 - y[i]
            assert ratios[i] == pytest.approx(logp({"x": y}) - base, abs=1e-9)


def test_a_product_of_the_block_with_itself_still_couples():
    """``s @ W @ s`` couples every pair W does: no phrasing rule may separate it."""
    coupling = np.triu(_rng.normal(size=(N, N)), 1)
    model = _lattice(lambda s: s @ pt.as_tensor(coupling) @ s)
    assert _exact(model).structure.n_colours == N


@pytest.mark.parametrize("phrasing", ["sum", "dot"])
def test_register_sweeps_every_phrasing_with_blocked_gibbs(phrasing):
    model = _lattice(FIELDS[phrasing])
    choice = pmd.recommend([model["x"]], model=model)
    assert choice.step is pmd.BlockedGibbs, choice.reason


K = 3
_GRID = np.arange(N).reshape(L, L)
#: the edges of the lattice as a constant index list
SRC = np.r_[_GRID[1:].ravel(), _GRID[:, 1:].ravel()]
DST = np.r_[_GRID[:-1].ravel(), _GRID[:, :-1].ravel()]

#: a Potts lattice's agreement count, written as users write it (z the labels)
AGREEMENTS = {
    "slices": lambda z: (pt.sum(pt.eq(z.reshape((L, L))[1:], z.reshape((L, L))[:-1]))
                         + pt.sum(pt.eq(z.reshape((L, L))[:, 1:], z.reshape((L, L))[:, :-1]))),
    "edge-list": lambda z: pt.sum(pt.eq(z[SRC], z[DST])),
    "one-hot": lambda z: pt.sum(pt.eye(K)[z][SRC] * pt.eye(K)[z][DST]),
    "one-hot-grid": lambda z: (
        pt.sum(pt.eye(K)[z].reshape((L, L, K))[1:] * pt.eye(K)[z].reshape((L, L, K))[:-1])
        + pt.sum(pt.eye(K)[z].reshape((L, L, K))[:, 1:]
                 * pt.eye(K)[z].reshape((L, L, K))[:, :-1])),
    "deterministic": lambda z: pt.sum(pm.Deterministic("agree", pt.eq(z[SRC], z[DST]))),
    "dot-of-one-hot": lambda z: pt.sum(pt.eye(K)[z][SRC] @ np.eye(K) * pt.eye(K)[z][DST]),
}


def _potts(agreements, as_likelihood: bool = False) -> pm.Model:
    with pm.Model() as model:
        z = pm.Categorical("z", np.ones(K) / K, shape=N)
        if as_likelihood:  # the same density as the likelihood of a CustomDist
            pm.CustomDist("lattice", z, logp=lambda value, labels: 0.5 * agreements(labels)
                          + 0.0 * value.sum(), observed=np.zeros(1))
        else:
            pm.Potential("lattice", 0.5 * agreements(z))
    return model


@pytest.mark.parametrize("phrasing", sorted(AGREEMENTS) + ["customdist"])
def test_every_phrasing_of_a_potts_lattice_is_two_proven_colours(phrasing):
    if phrasing == "customdist":
        model = _potts(AGREEMENTS["edge-list"], as_likelihood=True)
    else:
        model = _potts(AGREEMENTS[phrasing])
    point = model.initial_point()
    value_vars = [model.rvs_to_values[model["z"]]]
    exact = ExactRatios(model, value_vars, point,
                        make_shared_replacements(point, value_vars, model),
                        n_categories=np.full(N, K))
    assert exact.structure.n_colours == 2 and exact.proven, exact.setup_report
    logp = model.compile_logp()
    z = np.random.default_rng(2).integers(0, K, N)
    _, table = exact(z)
    base = logp({"z": z})
    for i in range(N):
        for v in range(K):
            if v == z[i]:
                assert np.isnan(table[i, v])
                continue
            y = z.copy()
            y[i] = v
            assert table[i, v] == pytest.approx(logp({"z": y}) - base, abs=1e-9)
