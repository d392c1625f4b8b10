"""Latent counts summed out for NUTS over a window and drawn exactly (CollapsedNUTS),
and chosen by register(): joint frequencies against the exact posterior (enumeration of
the counts, quadrature over the continuous parameter)."""

from __future__ import annotations

import logging

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy.special import logsumexp
from scipy.stats import beta, binom, norm

import pymc_discrete as pmd
from pymc_discrete.pymc.summing.collapsible import NotCollapsible
from tests.pymc.joint import RARE

Y = np.array([[2, 3, 1], [5, 4, 6]])
RATES = np.array([4.0, 9.0])
A, B = 2.0, 2.0  # Beta prior of the detection probability
N_MCSE_MEAN = 4.5  # a posterior mean (one comparison) within this many MCSE of the exact one


def _prior(kind: str, shape=2):
    if kind == "poisson":
        return pm.Poisson.dist(RATES, shape=shape)
    if kind == "negative binomial":
        return pm.NegativeBinomial.dist(mu=RATES, alpha=3.0, shape=shape)
    return pm.Geometric.dist(p=1.0 / (1.0 + RATES), shape=shape)


def _model(kind: str) -> pm.Model:
    with pm.Model() as model:
        p = pm.Beta("p", A, B)
        n = pm.Poisson("N", RATES) if kind == "poisson" else (
            pm.NegativeBinomial("N", mu=RATES, alpha=3.0) if kind == "negative binomial"
            else pm.Geometric("N", p=1.0 / (1.0 + RATES)))
        model.set_initval(n, Y.max(axis=1) + 1)
        pm.Binomial("y", n=n[:, None], p=p, observed=Y)
    return model


def _exact(kind: str, top: int = 150):
    """P(N_0 = a, N_1 = b) over a, b < top, and E[p]: Gauss-Legendre quadrature over p of
    the counts' conditionals, each enumerated."""
    nodes, weights = np.polynomial.legendre.leggauss(300)
    p = 0.5 * (nodes + 1.0)
    w = 0.5 * weights * beta.pdf(p, A, B)
    values = np.arange(top)
    prior = pm.logp(_prior(kind, shape=(top, 2)), np.repeat(values[:, None], 2, 1)).eval()
    # (site, value, node): log prior + log likelihood of the site's counts
    like = binom.logpmf(Y[:, :, None, None], values[None, None, :, None],
                        p[None, None, None, :]).sum(axis=1)
    site = prior.T[:, :, None] + like  # (2, top, nodes)
    joint = (np.exp(site[0][:, None, :] + site[1][None, :, :]) * w).sum(axis=2)
    total = joint.sum()
    marginal_p = np.exp(logsumexp(site[0], axis=0) + logsumexp(site[1], axis=0)) * w
    return joint / total, float((marginal_p * p).sum() / marginal_p.sum())


@pytest.mark.parametrize("kind", ["poisson", "negative binomial", "geometric"])
def test_counts_summed_out_draw_the_joint_posterior(kind):
    """Every pair (N_0, N_1) of probability >= 0.01, and the rarer pairs pooled, within
    4.5-4.7 MCSE of its exact probability (``_pairs_within_mcse``), and E[p] within 4.5
    MCSE."""
    model = _model(kind)
    joint, mean_p = _exact(kind)
    with model:
        step = pmd.CollapsedNUTS([model["N"]])
        idata = pm.sample(2000, tune=500, chains=2, cores=1, step=step, random_seed=3,
                          progressbar=False, compute_convergence_checks=False)
    n = idata.posterior["N"].values  # (chain, draw, 2)
    assert (n >= Y.max(axis=1)).all()
    _pairs_within_mcse(n[..., 0], n[..., 1], joint)
    p = idata.posterior["p"].values
    assert abs(p.mean() - mean_p) <= N_MCSE_MEAN * float(az.mcse(p)), (p.mean(), mean_p)
    assert step.count_window.width >= 10


