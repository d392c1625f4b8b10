"""``proposal="auto"`` refuses a gradient whose proposal would leave some sites
practically never moved (issue 30, item 3b).

The target: a spike-and-slab whose indicators enter the covariance of the data,
``y ~ MvNormal(0, s^2 I + t^2 X diag(g) X^T)``. The log-determinant makes the log density
convex in each indicator, so the relaxation's first-order estimate of turning an
indicator on is far below the exact log-ratio: the gradient's proposal offers those moves
practically never, and a chain with it leaves indicators of inclusion probability about
0.05 at 0 for thousands of draws while the other sites move (an average acceptance does
not show it). The exact posterior comes from enumerating the 2^8 indicator states, the
likelihood in closed form (scipy).
"""

from __future__ import annotations

import itertools

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy.stats import multivariate_normal

import pymc_discrete as pmd
from pymc_discrete.example_models import rbm_model
from pymc_discrete.pymc.steps import auto_proposal
from pymc_discrete.pymc.steps.reachability import (
    PLAUSIBLE_LOG_RATIO,
    UNDERWEIGHT_LOG_MARGIN,
    move_log_probabilities,
    underweighted_moves,
)

P, ROWS, PRIOR = 8, 30, 0.2
#: the indicator of lowest posterior inclusion probability (0.039) with data seed 0
RARE = 3
#: Monte Carlo standard errors allowed between a sampled and an exact frequency
N_MCSE = 4.0


def _data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Design (ROWS x P, standard normal) and data from three active columns."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(ROWS, P))
    active = np.zeros(P)
    active[:3] = 1.0
    y = X @ (active * rng.normal(0.0, 1.0, P)) + rng.normal(0.0, 1.0, ROWS)
    return X, y


def _spike_and_slab(X, y, s=1.0, t=1.0) -> pm.Model:
    """``g ~ Bernoulli(PRIOR)``, ``y ~ MvNormal(0, s^2 I + t^2 X diag(g) X^T)``; ``s`` and
    ``t`` numbers, or None for HalfNormal(1) variables."""
    with pm.Model() as model:
        g = pm.Bernoulli("g", PRIOR, shape=P)
        s = pm.HalfNormal("s", 1.0) if s is None else s
        t = pm.HalfNormal("t", 1.0) if t is None else t
        cov = s**2 * pt.eye(ROWS) + t**2 * X @ pt.diag(pt.cast(g, "float64")) @ X.T
        pm.MvNormal("y", np.zeros(ROWS), cov=cov, observed=y)
    return model


def _exact_posterior(X, y) -> tuple[np.ndarray, np.ndarray]:
    """Every indicator state and its posterior probability (s = t = 1)."""
    states = np.array(list(itertools.product((0, 1), repeat=P)))
    logp = np.array([
        multivariate_normal(np.zeros(ROWS), np.eye(ROWS) + (X * g) @ X.T).logpdf(y)
        for g in states
    ])
    ones = states.sum(axis=1)
    logp += ones * np.log(PRIOR) + (P - ones) * np.log1p(-PRIOR)
    prob = np.exp(logp - logp.max())
    return states, prob / prob.sum()


@pytest.fixture(scope="module")
def target():
    X, y = _data()
    states, prob = _exact_posterior(X, y)
    return _spike_and_slab(X, y), states, prob


def test_the_gradient_practically_never_proposes_a_rare_indicator(target):
    """At the posterior mode, turning g[RARE] on is plausible (exact local log-ratio
    about -3, inclusion probability 0.039) but its gradient estimate is more than 10
    lower, and its proposal probability (Barker weights, ALBP's default) is below 1e-6:
    a few thousand draws would never propose it; exact ratios propose it with probability
    above 1e-2."""
    model, states, prob = target
    inclusion = prob @ states
    assert 0.03 < inclusion[RARE] < 0.05
    step = pmd.ALBP([model["g"]], model=model, proposal="gradient")
    gradient = step._logp_and_ratios
    step._compile_exact_ratios()
    mode = states[np.argmax(prob)].astype(np.int64)
    assert mode[RARE] == 0
    estimated, exact = gradient(mode)[1], step._exact_source(mode)[1]
    assert exact[RARE] > PLAUSIBLE_LOG_RATIO and exact[RARE] > -4.0, exact
    assert estimated[RARE] < exact[RARE] - 10.0, (estimated, exact)
    log_q_gradient = move_log_probabilities(estimated, 0)
    log_q_exact = move_log_probabilities(exact, 0)
    assert np.exp(log_q_gradient[RARE]) < 1e-6 and np.exp(log_q_exact[RARE]) > 1e-2
    assert underweighted_moves(estimated, exact, 0)[RARE]


@pytest.mark.parametrize("step_class", [pmd.ALBP, pmd.PAS])
def test_auto_chooses_exact_ratios_naming_the_sites(target, step_class, monkeypatch):
    """ALBP and PAS refuse the gradient and name g[RARE]; the refusal runs no
    trial (every trial and timing raises here), so it depends on the model alone."""
    def no_trials(*args, **kwargs):
        raise AssertionError("a refusal for reachability must not run the trials")

    monkeypatch.setattr(auto_proposal, "trial_acceptance", no_trials)
    monkeypatch.setattr(auto_proposal, "trial_jumps", no_trials)
    model, _, _ = target
    step = step_class([model["g"]], model=model)
    assert step.proposal == "exact" and step.ratios_are_exact, step.proposal_reason
    reason = step.proposal_reason
    assert "would practically never move" in reason and f"g[{RARE}]" in reason, reason
    again = step_class([model["g"]], model=model)
    assert (again.proposal, again.proposal_reason) == (step.proposal, reason)


