"""The two-valued specialisation of the linearised path proposal gives the numbers of the
general code (any K): site weights, the forward path's log-probability and the reverse
walk's, including rescaling at extreme ratios and impossible moves."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_discrete.kernels.pas import (
    path_logprob,
)
from pymc_discrete.kernels.path_moves import (
    binary_forward,
    binary_reverse,
    binary_weights_at,
    binary_weights_reusing,
    site_weights_at,
    site_weights_reusing,
)
from pymc_discrete.kernels.ratios import potential_table
from pymc_discrete.kernels.weights import weight_code

N_SITES = 12


def _ratios(rng, spread):
    d = rng.normal(0.0, spread, N_SITES)
    d[rng.random(N_SITES) < 0.15] = -np.inf  # impossible moves
    return d


def _log_weights(weights, log_scale):
    with np.errstate(divide="ignore"):
        return np.log(weights) + log_scale


@pytest.mark.parametrize("weight", ["sqrt", "barker"])
@pytest.mark.parametrize("spread", [2.0, 1500.0])  # 1500: weights beyond e^600, rescaling
def test_binary_path_matches_general_code(weight, spread):
    code = weight_code(weight)
    rng = np.random.default_rng(11)
    for trial in range(40):
        x = rng.integers(0, 2, N_SITES)
        potentials = potential_table(x, _ratios(rng, spread))
        w_bin, s_bin = binary_weights_at(x, potentials, code)
        w_gen, s_gen = site_weights_at(x, potentials, code)
        np.testing.assert_allclose(
            _log_weights(w_bin, s_bin), _log_weights(w_gen, s_gen), rtol=1e-12, atol=1e-12
        )
        length = int(rng.integers(1, 25))
        y, sites, previous, logq = binary_forward(
            x, potentials, s_bin, w_bin, length, code, trial
        )
        moves = [(int(i), 1 - int(b)) for i, b in zip(sites, previous)]
        assert np.all(previous == _replay(x, sites))
        np.testing.assert_allclose(logq, path_logprob(potentials, x, moves, code), rtol=1e-12)
        # the reverse walk under a fresh linearisation at y
        at_y = potential_table(y, _ratios(rng, spread))
        w_y, s_y = binary_weights_at(y, at_y, code)
        back = [(int(i), int(b)) for i, b in zip(sites[::-1], previous[::-1])]
        expected = path_logprob(at_y, y, back, code)
        got = binary_reverse(y, at_y, s_y, w_y, sites, previous, code)
        if np.isfinite(expected):
            np.testing.assert_allclose(got, expected, rtol=1e-12)
        else:
            assert got == -np.inf


def _replay(x, sites):
    """Value of each moved site just before its move."""
    z = x.copy()
    before = []
    for i in sites:
        before.append(z[i])
        z[i] = 1 - z[i]
    return np.array(before)


@pytest.mark.parametrize("weight", ["sqrt", "barker"])
def test_binary_weights_reusing_matches_fresh_weights(weight):
    code = weight_code(weight)
    rng = np.random.default_rng(5)
    x = rng.integers(0, 2, N_SITES)
    old = potential_table(x, _ratios(rng, 3.0))
    w_old, s_old = binary_weights_at(x, old, code)
    for shift in [0.0, 5.0, 2000.0]:  # 2000: the old scale no longer fits
        y = x.copy()
        y[:3] = 1 - y[:3]
        potentials = old.copy()
        potentials[:3] = potential_table(y[:3], rng.normal(0.0, 3.0, 3))  # moved sites
        potentials[3:6, 1 - x[3:6]] += shift  # sites whose ratios changed
        w, s = binary_weights_reusing(y, potentials, x, old, w_old, s_old, code)
        w_ref, s_ref = site_weights_reusing(y, potentials, x, old, w_old, s_old, code)
        np.testing.assert_allclose(
            _log_weights(w, s), _log_weights(w_ref, s_ref), rtol=1e-12, atol=1e-12
        )
        if shift == 0.0:
            assert s == s_old  # unchanged sites keep their weights on the old scale
            same = np.arange(N_SITES) >= 6
            assert np.array_equal(w[same], w_old[same])


def test_binary_reverse_rescales_at_extreme_ratios():
    """Walking back (0 -> 1 -> 0 at site 0) against ratios of -2000: the second move has
    weight e^+1000 relative to the scale, beyond float range unless rescaled."""
    y = np.array([0, 0, 0])
    potentials = potential_table(y, np.array([-2000.0, -1990.0, -1995.0]))
    code = weight_code("sqrt")
    weights, log_scale = binary_weights_at(y, potentials, code)
    sites, previous = np.array([0, 0]), np.array([0, 1])  # forward: 0 -> 1 -> 0 = y
    got = binary_reverse(y, potentials, log_scale, weights, sites, previous, code)
    log_w = np.array([-1000.0, -995.0, -997.5])
    after = np.array([1000.0, -995.0, -997.5])
    expected = (log_w[0] - np.logaddexp.reduce(log_w)) + (after[0] - np.logaddexp.reduce(after))
    np.testing.assert_allclose(got, expected, rtol=1e-12)
