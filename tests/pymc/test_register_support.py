"""register() never makes pm.sample() fail: competence looks at a variable's support (its
number of values, bounds fixed or not), what the package would refuse goes to PyMC's own
steps, and the log says which variables went where."""

from __future__ import annotations

import logging

import arviz as az
import numpy as np
import pymc as pm
import pytest
from pymc.step_methods.compound import Competence

import pymc_discrete as pmd
from pymc_discrete.pymc.choosing.auto_step import AutoStep

#: variables PyMC samples (with Metropolis) that the package's steps refuse, and a word
#: of the reason the log gives for each
REFUSED = {
    "binomial_with_too_many_values": (
        lambda: pm.Binomial("x", n=10_000, p=0.5), "10001 values"),
    "discrete_uniform_with_too_many_values": (
        lambda: pm.DiscreteUniform("x", 0, 5000), "5001 values"),
    "binomial_with_a_free_n": (
        lambda: pm.Binomial("x", n=pm.DiscreteUniform("n", 2, 6), p=0.5),
        "depends on a free variable"),
    "discrete_uniform_with_a_free_bound": (
        lambda: pm.DiscreteUniform("x", 0, pm.DiscreteUniform("n", 2, 6)),
        "depends on a free variable"),
    "multinomial": (lambda: pm.Multinomial("x", 5, [0.2, 0.3, 0.5]), "tied by their sum"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_competence_refuses_what_the_steps_would_refuse(case):
    build, _ = REFUSED[case]
    with pm.Model():
        x = build()
    for step in (pmd.ALBP, pmd.ARWM, pmd.PAS, pmd.BlockedGibbs, AutoStep):
        assert step.competence(x, False) == Competence.INCOMPATIBLE, step


def test_competence_keeps_supported_variables():
    with pm.Model():
        variables = [
            pm.Bernoulli("b", 0.3, shape=4),
            pm.Categorical("c", [0.2, 0.3, 0.5]),
            pm.Binomial("k", n=4096 - 1, p=0.5),  # 4096 values: the largest allowed
            pm.DiscreteUniform("u", -3, 7),
            pm.BetaBinomial("bb", alpha=2.0, beta=3.0, n=np.array([3, 5, 8])),
            pm.Binomial("data_n", n=pm.Data("n_trials", np.array([4, 6])), p=0.4),
        ]
    for var in variables:
        assert pmd.ALBP.competence(var, False) == Competence.IDEAL, var.name
        assert pmd.BlockedGibbs.competence(var, False) == Competence.COMPATIBLE, var.name


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_register_leaves_refused_variables_to_pymc(case, registered, caplog):
    """A model PyMC samples is sampled with register() too: the refused variable goes to
    PyMC's own step, the package's discrete variables to the package, and the log says
    both."""
    build, why = REFUSED[case]
    with pm.Model():
        x = build()
        pm.Bernoulli("z", 0.3, shape=3)
        with caplog.at_level(logging.INFO, logger="pymc"):
            idata = pm.sample(30, tune=30, chains=1, progressbar=False, random_seed=1,
                              compute_convergence_checks=False)
    assert idata.posterior["x"].shape[:2] == (1, 30)
    assert set(np.unique(idata.posterior["z"].values)) <= {0, 1}
    log = caplog.text
    assert f"pymc_discrete leaves {x.name} to PyMC's own steps" in log
    assert why in log
    assert "pymc_discrete chose" in log and "z]" in log
    assert f"Metropolis: [{x.name}" in log or f", {x.name}]" in log


def test_a_model_mixing_supported_and_refused_variables(registered, caplog):
    """Supported blocks go to the package's steps, the others to PyMC, in one model with
    continuous parameters; the supported one is sampled right."""
    with pm.Model():
        p = pm.Beta("p", 2, 2)
        z = pm.Bernoulli("z", 0.25, shape=5)
        k = pm.Binomial("k", n=6, p=p)
        big = pm.Binomial("big", n=20_000, p=p)
        count = pm.Poisson("count", 2.0)
        with caplog.at_level(logging.INFO, logger="pymc"):
            idata = pm.sample(400, tune=200, chains=1, progressbar=False, random_seed=3,
                              compute_convergence_checks=False)
    log = caplog.text
    assert "pymc_discrete leaves big to PyMC's own steps" in log
    for name in ("z", "k", "count"):
        assert f"pymc_discrete leaves {name} " not in log
    assert "chose CountLBP for [count]" in log  # a latent count beside finite variables
    # the count is independent of everything: its prior mean, within 4 MCSE
    draws = idata.posterior["count"].values
    assert abs(draws.mean() - 2.0) < 4 * float(az.mcse(draws.astype(float)))
    # z is independent of everything: its prior mean, within 4 Monte Carlo standard
    # errors (of the share of ones per draw, ArviZ's MCSE over the chain)
    share = idata.posterior["z"].mean("z_dim_0")
    mcse = float(az.mcse(share.values))
    assert abs(float(share.mean()) - 0.25) < 4 * mcse, (float(share.mean()), mcse)
    assert big.name in idata.posterior and count.name in idata.posterior
    assert k.name in idata.posterior and z.name in idata.posterior


def test_an_explicit_step_on_a_refused_variable_says_why():
    with pm.Model():
        x = pm.Multinomial("x", 5, [0.2, 0.3, 0.5])
        with pytest.raises(TypeError, match="tied by their sum"):
            pmd.BlockedGibbs([x])
        y = pm.Binomial("y", n=10_000, p=0.5)
        with pytest.raises(ValueError, match="10001 values"):
            pmd.ALBP([y])