def test_register_sums_out_counts_and_chains_agree_across_cores(caplog):
    """register() + pm.sample() hands the counts and the continuous variables to one
    CollapsedNUTS, says so, and gives the same draws with one core or two."""
    model = _model("poisson")
    # PyMC's NUTS: the step loop (with nutpie the counts are summed out of a model of
    # their own instead: test_marginal_model)
    one = _registered_sample(model, caplog, draws=100, tune=100, cores=1, random_seed=5,
                             nuts_sampler="pymc")
    two = _registered_sample(model, caplog, draws=100, tune=100, cores=2, random_seed=5,
                             nuts_sampler="pymc")
    assert "chose CollapsedNUTS for [N]" in caplog.text
    assert "count_window" in one.sample_stats
    np.testing.assert_array_equal(one.posterior["N"].values, two.posterior["N"].values)
    np.testing.assert_array_equal(one.posterior["p"].values, two.posterior["p"].values)


def _registered_sample(model, caplog, **kwargs):
    """``pm.sample`` of 2 chains with ``register()`` in effect, the log captured."""
    pmd.register()
    try:
        with model, caplog.at_level(logging.INFO, logger="pymc"):
            return pm.sample(chains=2, progressbar=False, compute_convergence_checks=False,
                             **kwargs)
    finally:
        pmd.unregister()


def _pairs_within_mcse(draws_a, draws_b, joint):
    """The frequency of every pair (a, b) of exact probability >= ``RARE``, and of all
    rarer pairs pooled into one event (pairs beyond the table too), within k MCSE of its
    exact probability (both chains together).

    The MCSE is ArviZ's for the event's indicator, floored at the binomial standard error
    of independent draws (an event never seen has an estimated MCSE of 0). Rare pairs are
    pooled as in ``tests.pymc.joint``: a comparison per pair of a few draws would test the
    tails of the MCSE estimate. With m events compared, k = Phi^-1(1 - 1e-4 / (2 m))
    (Bonferroni: a false alarm in at most about 1e-4 of runs), at least 4.5; k is 4.5-4.7
    for the 16-38 events of these tests.
    """
    assert np.all(np.isfinite(joint)) and abs(joint.sum() - 1.0) < 1e-9, joint.sum()
    inside = (draws_a < joint.shape[0]) & (draws_b < joint.shape[1])
    rows, cols = np.minimum(draws_a, joint.shape[0] - 1), np.minimum(draws_b, joint.shape[1] - 1)
    rare_draw = ~inside | (joint[rows, cols] < RARE)
    common = np.argwhere(joint >= RARE)
    events = [((draws_a == a) & (draws_b == b), joint[a, b], (int(a), int(b)))
              for a, b in common]
    events.append((rare_draw, joint[joint < RARE].sum(), "rare pairs"))
    k = max(4.5, float(norm.isf(1e-4 / (2 * len(events)))))
    for hit, prob, name in events:
        hit = hit.astype(float)
        mcse = max(float(az.mcse(hit)), np.sqrt(prob * (1 - prob) / hit.size))
        assert abs(hit.mean() - prob) <= k * mcse, (name, hit.mean(), prob, mcse, k)


def test_register_moves_counts_beside_finite_variables_with_count_lbp(caplog):
    """A count beside a Bernoulli (no continuous variable): register() gives the count
    to CountLBP and says why; the joint posterior of (z, N) matches enumeration."""
    with pm.Model() as model:
        z = pm.Bernoulli("z", 0.5)
        n = pm.Poisson("N", 5.0 + 3.0 * z, initval=7)
        pm.Binomial("y", n=n, p=0.4, observed=np.array([4, 3]))
    values = np.arange(200)
    logp = np.array([binom.logpmf([4, 3], values[:, None], 0.4).sum(1)
                     + pm.logp(pm.Poisson.dist(5.0 + 3.0 * k), values).eval()
                     for k in (0, 1)])
    joint = np.exp(logp - logsumexp(logp))
    idata = _registered_sample(model, caplog, draws=3000, tune=500, cores=1, random_seed=1)
    assert "chose CountLBP for [N]" in caplog.text
    assert "finite discrete variables too" in caplog.text
    _pairs_within_mcse(idata.posterior["z"].values, idata.posterior["N"].values, joint)


