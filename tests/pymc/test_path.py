"""PAS (exact ratios) and PAFS (linearised) inside pm.sample: marginals against
enumeration, next to NUTS, categorical sites, tuning of the path length, stats,
reproducibility and bad input."""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytest

import pymc_discrete as pmd
from pymc_discrete.example_models import ising_model, parity_model
from tests.pymc.checks import (
    N_MCSE,
    assert_acceptance_at_the_tuned_scale_reaches,
    means_within_mcse,
    one_hot_means_within_mcse,
    sample,
)


def _sample(model, step, **kwargs):
    return sample(model, step, **({"random_seed": 5} | kwargs))


_assert_means_within_mcse = means_within_mcse


@pytest.mark.parametrize(
    "options",
    [{}, {"proposal": "exact"}, {"weight": "barker"}, {"proposal": "exact", "weight": "barker"}],
    ids=["pafs-sqrt", "pas-sqrt", "pafs-barker", "pas-barker"],
)
def test_marginals_of_a_coupled_model_match_enumeration(coupled_model, coupled_truth, options):
    step = pmd.PAS([coupled_model["x"]], model=coupled_model, **options)
    idata = _sample(coupled_model, step)
    _assert_means_within_mcse(idata, "x", coupled_truth)
    lengths = idata.sample_stats["n_proposed"].values
    assert lengths.min() >= 1 and lengths.max() >= 2  # paths longer than one move ran


@pytest.mark.parametrize("proposal", ["gradient", "exact"])
def test_pas_next_to_nuts_matches_enumeration(mixed_model, mixed_truth, proposal):
    """A Gaussian likelihood: the linearised path is only first-order, the chain exact."""
    g_truth, mu_truth = mixed_truth
    step = pmd.PAS([mixed_model["g"]], model=mixed_model, proposal=proposal)
    assert step.ratios_are_exact == (proposal == "exact")
    idata = _sample(mixed_model, [step])
    _assert_means_within_mcse(idata, "g", g_truth)
    _assert_means_within_mcse(idata, "mu", mu_truth)


@pytest.mark.parametrize("proposal", ["gradient", "exact"])
def test_pas_on_categorical_sites_matches_enumeration(potts, proposal):
    model, truth = potts
    step = pmd.PAS([model["z"]], model=model, proposal=proposal)
    assert step.proposal == proposal and not step.is_binary
    idata = _sample(model, step, draws=2500)
    one_hot_means_within_mcse(idata, "z", truth)


def test_parity_model_is_crossed_by_paths():
    """Parity of 6 sites with U = 4: odd states are e^4 less likely; paths of even length
    keep the parity and are accepted. Exact ratios along the path (the linearisation at
    x would send most even paths straight back to x)."""
    u = 4.0
    model = parity_model(6, u)
    step = pmd.PAS([model["x"]], model=model, proposal="exact", path_length=3.0,
                   adapt=False)
    idata = _sample(model, step, draws=3000)
    odd = idata.posterior["x"].values.sum(axis=-1) % 2
    p_odd = 1.0 / (1.0 + np.exp(u))
    se = np.sqrt(p_odd * (1 - p_odd) / az.ess(odd.astype(float)).item())
    assert abs(odd.mean() - p_odd) < N_MCSE * se
    _assert_means_within_mcse(idata, "x", np.full(6, 0.5))
    assert float(idata.sample_stats["jump_distance"].mean()) > 0.5


def test_tuning_toward_an_unreachable_acceptance_rate_warns():
    """On the parity model the acceptance rises with X (odd paths are rejected), so
    tuning toward an acceptance rate of 0.574 (asked for) drives X to its lower bound
    1.5: the step says so instead of failing silently."""
    model = parity_model(8, 5.0)
    step = pmd.PAS([model["x"]], model=model, target_accept=0.574)
    with pytest.warns(pmd.TuningWarning, match="fix the path length"):
        idata = _sample(model, step, draws=50, tune=300, chains=1)
    assert idata.sample_stats["scaling"].values[0, 0] == pytest.approx(1.5)


@pytest.mark.slow
def test_default_pas_crosses_the_valleys_of_the_parity_model():
    """The parity model of the path auxiliary paper (p = 100, U = 5) with PAS's defaults:
    the gradient's single-site ratios are exact here, but its linearisation at x sends
    even paths back to x, so ``proposal="auto"`` must choose exact ratios along the path;
    and the acceptance rises with X, so X must be tuned for the jump per cost, not toward
    an acceptance rate (which drives it to the single-site sampler). The mean of sum(x)
    (exactly p / 2) and the fraction of odd states (1 / (1 + e^U)) must be right within
    Monte Carlo standard errors, and the mean estimated at least as precisely as by the
    paper's PAS-5 (exact ratios, X fixed at 5) with as many draws."""
    p, u = 100, 5.0
    model = parity_model(p, u)

    def run(step):
        idata = _sample(model, step, draws=1000, tune=500, random_seed=11)
        total = idata.posterior["x"].values.sum(axis=-1).astype(float)
        return idata, total, float(az.mcse(total))

    step = pmd.PAS([model["x"]], model=model)
    assert step.proposal == "exact", step.proposal_reason
    idata, total, se = run(step)
    assert abs(total.mean() - p / 2) < N_MCSE * se, (total.mean(), se)
    odd = total % 2
    p_odd = 1.0 / (1.0 + np.exp(u))
    se_odd = np.sqrt(p_odd * (1 - p_odd) / az.ess(odd).item())
    assert abs(odd.mean() - p_odd) < N_MCSE * se_odd + 1.0 / odd.size
    scaling = idata.sample_stats["scaling"].values
    assert np.all(scaling[:, 0] > step.adapter.lower), scaling[:, 0]  # not collapsed
    assert np.isnan(idata.sample_stats["target_accept"].values).all()
    fixed = pmd.PAS([model["x"]], model=model, proposal="exact", path_length=5.0,
                    adapt=False)
    _, total_fixed, se_fixed = run(fixed)
    assert abs(total_fixed.mean() - p / 2) < N_MCSE * se_fixed
    assert se < se_fixed, (se, se_fixed)


