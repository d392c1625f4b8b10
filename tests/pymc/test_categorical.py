"""Categorical variables (and blocks mixing Bernoulli and Categorical) inside pm.sample,
against enumeration."""

from __future__ import annotations

import itertools
import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy.special import gammaln

import pymc_discrete as pmd
from tests.pymc.checks import one_hot_means_within_mcse

N_MCSE = 4.0


def _sample(model, step, **kwargs):
    kwargs = {"draws": 2500, "tune": 500, "chains": 2, "cores": 1, "random_seed": 11,
              "progressbar": False, "compute_convergence_checks": False} | kwargs
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return pm.sample(step=step, **kwargs)


@pytest.mark.parametrize("cls", [pmd.ALBP, pmd.ARWM], ids=["albp", "arwm"])
def test_potts_marginals_match_enumeration(potts, cls):
    model, truth = potts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmd.RelaxationWarning)
        step = cls([model["z"]], model=model)
    assert not step.is_binary and list(step.n_categories) == [3] * 4
    idata = _sample(model, step)
    one_hot_means_within_mcse(idata, "z", truth)


def test_potts_relaxes_to_one_hot_with_exact_gradient_ratios(potts):
    """Labels compared with == relax to sums of one-hot products: the Potts log density is
    linear in each site's one-hot vector, so the gradient ratios are exact."""
    model, _ = potts
    with warnings.catch_warnings():
        warnings.simplefilter("error", pmd.RelaxationWarning)
        step = pmd.ALBP([model["z"]], model=model)
    assert step.proposal == "gradient" and step.ratios_are_exact
    exact = pmd.ALBP([model["z"]], model=model, proposal="exact")
    fn = model.compile_logp()
    for x in itertools.product(range(3), repeat=4):
        x = np.array(x)
        relaxed, table = step._logp_and_ratios(x)
        assert relaxed == pytest.approx(fn({"z": x}), rel=1e-12, abs=1e-10)
        np.testing.assert_allclose(table, exact._logp_and_ratios(x)[1], rtol=1e-9, atol=1e-9)


def test_categorical_used_in_an_unrelaxable_way_falls_back_to_exact():
    with pm.Model() as model:
        z = pm.Categorical("z", [0.3, 0.3, 0.4], shape=3)
        pm.Potential("parity", 0.7 * pt.mod(z.sum(), 2))
    with pytest.warns(pmd.RelaxationWarning, match="mod"):
        step = pmd.ALBP([z], model=model, proposal="gradient")
    assert step.proposal == "exact" and step.ratios_are_exact


ALPHA = np.array([1.0, 2.0, 3.0])
MU = np.array([-2.0, 0.0, 2.5])
Y = np.array([-1.7, 0.4, 2.2])


@pytest.mark.slow
def test_mixture_labels_with_a_dirichlet_sampled_by_nuts():
    """y_j ~ N(mu[z_j], 1), z_j ~ Categorical(w), w ~ Dirichlet(alpha): labels by ALBP,
    w by NUTS; truth by summing the Dirichlet-multinomial over all 27 labellings."""
    with pm.Model() as model:
        w = pm.Dirichlet("w", ALPHA)
        z = pm.Categorical("z", w, shape=3)
        pm.Normal("y", mu=pt.as_tensor(MU)[z], sigma=1.0, observed=Y)
    states = np.array(list(itertools.product(range(3), repeat=3)))
    logps, w_means = [], []
    for s in states:
        counts = np.bincount(s, minlength=3)
        lp = gammaln(ALPHA.sum()) - gammaln(ALPHA.sum() + 3)
        lp += (gammaln(ALPHA + counts) - gammaln(ALPHA)).sum()
        lp += -0.5 * ((Y - MU[s]) ** 2).sum()
        logps.append(lp)
        w_means.append((ALPHA + counts) / (ALPHA.sum() + 3))
    p = np.exp(np.array(logps) - max(logps))
    p /= p.sum()
    truth = np.array([[p[states[:, i] == c].sum() for c in range(3)] for i in range(3)])
    with warnings.catch_warnings():
        warnings.simplefilter("error", pmd.RelaxationWarning)  # mu[z] relaxes
        step = pmd.ALBP([z], model=model, proposal="gradient")
    assert step.proposal == "gradient"
    idata = _sample(model, [step])
    one_hot_means_within_mcse(idata, "z", truth)
    w_truth = p @ np.array(w_means)
    mean = idata.posterior["w"].mean(("chain", "draw")).values
    mcse = az.mcse(idata, var_names=["w"])["w"].values
    assert np.all(np.abs(mean - w_truth) <= N_MCSE * mcse), (mean, w_truth, mcse)