def test_count_lbp_on_counts_that_share_terms():
    """Two counts coupled by a Potential (two colours), no continuous variable: CountLBP's
    joint frequencies match enumeration, its step sizes grew in tuning, and the chain
    moved to values far from its start."""
    with pm.Model() as model:
        n = pm.Poisson("N", np.array([6.0, 25.0]), initval=np.array([1, 1]))
        pm.Potential("tie", -((n[0] - n[1] + 10.0) ** 2) / 20.0)
    a, b = np.meshgrid(np.arange(80), np.arange(80), indexing="ij")
    logp = (pm.logp(pm.Poisson.dist(6.0), a).eval() + pm.logp(pm.Poisson.dist(25.0), b).eval()
            - (a - b + 10.0) ** 2 / 20.0)
    joint = np.exp(logp - logsumexp(logp))
    with model:
        step = pmd.CountLBP([n])
        assert step.exact_ratios.structure.n_colours == 2
        idata = pm.sample(4000, tune=1000, chains=2, cores=1, step=step, random_seed=2,
                          progressbar=False, compute_convergence_checks=False)
    draws = idata.posterior["N"].values
    _pairs_within_mcse(draws[..., 0], draws[..., 1], joint)
    assert idata.sample_stats["count_step"].values.max() > 1.0


def test_window_widens_and_warns_after_tuning():
    """A start far below the posterior (a rate of e^-2 where three counts at detection
    0.05 put the abundances near 40) gives a narrow window; with no tuning the first
    draws widen it, and a widening after tuning is reported as a sampler warning naming
    the counts."""
    with pm.Model() as model:
        log_rate = pm.Normal("log_rate", 0.0, 3.0, initval=-2.0)
        n = pm.Poisson("N", pm.math.exp(log_rate), shape=3, initval=np.array([3, 3, 3]))
        pm.Binomial("y", n=n, p=0.05, observed=np.array([2, 3, 1]))
    with model:
        step = pmd.CollapsedNUTS([n])
        first = step.count_window.width
        idata = pm.sample(20, tune=0, chains=1, step=step, random_seed=2, progressbar=False,
                          compute_convergence_checks=False, keep_warning_stat=True)
    widths = idata.sample_stats["count_window"].values.ravel()
    assert widths.max() > first
    warnings = [w for w in idata.sample_stats["warning"].values.ravel() if w is not None]
    assert any("widened the window of the counts ['N']" in w.message for w in warnings)


def test_mixed_block_is_refused_with_a_reason():
    with pm.Model() as model:
        p = pm.Beta("p", 2, 2)
        z = pm.Bernoulli("z", 0.5)
        n = pm.Poisson("N", 5.0, initval=7)
        pm.Binomial("y", n=n, p=p * (0.5 + 0.5 * z), observed=4)
    with model, pytest.raises(NotCollapsible, match="not both in one block"):
        pmd.CollapsedNUTS([z, n])


def test_finite_value_steps_refuse_counts():
    """The steps for finite discrete variables leave counts to CollapsedNUTS, CountLBP
    or PyMC: they never claim one."""
    from pymc.step_methods.compound import Competence

    with pm.Model():
        n = pm.Poisson("N", 3.0)
    for step in (pmd.ALBP, pmd.ARWM, pmd.PAS, pmd.BlockedGibbs):
        assert step.competence(n, False) == Competence.INCOMPATIBLE, step
    assert pmd.CountLBP.competence(n, False) == Competence.COMPATIBLE


