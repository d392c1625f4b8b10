"""A chain that stopped moving after tuning is reported the way PyMC reports its own
sampler warnings (a SamplerWarning in the draw's 'warning' stat, logged by pm.sample)
naming the chain, the variables and the draws; and after tuning each draw's scale is
the tuned one or, now and then, a smaller one, which keeps the chain exact."""

from __future__ import annotations

import logging

import numpy as np
import pymc as pm
import pytest

import pymc_discrete as pmd
from pymc_discrete.adaptation.scale_mixture import SMALL_SCALE_SHARE, scale_for_draw
from pymc_discrete.example_models import gallery_mixture
from pymc_discrete.pymc.steps.stall import STALLED_DRAWS_FAILING, StallWatch, chain_index
from tests.exact import (
    albp_matrix,
    assert_irreducible_and_aperiodic,
    assert_reversible,
    mixture_matrix,
    target_distribution,
)
from tests.targets import ising_target


def _warnings(idata) -> np.ndarray:
    """The 'warning' stat per chain and draw (stored with a trailing axis of one)."""
    values = idata.sample_stats["warning"].values
    return values[..., 0] if values.ndim == 3 else values


def _pinned_after_tuning():
    """Six sites whose posterior sits on all ones (weight e^-30 elsewhere), started at
    all zeros: tuning walks to all ones, then every draw repeats that state."""
    model = pm.Model()
    with model:
        x = pm.Bernoulli("x", 0.5, shape=6)
        pm.Potential("pin", 30.0 * pm.math.eq(x.sum(), 6))
    return model, {"x": np.zeros(6, "int64")}


@pytest.mark.parametrize("cores", [1, 2])
def test_a_chain_that_stopped_moving_after_tuning_is_reported(cores, caplog):
    model, start = _pinned_after_tuning()
    with model, caplog.at_level(logging.WARNING, logger="pymc"):
        idata = pm.sample(150, tune=100, chains=2, cores=cores, step=pmd.ALBP(),
                          initvals=start, random_seed=1, progressbar=False,
                          compute_convergence_checks=False, keep_warning_stat=True)
    for chain in (0, 1):
        assert (f"ALBP: chain {chain} left ['x'] unchanged for 150 consecutive draws after "
                "tuning (draws 0 to 149 of 150)") in caplog.text
    warnings = _warnings(idata)
    assert [w.extra["chain"] for w in warnings[:, -1]] == [0, 1]
    assert all(w is None for w in warnings[:, :-1].ravel())


def test_a_moving_chain_reports_nothing(caplog):
    with pm.Model(), caplog.at_level(logging.WARNING, logger="pymc"):
        x = pm.Bernoulli("x", 0.4, shape=20)
        idata = pm.sample(300, tune=100, chains=1, step=pmd.ALBP([x]), random_seed=2,
                          progressbar=False, compute_convergence_checks=False,
                          keep_warning_stat=True)
    assert "unchanged for" not in caplog.text
    assert all(w is None for w in _warnings(idata).ravel())


def test_the_watch_counts_runs_after_tuning_only():
    watch = StallWatch("ALBP", ["z"], "Advice.")
    watch.start_chain(np.random.default_rng(np.random.SeedSequence(5, spawn_key=(3,))), 250)
    assert watch.chain == 3
    for _ in range(500):  # tuning draws are not counted
        assert watch.record(moved=False, tuning=True) is None
    told = [watch.record(moved=draw < 40 or draw > 160, tuning=False) for draw in range(250)]
    assert all(w is None for w in told[:-1])  # the chain's last draw tells
    warning = told[-1]
    assert warning.extra == {"chain": 3, "stalled_draws": 121}
    assert "chain 3 left ['z'] unchanged for 121 consecutive draws" in warning.message
    assert "(draws 40 to 160 of 250)" in warning.message and warning.message.endswith("Advice.")


def test_the_watch_tells_at_the_threshold_when_the_length_is_unknown():
    watch = StallWatch("PAS", ["z"], "")
    told = [watch.record(moved=False, tuning=False) for _ in range(3 * STALLED_DRAWS_FAILING)]
    assert [i for i, w in enumerate(told) if w is not None] == [STALLED_DRAWS_FAILING - 1]
    assert "a chain left" in told[STALLED_DRAWS_FAILING - 1].message


def test_chain_index_follows_pymc_spawning():
    chains = np.random.default_rng(7).spawn(4)
    assert [chain_index(r) for r in chains] == [0, 1, 2, 3]
    assert [chain_index(r) for r in chains[2].spawn(3)] == [2, 2, 2]  # in a CompoundStep
    assert chain_index(None) is None


def test_scale_for_draw_keeps_the_tuned_scale_mostly_and_goes_down_to_the_smallest():
    rng = np.random.default_rng(0)
    n = 40_000
    scales = np.array([scale_for_draw(64.0, 1.0, rng) for _ in range(n)])
    small = scales[scales < 64.0]
    se = np.sqrt(SMALL_SCALE_SHARE * (1 - SMALL_SCALE_SHARE) / n)
    assert abs(small.size / n - SMALL_SCALE_SHARE) < 4 * se
    # log-uniform on [1, 64]: log2 of the scale uniform on [0, 6]
    u = np.log2(small) / 6.0
    assert small.min() >= 1.0 and abs(u.mean() - 0.5) < 4 * np.sqrt(1 / 12 / small.size)
    assert scale_for_draw(1.0, 1.0, rng) == 1.0


