"""Finite integer variables beyond Bernoulli and Categorical (DiscreteUniform, Binomial,
BetaBinomial) as sites with an offset and K values; a clear error for infinite support."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_discrete as pmd
from pymc_discrete.pymc.choosing import recommend as recommend_module
from tests.pymc.joint import assert_joint_frequencies_match, enumerate_block

STEPS = {
    "gibbs": lambda v: pmd.BlockedGibbs(v),
    "albp-exact": lambda v: pmd.ALBP(v, proposal="exact"),
    "pas-exact": lambda v: pmd.PAS(v, proposal="exact"),
    "arwm": lambda v: pmd.ARWM(v),
}


def _finite_integer_block() -> pm.Model:
    """A switch point on 3..8, two latent Binomial counts (n = 3 and 2) and a BetaBinomial
    (n = 2), coupled through potentials."""
    with pm.Model() as model:
        s = pm.DiscreteUniform("s", 3, 8)
        b = pm.Binomial("b", n=np.array([3, 2]), p=0.4, shape=2)
        c = pm.BetaBinomial("c", n=2, alpha=1.5, beta=0.8)
        pm.Potential("coupling", 0.3 * pt.switch(s >= 6, b[0], -b[1]) - 0.2 * c * b[1]
                     + 0.15 * s * (c - 1))
    return model


@pytest.mark.parametrize("step", sorted(STEPS))
def test_joint_distribution_of_finite_integer_sites(step):
    model = _finite_integer_block()
    names = ["s", "b", "c"]
    states, probs = enumerate_block(model, names, ranges={"s": (3, 8), "b": (0, 3), "c": (0, 2)})
    with model:
        built = STEPS[step]([model[n] for n in names])
        idata = pm.sample(draws=3000, tune=500, chains=2, cores=1, step=[built],
                          random_seed=11, progressbar=False, compute_convergence_checks=False)
    draws = idata.posterior
    assert int(draws["s"].min()) >= 3 and int(draws["s"].max()) <= 8
    assert int(draws["b"].values[..., 1].max()) <= 2  # its own n
    assert_joint_frequencies_match(idata, names, states, probs)


def test_the_gradient_proposal_falls_back_to_exact_ratios_with_a_reason():
    with _finite_integer_block() as model:
        with pytest.warns(pmd.RelaxationWarning, match="no relaxation"):
            step = pmd.ALBP([model["s"]], proposal="gradient")
    assert step.proposal == "exact"


def _change_point(years, counts) -> pm.Model:
    with pm.Model() as model:
        switch = pm.DiscreteUniform("switch", years.min(), years.max())
        early = pm.Exponential("early", 1.0)
        late = pm.Exponential("late", 1.0)
        pm.Poisson("d", pm.math.switch(switch >= years, early, late), observed=counts)
    return model


def test_a_large_sum_over_a_switch_point_is_drawn_by_blocked_gibbs(monkeypatch):
    """More than COLLAPSE_MAX_VALUES values and a sum above COLLAPSE_SMALL_SUM term
    evaluations: BlockedGibbs draws the switch from its exact conditional, saying why."""
    years = np.arange(1900, 1940)
    model = _change_point(years, np.ones(years.size, dtype=np.int64))
    monkeypatch.setattr(recommend_module, "COLLAPSE_SMALL_SUM", 40 * 40)
    choice = pmd.recommend(model=model)
    assert choice.step is pmd.BlockedGibbs and "not summed out" in choice.reason
    assert "40 times at every NUTS step" in choice.reason


def test_change_point_register_sums_a_small_switch_out_and_matches_the_summed_out_model():
    """40 switch years, 41 terms: the sum (40 x 41 term evaluations, at most
    COLLAPSE_SMALL_SUM) is summed out for NUTS and the switch drawn from its conditional."""
    rng = np.random.default_rng(3)
    years = np.arange(1900, 1940)
    counts = rng.poisson(np.where(years >= 1925, 1.0, 3.0))
    model = _change_point(years, counts)
    choice = pmd.recommend(model=model)
    assert choice.step is pmd.CollapsedNUTS and "switch is one site" in choice.reason
    pmd.register()
    try:
        with model:
            idata = pm.sample(draws=1000, tune=500, chains=2, cores=1, random_seed=1,
                              progressbar=False, compute_convergence_checks=False)
    finally:
        pmd.unregister()
    # the posterior of the switch point given the rates, averaged over the draws, is the
    # summed-out model's; compare the switch point's posterior mean with that of the
    # conditionals (Rao-Blackwellised), within 4 MCSE
    import arviz as az

    e = idata.posterior["early"].values.ravel()
    l_ = idata.posterior["late"].values.ravel()
    cand = years[:, None]
    rates = np.where(cand[None] >= years[None, None, :], e[:, None, None], l_[:, None, None])
    lp = (counts * np.log(rates) - rates).sum(-1)
    w = np.exp(lp - lp.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    rao_blackwell = float((w * years).sum(axis=1).mean())
    mean = float(idata.posterior["switch"].values.mean())
    mcse = float(az.mcse(idata, var_names=["switch"])["switch"])
    assert abs(mean - rao_blackwell) < 4 * mcse + 1e-9, (mean, rao_blackwell, mcse)


def test_infinite_support_gets_a_clear_error():
    with pm.Model():
        k = pm.Poisson("k", 3.0)
        with pytest.raises(TypeError, match="infinite"):
            pmd.BlockedGibbs([k])


def test_bounds_that_depend_on_a_free_variable_are_refused():
    with pm.Model():
        n = pm.DiscreteUniform("n", 2, 5)
        k = pm.Binomial("k", n=n, p=0.5)
        with pytest.raises(TypeError, match="depends on a free variable"):
            pmd.BlockedGibbs([k])


def test_too_many_values_are_refused():
    with pm.Model():
        k = pm.Binomial("k", n=100_000, p=0.5)
        with pytest.raises(ValueError, match="values"):
            pmd.BlockedGibbs([k])
