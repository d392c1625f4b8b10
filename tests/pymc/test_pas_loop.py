"""PAS with ``compiled_loop=True``: the Python loop's chain (PAFS, exact PAS on the
gradient and on the model's terms; binary and categorical; tuning included), exact joint
frequencies, rejection of impossible proposals, NUTS moving the other variables,
reproducibility across cores, and bad input."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import pymc_discrete as pmd
from pymc_discrete.pymc.steps import auto_proposal
from tests.pymc.checks import means_within_mcse, sample
from tests.pymc.joint import assert_joint_frequencies_match, enumerate_block

STATS = ("accept", "accepted", "scaling", "jump_distance", "n_proposed")
#: (fixture, variable, proposal, seed) of the chains compared with the Python loop's:
#: PAFS, exact PAS on the gradient (whose ratios are exact on both models: "auto" made
#: to choose exact ratios) and exact PAS on the model's batched terms
PAIRS = {
    "binary-pafs": ("coupled_model", "x", "gradient", 3),
    "binary-pas-gradient": ("coupled_model", "x", "auto", 4),
    "binary-pas-terms": ("coupled_model", "x", "exact", 8),
    "categorical-pafs": ("potts", "z", "gradient", 5),
    "categorical-pas-gradient": ("potts", "z", "auto", 6),
}
_RUNS: dict = {}


def _model(request, fixture):
    value = request.getfixturevalue(fixture)
    return value[0] if isinstance(value, tuple) else value


def _prefer_exact_ratios(monkeypatch) -> None:
    """Make ``proposal="auto"`` choose exact ratios: its trials report exact paths a
    thousand times cheaper."""
    monkeypatch.setattr(
        auto_proposal, "trial_jumps",
        lambda step, source, proposal, x, scale, call_evaluations: (
            1.0, 1.0 if proposal == "gradient" else 1e-3))


def _runs(request, case):
    """The compiled loop's and the Python loop's runs of ``case`` and the compiled
    loop's step (built once: the compiled run costs a compilation of the loop): 3 steps
    per draw, the tuned draws kept."""
    if case not in _RUNS:
        fixture, name, proposal, seed = PAIRS[case]
        model = _model(request, fixture)
        if proposal == "auto":
            _prefer_exact_ratios(request.getfixturevalue("monkeypatch"))
        runs, steps = [], []
        for compiled in (True, False):
            step = pmd.PAS([model[name]], model=model, proposal=proposal, steps_per_draw=3,
                           compiled_loop=True)
            assert step.compiled_loop
            assert step.proposal == ("gradient" if proposal == "gradient" else "exact")
            assert step._exact_from_gradient == (proposal == "auto"), step.proposal_reason
            if proposal == "exact" and not compiled:
                # the Python loop around ExactRatios on the loop's compiled terms
                exact = step._exact_source
                exact._fn = exact.compiled_terms().fn
                step._logp_and_ratios = exact
            step.compiled_loop = compiled  # else the Python loop on the same function
            step._rebuild_kernel()
            runs.append(sample(model, step, draws=1500, tune=300, random_seed=seed,
                               discard_tuned_samples=False))
            steps.append(step)
        _RUNS[case] = runs, steps[0]
    return _RUNS[case]


@pytest.mark.parametrize("case", sorted(PAIRS))
def test_compiled_loop_gives_the_python_loops_chain(request, case):
    """Same compiled function, same seed: the compiled loop and the Python loop produce
    the same draws and stats, the tuning of the path length included."""
    (compiled, python), _ = _runs(request, case)
    name = PAIRS[case][1]
    for group in ("posterior", "warmup_posterior"):
        np.testing.assert_array_equal(compiled[group][name].values, python[group][name].values)
    for group in ("sample_stats", "warmup_sample_stats"):
        for stat in STATS:
            np.testing.assert_array_equal(compiled[group][stat].values,
                                          python[group][stat].values, err_msg=stat)
    warmup = compiled.warmup_sample_stats["scaling"].values
    assert np.unique(warmup).size > 3  # X was tuned (within [1.5, 4] on four sites)
    assert (compiled.sample_stats["accepted"].values < 1).any()  # some rejections


@pytest.mark.parametrize("case", sorted(PAIRS))
def test_compiled_loop_matches_the_enumerated_joint_distribution(request, case):
    fixture, name, _, _ = PAIRS[case]
    (compiled, _), _ = _runs(request, case)
    states, probs = enumerate_block(_model(request, fixture), [name])
    assert_joint_frequencies_match(compiled, [name], states, probs)


def test_compiled_loop_rejects_proposals_with_minus_inf_logp(forbidden_state):
    """log(1 - prod(x)) forbids the all-ones state (logp -inf, gradient NaN there)."""
    model, truth, start = forbidden_state
    step = pmd.PAS([model["x"]], model=model, initial_point=start, proposal="gradient",
                   compiled_loop=True, steps_per_draw=2)
    assert step.compiled_loop
    idata = sample(model, step, initvals={"x": start["x"]}, random_seed=5)
    draws = idata.posterior["x"].values.reshape(-1, 3)
    assert not draws.all(axis=1).any()
    means_within_mcse(idata, "x", truth)
    assert (idata.sample_stats["accept"].values < 1).any()


@pytest.mark.slow
def test_compiled_loop_next_to_nuts_matches_enumeration(mixed_model, mixed_truth):
    """NUTS moves mu between draws: the loop must read mu's new value every draw."""
    g_truth, mu_truth = mixed_truth
    step = pmd.PAS([mixed_model["g"]], model=mixed_model, proposal="gradient",
                   steps_per_draw=2, compiled_loop=True)
    idata = sample(mixed_model, [step], random_seed=11)
    means_within_mcse(idata, "g", g_truth)
    means_within_mcse(idata, "mu", mu_truth)


def test_compiled_loop_same_seed_same_draws_with_one_or_two_cores(request, coupled_model):
    """Worker processes run the loop too (compiled again unless forked after it was)."""
    _, step = _runs(request, "binary-pafs")  # its loop is compiled already
    assert step.compiled_loop
    runs = [sample(coupled_model, step, draws=100, tune=100, cores=cores, random_seed=7)
            for cores in (1, 2)]
    np.testing.assert_array_equal(runs[0].posterior["x"].values, runs[1].posterior["x"].values)
    for stat in STATS:
        np.testing.assert_array_equal(runs[0].sample_stats[stat].values,
                                      runs[1].sample_stats[stat].values, err_msg=stat)


def test_compiled_loop_refuses_bad_input(coupled_model):
    with pytest.raises(ValueError, match="compiled_loop must be .auto., True or False"):
        pmd.PAS([coupled_model["x"]], model=coupled_model, compiled_loop="yes")


def test_compiled_loop_runs_the_exact_ratios_of_a_model_without_relaxation():
    """``sum % 2`` cannot be relaxed: the gradient falls back to the model's exact
    ratios, and the loop calls their compiled target."""
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.5, shape=5)
        pm.Potential("parity", -3.0 * (x.sum() % 2))
    with pytest.warns(pmd.RelaxationWarning, match="Falling back"):
        step = pmd.PAS([x], model=model, proposal="gradient", compiled_loop=True)
    assert step.proposal == "exact" and not step._exact_from_gradient
    assert step.compiled_loop
    assert step._logp_and_ratios is step._exact_source.compiled_target()
