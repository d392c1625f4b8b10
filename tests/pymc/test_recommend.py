"""recommend() and the automatic choice register() makes: BlockedGibbs where few colours
cover the block, ALBP where the couplings are dense."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_discrete as pmd
from pymc_discrete.example_models import ising_model
from pymc_discrete.pymc.choosing.auto_step import AutoStep
from pymc_discrete.pymc.choosing.recommend import GIBBS_MAX_COLOURS


def test_independent_indicators_next_to_continuous_parameters_are_summed_out():
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        z = pm.Bernoulli("z", p, shape=300)
        pm.Bernoulli("y", z * p, observed=np.zeros(300, dtype=int))
        choice = pmd.recommend([z])
    assert choice.step is pmd.CollapsedNUTS and choice.n_colours == 1
    assert "the 300 sites of z share no term: they are summed out" in choice.reason


def test_independent_indicators_without_continuous_parameters_go_to_blocked_gibbs():
    """Nothing to sum them out of: no continuous variable, or none their terms read."""
    for with_mu in (False, True):
        with pm.Model():
            if with_mu:
                pm.Normal("mu")
            z = pm.Bernoulli("z", 0.3, shape=300)
            pm.Bernoulli("y", z * 0.4, observed=np.zeros(300, dtype=int))
            choice = pmd.recommend([z])
        assert choice.step is pmd.BlockedGibbs and choice.n_colours == 1
        assert "1 colour covers the 300 sites of z" in choice.reason


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


def test_register_prefers_the_package_over_pymcs_discrete_samplers_idempotently():
    """Bernoulli, Categorical and DiscreteUniform variables all go to the package's step
    once registered (PyMC's defaults: BinaryGibbsMetropolis, CategoricalGibbsMetropolis,
    Metropolis); a second register() leaves PyMC's registry as the first left it."""
    from pymc.sampling.mcmc import assign_step_methods
    from pymc.step_methods import STEP_METHODS

    with pm.Model() as model:
        pm.Bernoulli("b", 0.3, shape=2)
        pm.Categorical("c", [0.2, 0.3, 0.5])
        pm.DiscreteUniform("d", 0, 4)
        pm.Normal("mu")
    before = list(STEP_METHODS)
    pmd.register()
    try:
        once = list(STEP_METHODS)
        pmd.register()
        assert list(STEP_METHODS) == once == [AutoStep, *before]
        _, selected = assign_step_methods(model, None)
        assert {v.name for v in selected[AutoStep]} == {"b", "c", "d"}
        assert not {pm.BinaryGibbsMetropolis, pm.CategoricalGibbsMetropolis,
                    pm.Metropolis} & set(selected)
    finally:
        pmd.unregister()
    assert list(STEP_METHODS) == before


def test_the_log_names_the_chosen_step_and_its_proposal(caplog):
    n = GIBBS_MAX_COLOURS + 8
    rng = np.random.default_rng(0)
    w = rng.normal(0, 0.1, (n, n))
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.5, shape=n)
        xf = pt.cast(x, "float64")
        pm.Potential("dense", xf @ pt.as_tensor(w) @ xf)
        with caplog.at_level("INFO", logger="pymc"):
            step = AutoStep(model=model)
    [message] = [r.getMessage() for r in caplog.records if "pymc_discrete chose" in r.getMessage()]
    assert message.startswith(f"pymc_discrete chose ALBP(proposal={step.proposal!r}) for [x]")
    assert step.proposal_reason in message and "dense" in message
    # the exact ratios recommend() compiled are the ones the step uses (not built twice)
    assert step._exact_source is not None
    assert set(step._exact_source.shared.values()) == set(step.shared.values())


