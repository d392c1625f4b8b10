"""The automatic choices of steps per draw and of the compiled loop (the defaults).

The model is a ring of 1,200 coupled binary sites (a one-dimensional Ising model in a
field), large enough for the choices to apply, whose joint distribution of neighbouring
sites is known exactly from its transfer matrix.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytest

import pymc_discrete as pmd
from pymc_discrete.adaptation.steps_per_draw import (
    LARGE_BLOCK,
    MAX_STEPS_PER_DRAW,
    auto_steps_per_draw,
    moving_sites,
)
from tests.pymc.checks import N_MCSE

N_RING = 1200
FIELD, COUPLING = 0.3, 0.5  # logp = FIELD * sum(x) + COUPLING * sum(s_i s_{i+1}), s = 2x - 1


def ring_model() -> pm.Model:
    with pm.Model() as model:
        x = pm.Bernoulli("x", logit_p=FIELD, shape=N_RING)
        s = 2.0 * x - 1.0
        pm.Potential("coupling", COUPLING * (s * pm.math.concatenate([s[1:], s[:1]])).sum())
    return model


def ring_pair_probabilities() -> np.ndarray:
    """P(x_i = a, x_{i+1} = b) on the ring, from its transfer matrix."""
    spins = np.array([-1.0, 1.0])
    # T[a, b] = exp(FIELD * a + COUPLING * s_a s_b): the field of the first site of the pair
    t = np.exp(FIELD * np.arange(2)[:, None] + COUPLING * np.outer(spins, spins))
    t /= np.max(np.abs(np.linalg.eigvals(t)))  # no overflow in the power
    rest = np.linalg.matrix_power(t, N_RING - 1)
    pair = t * rest.T
    return pair / np.trace(rest @ t)


@pytest.fixture(scope="module")
def ring():
    return ring_model()


def pair_series(idata) -> np.ndarray:
    """(chain, draw, 4): the share of neighbouring pairs in each of the four states."""
    x = idata.posterior["x"].values.astype(np.int64)
    code = 2 * x + np.roll(x, -1, axis=-1)
    return np.stack([(code == c).mean(axis=-1) for c in range(4)], axis=-1)


def test_moving_sites_estimates_the_unseen_without_counting_pinned_sites():
    rng = np.random.default_rng(0)
    # 1,000 movable sites touched 2,000 times at random (about 135 never), 500 pinned
    touched = np.bincount(rng.integers(0, 1000, 2000), minlength=1000)
    changes = np.r_[touched, np.zeros(500, np.int64)]
    seen = np.count_nonzero(changes)
    assert seen < 900
    assert abs(moving_sites(changes) - 1000) < 30
    assert moving_sites(np.r_[np.full(400, 50), np.zeros(2600, np.int64)]) == 400
    assert moving_sites(np.zeros(10, np.int64)) == 0
    assert moving_sites(np.ones(10, np.int64)) == 10  # never more than the block


def test_the_rule():
    assert auto_steps_per_draw(LARGE_BLOCK - 1, 1.0) == 1  # a small block: one step
    assert auto_steps_per_draw(LARGE_BLOCK, None) == 1  # not tuned: nothing known
    assert auto_steps_per_draw(LARGE_BLOCK, float("nan")) == 1
    assert auto_steps_per_draw(LARGE_BLOCK, 0.0) == MAX_STEPS_PER_DRAW
    # a draw changes at most a quarter of the sites on average
    assert auto_steps_per_draw(4000, 250.0) == 4
    assert auto_steps_per_draw(4000, 251.0) == 3
    assert auto_steps_per_draw(4000, 1000.0) == 1
    assert auto_steps_per_draw(4000, 3999.0) == 1
    assert auto_steps_per_draw(10**6, 1.0) == MAX_STEPS_PER_DRAW


@pytest.mark.parametrize("cls", [pmd.ALBP, pmd.PAS])
def test_defaults_on_a_large_block_take_several_steps_and_sample_the_joint(ring, cls):
    """The default step tunes at one step per draw, then takes the number the rule gives
    from its late tuning steps (recorded in the ``steps_per_draw`` stat), in the compiled loop; the
    distribution of neighbouring pairs matches the transfer matrix's."""
    step = cls([ring["x"]], model=ring)
    assert step.compiled_loop is True, step.loop_reason
    with ring:
        idata = pm.sample(step=step, draws=600, tune=400, chains=2, cores=1, random_seed=7,
                          progressbar=False, compute_convergence_checks=False,
                          discard_tuned_samples=False)
    warm = idata.warmup_sample_stats["steps_per_draw"].values
    steps = idata.sample_stats["steps_per_draw"].values
    assert np.all(warm == 1)
    # one number per chain, from the second half of its tuning: the sites that moved
    # and how many a step changed
    late = idata.warmup_sample_stats["jump_distance"].values[:, 200:]
    states = idata.warmup_posterior["x"].values
    for chain in range(2):
        changes = (np.diff(states[chain, 199:], axis=0) != 0).sum(axis=0)
        expected = auto_steps_per_draw(N_RING, late[chain].mean(),
                                       moving=moving_sites(changes))
        assert np.all(steps[chain] == expected), (steps[chain, 0], expected)
    assert np.all(steps > 1)
    series = pair_series(idata)
    truth = ring_pair_probabilities().ravel()
    mean = series.mean(axis=(0, 1))
    mcse = np.asarray(az.mcse(az.convert_to_dataset(series)).to_array()).ravel()
    assert np.all(np.abs(mean - truth) <= N_MCSE * mcse), (mean, truth, mcse)


