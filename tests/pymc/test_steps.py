"""ALBP and ARWM inside pm.sample: marginals against enumeration, stats, reproducibility,
parallel chains, registration and bad input."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pymc.sampling.mcmc import assign_step_methods

import pymc_discrete as pmd
from tests.exact import all_states
from tests.pymc.checks import means_within_mcse, sample


def _sample(model, step, **kwargs):
    return sample(model, step, **({"random_seed": 42} | kwargs))


_assert_means_within_mcse = means_within_mcse


@pytest.mark.parametrize(
    "make_step",
    [
        lambda m: pmd.ALBP([m["x"]], model=m),
        lambda m: pmd.ALBP([m["x"]], weight="sqrt", model=m),
        lambda m: pmd.ARWM([m["x"]], model=m),
    ],
    ids=["albp-barker", "albp-sqrt", "arwm"],
)
def test_marginals_of_a_coupled_model_match_enumeration(coupled_model, coupled_truth, make_step):
    idata = _sample(coupled_model, make_step(coupled_model))
    _assert_means_within_mcse(idata, "x", coupled_truth)


def test_albp_next_to_nuts_matches_enumeration(mixed_model, mixed_truth):
    g_truth, mu_truth = mixed_truth
    idata = _sample(mixed_model, [pmd.ALBP([mixed_model["g"]], model=mixed_model)])
    _assert_means_within_mcse(idata, "g", g_truth)
    _assert_means_within_mcse(idata, "mu", mu_truth)
    assert "diverging" in idata.sample_stats  # NUTS ran in the same CompoundStep


def test_several_bernoulli_variables_form_one_block():
    with pm.Model() as model:
        a = pm.Bernoulli("a", 0.4, shape=2)
        b = pm.Bernoulli("b", 0.2 + 0.5 * a[0])
        pm.Potential("tie", 1.2 * a[1] * b - 0.5 * a[0] * a[1])
    states = all_states(3)
    logps = []
    for a0, a1, b0 in states:
        pb = 0.2 + 0.5 * a0
        lp = np.log([0.6, 0.4][a0]) + np.log([0.6, 0.4][a1]) + np.log([1 - pb, pb][b0])
        logps.append(lp + 1.2 * a1 * b0 - 0.5 * a0 * a1)
    p = np.exp(np.array(logps))
    truth = (p / p.sum()) @ states
    step = pmd.ALBP([a, b], model=model)
    assert step.n_sites == 3
    idata = _sample(model, step)
    _assert_means_within_mcse(idata, "a", truth[:2])
    _assert_means_within_mcse(idata, "b", truth[2])


def test_proposals_with_minus_inf_or_nan_logp_are_rejected_and_sampling_goes_on(forbidden_state):
    """log(1 - prod(x)) forbids the all-ones state: its logp is -inf and gradient NaN."""
    model, truth, start = forbidden_state
    step = pmd.ALBP([model["x"]], model=model, initial_point=start)
    idata = _sample(model, step, initvals={"x": start["x"]})
    draws = idata.posterior["x"].values.reshape(-1, 3)
    assert not draws.all(axis=1).any()
    _assert_means_within_mcse(idata, "x", truth)
    assert (idata.sample_stats["accepted"].values == 0).any()


def test_sampler_stats_have_the_contract_names_and_dtypes(coupled_model):
    idata = _sample(coupled_model, pmd.ALBP([coupled_model["x"]], model=coupled_model),
                    draws=50, tune=50)
    stats = idata.sample_stats
    expected = {"accept": "float64", "accepted": "float64", "scaling": "float64",
                "jump_distance": "int64", "n_proposed": "int64", "target_accept": "float64"}
    for name, dtype in expected.items():
        assert stats[name].dtype == np.dtype(dtype), name
        assert stats[name].shape == (2, 50)
    accept = stats["accept"].values
    assert np.all((0 <= accept) & (accept <= 1))
    assert set(np.unique(stats["accepted"].values)) <= {0.0, 1.0}
    assert np.all(stats["target_accept"].values == 0.574)
    jumps = stats["jump_distance"].values
    np.testing.assert_array_equal(jumps, np.where(stats["accepted"].values == 1,
                                                  stats["n_proposed"].values, 0))
    moved = (np.diff(idata.posterior["x"].values, axis=1) != 0).sum(axis=-1)
    np.testing.assert_array_equal(moved, jumps[:, 1:])


REPRODUCIBLE_STEPS = {
    "albp": lambda vars, model: pmd.ALBP(vars, model=model),
    "albp-exact": lambda vars, model: pmd.ALBP(vars, proposal="exact", model=model),
    "albp-compiled-loop": lambda vars, model: pmd.ALBP(
        vars, compiled_loop=True, steps_per_draw=3, model=model
    ),
    "arwm": lambda vars, model: pmd.ARWM(vars, model=model),
    "pafs": lambda vars, model: pmd.PAS(vars, model=model),
    "pas-exact": lambda vars, model: pmd.PAS(vars, proposal="exact", model=model),
}


@pytest.mark.parametrize("kind", list(REPRODUCIBLE_STEPS))
def test_same_seed_gives_same_draws_with_one_or_two_cores(coupled_model, kind):
    step = REPRODUCIBLE_STEPS[kind]([coupled_model["x"]], coupled_model)
    runs = [
        _sample(coupled_model, step, draws=100, tune=100, cores=cores, random_seed=7)
        for cores in (1, 1, 2)
    ]
    for other in runs[1:]:
        np.testing.assert_array_equal(runs[0].posterior["x"].values, other.posterior["x"].values)
        np.testing.assert_array_equal(runs[0].sample_stats["scaling"].values,
                                      other.sample_stats["scaling"].values)
    different = _sample(coupled_model, step, draws=100, tune=100, random_seed=8)
    assert not np.array_equal(runs[0].posterior["x"].values, different.posterior["x"].values)


@pytest.mark.slow
def test_parallel_chains_under_spawn(mixed_model, mixed_truth, monkeypatch):
    """Chains in spawned processes draw what forked ones draw. PyMC's NUTS on the
    continuous variable is compiled by PyMC: without numba's fast math in the parent and
    the spawned children alike (as ``register()`` sets it), or a child rebuilding the
    function from the disk cache could differ in the last bits from the parent's."""
    monkeypatch.setenv("PYTENSOR_FLAGS", "numba__fastmath=False")
    monkeypatch.setattr(pytensor.config, "numba__fastmath", False)
    step = pmd.ALBP([mixed_model["g"]], model=mixed_model)
    idata = _sample(mixed_model, [step], cores=2, mp_ctx="spawn", draws=1500)
    fork = _sample(mixed_model, [step], cores=2, mp_ctx="fork", draws=1500)
    np.testing.assert_array_equal(idata.posterior["g"].values, fork.posterior["g"].values)
    _assert_means_within_mcse(idata, "g", mixed_truth[0])


