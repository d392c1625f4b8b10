"""The relaxed log density equals the exact one at integer points, its gradient ratios
are exact where the model is multilinear, and unrelaxable models get a clear error."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_discrete as pmd
from pymc_discrete.pymc.model.compiled import compile_gradient_ratios
from tests.exact import all_states


def _relaxed_vs_exact(model, names):
    """Relaxed (logp, ratios) and the exact logp and single-flip ratios at every binary
    point of the block, other variables at the initial point."""
    step = pmd.ALBP([model[n] for n in names], model=model, proposal="gradient")
    point = model.initial_point()
    exact_fn = model.compile_logp()
    sizes = [point[model.rvs_to_values[model[n]].name].size for n in names]
    n = sum(sizes)

    def to_point(x):
        p = dict(point)
        start = 0
        for name, size in zip(names, sizes):
            vname = model.rvs_to_values[model[name]].name
            p[vname] = x[start : start + size].reshape(point[vname].shape).astype(np.int64)
            start += size
        return p

    rows = []
    for x in all_states(n):
        relaxed, ratios = step._logp_and_ratios(x)
        exact = exact_fn(to_point(x))
        flips = []
        for i in range(n):
            y = x.copy()
            y[i] = 1 - y[i]
            flips.append(exact_fn(to_point(y)) - exact)
        rows.append((relaxed, exact, ratios, np.array(flips)))
    return rows


def test_relaxation_is_exact_at_integer_points_with_continuous_neighbours():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 4))
    with pm.Model() as model:
        p = pm.Beta("p", 2, 3)
        g = pm.Bernoulli("g", p, shape=4)
        beta = pm.Normal("beta", 0, 1, shape=4)
        pm.Normal("y", mu=pt.as_tensor(X) @ (g * beta), sigma=0.5, observed=rng.normal(size=8))
    for relaxed, exact, ratios, _flips in _relaxed_vs_exact(model, ["g"]):
        assert relaxed == pytest.approx(exact, rel=1e-12, abs=1e-10)
        assert np.all(np.isfinite(ratios))


def test_relaxation_of_several_variables_with_a_hierarchy_and_couplings():
    J = np.array([[0.0, 0.7, -0.4], [0.7, 0.0, 0.3], [-0.4, 0.3, 0.0]])
    with pm.Model() as model:
        a = pm.Bernoulli("a", 0.3)
        b = pm.Bernoulli("b", 0.2 + 0.6 * a, shape=2)
        c = pm.Bernoulli("c", logit_p=pt.as_tensor([0.5, -1.0, 2.0]), shape=3)
        s = 2.0 * c - 1.0
        pm.Potential("coupling", 0.5 * s @ pt.as_tensor(J) @ s + b.sum() * c[0])
    rows = _relaxed_vs_exact(model, ["a", "b", "c"])
    for relaxed, exact, ratios, flips in rows:
        assert relaxed == pytest.approx(exact, rel=1e-12, abs=1e-10)
        # the model is multilinear in b and c: their gradient ratios are exact flips
        # (a enters b's prior through log(0.2 + 0.6 a), so its ratio is first-order)
        np.testing.assert_allclose(ratios[1:], flips[1:], rtol=1e-9, atol=1e-9)


def test_integer_arithmetic_on_the_values_is_relaxed():
    """Sums and casts to integers of the value are rebuilt in float."""
    with pm.Model() as model:
        g = pm.Bernoulli("g", 0.4, shape=4)
        k = pt.cast(g, "int64").sum()  # an integer count
        pm.Potential("count", -0.3 * k**2)
    for relaxed, exact, _ratios, _flips in _relaxed_vs_exact(model, ["g"]):
        assert relaxed == pytest.approx(exact, rel=1e-12, abs=1e-10)


@pytest.mark.parametrize(
    "build,op",
    [
        (lambda g: pt.switch(pt.eq(g[0], 1), 1.0, 0.0), "eq"),
        (lambda g: 0.5 * pt.mod(g.sum(), 2), "mod"),
        (lambda g: pt.switch(g[1], 0.3, -0.2), "switch"),
        (lambda g: pt.as_tensor(np.array([0.1, 0.9]))[g].sum(), "AdvancedSubtensor"),
    ],
)
def test_unrelaxable_models_get_an_error_naming_the_operation(build, op):
    with pm.Model() as model:
        g = pm.Bernoulli("g", 0.3, shape=3)
        pm.Potential("term", build(g))
    value = model.rvs_to_values[g]
    with pytest.raises(pmd.RelaxationError, match=op):
        compile_gradient_ratios(model, [value], [(3,)], [False], [2], {})
    # the step falls back to exact ratios and says why, naming the operation
    with pytest.warns(pmd.RelaxationWarning, match=op):
        step = pmd.ALBP([g], model=model, proposal="gradient")
    assert step.proposal == "exact" and op in step.fallback_reason
    assert step.ratios_are_exact
    # the default, proposal="auto", chooses exact ratios without a warning, and says why
    with warnings.catch_warnings():
        warnings.simplefilter("error", pmd.RelaxationWarning)
        auto = pmd.ALBP([g], model=model)
    assert auto.proposal == "exact" and op in auto.proposal_reason


def test_auto_keeps_an_exact_gradient_and_replaces_a_poor_one():
    """Pairwise couplings: the gradient's ratios are exact, it is kept. Labels of a
    two-component Gaussian mixture: the one-hot relaxation's ratios are first-order only,
    off by (mu_b - mu_a)^2 / 2, and the gradient proposal accepts far less often than
    exact ratios cost: exact ratios are used (by ALBP; PAS's sqrt weights cancel the
    common offset, and it keeps the gradient there)."""
    with pm.Model():
        g = pm.Bernoulli("g", 0.4, shape=12)
        pm.Potential("couple", 0.8 * (g[1:] * g[:-1]).sum())
        step = pmd.ALBP([g])
    assert step.proposal == "gradient" and "exact local ratios" in step.proposal_reason
    rng = np.random.default_rng(0)
    data = np.r_[rng.normal(-2, 1, 60), rng.normal(2, 1, 60)]
    with pm.Model():
        w = pm.Dirichlet("w", np.ones(2))
        mu = pm.Normal("mu", 0, 3, shape=2, transform=pm.distributions.transforms.ordered,
                       initval=[-1.0, 1.0])
        z = pm.Categorical("z", w, shape=data.size)
        pm.Normal("y", mu[z], 1.0, observed=data)
        step = pmd.ALBP([z])
    assert step.proposal == "exact" and "exact ratios are used" in step.proposal_reason


def test_arwm_needs_no_relaxation():
    with pm.Model():
        g = pm.Bernoulli("g", 0.5, shape=3)
        pm.Potential("term", pt.switch(pt.eq(g[0], 1), 1.0, 0.0))
        step = pmd.ARWM([g])
    assert step.n_sites == 3


def test_auto_choice_does_not_depend_on_timings(monkeypatch):
    """``proposal="auto"`` counts its trials' cost in evaluations of the model instead of
    timing them: with every clock of the process returning noise (a machine under any
    load), ALBP and PAS make the same choice, for the same reason, as without, and run
    the same chain from the same seed."""
    import time

    rng = np.random.default_rng(0)
    data = np.r_[rng.normal(-2, 1, 30), rng.normal(2, 1, 30)]
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(2))
        mu = pm.Normal("mu", 0, 3, shape=2, transform=pm.distributions.transforms.ordered,
                       initval=[-1.0, 1.0])
        z = pm.Categorical("z", w, shape=data.size)
        g = pm.Bernoulli("g", 0.4, shape=12)
        pm.Potential("couple", 0.8 * (g[1:] * g[:-1]).sum() - 1.5 * (g[:6].sum() - 2) ** 2)
        pm.Normal("y", mu[z], 1.0, observed=data)

    def built_and_drawn():
        """The steps' choices, and the draws of a chain run with those very steps (each
        step's construction runs the trial that makes the choice: built once, used for
        both)."""
        steps = pmd.ALBP([z], model=model), pmd.PAS([g], model=model)
        choices = [(s.proposal, s.proposal_reason) for s in steps]
        with model:
            idata = pm.sample(draws=30, tune=30, chains=1, random_seed=5, progressbar=False,
                              compute_convergence_checks=False,
                              step=[*steps, pm.NUTS([w, mu])])
        return choices, (idata.posterior["z"].values, idata.posterior["g"].values)

    quiet, quiet_draws = built_and_drawn()
    assert "counted evaluations" in quiet[0][1] and "counted evaluations" in quiet[1][1], quiet
    noise = np.random.default_rng(1)
    monkeypatch.setattr(time, "perf_counter", lambda: float(noise.uniform(0, 1e6)))
    monkeypatch.setattr(time, "time", lambda: float(noise.uniform(0, 1e6)))
    noisy, noisy_draws = built_and_drawn()
    assert noisy == quiet
    for ours, theirs in zip(noisy_draws, quiet_draws):
        np.testing.assert_array_equal(ours, theirs)