def test_several_steps_per_draw_cost_no_precision_per_step(ring):
    """What the rule promises: at the steps per draw it chose, the draws' effective size
    per step is not below that of the same chain storing every step (the stored draws
    of one step each, thinned by k after the fact), within the noise of the estimate."""
    step = pmd.ALBP([ring["x"]], model=ring)
    with ring:
        idata = pm.sample(step=step, draws=800, tune=400, chains=1, random_seed=3,
                          progressbar=False, compute_convergence_checks=False)
    k = int(idata.sample_stats["steps_per_draw"].values[0, 0])
    one = pmd.ALBP([ring["x"]], model=ring, steps_per_draw=1)
    with ring:
        every = pm.sample(step=one, draws=800 * k, tune=400, chains=1, random_seed=3,
                          progressbar=False, compute_convergence_checks=False)
    ess_auto = az.ess(az.convert_to_dataset(pair_series(idata))).to_array().values
    ess_all = az.ess(az.convert_to_dataset(pair_series(every))).to_array().values
    # the same number of steps: precision per step within a factor that noise explains
    assert np.all(ess_auto >= 0.6 * ess_all), (k, ess_auto, ess_all)


def test_the_choice_is_reproducible_and_the_same_with_one_or_two_cores(ring):
    kwargs = dict(draws=60, tune=100, chains=2, random_seed=11, progressbar=False,
                  compute_convergence_checks=False)
    runs = []
    for cores in (1, 1, 2):
        with ring:
            runs.append(pm.sample(step=pmd.ALBP([ring["x"]], model=ring), cores=cores,
                                  **kwargs))
    for other in runs[1:]:
        np.testing.assert_array_equal(runs[0].posterior["x"].values, other.posterior["x"].values)
        np.testing.assert_array_equal(runs[0].sample_stats["steps_per_draw"].values,
                                      other.sample_stats["steps_per_draw"].values)


def test_sites_that_never_move_do_not_count_toward_the_share_a_draw_changes():
    """3,000 sites of which 2,600 are pinned by their prior (a flip has probability
    e^-40) and 400 free: the share a draw changes is taken among the 400, so fewer steps
    per draw than counting every site (which would thin the free sites, which
    decorrelate within a few steps)."""
    logits = np.r_[np.full(2600, 40.0), np.zeros(400)]
    with pm.Model() as model:
        pm.Bernoulli("x", logit_p=logits, shape=logits.size)
    step = pmd.ALBP([model["x"]], model=model)
    with model:
        idata = pm.sample(step=step, draws=20, tune=300, chains=1, random_seed=5,
                          initvals={"x": (logits > 0).astype(np.int64)},
                          progressbar=False, compute_convergence_checks=False,
                          discard_tuned_samples=False)
    changed = idata.warmup_sample_stats["jump_distance"].values[0, 150:].mean()
    states = idata.warmup_posterior["x"].values[0, 149:]
    changes = (np.diff(states, axis=0) != 0).sum(axis=0)
    assert np.all(changes[:2600] == 0)
    k = int(idata.sample_stats["steps_per_draw"].values[0, 0])
    assert k == auto_steps_per_draw(3000, changed, moving=moving_sites(changes))
    assert k < auto_steps_per_draw(3000, changed), (k, changed)  # counting every site


def test_small_blocks_and_explicit_settings_keep_one_step(coupled_model):
    step = pmd.ALBP([coupled_model["x"]], model=coupled_model)
    assert step.compiled_loop is False and "fewer than" in step.loop_reason
    with coupled_model:
        idata = pm.sample(step=step, draws=50, tune=100, chains=1, random_seed=1,
                          progressbar=False, compute_convergence_checks=False)
    assert np.all(idata.sample_stats["steps_per_draw"].values == 1)


def test_an_explicit_number_of_steps_is_kept_while_tuning_and_after(ring):
    step = pmd.ARWM([ring["x"]], model=ring, steps_per_draw=3)
    with ring:
        idata = pm.sample(step=step, draws=20, tune=20, chains=1, random_seed=1,
                          progressbar=False, compute_convergence_checks=False,
                          discard_tuned_samples=False)
    assert np.all(idata.warmup_sample_stats["steps_per_draw"].values == 3)
    assert np.all(idata.sample_stats["steps_per_draw"].values == 3)