def test_register_makes_pm_sample_pick_the_recommended_step(mixed_model, mixed_truth, caplog):
    from pymc_discrete.pymc.choosing.auto_step import AutoStep

    _, selected = assign_step_methods(mixed_model, None)
    assert pm.BinaryGibbsMetropolis in selected
    pmd.register()
    try:
        pmd.register()  # idempotent
        assert pmd.is_registered()
        _, selected = assign_step_methods(mixed_model, None)
        assert selected[AutoStep] == [mixed_model.rvs_to_values[mixed_model["g"]]]
        with caplog.at_level("INFO", logger="pymc"):
            idata = _sample(mixed_model, None, draws=1500)  # pm.sample builds the step
        # three indicators coupled through the likelihood: eight joint states, each draw
        # an exact draw from their joint conditional
        assert any("chose JointGibbs" in r.getMessage() for r in caplog.records)
        assert "jump_distance" in idata.sample_stats
        _assert_means_within_mcse(idata, "g", mixed_truth[0])
    finally:
        pmd.unregister()
    assert not pmd.is_registered()
    _, selected = assign_step_methods(mixed_model, None)
    assert pmd.ALBP not in selected and pm.BinaryGibbsMetropolis in selected


def test_competence():
    with pm.Model():
        g = pm.Bernoulli("g", 0.5)
        z = pm.Categorical("z", [0.2, 0.3, 0.5])
        b = pm.Normal("b")
    competence = pm.step_methods.compound.Competence
    for var in (g, z):
        assert pmd.ALBP.competence(var, False) == competence.IDEAL
        assert pmd.ARWM.competence(var, False) == competence.COMPATIBLE
    assert pmd.ALBP.competence(b, True) == competence.INCOMPATIBLE


# ---- bad input -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def input_model():
    with pm.Model() as model:
        pm.Bernoulli("g", 0.3, shape=3)  # initial point: all zeros
        pm.Normal("b", 0.0, 1.0)
        pm.Categorical("z", [0.2, 0.3, 0.5])
        pm.Potential("forbid", pt.log(1.0 - pt.prod(model["g"])))
    return model


