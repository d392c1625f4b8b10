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