def test_without_tuning_a_draw_is_one_step(ring):
    with ring:
        idata = pm.sample(step=pmd.ALBP([ring["x"]], model=ring), draws=20, tune=0, chains=1,
                          random_seed=1, progressbar=False, compute_convergence_checks=False)
    assert np.all(idata.sample_stats["steps_per_draw"].values == 1)


def test_a_resumed_chain_keeps_its_steps_per_draw(ring):
    step = pmd.ALBP([ring["x"]], model=ring)
    with ring:
        pm.sample(step=step, draws=5, tune=200, chains=1, random_seed=1, progressbar=False,
                  compute_convergence_checks=False)
    chosen = step._draw_steps
    assert chosen > 1
    saved = step.sampling_state
    fresh = pmd.ALBP([ring["x"]], model=ring)
    fresh.resume(saved)
    with ring:
        idata = pm.sample(step=fresh, draws=5, tune=0, chains=1, random_seed=2,
                          progressbar=False, compute_convergence_checks=False)
    assert np.all(idata.sample_stats["steps_per_draw"].values == chosen)


@pytest.mark.parametrize("value", [0, -1, 1.5, "fast", True])
def test_bad_steps_per_draw_is_refused(coupled_model, value):
    with pytest.raises(ValueError, match="steps_per_draw must be 'auto' or a whole number"):
        pmd.ALBP([coupled_model["x"]], model=coupled_model, steps_per_draw=value)


@pytest.mark.parametrize("value", [1, "yes", None])
def test_bad_compiled_loop_is_refused(coupled_model, value):
    with pytest.raises(ValueError, match="compiled_loop must be 'auto', True or False"):
        pmd.ALBP([coupled_model["x"]], model=coupled_model, compiled_loop=value)


def _numba_fails(monkeypatch):
    """Make every NUMBA-mode build fail, as an operation without a numba implementation
    in PyTensor would."""
    import pymc_discrete.pymc.steps.informed_step as informed
    from pymc_discrete.pymc.model.exact import ExactRatios

    real = informed.compile_gradient_ratios

    def gradient(*args, numba_loop=False, **kwargs):
        if numba_loop:
            raise NotImplementedError("No Numba implementation for this Op")
        return real(*args, **kwargs)

    def terms(self):
        raise NotImplementedError("No Numba implementation for this Op")

    monkeypatch.setattr(informed, "compile_gradient_ratios", gradient)
    monkeypatch.setattr(ExactRatios, "compiled_terms", terms)


@pytest.mark.parametrize("cls", [pmd.ALBP, pmd.PAS, pmd.BlockedGibbs])
def test_auto_falls_back_to_python_when_numba_cannot_compile(ring, monkeypatch, cls):
    _numba_fails(monkeypatch)
    step = cls([ring["x"]], model=ring)
    assert step.compiled_loop is False
    assert "did not compile in PyTensor's NUMBA mode" in step.loop_reason
    with ring:
        idata = pm.sample(step=step, draws=30, tune=100, chains=1, random_seed=1,
                          progressbar=False, compute_convergence_checks=False)
    assert idata.sample_stats["jump_distance"].values.sum() > 0
    with pytest.raises(NotImplementedError):
        cls([ring["x"]], model=ring, compiled_loop=True)


def test_auto_exact_ratios_fall_back_when_their_terms_cannot_compile(ring, monkeypatch):
    """ALBP with exact ratios: the loop's target is built from the model's terms."""
    from pymc_discrete.pymc.model.exact import ExactRatios

    def terms(self):
        raise NotImplementedError("No Numba implementation for this Op")

    monkeypatch.setattr(ExactRatios, "compiled_terms", terms)
    step = pmd.ALBP([ring["x"]], model=ring, proposal="exact")
    assert step.compiled_loop is False and "NUMBA" in step.loop_reason


def test_a_switch_to_exact_ratios_turns_an_automatic_loop_off_in_every_chain(ring, monkeypatch):
    """The gradient compiles in NUMBA mode, the model's terms do not: a chain that
    switches to exact ratios during tuning goes on in Python, and so does the next chain
    (restored to the gradient, then switching again), instead of raising."""
    from pymc_discrete.pymc.model.exact import ExactRatios

    step = pmd.ALBP([ring["x"]], model=ring, proposal="gradient")
    assert step.compiled_loop is True

    def terms(self):
        raise NotImplementedError("No Numba implementation for this Op")

    monkeypatch.setattr(ExactRatios, "compiled_terms", terms)
    for _ in range(2):  # two chains: each starts from the gradient, then switches
        step._use_exact_ratios(None)
        assert step.compiled_loop is False and step.proposal == "exact"
        assert "NUMBA" in step.loop_reason
        step._switched_to_exact = False
        assert step.compiled_loop is True and step.proposal == "gradient"
        assert "did not compile" not in step.loop_reason
