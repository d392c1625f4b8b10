"""recommend() and the automatic choice register() makes: BlockedGibbs where few colours
cover the block, ALBP where the couplings are dense."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

import pymc_discrete as pmd
from pymc_discrete.example_models import ising_model
from pymc_discrete.pymc.choose import GIBBS_MAX_COLOURS, AutoStep


def test_independent_indicators_are_one_colour_for_blocked_gibbs():
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        z = pm.Bernoulli("z", p, shape=300)
        pm.Bernoulli("y", z * p, observed=np.zeros(300, dtype=int))
        choice = pmd.recommend([z])
    assert choice.step is pmd.BlockedGibbs and choice.n_colours == 1
    assert "1 colour cover the 300 sites of z" in choice.reason


def test_a_lattice_is_swept_by_blocked_gibbs():
    with ising_model(10):
        choice = pmd.recommend()
    assert choice.step is pmd.BlockedGibbs and choice.n_colours == 2


def test_dense_couplings_go_to_albp():
    n = GIBBS_MAX_COLOURS + 8
    rng = np.random.default_rng(0)
    w = rng.normal(0, 0.1, (n, n))
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.5, shape=n)
        xf = pt.cast(x, "float64")
        pm.Potential("dense", xf @ pt.as_tensor(w) @ xf)
        choice = pmd.recommend()
        step = AutoStep(model=model)
    assert choice.step is pmd.ALBP and choice.n_colours == n
    assert "dense" in choice.reason
    assert isinstance(step, pmd.ALBP) and "dense" in step.choice_reason


def test_auto_step_shares_the_structure_it_read_with_the_gibbs_step():
    """The BlockedGibbs built on the structure recommend() read must see the continuous
    variables move (they reach its compiled terms through the same shared variables)."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1)
        z = pm.Bernoulli("z", pm.math.sigmoid(mu), shape=5)
        step = AutoStep([z], model=model)
    assert isinstance(step, pmd.BlockedGibbs)
    names = set(step.shared)
    assert names == {"mu"}
    assert step._exact.shared is not None
    assert {s for s in step._exact.shared.values()} == set(step.shared.values())