@pytest.mark.parametrize("cls", [pmd.ALBP, pmd.ARWM])
def test_continuous_variable_is_refused(input_model, cls):
    with pytest.raises(TypeError, match="'b' is continuous"):
        cls([input_model["b"]], model=input_model)


@pytest.mark.parametrize("cls", [pmd.ALBP, pmd.ARWM])
def test_other_discrete_distributions_are_refused(cls):
    with pm.Model() as model:
        pm.Poisson("n", 3.0)
    with pytest.raises(TypeError, match="'n' is not one: a Poisson has an infinite set of values"):
        cls([model["n"]], model=model)


def test_unknown_weight_and_proposal_are_refused(input_model):
    with pytest.raises(ValueError, match="Unknown weight 'linear'"):
        pmd.ALBP([input_model["g"]], model=input_model, weight="linear")
    with pytest.raises(ValueError, match="Unknown proposal 'hessian'"):
        pmd.ALBP([input_model["g"]], model=input_model, proposal="hessian")


@pytest.mark.parametrize("cls", [pmd.ALBP, pmd.ARWM])
@pytest.mark.parametrize("bad", [0.0, 1.0, -0.2, 1.5, float("nan"), "high"])
def test_target_accept_outside_the_unit_interval_is_refused(input_model, cls, bad):
    with pytest.raises(ValueError, match="target_accept"):
        cls([input_model["g"]], model=input_model, target_accept=bad)


@pytest.mark.parametrize("cls", [pmd.ALBP, pmd.ARWM])
def test_initial_scale_outside_one_to_n_is_refused(input_model, cls):
    with pytest.raises(ValueError, match="initial_scale"):
        cls([input_model["g"]], model=input_model, initial_scale=3.0)


@pytest.mark.parametrize("cls", [pmd.ALBP, pmd.ARWM])
def test_initial_point_with_minus_inf_logp_is_refused_at_the_first_draw(input_model, cls):
    """A step may be built at a point of probability zero (``pm.sample(initvals=...)``
    chooses the start later); sampling from such a point is an error naming the term."""
    point = input_model.initial_point()
    point["g"] = np.ones(3, dtype=np.int64)
    step = cls([input_model["g"]], model=input_model, initial_point=point)
    step.setup_chain(np.random.default_rng(0), 10, 10)
    q0 = pm.blocking.DictToArrayBijection.map({"g": point["g"]})
    with pytest.raises(ValueError, match="-inf"):
        step.astep(q0)


def test_initial_point_outside_zero_one_is_refused(input_model):
    point = input_model.initial_point()
    point["g"] = np.array([0, 2, 1])
    with pytest.raises(ValueError, match="outside"):
        pmd.ALBP([input_model["g"]], model=input_model, initial_point=point)


@pytest.mark.parametrize("cls", [pmd.ALBP, pmd.ARWM, pmd.PAS])
def test_several_steps_per_draw(coupled_model, coupled_truth, cls):
    """Four M-H steps per draw: marginals still exact, stats summarise the steps (that
    tuning counts steps is tested in test_tuning.py)."""
    step = cls([coupled_model["x"]], model=coupled_model, steps_per_draw=4)
    idata = _sample(coupled_model, step, discard_tuned_samples=False)
    _assert_means_within_mcse(idata, "x", coupled_truth)
    stats = idata.sample_stats
    accepted = stats["accepted"].values
    assert set(np.unique(accepted * 4)) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    assert ((0 < accepted) & (accepted < 1)).any()
    moved = (np.diff(idata.posterior["x"].values, axis=1) != 0).sum(axis=-1)
    np.testing.assert_array_equal(moved, stats["jump_distance"].values[:, 1:])
    # each step proposes at least one site, unless its number of changes exceeds the
    # 4 sites (it then stays: P = 0.02 at the largest scale, 2)
    assert (stats["n_proposed"].values >= 1).all()
    assert (stats["n_proposed"].values >= 4).mean() > 0.9
    assert np.unique(stats["scaling"].values[0]).size == 1


@pytest.mark.parametrize("bad", [0, -1, 2.5, "4", True])
def test_steps_per_draw_must_be_a_positive_whole_number(input_model, bad):
    with pytest.raises(ValueError, match="steps_per_draw"):
        pmd.ALBP([input_model["g"]], model=input_model, steps_per_draw=bad)
