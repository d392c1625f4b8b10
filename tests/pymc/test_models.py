"""The FHMM benchmark model's log density against its definition, for both Markov axes."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from pymc_discrete.example_models import fhmm_model


def _chain_logp(chains: np.ndarray) -> float:
    """Markov prior of binary chains along axis 0: P(first = 1) = 0.1, stay 0.8."""
    first = np.where(chains[0] == 1, np.log(0.1), np.log(0.9)).sum()
    same = chains[1:] == chains[:-1]
    return float(first + np.where(same, np.log(0.8), np.log(0.2)).sum())


def _paper_code_logp(chains: np.ndarray) -> float:
    """The prior term of the paper's released code (``lbp/model/fhmm.py``, ``forward``):
    ``-Bernoulli(probs=0.1).log_prob(x_0) - Bernoulli(logits=1 - 0.8).log_prob(change)``."""
    p_change = 1.0 / (1.0 + np.exp(-(1.0 - 0.8)))
    first = np.where(chains[0] == 1, np.log(0.1), np.log(0.9)).sum()
    change = chains[1:] != chains[:-1]
    return float(-first - np.where(change, np.log(p_change), np.log(1.0 - p_change)).sum())


@pytest.mark.parametrize("axis, prior", [("time", "stated"), ("components", "stated"),
                                         ("time", "paper_code")])
def test_fhmm_log_density_matches_its_definition(axis, prior):
    sigma2 = 0.5
    model = fhmm_model(7, 3, sigma2=sigma2, seed=2, markov_axis=axis, prior=prior)
    logp = model.compile_logp()
    rng = np.random.default_rng(0)
    prior_logp = _chain_logp if prior == "stated" else _paper_code_logp
    for _ in range(5):
        x = rng.integers(0, 2, (7, 3))
        prior = prior_logp(x if axis == "time" else x.T)
        mean = x @ model.loadings + model.offset
        likelihood = norm.logpdf(model.observed, mean, np.sqrt(sigma2)).sum()
        # x ~ Bernoulli(0.5) (the Markov prior is a Potential): PyTensor keeps the exactly
        # representable 0.5 as float32 and computes that term in float32, so it carries up
        # to one float32 rounding per site; the rest is float64
        flat_bernoulli = x.size * np.log(0.5)
        float32_slack = x.size * np.finfo(np.float32).eps * np.log(2.0)
        point = model.initial_point()
        point["x"] = x
        expected = prior + likelihood + flat_bernoulli
        assert abs(logp(point) - expected) <= float32_slack + 1e-12 * abs(expected)


def test_fhmm_components_axis_simulates_chains_across_components():
    model = fhmm_model(400, 6, seed=1, markov_axis="components")
    truth = model.truth
    stay_components = np.mean(truth[:, 1:] == truth[:, :-1])
    assert abs(stay_components - 0.8) < 5 * np.sqrt(0.16 / truth[:, 1:].size)


def test_fhmm_rejects_an_unknown_axis_or_prior():
    with pytest.raises(ValueError, match="markov_axis"):
        fhmm_model(5, 2, markov_axis="diagonal")
    with pytest.raises(ValueError, match="prior"):
        fhmm_model(5, 2, prior="flat")
