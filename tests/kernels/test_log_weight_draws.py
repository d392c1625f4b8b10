"""The inverse-CDF draw of rows of log-weights: the same draws as the cumulative sums
written in NumPy, and frequencies within 4 standard errors of the exact probabilities."""

import numpy as np
import pytest

from pymc_discrete.kernels.log_weight_draws import draw_from_log_weights


def _numpy_draws(table, uniforms):
    """The draw written with NumPy's reductions, every weight summed."""
    top = table.max(axis=-1, keepdims=True)
    top[~np.isfinite(top)] = 0.0
    with np.errstate(under="ignore", divide="ignore", invalid="ignore"):
        cumulative = np.cumsum(np.exp(table - top), axis=-1)
        total = cumulative[..., -1]
        drawn = np.minimum((cumulative < (uniforms * total)[..., None]).sum(axis=-1),
                           table.shape[-1] - 1)
        return drawn, np.log(total) + top[..., 0]


def _tables(rng, shape, width):
    """Unimodal rows like a count's window (most of the weight far in the tails), with
    impossible values at the ends, inside, and rows of no possible value."""
    values = np.arange(width)
    mode = rng.uniform(0, width, size=(*shape, 1))
    spread = rng.uniform(0.5, 6.0, size=(*shape, 1))
    table = -0.5 * ((values - mode) / spread) ** 2 + rng.normal(size=(*shape, 1)) * 30
    table[..., :2][rng.random(shape) < 0.2] = -np.inf
    table[..., width // 2][rng.random(shape) < 0.1] = -np.inf
    table[rng.random(shape) < 0.02] = -np.inf
    return table


@pytest.mark.parametrize("width", [2, 3, 17, 80])
@pytest.mark.parametrize("closed_at", ["one", "zero"])
def test_the_draws_are_those_of_the_cumulative_sums_in_numpy(width, closed_at):
    rng = np.random.default_rng(width)
    table = _tables(rng, (40, 50), width)
    uniforms = rng.random((40, 50))
    if closed_at == "one":
        uniforms = 1.0 - uniforms
    uniforms[0, :5] = 0.0 if closed_at == "zero" else 1.0
    drawn, log_mass = draw_from_log_weights(table, uniforms)
    expected_drawn, expected_mass = _numpy_draws(table, uniforms)
    # the weights left out are below 2**-53 of a row's total: the same draws to the
    # last bit of the uniforms used here, the totals within a few units in the last place
    np.testing.assert_array_equal(drawn, expected_drawn)
    np.testing.assert_array_equal(np.isneginf(log_mass), np.isneginf(expected_mass))
    finite = np.isfinite(expected_mass)
    np.testing.assert_allclose(log_mass[finite], expected_mass[finite], rtol=0, atol=1e-13)
    assert drawn.dtype == np.int64 and drawn.shape == log_mass.shape == (40, 50)


def test_a_zero_weight_is_never_drawn_from_uniforms_in_the_half_open_interval_at_one():
    with np.errstate(divide="ignore"):
        table = np.log(np.array([[0.0, 0.5, 0.0, 0.5, 0.0]] * 4000))
    uniforms = 1.0 - np.random.default_rng(3).random(4000)
    uniforms[:3] = [1.0, np.nextafter(0.0, 1.0), 0.5]
    drawn, log_mass = draw_from_log_weights(table, uniforms)
    assert set(np.unique(drawn)) == {1, 3}
    np.testing.assert_allclose(log_mass, 0.0, atol=1e-15)


def test_rows_without_a_possible_value_and_rows_with_nan_or_inf():
    table = np.array([[-np.inf, -np.inf, -np.inf],
                      [0.0, np.nan, 1.0],
                      [0.0, np.inf, 1.0],
                      [-1e308, -np.inf, -1e308]])
    drawn, log_mass = draw_from_log_weights(table, np.full(4, 0.5))
    assert drawn.tolist() == [0, 0, 1, 0]
    assert log_mass[0] == -np.inf and np.isnan(log_mass[1]) and log_mass[2] == np.inf
    np.testing.assert_allclose(log_mass[3], -1e308 + np.log(2.0))


def test_frequencies_within_four_standard_errors_of_the_exact_probabilities():
    rng = np.random.default_rng(11)
    weights = np.array([0.0, 3.0, 0.0, 1.0, 1e-9, 6.0])
    probabilities = weights / weights.sum()
    draws = 200_000
    with np.errstate(divide="ignore"):
        table = np.broadcast_to(np.log(weights) + 700.0, (draws, weights.size))
    drawn, log_mass = draw_from_log_weights(table, 1.0 - rng.random(draws))
    frequencies = np.bincount(drawn, minlength=weights.size) / draws
    standard_error = np.sqrt(probabilities * (1 - probabilities) / draws)
    assert np.all(np.abs(frequencies - probabilities) <= 4 * standard_error + 1e-12)
    assert frequencies[0] == frequencies[2] == 0.0
    np.testing.assert_allclose(log_mass, np.log(weights.sum()) + 700.0, rtol=1e-15)