def _n_mixture(phrasing: str, x: np.ndarray, y: np.ndarray) -> pm.Model:
    """The N-mixture model with its counts written ``phrasing``."""
    import pytensor.tensor as pt

    sites, visits = y.shape
    with pm.Model() as model:
        b0 = pm.Normal("b0", 0.0, 2.0)
        b1 = pm.Normal("b1", 0.0, 2.0)
        p = pm.Beta("p", 1.0, 1.0)
        n = pm.Poisson("N", pm.math.exp(b0 + b1 * x), initval=y.max(axis=1) + 1)
        if phrasing == "matrix":
            pm.Binomial("y", n=n[:, None], p=p, observed=y)
        elif phrasing == "transposed":
            pm.Binomial("y", n=n[None, :], p=p, observed=y.T)
        elif phrasing == "repeated":
            pm.Binomial("y", n=pt.repeat(n, visits), p=p, observed=y.ravel())
        elif phrasing == "per visit":
            for j in range(visits):
                pm.Binomial(f"y{j}", n=n, p=p, observed=y[:, j])
        elif phrasing == "potential":
            pm.Potential("y", pm.logp(pm.Binomial.dist(n=n[:, None], p=p), y).sum())
    return model


@pytest.mark.parametrize("phrasing", ["matrix", "transposed", "repeated", "per visit",
                                      "potential"])
def test_n_mixture_phrasings_sum_out_to_the_same_density(phrasing, caplog):
    """However the counts' likelihood is written, register() sums the abundances out,
    and the density NUTS samples equals the abundances summed out by hand (to a far
    bound, numpy) at three parameter points, to within the window's tolerance."""
    from scipy.special import expit
    from scipy.stats import norm, poisson

    rng = np.random.default_rng(7)
    x = rng.normal(size=12)
    y = rng.binomial(rng.poisson(np.exp(1.2 + 0.5 * x))[:, None], 0.5, size=(12, 3))
    model = _n_mixture(phrasing, x, y)
    with model:
        step = pmd.CollapsedNUTS([model["N"]])
    assert step.count_window is not None
    np.testing.assert_array_equal(step.count_window.lower, y.max(axis=1))
    logp = step.methods[0]._logp_dlogp_func
    logp.set_extra_values({})
    summed = pmd.marginalize(model).compile_logp()  # the summed-out model of its own
    values = np.arange(400)
    for b0, b1, logit_p in rng.normal(0.0, 0.7, size=(3, 3)) + [1.2, 0.5, 0.0]:
        p = expit(logit_p)
        site = (poisson.logpmf(values[None, :], np.exp(b0 + b1 * x)[:, None])
                + binom.logpmf(y[:, :, None], values[None, None, :], p).sum(1))
        by_hand = (logsumexp(site, axis=1).sum() + norm.logpdf([b0, b1], 0.0, 2.0).sum()
                   + np.log(p) + np.log1p(-p))  # Beta(1, 1) on the log-odds scale
        ours, _ = logp(np.array([b0, b1, logit_p]))
        np.testing.assert_allclose(ours, by_hand, rtol=0, atol=1e-6)
        point = {"b0": b0, "b1": b1, "p_logodds__": logit_p}
        np.testing.assert_allclose(summed(point), by_hand, rtol=0, atol=1e-6)
    pmd.register()
    try:
        with model, caplog.at_level(logging.INFO, logger="pymc"):
            pm.sample(20, tune=20, chains=1, random_seed=1, progressbar=False,
                      compute_convergence_checks=False, nuts_sampler="nutpie")
            pm.sample(20, tune=20, chains=1, random_seed=1, progressbar=False,
                      compute_convergence_checks=False)
    finally:
        pmd.unregister()
    assert "N summed out over a window of values; sampling the rest with nutpie" in caplog.text
    assert "chose CollapsedNUTS for [N]" in caplog.text


