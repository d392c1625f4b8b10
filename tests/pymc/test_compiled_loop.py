"""ALBP with ``compiled_loop=True``: the Python loop's chain, exact marginals next to NUTS,
rejection of impossible proposals, reproducibility across cores, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pymc_discrete as pmd
from tests.pymc.checks import means_within_mcse, one_hot_means_within_mcse, sample


def test_compiled_loop_gives_the_python_loops_chain(coupled_model):
    """Same compiled function, same seed: the compiled loop and the Python loop produce
    the same draws and stats, tuning included (3 steps per draw)."""
    runs = []
    for compiled in (True, False):
        step = pmd.ALBP([coupled_model["x"]], model=coupled_model, steps_per_draw=3,
                        compiled_loop=True, weight="sqrt")
        step.compiled_loop = compiled  # the Python loop around the same NUMBA function
        step._rebuild_kernel()
        runs.append(sample(coupled_model, step, draws=300, tune=300, random_seed=3,
                           discard_tuned_samples=False))
    compiled, python = runs
    np.testing.assert_array_equal(compiled.posterior["x"].values, python.posterior["x"].values)
    for group in ("sample_stats", "warmup_sample_stats"):
        for name in ("accept", "accepted", "scaling", "jump_distance", "n_proposed"):
            np.testing.assert_array_equal(compiled[group][name].values,
                                          python[group][name].values, err_msg=name)
    assert np.unique(compiled.warmup_sample_stats["scaling"].values).size > 1  # it tuned


@pytest.mark.slow
def test_compiled_loop_next_to_nuts_matches_enumeration(mixed_model, mixed_truth):
    """NUTS moves mu between draws: the loop must read mu's new value every draw."""
    g_truth, mu_truth = mixed_truth
    step = pmd.ALBP([mixed_model["g"]], model=mixed_model, steps_per_draw=2, compiled_loop=True)
    idata = sample(mixed_model, [step], random_seed=11)
    means_within_mcse(idata, "g", g_truth)
    means_within_mcse(idata, "mu", mu_truth)


def test_compiled_loop_rejects_proposals_with_minus_inf_logp(forbidden_state):
    """log(1 - prod(x)) forbids the all-ones state (logp -inf, gradient NaN there)."""
    model, truth, start = forbidden_state
    step = pmd.ALBP([model["x"]], model=model, initial_point=start, compiled_loop=True,
                    steps_per_draw=2)
    idata = sample(model, step, initvals={"x": start["x"]}, random_seed=5)
    draws = idata.posterior["x"].values.reshape(-1, 3)
    assert not draws.all(axis=1).any()
    means_within_mcse(idata, "x", truth)
    assert (idata.sample_stats["accept"].values < 1).any()


def test_compiled_loop_same_seed_same_draws_with_one_or_two_cores(coupled_model):
    step = pmd.ALBP([coupled_model["x"]], model=coupled_model, compiled_loop=True,
                    steps_per_draw=2)
    runs = [sample(coupled_model, step, draws=100, tune=100, cores=cores, random_seed=7)
            for cores in (1, 2)]
    np.testing.assert_array_equal(runs[0].posterior["x"].values, runs[1].posterior["x"].values)
    np.testing.assert_array_equal(runs[0].sample_stats["scaling"].values,
                                  runs[1].sample_stats["scaling"].values)


def test_compiled_loop_refuses_bad_input(coupled_model):
    with pytest.raises(ValueError, match="compiled_loop"):
        pmd.ALBP([coupled_model["x"]], model=coupled_model, compiled_loop="yes")