def test_unrelaxable_model_falls_back_to_exact_paths():
    """``sum % 2`` cannot be relaxed: the gradient proposal falls back to exact ratios."""
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.5, shape=5)
        pm.Potential("parity", -3.0 * (x.sum() % 2))
    with pytest.warns(pmd.RelaxationWarning, match="PAS cannot use gradient proposals"):
        step = pmd.PAS([x], model=model, proposal="gradient")
    assert step.proposal == "exact" and step.fallback_reason
    assert step.adapter.upper == 5.0  # min(N, 32): the exact proposal's bound
    # a parity target: tuning X toward the target rate cannot work (see the TuningWarning
    # test), so the path length is fixed, as the warning advises
    with pytest.warns(pmd.RelaxationWarning):
        fixed = pmd.PAS([x], model=model, proposal="gradient", path_length=3.0, adapt=False)
    idata = _sample(model, fixed, draws=1500)
    _assert_means_within_mcse(idata, "x", np.full(5, 0.5))
    odd = idata.posterior["x"].values.sum(axis=-1) % 2
    p_odd = np.exp(-3.0) / (1.0 + np.exp(-3.0))
    se = np.sqrt(p_odd * (1 - p_odd) / az.ess(odd.astype(float)).item())
    assert abs(odd.mean() - p_odd) < N_MCSE * se


def test_sampler_stats_and_path_lengths(coupled_model):
    step = pmd.PAS([coupled_model["x"]], model=coupled_model, path_length=2.0, adapt=False)
    idata = _sample(coupled_model, step, draws=300, tune=50)
    stats = idata.sample_stats
    expected = {"accept": "float64", "accepted": "float64", "scaling": "float64",
                "jump_distance": "int64", "n_proposed": "int64", "target_accept": "float64"}
    for name, dtype in expected.items():
        assert stats[name].dtype == np.dtype(dtype), name
    assert np.all(stats["scaling"].values == 2.0)
    assert set(np.unique(stats["n_proposed"].values)) == {1, 2, 3}  # uniform on 1..2X-1
    jumps = stats["jump_distance"].values
    moved = (np.diff(idata.posterior["x"].values, axis=1) != 0).sum(axis=-1)
    np.testing.assert_array_equal(moved, jumps[:, 1:])
    assert np.all(jumps <= stats["n_proposed"].values)
    assert np.all(jumps[stats["accepted"].values == 0] == 0)


def test_path_length_tuned_toward_an_acceptance_rate_then_frozen():
    """On a 20x20 Ising lattice the acceptance falls as paths grow: with ``target_accept``
    X is tuned toward it. (On independent sites the acceptance stays near 1 for any X,
    and X runs to N.) The draws at the tuned X (after tuning one draw in ten runs at a
    shorter one, which accepts more) accept at 0.574 within 4.5 standard errors, chain by
    chain and on average (``tests.pymc.checks``): the chain's Monte Carlo standard error
    and the tuner's spread, 0.0187 across 120 chains (seeds 100-159), taken as 0.021."""
    model = ising_model(20, "C2")
    step = pmd.PAS([model["x"]], model=model, path_length=1.5, target_accept=0.574)
    idata = _sample(model, step, draws=2000, tune=2000, discard_tuned_samples=False)
    scaling = idata.sample_stats["scaling"].values
    assert_acceptance_at_the_tuned_scale_reaches(idata, 0.574, tuner_sd=0.021)
    for chain in range(2):
        assert np.unique(scaling[chain]).size == 1
        assert idata.warmup_sample_stats["scaling"].values[chain, 0] == 1.5
        assert 10.0 < scaling[chain, 0] < 400.0
    assert np.all(idata.sample_stats["target_accept"].values == 0.574)


def _jump_per_cost(step, idata):
    """Per chain: mean jump distance over the mean modelled cost of a draw, and the
    Monte Carlo standard error of that ratio (from the ESS of its linearisation)."""
    stats = idata.sample_stats
    jumps = stats["jump_distance"].values.astype(float)
    costs = np.vectorize(step._path_cost)(stats["n_proposed"].values)
    ratio = jumps.sum() / costs.sum()
    residual = (jumps - ratio * costs) / costs.mean()  # delta method for a ratio of means
    se = float(az.mcse(residual))
    return ratio, se


