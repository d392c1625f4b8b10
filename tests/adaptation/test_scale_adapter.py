"""Dual averaging of the scale toward a target acceptance rate, in windows; the path
length tuner's jump-per-cost criterion."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_discrete.adaptation import ScaleAdapter
from pymc_discrete.adaptation.scale import PathLengthAdapter, fitted_crossing
from pymc_discrete.kernels.pas import draw_path_length, path_length_contrast


def _acceptance(scale):
    """A smooth decreasing acceptance curve, 2 Phi(-0.05 R^(3/2) / 2) like LBP's limit."""
    return math.erfc(0.05 * scale**1.5 / 2 / math.sqrt(2))


def _solve(target):
    lo, hi = 1.0, 1000.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _acceptance(mid) > target else (lo, mid)
    return lo


def _tune(target, seed, n_tune=2000, shift=lambda step: 1.0):
    """Frozen log scale / the root, tuning on 0/1 draws of the acceptance curve of the
    scale times ``shift(step)`` (1: a stationary chain)."""
    rng = np.random.default_rng(seed)
    tuner = ScaleAdapter(target, 1.0, 1.0, 800.0)
    tuner.start(n_tune=n_tune)
    for step in range(n_tune):
        a = _acceptance(tuner.scale * shift(step))
        tuner.update(float(rng.random() < a))  # the noisiest unbiased signal: 0/1
    assert not tuner.tuning
    return math.log(tuner.scale / _solve(target))


@pytest.mark.parametrize("target", [0.234, 0.574, 0.8])
def test_tuner_finds_the_scale_of_the_target_rate_under_noise(target):
    """Over 20 chains the frozen scale is unbiased (within 4 standard errors of the
    root), and every chain within 15 % of it."""
    errors = np.array([_tune(target, seed) for seed in range(20)])
    assert abs(errors.mean()) < 4 * errors.std() / np.sqrt(errors.size), errors
    assert np.all(np.abs(errors) < np.log(1.15)), errors


def test_frozen_scale_is_that_of_the_end_of_a_transient():
    """A chain that starts far from its typical set accepts differently at first: here
    the acceptance curve at scale R is that of 3R at the start, relaxing to R by 70 % of
    tuning. Restarting dual averaging in windows and weighting the last window toward
    its end freeze the scale of the stationary chain within 5 % (one long dual average
    and an unweighted line through the second half froze 15 % too small a scale)."""
    def shift(step):
        return 1.0 + 2.0 * max(0.0, 1.0 - step / 1400.0)

    errors = np.array([_tune(0.574, seed, shift=shift) for seed in range(20)])
    assert abs(errors.mean()) < np.log(1.05), np.exp(errors.mean())


def test_a_late_change_of_the_target_does_not_freeze_the_old_scale():
    """A chain that spends most of tuning in one state of the target and reaches
    another at 85 % of tuning (a mixture whose means settle late), where the scale
    that reaches the target is ten times smaller: the frozen scale is one the end of
    tuning used, within a factor 2 of the new root (the fit through the whole last
    window froze about 3.5 times the root: a chain that then accepts almost nothing)."""
    def shift(step):
        return 0.1 if step < 1700 else 1.0

    errors = np.array([_tune(0.574, seed, shift=shift) for seed in range(20)])
    assert np.all(np.abs(errors) < np.log(2.0)), np.exp(errors)


def test_tuning_restarts_in_windows_from_the_windows_estimate():
    tuner = ScaleAdapter(0.5, 1.0, 1.0, 100.0)
    tuner.start(n_tune=1000)
    assert tuner._restarts == [125, 250, 500]
    for _ in range(125):
        tuner.update(1.0)  # always accepted: the scale grows
    # restarted at the window's estimate (the largest scale seen: acceptance never fell)
    assert tuner._state.step == 0 and tuner.scale > 1.0 and tuner._late_count == 0
    tuner.start(n_tune=15)  # too short for windows: one window, the whole of tuning
    assert tuner._restarts == []


def test_fitted_crossing_finds_where_a_falling_curve_meets_the_target():
    from scipy.special import ndtr

    x = np.linspace(0.0, 4.0, 401)
    w = np.ones_like(x)
    lbp = 2.0 * ndtr(-0.1 * np.exp(1.5 * x) / 2.0)  # the optimal-scaling shape
    crossing = fitted_crossing(x, lbp, w, 0.234)
    assert 2.0 * ndtr(-0.1 * np.exp(1.5 * crossing) / 2.0) == pytest.approx(0.234, abs=1e-4)
    logistic = 1.0 / (1.0 + np.exp(2.0 * (x - 1.0)))
    assert fitted_crossing(x, logistic, w, 0.3, link="logit") == pytest.approx(
        1.0 + np.log(0.7 / 0.3) / 2.0, abs=1e-4)
    # a curve that rises, or is flat: the weighted mean of x
    assert fitted_crossing(x, 1.0 - lbp, w, 0.5) == pytest.approx(2.0)
    assert fitted_crossing(x, np.full_like(x, 0.3), x + 1.0, 0.5) == pytest.approx(
        np.average(x, weights=x + 1.0))
    # within the range of x
    assert fitted_crossing(x, lbp, w, 0.999) == pytest.approx(0.0)


