"""The batched bulk ESS and rank r-hat equal ArviZ's element-by-element values to the bit
(pymc_discrete/pymc/choosing/rank_diagnostics.py)."""

import arviz_stats
import numpy as np
import pytest

from pymc_discrete.pymc.choosing.rank_diagnostics import _LEVELS, bulk_ess_and_rank_rhat


def _arviz(series: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ArviZ's values, element by element, of (series, chain, draw)."""
    draws = np.moveaxis(series, 0, -1)
    return (np.asarray(arviz_stats.ess(draws, chain_axis=0, draw_axis=1)),
            np.asarray(arviz_stats.rhat(draws, chain_axis=0, draw_axis=1)))


def _sticky(rng, n_series: int, chains: int, draws: int) -> np.ndarray:
    """Binary chains that stay put with probabilities up to 0.999: long autocorrelations,
    so Geyer's sequences run far and the series stop at different lags."""
    stay = rng.uniform(0.5, 0.999, size=n_series)
    state = rng.integers(0, 2, size=(n_series, chains))
    out = np.empty((n_series, chains, draws), dtype=np.int64)
    for draw in range(draws):
        flip = rng.uniform(size=(n_series, chains)) > stay[:, None]
        state = np.where(flip, 1 - state, state)
        out[:, :, draw] = state
    return out


def _cases(chains: int, draws: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = 40
    binary = (rng.uniform(size=(n, chains, draws))
              < rng.uniform(0.001, 0.999, size=n)[:, None, None]).astype(np.int64)
    binary[0], binary[1] = 1, 0  # constant series: ESS is the size, r-hat NaN
    binary[2, 0] = 1  # one chain apart from the others
    binary[2, 1:] = rng.uniform(size=(chains - 1, draws)) < 0.5
    sticky = _sticky(rng, n, chains, draws)
    return {
        "binary": binary,
        "sticky": sticky,
        "sticky, bool": sticky.astype(bool),
        "categorical": rng.integers(0, 5, size=(n, chains, draws)),
        "rare events, int8": (rng.uniform(size=(n, chains, draws)) < 0.003).astype(np.int8),
        "negative counts": rng.poisson(3.0, size=(n, chains, draws)) - 4,
        f"more than {_LEVELS} levels": rng.integers(0, 5 * _LEVELS, size=(n, chains, draws)),
        "random walks, float": np.cumsum(rng.normal(size=(n, chains, draws)), axis=2),
    }


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # ArviZ's own, on constant series
# 700 and 14 draws: padded FFT lengths that SciPy's two next_fast_len functions differ on
@pytest.mark.parametrize("chains, draws", [(4, 1000), (4, 700), (2, 100), (3, 257), (8, 64),
                                           (2, 14), (2, 4), (2, 5), (4, 7)])
def test_every_series_equals_arvizs_value_to_the_bit(chains, draws):
    for name, series in _cases(chains, draws).items():
        ours, theirs = bulk_ess_and_rank_rhat(series), _arviz(series)
        for what, a, b in zip(("ess", "r-hat"), ours, theirs):
            assert a.shape == (len(series),)
            assert np.array_equal(a, b, equal_nan=True), (name, what, a - b)


def test_the_cases_reach_every_branch():
    """The cases hold constant series (ESS = size, r-hat NaN), an r-hat above 1.01, and
    series whose autocorrelations run long (an ESS of a twentieth of the draws) beside
    nearly independent ones."""
    series = _cases(4, 1000)
    ess, rhat = bulk_ess_and_rank_rhat(series["binary"])
    assert ess[0] == ess[1] == 4000 and np.isnan(rhat[:2]).all()
    assert rhat[2] > 1.01
    ess, _ = bulk_ess_and_rank_rhat(series["sticky"])
    assert ess.min() < 200 < 3000 < ess.max()


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at least 2 chains"):
        bulk_ess_and_rank_rhat(np.zeros((3, 1, 100)))
    with pytest.raises(ValueError, match="at least 2 chains"):
        bulk_ess_and_rank_rhat(np.zeros((4, 100)))
    with pytest.raises(ValueError, match="NaN"):
        bulk_ess_and_rank_rhat(np.full((1, 2, 10), np.nan))