def test_auto_refuses_the_gradient_with_random_scales():
    """The reported model with s and t HalfNormal (continuous variables beside the
    block, perturbed in one of the settings the check visits): exact ratios too."""
    X, y = _data()
    model = _spike_and_slab(X, y, s=None, t=None)
    step = pmd.ALBP([model["g"]], model=model)
    assert step.proposal == "exact", step.proposal_reason
    assert "would practically never move" in step.proposal_reason


def test_default_albp_samples_the_exact_inclusion_probabilities(target):
    """``pmd.ALBP([g])`` with its defaults, 2 chains: every indicator's inclusion
    frequency within N_MCSE Monte Carlo standard errors (ArviZ's, from the chains' own
    autocorrelation) of the enumerated posterior, plus one draw's worth for an indicator
    whose posterior is within a draw of 0 or 1 (its MCSE is then 0). With the gradient
    five indicators of inclusion probability 0.04 to 0.05 were never once 1 in 2 x 6000
    draws."""
    model, states, prob = target
    inclusion = prob @ states
    with model:
        step = pmd.ALBP([model["g"]])
        assert step.proposal == "exact", step.proposal_reason
        idata = pm.sample(draws=5000, tune=1000, chains=2, cores=1, step=step,
                          random_seed=1, progressbar=False, compute_convergence_checks=False)
    draws = idata.posterior["g"].values.astype(float)
    frequency = draws.mean(axis=(0, 1))
    mcse = np.array([float(az.mcse(draws[..., i])) for i in range(P)])
    slack = 1.0 / (draws.shape[0] * draws.shape[1])
    assert np.all(np.abs(frequency - inclusion) <= N_MCSE * mcse + slack), (
        frequency, inclusion, mcse)
    assert np.all(draws[..., RARE].sum(axis=1) > 50)  # every chain visits g[RARE] = 1


def _ising(n: int = 10, seed: int = 3) -> pm.Model:
    """Bernoulli prior and pairwise couplings (zero diagonal): the log density is
    multilinear in the sites, so the gradient's flip ratios are exact."""
    rng = np.random.default_rng(seed)
    J = np.triu(rng.normal(0.0, 0.7, (n, n)), k=1)
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.3, shape=n)
        pm.Potential("couplings", pm.math.dot(x, pm.math.dot(J, x)))
    return model


def test_auto_keeps_an_exact_gradient():
    """Pairwise couplings: ALBP keeps the gradient (its ratios are exact, nothing to
    refuse); PAS's choice between the linearised path and the gradient evaluated along
    the path is no refusal either (both use the gradient's own ratios)."""
    model = _ising()
    step = pmd.ALBP([model["x"]], model=model)
    assert step.proposal == "gradient" and step.ratios_are_exact, step.proposal_reason
    assert "exact local ratios" in step.proposal_reason
    path = pmd.PAS([model["x"]], model=model)
    assert path.proposal == "gradient" or path._exact_from_gradient, path.proposal_reason
    assert "would practically never move" not in path.proposal_reason


def test_auto_does_not_refuse_a_mildly_curved_gradient():
    """The RBM marginal (softplus of linear functions: convex in the sites, so the
    gradient underestimates flips, but by little): the check passes and the trials
    decide, for both weights."""
    rng = np.random.default_rng(1)
    model = rbm_model(rng.normal(0.0, 0.5, (16, 6)), rng.normal(0.0, 0.5, 16),
                      rng.normal(0.0, 0.5, 6))
    for weight in ("barker", "sqrt"):
        step = pmd.ALBP([model["x"]], model=model, weight=weight)
        assert "trial steps" in step.proposal_reason, step.proposal_reason
        assert not step.ratios_are_exact or step.proposal == "exact"


def test_underweighted_moves_of_ratio_tables():
    """The helper on categorical tables (NaN at the current value, -inf at a value the
    site does not have): a move the estimate makes impossible is flagged if plausible,
    an implausible or impossible one never, and a common offset cancels."""
    exact = np.array([[np.nan, -1.0, -2.0], [0.5, np.nan, -np.inf], [-30.0, 0.0, np.nan]])
    estimated = exact.copy()
    estimated[0, 2] = -np.inf  # plausible (exact -2), made impossible
    estimated[2, 0] = -80.0  # implausible anyway (exact -30)
    for code in (0, 1):
        flagged = underweighted_moves(estimated, exact, code)
        assert flagged.tolist() == [[False, False, True], [False, False, False],
                                    [False, False, False]]
        assert not underweighted_moves(exact - 25.0, exact, code).any()
    # a move just within the margin is kept, one just beyond it is flagged (sqrt weights:
    # the log weight is d / 2, and the site's loss barely changes the total)
    base = np.zeros(50)
    for excess, expected in ((-0.1, False), (0.1, True)):
        estimated = base.copy()
        estimated[0] = -2.0 * (UNDERWEIGHT_LOG_MARGIN + excess)
        assert underweighted_moves(estimated, base, 1)[0] == expected