def test_block_mixing_bernoulli_and_categorical():
    with pm.Model() as model:
        g = pm.Bernoulli("g", 0.4)
        z = pm.Categorical("z", [0.2, 0.3, 0.5], shape=2)
        pm.Potential("tie", 1.1 * g * pt.eq(z[0], 2) - 0.6 * pt.eq(z[0], z[1]))
    states = list(itertools.product(range(2), range(3), range(3)))
    logps = [np.log([0.6, 0.4][a]) + np.log([0.2, 0.3, 0.5])[[b, c]].sum()
             + 1.1 * a * (b == 2) - 0.6 * (b == c) for a, b, c in states]
    p = np.exp(np.array(logps))
    p /= p.sum()
    states = np.array(states)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pmd.RelaxationWarning)
        step = pmd.ALBP([g, z], model=model)
    assert list(step.n_categories) == [2, 3, 3] and step.ratios_are_exact
    idata = _sample(model, step)
    g_draws = idata.posterior["g"].values
    mean, mcse = g_draws.mean(), float(az.mcse(g_draws.astype(float)))
    assert abs(mean - p @ states[:, 0]) <= N_MCSE * mcse
    truth = np.array([[p[states[:, 1 + i] == c].sum() for c in range(3)] for i in range(2)])
    one_hot_means_within_mcse(idata, "z", truth)


def test_categorical_bad_input():
    with pm.Model() as model:
        z = pm.Categorical("z", [0.2, 0.8], shape=3)
        one = pm.Categorical("one", [1.0])
    point = model.initial_point()
    point["z"] = np.array([0, 2, 1])
    with pytest.raises(ValueError, match=r"outside their range \{0, ..., 1\}"):
        pmd.ARWM([z], model=model, initial_point=point)
    with pytest.raises(ValueError, match="'one' has sites with a single value"):
        pmd.ARWM([one], model=model)


@pytest.mark.parametrize("index", ["rows", "table", "columns"])
def test_label_indexing_relaxes_exactly_or_falls_back(index):
    """mu[z] and table[arange, z] relax to contractions with the one-hot; table[:, z]
    (a label on the second axis) is not covered and falls back to exact ratios."""
    table = np.array([[0.3, -1.0, 0.8], [1.2, 0.1, -0.4], [-0.7, 0.9, 0.2], [0.5, 0.5, -1.1]])
    with pm.Model() as model:
        z = pm.Categorical("z", [0.2, 0.3, 0.5], shape=3)
        t = pt.as_tensor(table)
        if index == "rows":
            term = t[z].sum()
        elif index == "table":
            term = t[:3][pt.arange(3), z].sum()
        else:
            term = t[:3][:, z].sum()
        pm.Potential("term", term)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmd.RelaxationWarning)
        step = pmd.ALBP([z], model=model)
    assert step.proposal == ("exact" if index == "columns" else "gradient")
    fn = model.compile_logp()
    for x in itertools.product(range(3), repeat=3):
        x = np.array(x)
        assert step._logp_and_ratios(x)[0] == pytest.approx(fn({"z": x}), rel=1e-10)


def test_categorical_chains_reproduce_across_cores_and_register(potts):
    """Same seed, same draws with cores 1 and 2 (the step pickles into worker processes),
    and register() makes pm.sample pick the package's step for Categorical variables
    too."""
    from pymc.sampling.mcmc import assign_step_methods

    model, _ = potts
    step = pmd.ALBP([model["z"]], model=model)
    runs = [_sample(model, step, draws=100, tune=100, cores=cores) for cores in (1, 2)]
    np.testing.assert_array_equal(runs[0].posterior["z"].values, runs[1].posterior["z"].values)
    pmd.register()
    try:
        _, selected = assign_step_methods(model, None)
        assert pmd.pymc.choosing.auto_step.AutoStep in selected
    finally:
        pmd.unregister()
