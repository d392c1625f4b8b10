"""Dual averaging of the scale toward a target acceptance rate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_discrete.adaptation import ScaleAdapter


def _acceptance(scale):
    """A smooth decreasing acceptance curve, 2 Phi(-0.05 R^(3/2) / 2) like LBP's limit."""
    return math.erfc(0.05 * scale**1.5 / 2 / math.sqrt(2))


def _solve(target):
    lo, hi = 1.0, 1000.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _acceptance(mid) > target else (lo, mid)
    return lo


@pytest.mark.parametrize("target", [0.234, 0.574, 0.8])
def test_tuner_finds_the_scale_of_the_target_rate_under_noise(target):
    rng = np.random.default_rng(0)
    tuner = ScaleAdapter(target, 1.0, 1.0, 800.0)
    tuner.start(n_tune=2000)
    for _ in range(2000):
        a = _acceptance(tuner.scale)
        tuner.update(float(rng.random() < a))  # the noisiest unbiased signal: 0/1
    assert not tuner.tuning
    assert tuner.scale == pytest.approx(_solve(target), rel=0.1)


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
