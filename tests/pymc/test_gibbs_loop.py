"""BlockedGibbs with ``compiled_loop=True``: the Python sweep's chain draw for draw (proven
and probed colourings, failing parameter checks, categorical sites, value offsets, other
variables moved by NUTS), exact joint distributions, reproducibility across cores, and
bad input."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_discrete as pmd
from pymc_discrete.example_models import ising_model
from tests.pymc.joint import assert_joint_frequencies_match, enumerate_block
from tests.pymc.test_blocked_gibbs import _pattern_model, _probed_only


def _failing_check() -> pm.Model:
    """A parameter check fails where z0 = z1 = 1 (the colour's draw is then taken site by
    site and corrected), beside a pairwise potential."""
    with pm.Model() as model:
        z = pm.Bernoulli("z", 0.5, shape=5, initval=np.zeros(5, dtype=int))
        pm.Bernoulli("y", 0.2 + 0.5 * z[0] + 0.4 * z[1] + 0.1 * z[2], observed=1)
        pm.Potential("pair", 0.6 * z[3] * z[4] - 0.3 * z[2] * z[3])
    return model


def _categorical_with_offsets() -> pm.Model:
    """Categorical sites and a DiscreteUniform on 2..6 (site indices offset by 2) in
    one block, coupled by a potential, with a continuous variable for NUTS."""
    with pm.Model() as model:
        c = pm.Categorical("c", p=np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]]), shape=2)
        d = pm.DiscreteUniform("d", 2, 6)
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Potential("tie", 0.8 * pt.eq(c[0], c[1]) + mu * (d - 4) * 0.3
                     - 0.5 * pt.eq(c[1], 2) * d)
    return model


def _step(model, name, **kwargs):
    if name == "probed":
        return pmd.BlockedGibbs([model["x"]], model=model, exact_ratios=_probed_only(model),
                                **kwargs)
    names = {"categorical-offsets": ["c", "d"], "failing-check": ["z"], "ising": ["x"]}[name]
    return pmd.BlockedGibbs([model[v] for v in names], model=model, **kwargs)


CASES = {
    "ising": lambda: ising_model(4),
    "probed": _pattern_model,
    "failing-check": _failing_check,
    "categorical-offsets": _categorical_with_offsets,
}


def _run(model, step, seed, **kwargs):
    with model:
        return pm.sample(step=[step], chains=1, cores=1, random_seed=seed, progressbar=False,
                         compute_convergence_checks=False, discard_tuned_samples=False,
                         **{"draws": 200, "tune": 50, **kwargs})


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_sweeps_give_the_python_sweeps_chain(case):
    """The same NUMBA-mode terms, the same seed: the compiled loop and the Python sweep
    give the same draws of every variable (NUTS's too) and the same stats, to the bit."""
    model = CASES[case]()
    step = _step(model, case, compiled_loop=True, sweeps_per_draw=2)
    assert step.proven == (case != "probed")
    exact = step._exact
    exact._fn = exact.compiled_terms().fn  # the Python sweep on the same compiled terms
    runs = []
    for compiled in (True, False):
        step.compiled_loop = compiled
        step._rebuild_kernel()
        runs.append(_run(model, step, seed=8))
    compiled, python = runs
    for name in compiled.posterior.data_vars:
        np.testing.assert_array_equal(compiled.posterior[name].values,
                                      python.posterior[name].values, err_msg=name)
    for group in ("sample_stats", "warmup_sample_stats"):
        for name in compiled[group].data_vars:
            if "time" in name or "perf_counter" in name:
                continue  # NUTS's clocks
            np.testing.assert_array_equal(compiled[group][name].values,
                                          python[group][name].values, err_msg=name)
    assert compiled.sample_stats["jump_distance"].values.sum() > 0
    if case == "probed":  # the corrected path ran and rejected some
        assert compiled.sample_stats["accept"].values.min() < 1.0


@pytest.mark.parametrize("case", ["probed", "failing-check"])
def test_compiled_sweeps_match_the_joint_distribution(case):
    """Where the compiled loop takes its corrected paths (a probed colouring that misses
    couplings; a check failing inside a colour), the joint frequencies are exact."""
    model = CASES[case]()
    name = "x" if case == "probed" else "z"
    states, probs = enumerate_block(model, [name])
    step = _step(model, case, compiled_loop=True, sweeps_per_draw=2)
    with model:
        idata = pm.sample(draws=3000, tune=200, chains=2, cores=1, step=[step], random_seed=5,
                          progressbar=False, compute_convergence_checks=False)
    assert_joint_frequencies_match(idata, [name], states, probs)


def test_compiled_sweeps_next_to_nuts_match_the_joint_distribution():
    """mu moves between draws (NUTS): the loop reads its new value every draw. The joint
    distribution of (c, d) and the mean of mu are checked against enumeration."""
    model = _categorical_with_offsets()
    step = _step(model, "categorical-offsets", compiled_loop=True, sweeps_per_draw=2)
    with model:
        idata = pm.sample(draws=2000, tune=500, chains=2, cores=1, step=[step],
                          random_seed=3, progressbar=False, compute_convergence_checks=False)
    # (c, d, mu): mu given (c, d) is Normal(0.3 (d - 4), 1) up to the factor
    # exp(0.045 (d - 4)^2) the integral over mu leaves on the states
    cs = [(a, b, d) for a in range(3) for b in range(3) for d in range(2, 7)]
    p = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
    logw = np.array([np.log(p[0, a]) + np.log(p[1, b]) + 0.8 * (a == b) - 0.5 * (b == 2) * d
                     + 0.5 * (0.3 * (d - 4)) ** 2 for a, b, d in cs])
    w = np.exp(logw - logw.max())
    w /= w.sum()
    c, d = idata.posterior["c"].values, idata.posterior["d"].values
    import arviz as az

    for (a, b, v), want in zip(cs, w, strict=True):
        hits = ((c[..., 0] == a) & (c[..., 1] == b) & (d == v)).astype(float)
        se = np.sqrt(want * (1 - want) / float(az.ess(hits)))
        assert abs(hits.mean() - want) < 5 * se, ((a, b, v), hits.mean(), want, se)
    mu_mean = float((w * np.array([0.3 * (d - 4) for _, _, d in cs])).sum())
    mu = idata.posterior["mu"].values.ravel()
    mcse = float(az.mcse(idata, var_names=["mu"])["mu"])
    assert abs(mu.mean() - mu_mean) < 4 * mcse


def test_compiled_sweeps_same_seed_same_draws_with_one_or_two_cores():
    model = ising_model(4)
    step = _step(model, "ising", compiled_loop=True, sweeps_per_draw=2)
    runs = []
    for cores in (1, 2):
        with model:
            runs.append(pm.sample(draws=100, tune=50, chains=2, cores=cores, step=[step],
                                  random_seed=7, progressbar=False,
                                  compute_convergence_checks=False))
    np.testing.assert_array_equal(runs[0].posterior["x"].values, runs[1].posterior["x"].values)


def test_compiled_sweeps_refuse_bad_input():
    model = ising_model(3)
    with pytest.raises(ValueError, match="compiled_loop"):
        pmd.BlockedGibbs([model["x"]], model=model, compiled_loop="yes")