def test_auto_step_split_by_variable_builds_each_step_on_its_own_block():
    """blocked=False gives one step per variable: the structure read for the whole block
    is not handed to them (it would index sites of the other variables)."""
    with pm.Model() as model:
        a = pm.Bernoulli("a", 0.5, shape=3)
        b = pm.Bernoulli("b", 0.5, shape=3)
        pm.Potential("pair", 0.5 * (a * b).sum())
        step = AutoStep([a, b], blocked=False)
        idata = pm.sample(step=step, draws=30, tune=30, chains=1, random_seed=1,
                          progressbar=False, compute_convergence_checks=False)
    assert sorted(tuple(s.var_names) for s in step.methods) == [("a",), ("b",)]
    assert idata.posterior["a"].shape == (1, 30, 3)
    with pytest.raises(ValueError, match="compiled for the block"):
        pmd.BlockedGibbs([a], model=model,
                         exact_ratios=pmd.recommend([a, b], model=model).exact_ratios)


def _rain_sprinkler():
    """Rain or the sprinkler wets the grass; given wet grass the posterior sits on
    (rain, no sprinkler) and (no rain, sprinkler), and the path between them goes through
    a state of probability 0.004 (both) or 0 (neither)."""
    model = pm.Model()
    with model:
        rain = pm.Bernoulli("rain", 0.2)
        sprinkler = pm.Bernoulli("sprinkler", pm.math.switch(rain, 0.01, 0.4))
        p_wet = pm.math.switch(rain, pm.math.switch(sprinkler, 0.99, 0.8),
                               pm.math.switch(sprinkler, 0.9, 0.0))
        pm.Bernoulli("wet", p_wet, observed=1)
    return model


def test_a_small_coupled_block_is_drawn_from_its_joint_conditional():
    with _rain_sprinkler():
        choice = pmd.recommend()
    assert choice.step is pmd.JointGibbs and choice.n_colours == 2
    assert "4 joint states" in choice.reason


def test_register_draws_the_two_node_network_like_independent_draws(registered):
    """register() + pm.sample(): joint frequencies within 4 standard errors of the
    enumerated posterior, and an ESS of the indicator near the number of draws (single-site
    Gibbs gets about 20 of 4000)."""
    import arviz as az

    with _rain_sprinkler():
        idata = pm.sample(1000, tune=200, chains=4, cores=1, random_seed=2024,
                          progressbar=False, compute_convergence_checks=False)
    prior = {(0, 0): 0.8 * 0.6, (0, 1): 0.8 * 0.4, (1, 0): 0.2 * 0.99, (1, 1): 0.2 * 0.01}
    wet = {(0, 0): 0.0, (0, 1): 0.9, (1, 0): 0.8, (1, 1): 0.99}
    joint = {s: prior[s] * wet[s] for s in prior}
    total = sum(joint.values())
    rain = idata.posterior["rain"].values.ravel()
    sprinkler = idata.posterior["sprinkler"].values.ravel()
    n = rain.size
    for (r, s), weight in joint.items():
        p = weight / total
        freq = np.mean((rain == r) & (sprinkler == s))
        assert abs(freq - p) <= 4 * np.sqrt(p * (1 - p) / n) + 1e-12, ((r, s), freq, p)
    ess = float(az.ess(idata, var_names=["rain"])["rain"])
    assert ess > 0.7 * n, ess


def test_a_joint_draw_is_chosen_only_while_it_costs_a_few_sweeps():
    """Eight densely coupled indicators (256 joint states, 8 colours: a sweep evaluates
    16 states, the two values of each colour). With nothing else in the model their
    conditional is evaluated once, and the joint draw is chosen; once a continuous
    variable's value changes it every draw, 256 states a draw would cost 16 sweeps, and
    BlockedGibbs sweeps instead."""
    W = np.triu(np.random.default_rng(0).normal(0.0, 0.5, (8, 8)), 1)
    for with_mu in (False, True):
        with pm.Model():
            g = pm.Bernoulli("g", 0.3, shape=8)
            gf = pt.cast(g, "float64")
            pm.Potential("couplings", gf @ W @ gf)
            if with_mu:
                mu = pm.Normal("mu")
                pm.Normal("y", mu * gf.sum(), 1.0, observed=1.0)
            choice = pmd.recommend([g])
        assert choice.n_colours == 8
        if with_mu:
            assert choice.step is pmd.BlockedGibbs
            assert "would cost 16 sweeps a draw" in choice.reason
        else:
            assert choice.step is pmd.JointGibbs
            assert "evaluated once" in choice.reason