def _shifted_counts(p=None) -> pm.Model:
    """Two counts whose Binomial has n = N - (0, 5): its check n >= 0 fails for N_1 < 5,
    which makes a whole batched row -inf; N_0 from 1 up and N_1 from 6 up are possible."""
    with pm.Model() as model:
        q = pm.Beta("p", 2.0, 2.0) if p is None else p
        n = pm.Poisson("N", np.array([4.0, 9.0]), initval=np.array([3, 8]))
        pm.Binomial("y", n=n - np.array([0, 5]), p=q, observed=np.array([1, 1]))
    return model


def _shifted_exact(p_values, weights, top=120):
    """P(N_0 = a, N_1 = b) for the model above, by enumeration x quadrature over p."""
    from scipy.stats import poisson

    values = np.arange(top)
    joint = np.zeros((top, top))
    for p, w in zip(p_values, weights):
        a = poisson.logpmf(values, 4.0) + binom.logpmf(1, values, p)
        # N_1 < 5 is impossible (scipy gives NaN for a Binomial of negative n)
        shifted = np.where(values >= 5, binom.logpmf(1, np.maximum(values - 5, 0), p), -np.inf)
        b = poisson.logpmf(values, 9.0) + shifted
        joint += w * np.exp(a[:, None] + b[None, :])
    return joint / joint.sum()


def test_a_check_failing_for_one_count_hides_no_other():
    """The window's lower ends are read count by count where a row's checks fail
    ((1, 6), not (5, 6)), and CollapsedNUTS's draws of (N_0, N_1) match the exact joint;
    CountLBP's too with p fixed (its shifted rows fail the check for N_1 alone)."""
    from scipy.stats import beta as beta_dist

    nodes, weights = np.polynomial.legendre.leggauss(200)
    p = 0.5 * (nodes + 1.0)
    joint = _shifted_exact(p, 0.5 * weights * beta_dist.pdf(p, 2.0, 2.0))
    model = _shifted_counts()
    with model:
        step = pmd.CollapsedNUTS([model["N"]])
        np.testing.assert_array_equal(step.count_window.lower, [1, 6])
        idata = pm.sample(2000, tune=500, chains=2, cores=1, step=step, random_seed=8,
                          progressbar=False, compute_convergence_checks=False)
    draws = idata.posterior["N"].values
    _pairs_within_mcse(draws[..., 0], draws[..., 1], joint)

    fixed = _shifted_counts(p=0.5)
    with fixed:
        # 2 x 2000 draws: the tolerance is in MCSE, so it scales with the draws
        idata = pm.sample(2000, tune=500, chains=2, cores=1, step=pmd.CountLBP(),
                          random_seed=9, progressbar=False, compute_convergence_checks=False)
    draws = idata.posterior["N"].values
    _pairs_within_mcse(draws[..., 0], draws[..., 1], _shifted_exact([0.5], [1.0]))


def test_register_falls_back_to_count_lbp_when_the_sum_is_refused_at_sample_time(caplog):
    """The counts' plan is read at the model's initial point; a start given to pm.sample
    where the window cannot be read (a count whose conditional has not fallen off within
    the largest value scanned is impossible here, so a start where the sum is refused is
    simulated by a window read that fails) falls back to CountLBP and says why, instead
    of failing pm.sample."""
    from pymc_discrete.pymc.summing import collapsible

    model = _model("poisson")
    original = collapsible.read_count_window
    calls = []

    def refuse_at_sample_time(*args, **kwargs):
        calls.append(1)
        if len(calls) > 1:  # the plan's read passes, pm.sample's fails
            raise ValueError("site 0 still holds more than the tolerated mass")
        return original(*args, **kwargs)

    collapsible.read_count_window = refuse_at_sample_time
    try:
        idata = _registered_sample(model, caplog, draws=50, tune=50, cores=1, random_seed=2,
                                   nuts_sampler="pymc")
    finally:
        collapsible.read_count_window = original
    assert "chose CountLBP for [N]" in caplog.text
    assert "still holds more than the tolerated mass" in caplog.text
    assert (idata.posterior["N"].values >= Y.max(axis=1)).all()