@pytest.mark.parametrize("block", ["binary", "categorical"])
def test_exact_ratio_compiled_loop_gives_the_python_loops_chain(block, coupled_model, potts):
    """Exact ratios: the loop calls the model's batched terms compiled in NUMBA mode; the
    Python loop around ``ExactRatios`` on the same terms gives the same draws and stats,
    tuning included."""
    model, name = (coupled_model, "x") if block == "binary" else (potts[0], "z")
    step = pmd.ALBP([model[name]], model=model, steps_per_draw=3, compiled_loop=True,
                    proposal="exact")
    exact = step._exact_source
    exact._fn = exact.compiled_terms().fn  # the Python loop on the same compiled terms
    compiled_source = step._logp_and_ratios
    runs = []
    for compiled in (True, False):
        step.compiled_loop = compiled
        step._logp_and_ratios = compiled_source if compiled else exact
        step._rebuild_kernel()
        runs.append(sample(model, step, draws=300, tune=300, random_seed=3,
                           discard_tuned_samples=False))
    compiled, python = runs
    np.testing.assert_array_equal(compiled.posterior[name].values, python.posterior[name].values)
    for group in ("sample_stats", "warmup_sample_stats"):
        for stat in ("accept", "accepted", "scaling", "jump_distance", "n_proposed"):
            np.testing.assert_array_equal(compiled[group][stat].values,
                                          python[group][stat].values, err_msg=stat)
    assert np.unique(compiled.warmup_sample_stats["scaling"].values).size > 1  # it tuned


def test_exact_ratio_compiled_loop_rejects_proposals_with_minus_inf_logp(forbidden_state):
    model, truth, start = forbidden_state
    step = pmd.ALBP([model["x"]], model=model, initial_point=start, compiled_loop=True,
                    proposal="exact", steps_per_draw=2)
    idata = sample(model, step, initvals={"x": start["x"]}, random_seed=5)
    draws = idata.posterior["x"].values.reshape(-1, 3)
    assert not draws.all(axis=1).any()
    means_within_mcse(idata, "x", truth)


@pytest.mark.slow
def test_exact_ratio_compiled_loop_next_to_nuts_matches_enumeration(mixed_model, mixed_truth):
    """NUTS moves mu: the exact ratios' terms read its new value every draw."""
    g_truth, mu_truth = mixed_truth
    step = pmd.ALBP([mixed_model["g"]], model=mixed_model, steps_per_draw=2,
                    compiled_loop=True, proposal="exact")
    idata = sample(mixed_model, [step], random_seed=11)
    means_within_mcse(idata, "g", g_truth)
    means_within_mcse(idata, "mu", mu_truth)


def test_compiled_loop_on_independent_sites():
    """A product of Bernoullis (PyTensor returns its log density as a 0-d array of any
    layout): the marginals are the p_i."""
    from pymc_discrete.example_models import bernoulli_model

    model = bernoulli_model(12, "C2", seed=3)
    step = pmd.ALBP([model["x"]], model=model, compiled_loop=True, steps_per_draw=2)
    idata = sample(model, step, random_seed=2)
    means_within_mcse(idata, "x", model.p)


def test_categorical_compiled_loop_gives_the_python_loops_chain(potts):
    """Categorical sites (the Potts fixture): the compiled loop and the Python loop around
    the same NUMBA function give the same draws and stats, tuning included."""
    model, _ = potts
    runs = []
    for compiled in (True, False):
        step = pmd.ALBP([model["z"]], model=model, steps_per_draw=3, compiled_loop=True)
        assert step.proposal == "gradient"
        step.compiled_loop = compiled
        step._rebuild_kernel()
        runs.append(sample(model, step, draws=300, tune=300, random_seed=4,
                           discard_tuned_samples=False))
    compiled, python = runs
    np.testing.assert_array_equal(compiled.posterior["z"].values, python.posterior["z"].values)
    for group in ("sample_stats", "warmup_sample_stats"):
        for name in ("accept", "accepted", "scaling", "jump_distance", "n_proposed"):
            np.testing.assert_array_equal(compiled[group][name].values,
                                          python[group][name].values, err_msg=name)
    assert np.unique(compiled.posterior["z"].values).size == 3


def test_categorical_compiled_loop_matches_the_exact_marginals(potts):
    model, truth = potts
    step = pmd.ALBP([model["z"]], model=model, steps_per_draw=2, compiled_loop=True)
    idata = sample(model, step, random_seed=6)
    one_hot_means_within_mcse(idata, "z", truth)