def test_path_length_is_tuned_for_the_jump_per_cost_then_frozen():
    """By default X is tuned for the expected jump per unit of cost: on a 20x20 Ising
    lattice, from X = 1.5, the frozen X jumps at least as far per unit of cost as half
    and twice that X (within Monte Carlo error), and is frozen after tuning."""
    model = ising_model(20, "C2")
    step = pmd.PAS([model["x"]], model=model, path_length=1.5)
    assert step.proposal == "gradient", step.proposal_reason
    idata = _sample(model, step, draws=2000, tune=2000, discard_tuned_samples=False)
    scaling = idata.sample_stats["scaling"].values
    for chain in range(2):
        assert np.unique(scaling[chain]).size == 1
        assert idata.warmup_sample_stats["scaling"].values[chain, 0] == 1.5
    tuned = float(np.exp(np.log(scaling[:, 0]).mean()))
    efficiency, se = _jump_per_cost(step, idata)
    for other in (tuned / 2, tuned * 2):
        fixed = pmd.PAS([model["x"]], model=model, path_length=other, adapt=False)
        eff_other, se_other = _jump_per_cost(fixed, _sample(model, fixed, draws=2000, tune=0))
        assert efficiency > eff_other - N_MCSE * np.hypot(se, se_other), (
            tuned, efficiency, se, other, eff_other, se_other)


def test_same_seed_gives_same_draws_with_one_or_two_cores(coupled_model):
    step = pmd.PAS([coupled_model["x"]], model=coupled_model)
    runs = [
        _sample(coupled_model, step, draws=100, tune=100, cores=cores, random_seed=7)
        for cores in (1, 2)
    ]
    np.testing.assert_array_equal(runs[0].posterior["x"].values, runs[1].posterior["x"].values)
    np.testing.assert_array_equal(runs[0].sample_stats["scaling"].values,
                                  runs[1].sample_stats["scaling"].values)


def test_pas_bad_input():
    with pm.Model() as model:
        g = pm.Bernoulli("g", 0.3, shape=6)
        b = pm.Normal("b")
    with pytest.raises(TypeError, match="'b' is continuous"):
        pmd.PAS([b], model=model)
    with pytest.raises(ValueError, match="path_length must lie in"):
        pmd.PAS([g], model=model, path_length=7.0)  # at most the number of sites
    with pytest.raises(ValueError, match="path_length must be a number"):
        pmd.PAS([g], model=model, path_length="long")
    with pytest.raises(ValueError, match="Unknown weight"):
        pmd.PAS([g], model=model, weight="linear")
    with pytest.raises(ValueError, match="max_path_length"):
        pmd.PAS([g], model=model, max_path_length=0.5)
    assert pmd.PAS([g], model=model).adapter.upper == 6.0
    assert pmd.PAS([g], model=model, proposal="exact", max_path_length=3).adapter.upper == 3.0
    with pytest.raises(ValueError, match="target_accept"):
        pmd.PAS([g], model=model, target_accept=1.2)
    competence = pm.step_methods.compound.Competence
    assert pmd.PAS.competence(g, False) == competence.COMPATIBLE
    assert pmd.PAS.competence(b, True) == competence.INCOMPATIBLE


@pytest.mark.parametrize("kernel", ["pafs", "pas"])
@pytest.mark.parametrize("categorical", [False, True], ids=["binary", "categorical"])
def test_a_path_state_is_a_function_of_its_point(kernel, categorical):
    """A state carried from step to step (its weights partly copied from the state
    before) equals the state built afresh at its point, bit for bit, so a chain resumed
    from its point (a restored ``sampling_state``) continues exactly."""
    from pymc_discrete.kernels.pas import init_path_state, pafs_step, pas_step

    rng = np.random.default_rng(0)
    n, k = 30, (3 if categorical else 2)
    coupling = rng.normal(0.0, 1.5, (n, n))
    coupling = np.triu(coupling, 1) + np.triu(coupling, 1).T

    def target(x):  # a coupled (Potts-like) model with exact single-site ratios
        onehot = np.eye(k)[x]
        field = coupling @ onehot  # (n, k): the change of the pair terms per value
        logp = 0.5 * float(np.sum(onehot * field))
        table = field - np.take_along_axis(field, x[:, None], 1)
        if not categorical:
            return logp, table[np.arange(n), 1 - x]
        table[np.arange(n), x] = np.nan
        return logp, table

    step = pafs_step if kernel == "pafs" else pas_step
    carried = init_path_state(rng.integers(0, k, n), target, 1)
    moves = 0
    for _ in range(60):
        carried, info = step(carried, 6.0, rng, target, 1)
        moves += info.accepted
        fresh = init_path_state(carried.x, target, 1)
        assert carried.log_scale == fresh.log_scale
        np.testing.assert_array_equal(carried.site_weights, fresh.site_weights)
    assert moves > 5