def test_tuner_freezes_after_n_tune_and_restarts_per_chain():
    tuner = ScaleAdapter(0.5, 1.0, 1.0, 100.0)
    tuner.start(n_tune=50)
    for _ in range(50):
        tuner.update(1.0)
    frozen = tuner.scale
    assert frozen > 1.0 and not tuner.tuning
    for _ in range(20):
        tuner.update(0.0)
    assert tuner.scale == frozen
    tuner.start(n_tune=50)
    assert tuner.scale == 1.0 and tuner.tuning


def test_tuner_stays_in_bounds_and_ignores_nan():
    tuner = ScaleAdapter(0.5, 2.0, 1.0, 10.0)
    for _ in range(300):
        tuner.update(1.0)
        assert 1.0 <= tuner.scale <= 10.0
    tuner.update(float("nan"))
    tuner.stop()
    assert tuner.scale == pytest.approx(10.0, rel=1e-6)


def test_tuner_without_adaptation_keeps_the_initial_scale():
    tuner = ScaleAdapter(0.5, 3.0, 1.0, 10.0, adapt=False)
    tuner.update(1.0)
    assert tuner.scale == 3.0 and not tuner.tuning


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5])
def test_tuner_rejects_targets_outside_the_unit_interval(bad):
    with pytest.raises(ValueError, match="target_accept"):
        ScaleAdapter(bad, 1.0, 1.0, 10.0)


def test_tuner_rejects_initial_scales_outside_the_bounds():
    with pytest.raises(ValueError, match="initial_scale"):
        ScaleAdapter(0.5, 20.0, 1.0, 10.0)


def _path_prior(scale):
    """P(L = l) under the path-length prior of mean ``scale`` (kernels.pas)."""
    base, frac = math.floor(scale), scale - math.floor(scale)
    probs = {}
    for half, weight in ((base, 1.0 - frac), (base + 1, frac)):
        for length in range(1, 2 * half):
            probs[length] = probs.get(length, 0.0) + weight / (2 * half - 1)
    return probs


def _efficiency(scale, jump, cost):
    """Expected jump over expected cost at mean path length ``scale``."""
    probs = _path_prior(scale)
    return (sum(p * jump(l) for l, p in probs.items())
            / sum(p * cost(l) for l, p in probs.items()))


@pytest.mark.parametrize(
    "jump,cost",
    [
        # acceptance falling with the length, a cheap path (PAFS-like)
        (lambda l: l * math.exp(-l / 40.0), lambda l: 2.0 + 0.01 * l),
        # the same with a model evaluation per move (PAS-like)
        (lambda l: l * math.exp(-l / 40.0), lambda l: 1.0 + l),
        # parity: odd paths are rejected, the acceptance rises with X
        (lambda l: float(l) * (l % 2 == 0), lambda l: 1.0 + l),
    ],
    ids=["falling-cheap", "falling-costly", "parity"],
)
def test_path_length_tuner_reaches_a_near_optimal_jump_per_cost(jump, cost):
    """Simulated paths with a known expected jump and cost per length: the frozen X
    jumps at least 90 % as far per unit of cost as the best X (comparing the halves of
    the path-length prior is a slightly long-biased but flat-near-the-optimum
    criterion), including where acceptance rises with X and an acceptance target
    would drive X down to 1.5."""
    grid = np.exp(np.linspace(np.log(1.5), np.log(200.0), 300))
    best = max(_efficiency(x, jump, cost) for x in grid)
    for seed in range(5):
        rng = np.random.default_rng(seed)
        tuner = PathLengthAdapter(2.0, 1.5, 200.0)
        tuner.start(n_tune=2000)
        while tuner.tuning:
            scale = tuner.scale
            length = draw_path_length(scale, rng)[0]
            noisy = jump(length) * (0.5 + rng.random())
            tuner.observe(noisy, cost(length), path_length_contrast(scale, length))
            tuner.update(0.5)
        assert _efficiency(tuner.scale, jump, cost) > 0.9 * best, (seed, tuner.scale)


def test_path_length_tuner_updates_on_the_mean_signal_of_a_draws_steps():
    tuner = PathLengthAdapter(4.0, 1.5, 100.0)
    tuner.start(n_tune=100)
    tuner.update(0.0)  # no observation: signal 1/2, not the acceptance probability
    assert tuner._window_signals == [0.5]
    assert tuner.target_accept == 0.5 and not tuner.stuck_below_target()
    tuner.observe(1.0, 1.0, 1.0)  # the first step: no average yet, u = 1
    tuner.observe(0.0, 1.0, 1.0)  # no jump: u = -1
    saved = tuner.snapshot()
    tuner.update(0.3)  # one update for the draw's two steps: their mean signal
    assert tuner._window_signals[-1] == pytest.approx(0.5) and not tuner._pending
    tuner.restore(saved)
    assert len(tuner._pending) == 2 and tuner.snapshot() == saved
    tuner.stop()
    tuner.observe(1.0, 2.0, 1.0)  # after tuning: ignored
    assert len(tuner._pending) == 2