def test_a_value_below_the_window_that_becomes_possible_stops_the_run():
    """The draw checks the value just below every window at each draw: finite there
    means the counts' support moved with the continuous variables, and the run stops
    naming the site; where the row's checks failed it is read site by site (here:
    impossible, so nothing is raised)."""
    model = _model("poisson")
    with model:
        step = pmd.CollapsedNUTS([model["N"]])
    draw = step.methods[1]
    current = Y.max(axis=1) + 1
    np.testing.assert_array_equal(step.count_window.lower, Y.max(axis=1))
    with pytest.raises(NotCollapsible, match="site 1 of N can take the value 5"):
        draw._check_lower_end(current, np.array([-np.inf, -1.5]), True)
    draw._check_lower_end(current, np.array([-np.inf, -np.inf]), True)
    draw._check_lower_end(current, np.zeros(2), False)  # re-read: both impossible


def test_register_default_draws_the_joint_posterior(caplog):
    """What a user gets with no options: register() + pm.sample() on the two-abundance
    model, every (N_0, N_1) pair of probability >= 0.01 (and the rarer pairs pooled)
    within 4.5-4.7 MCSE of enumeration x quadrature (``_pairs_within_mcse``), and E[p]
    within 4.5 MCSE; and the same with nuts_sampler="nutpie" (the counts summed out of a
    model of their own, over a window, then drawn back)."""
    joint, mean_p = _exact("poisson")
    for nutpie in (False, True):
        idata = _registered_sample(_model("poisson"), caplog, draws=2000, tune=500, cores=1,
                                   random_seed=6, **({"nuts_sampler": "nutpie"} if nutpie
                                                     else {}))
        assert ("N summed out over a window of values; sampling the rest with nutpie"
                in caplog.text) == nutpie
        _check_the_two_abundances(idata, joint, mean_p)
        caplog.clear()


def _check_the_two_abundances(idata, joint, mean_p) -> None:
    """The joint frequencies of (N_0, N_1) and E[p] against their exact values."""
    n = idata.posterior["N"].values
    _pairs_within_mcse(n[..., 0], n[..., 1], joint)
    p = idata.posterior["p"].values
    assert abs(p.mean() - mean_p) <= N_MCSE_MEAN * float(az.mcse(p)), (p.mean(), mean_p)


def test_counts_written_one_scalar_a_site_with_a_potential_draw_the_joint_posterior():
    """The Poisson model written per site, as a JAGS user writes it: a scalar count a
    site and its observations' Binomial density as a Potential (whose graph reduces a
    0-d term). register() sums the counts out beside PyMC's NUTS; every pair (N_0, N_1)
    within MCSE of its exact probability, and E[p] within 4.5 MCSE."""
    joint, mean_p = _exact("poisson")
    with pm.Model() as model:
        p = pm.Beta("p", A, B)
        for i in range(2):
            n = pm.Poisson(f"N_{i}", RATES[i], initval=Y[i].max() + 1)
            pm.Potential(f"y_{i}", pm.logp(pm.Binomial.dist(n=n, p=p), Y[i]).sum())
    pmd.register()
    try:
        with model:
            idata = pm.sample(2000, tune=500, chains=2, cores=1, random_seed=12,
                              nuts_sampler="pymc", progressbar=False,
                              compute_convergence_checks=False)
    finally:
        pmd.unregister()
    assert "count_window" in idata.sample_stats  # the counts summed out, then drawn
    n0, n1 = idata.posterior["N_0"].values, idata.posterior["N_1"].values
    _pairs_within_mcse(n0, n1, joint)
    p = idata.posterior["p"].values
    assert abs(p.mean() - mean_p) <= N_MCSE_MEAN * float(az.mcse(p)), (p.mean(), mean_p)