def test_the_mixture_of_scales_is_reversible_and_moves_where_the_tuned_scale_does_not():
    """The draw's kernel after tuning is a mixture over scales, with weights that do not
    depend on the state, of ALBP kernels reversible for the target: reversible too (to
    1e-10, enumerated). On a strongly coupled lattice, a large tuned scale almost never
    leaves the ground state; the mixture leaves it at least SMALL_SCALE_SHARE times as
    often as single-site moves do."""
    n = 6
    target = ising_target(n, 0)
    pi = target_distribution(target, n)
    nodes, weights = np.polynomial.legendre.leggauss(12)  # log-uniform over [1, 3]
    log_scales = 0.5 * np.log(3.0) * (nodes + 1.0)

    # the fixed-R matrices do not depend on the scale: built once, mixed at every scale
    fixed = {r: albp_matrix(target, n, r, "barker") for r in range(1, n + 1)}

    def matrix(scale):
        return mixture_matrix(fixed.__getitem__, scale, n)

    tuned = matrix(3.0)
    small = sum(0.5 * w * matrix(float(np.exp(s))) for w, s in zip(weights, log_scales))
    P = (1 - SMALL_SCALE_SHARE) * tuned + SMALL_SCALE_SHARE * small
    assert_reversible(P, pi)
    np.testing.assert_allclose(pi @ P, pi, atol=1e-12)
    assert_irreducible_and_aperiodic(P, pi)
    ones = matrix(1.0)
    stay = np.diag(P)
    assert np.all(1 - stay >= SMALL_SCALE_SHARE * 0.5 * (1 - np.diag(ones)) - 1e-12)


def test_paired_flip_reports_indicators_that_never_move(caplog):
    """Two predictors with effects of 8 standard errors: both indicators stay on for the
    whole chain (dropping one costs about e^-30), and PairedFlip says so at the end."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = X @ np.array([0.6, -0.6]) + rng.normal(0.0, 0.1, 200)
    with pm.Model(), caplog.at_level(logging.WARNING, logger="pymc"):
        g = pm.Bernoulli("g", 0.5, shape=2)
        beta = pm.Normal("beta", 0.0, 1.0, shape=2)
        pm.Normal("y", pm.math.dot(X, g * beta), 0.1, observed=y)
        step = pmd.PairedFlip([g], beta)
        pm.sample(120, tune=50, chains=1, step=step, random_seed=4, progressbar=False,
                  compute_convergence_checks=False, initvals={"g": np.ones(2, "int64")})
    assert ("PairedFlip: chain 0 left ['g'] unchanged for 120 consecutive draws after "
            "tuning (draws 0 to 119 of 120)") in caplog.text


#: the scale (labels a step) the gallery mixture's tuning once froze at for one chain, in a
#: mode it left late in tuning: in the posterior's mode no move of that size is accepted
BAD_SCALE = 36.0
#: posterior means of the gallery mixture's cluster means and their MCSE: NUTS on the same
#: model with the labels summed out (pm.NormalMixture with the same priors and
#: Potentials), 4 chains of 10000 draws after 2000 tuning draws, random_seed=2024
#: (r-hat <= 1.0001, ESS >= 46000, no divergences)
MIXTURE_MEANS = np.array([-5.05871, -0.09607, 5.06166])
MIXTURE_MEANS_MCSE = np.array([0.00039, 0.00040, 0.00038])


class _TunedTooFar(pmd.ALBP):
    """ALBP whose tuning ends at :data:`BAD_SCALE`: it tunes as usual (so NUTS tunes
    beside a working label step), and the end of tuning replaces the frozen scale."""

    def stop_tuning(self) -> None:
        super().stop_tuning()
        self.adapter.scale = BAD_SCALE


@pytest.mark.slow
def test_no_albp_chain_freezes_on_the_gallery_mixture():
    """With seed 1 one of four chains once ended tuning at about 36 labels a step, fitted
    to a mode it left late in tuning, where no move of that size is accepted: at the tuned
    scale alone it repeated one state for all 1000 draws. Whether a run's tuning ends
    there is luck; here every chain ends tuning at that scale (``_TunedTooFar``), started
    in the posterior's mode (the means at the clusters' centres, each label its point's
    nearest centre).

    At the tuned scale the labels then (nearly) never change: fewer than 1% of those
    draws (none in 40 chains over seeds 1-10). With a smaller scale for one draw in ten
    each chain keeps moving: the labels change in more than 2% of its draws (3.0-7.4% in
    those 40 chains, 5.3-7.0% at seed 1). And the chains are right: the cluster means over
    the four chains lie within 4.5 standard errors (their MCSE and the reference's) of
    the means of NUTS on the model with the labels summed out (|z| <= 2.7 over seeds
    1-10). No r-hat: the chains' agreement is in the MCSE of the pooled means."""
    import arviz as az

    model = gallery_mixture()
    data = np.asarray(model.rvs_to_values[model["obs"]].data)
    centres = np.array([-5.0, 0.0, 5.0])
    start = {"means": centres, "category": np.abs(data[:, None] - centres).argmin(axis=1)}
    with model:
        idata = pm.sample(1000, tune=1000, chains=4, cores=1, step=_TunedTooFar(),
                          initvals=start, random_seed=1, progressbar=False,
                          compute_convergence_checks=False)
    stats = idata.sample_stats
    assert np.all(stats["scaling"].values == BAD_SCALE)
    moved = stats["jump_distance"].values > 0
    at_bad = stats["draw_scale"].values == BAD_SCALE
    assert moved[at_bad].mean() < 0.01, moved[at_bad].mean()  # the tuned scale is stuck
    moving = moved.mean(axis=1)
    assert np.all(moving > 0.02), moving
    means = idata.posterior["means"].mean(("chain", "draw")).values
    mcse = np.asarray(az.mcse(idata.posterior["means"]))
    se = np.sqrt(mcse**2 + MIXTURE_MEANS_MCSE**2)
    assert np.all(np.abs(means - MIXTURE_MEANS) <= 4.5 * se), (means, MIXTURE_MEANS, se)
