"""CollapsedNUTS: NUTS on the continuous variables with a block of conditionally independent
discrete sites summed out, then the block drawn from its exact conditional. Joint draws
against exact answers by quadrature and enumeration, refusals, the automatic choice made
by register(), and reproducibility."""

from __future__ import annotations

import inspect
import itertools
import logging

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers
from scipy.special import gammaln

import pymc_discrete as pmd
from pymc_discrete.pymc.choosing.auto_step import AutoStep
from pymc_discrete.pymc.summing import collapsible

#: estimates must lie within this many standard errors of the exact answer
N_SE = 4.5
#: joint states below this probability are compared as one pooled event
RARE = 0.01


def _sample(model, step=None, *, draws=1000, tune=500, chains=4, seed=7, cores=1, **kwargs):
    with model:
        return pm.sample(draws=draws, tune=tune, chains=chains, cores=cores, step=step,
                         random_seed=seed, progressbar=False,
                         compute_convergence_checks=False, **kwargs)


def _ess(x: np.ndarray) -> float:
    """ArviZ's ESS of draws shaped (chain, draw); their number if it is undefined (an
    indicator that never changes)."""
    x = np.asarray(x, dtype=float)
    if x.std() == 0:
        return float(x.size)
    ess = float(az.ess(x))
    return ess if np.isfinite(ess) and ess > 0 else float(x.size)


def _assert_mean(draws: np.ndarray, mean: float, sd: float, what: str) -> None:
    """The mean of ``draws`` (chain, draw) within N_SE standard errors (exact posterior sd
    over the square root of ArviZ's ESS) of the exact ``mean``."""
    se = sd / np.sqrt(_ess(draws))
    got = float(draws.mean())
    assert abs(got - mean) <= N_SE * se, f"{what}: {got} against {mean} (SE {se})"


def _exact_moment(w: np.ndarray, f: np.ndarray) -> tuple[float, float]:
    """Mean and sd of ``f`` under the exact weights ``w`` (same shape, summing to 1)."""
    mean = float((w * f).sum())
    return mean, float(np.sqrt((w * (f - mean) ** 2).sum()))


def _assert_frequencies(codes: np.ndarray, probs: np.ndarray, labels) -> None:
    """Joint frequencies: ``codes`` (chain, draw) numbers the joint state of every draw,
    ``probs`` (S,) the exact probabilities. States of probability zero are never visited;
    the frequency of every state of probability >= RARE, and of the rarer ones pooled,
    lies within N_SE standard errors sqrt(p (1 - p) / ESS) (ESS of its indicator)."""
    assert np.isclose(probs.sum(), 1.0)
    assert not (probs[codes] == 0.0).any(), "a state of probability zero was visited"
    common = np.flatnonzero(probs >= RARE)
    rare = probs < RARE
    events = [(labels[s], codes == s, probs[s]) for s in common]
    if rare.any():
        events.append(("rare states", rare[codes], probs[rare].sum()))
    for label, indicator, p in events:
        freq = float(indicator.mean())
        se = np.sqrt(p * (1.0 - p) / _ess(indicator))
        assert abs(freq - p) <= N_SE * se, (
            f"state {label}: frequency {freq} against {p} (SE {se})")


# ---------------------------------------------------------------------------------------
# 1. A Gaussian mean and three binary switches (1-D quadrature times enumeration)

Y_SWITCH = np.array([[1.9, 1.4], [0.6, 1.1], [-0.3, 0.5]])  # two observations per site
P_SWITCH = 0.4


def _switch_model() -> pm.Model:
    site = np.repeat(np.arange(3), 2)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        z = pm.Bernoulli("z", P_SWITCH, shape=3)
        pm.Normal("y", mu * z[site], 1.0, observed=Y_SWITCH.ravel())
    return model


def _switch_truth():
    """Exact P(z pattern) (patterns in itertools.product order), and the mean and sd of mu
    and of mu z_i (a joint moment: a z drawn at a stale mu gets it wrong) from a grid of
    4001 points on [-8, 8] times the 8 patterns."""
    mu = np.linspace(-8.0, 8.0, 4001)
    patterns = np.array(list(itertools.product((0, 1), repeat=3)))
    logw = np.array([
        -0.5 * mu**2 + np.sum(np.where(z == 1, np.log(P_SWITCH), np.log1p(-P_SWITCH)))
        - 0.5 * ((Y_SWITCH[None] - mu[:, None, None] * z[None, :, None]) ** 2).sum(axis=(1, 2))
        for z in patterns
    ])
    w = np.exp(logw - logw.max())
    w /= w.sum()
    moments = {"mu": _exact_moment(w, np.broadcast_to(mu, w.shape))}
    for i in range(3):
        moments[f"mu z{i}"] = _exact_moment(w, patterns[:, i, None] * mu[None, :])
    return patterns, w.sum(axis=1), moments


@pytest.mark.slow
def test_switches_and_mean_match_quadrature_jointly():
    """The joint frequency of every one of the 8 patterns of z (not only the marginals),
    E[mu] and E[mu z_i] against a grid over mu times enumeration of z."""
    patterns, probs, moments = _switch_truth()
    assert probs.min() > 0.03  # every pattern is checked on its own
    model = _switch_model()
    with model:
        step = pmd.CollapsedNUTS([model["z"]])
    idata = _sample(model, step)
    z = idata.posterior["z"].values
    codes = z @ np.array([4, 2, 1])  # itertools.product order
    _assert_frequencies(codes, probs, [tuple(p) for p in patterns])
    mu = idata.posterior["mu"].values
    _assert_mean(mu, *moments["mu"], "E[mu]")
    for i in range(3):
        _assert_mean(mu * z[..., i], *moments[f"mu z{i}"], f"E[mu z{i}]")
    # NUTS ran on mu, the draw on z, in one CompoundStep
    stats = idata.sample_stats
    assert {"tree_depth", "diverging", "jump_distance"} <= set(stats.data_vars)
    assert not stats["diverging"].values.any()


# ---------------------------------------------------------------------------------------
# 2. Occupancy: a value made impossible by the data (2-D quadrature times enumeration)

Y_OCC = np.array([[1, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]])  # site 0 detected: occupied


def _occupancy_model() -> pm.Model:
    with pm.Model() as model:
        psi = pm.Beta("psi", 2, 2)
        p = pm.Beta("p", 2, 2)
        z = pm.Bernoulli("z", psi, shape=3)
        pm.Bernoulli("y", z[:, None] * p, observed=Y_OCC)
    return model


def _occupancy_truth():
    """Exact P(z1, z2) (patterns in itertools.product order), mean and sd of psi, p, psi z1
    and p z1, from 400 x 400 grid midpoints over (psi, p) times the 4 possible patterns
    (z0 = 1)."""
    g = (np.arange(400) + 0.5) / 400
    psi, p = g[:, None], g[None, :]
    hits, visits = Y_OCC.sum(axis=1), Y_OCC.shape[1]
    prior = psi * (1 - psi) * p * (1 - p)  # Beta(2, 2) x Beta(2, 2), unnormalised
    patterns = list(itertools.product((0, 1), repeat=2))
    w = []
    for z1, z2 in patterns:
        occupied = 1 + z1 + z2
        lik = psi**occupied * (1 - psi) ** (3 - occupied)
        lik = lik * p ** hits[0] * (1 - p) ** (visits - hits[0])
        lik = lik * ((1 - p) ** visits) ** (z1 + z2)  # undetected but occupied
        w.append(prior * lik)
    w = np.array(w)
    w /= w.sum()
    z1 = np.array([z for z, _ in patterns])[:, None, None]
    moments = {}
    for name, x in (("psi", psi), ("p", p)):
        moments[name] = _exact_moment(w, np.broadcast_to(x, w.shape))
        moments[f"{name} z1"] = _exact_moment(w, z1 * x)
    return patterns, w.sum(axis=(1, 2)), moments


@pytest.mark.slow
def test_occupancy_with_a_forced_site_matches_quadrature_jointly():
    """z0 = 0 is impossible (a detection) and marked so in ``step.possible``; z0 is 1 in
    every draw; the joint frequencies of the 4 patterns of (z1, z2), E[psi], E[p],
    E[psi z1] and E[p z1] against a 2-D grid over (psi, p) times enumeration."""
    patterns, probs, moments = _occupancy_truth()
    model = _occupancy_model()
    with model:
        step = pmd.CollapsedNUTS([model["z"]])
    np.testing.assert_array_equal(step.possible, [[False, True], [True, True], [True, True]])
    idata = _sample(model, step)
    z = idata.posterior["z"].values
    assert (z[..., 0] == 1).all()
    _assert_frequencies(z[..., 1] * 2 + z[..., 2], probs, patterns)
    for name in ("psi", "p"):
        x = idata.posterior[name].values
        _assert_mean(x, *moments[name], f"E[{name}]")
        _assert_mean(x * z[..., 1], *moments[f"{name} z1"], f"E[{name} z1]")


# ---------------------------------------------------------------------------------------
# 3. Categorical labels of a mixture (2-D quadrature times 81 labellings), and a
#    DiscreteUniform change point (closed form)

Y_MIX = np.array([-1.3, 0.2, 1.1, 2.9])
W_MIX = np.array([0.3, 0.4, 0.3])
SD_MIX = 0.8
MU_FIXED = -1.5  # the first component's mean; the others have distinct priors
PRIOR_MIX = ((0.5, 1.0), (2.5, 1.0))  # (mean, sd) of mu_b and mu_c


def _mixture_model() -> pm.Model:
    with pm.Model() as model:
        mu_b = pm.Normal("mu_b", *PRIOR_MIX[0])
        mu_c = pm.Normal("mu_c", *PRIOR_MIX[1])
        means = pt.stack([pt.as_tensor(MU_FIXED), mu_b, mu_c])
        c = pm.Categorical("c", W_MIX, shape=Y_MIX.size)
        pm.Normal("y", means[c], SD_MIX, observed=Y_MIX)
    return model


def _mixture_truth():
    """Exact P(labels) over the 3^4 labellings (itertools.product order), mean and sd of
    mu_b, mu_c, mu_b [c_1 = 1] and mu_c [c_3 = 2] from a 301 x 301 grid over mean +- 7.5
    prior sd times enumeration."""
    (mb, sb), (mc, sc) = PRIOR_MIX
    b = np.linspace(mb - 7.5 * sb, mb + 7.5 * sb, 301)[:, None]
    c = np.linspace(mc - 7.5 * sc, mc + 7.5 * sc, 301)[None, :]
    prior = -0.5 * ((b - mb) / sb) ** 2 - 0.5 * ((c - mc) / sc) ** 2
    means = [np.full((1, 1), MU_FIXED), b, c]
    # log(w_k N(y_i | mean_k, sd)) for every point, component and grid point
    site = [[np.log(W_MIX[k]) - 0.5 * ((Y_MIX[i] - means[k]) / SD_MIX) ** 2 for k in range(3)]
            for i in range(Y_MIX.size)]
    labellings = list(itertools.product(range(3), repeat=Y_MIX.size))
    logw = np.array([prior + sum(site[i][k] for i, k in enumerate(lab)) for lab in labellings])
    w = np.exp(logw - logw.max())
    w /= w.sum()
    labels = np.array(labellings)[:, :, None, None]
    moments = {}
    for name, x, (point, k) in (("mu_b", b, (1, 1)), ("mu_c", c, (3, 2))):
        moments[name] = _exact_moment(w, np.broadcast_to(x, w.shape))
        moments[f"{name} [c{point} = {k}]"] = _exact_moment(w, (labels[:, point] == k) * x)
    return labellings, w.sum(axis=(1, 2)), moments


@pytest.mark.slow
def test_mixture_labels_match_quadrature_jointly():
    """A categorical block (K = 3): the joint frequencies of the labellings of the 4
    points (those of probability >= 1 %, the rarer ones pooled), E[mu_b], E[mu_c] and
    the joint moments E[mu_b [c_1 = 1]], E[mu_c [c_3 = 2]] against a 2-D grid over the
    free means times enumeration of the 81 labellings."""
    labellings, probs, moments = _mixture_truth()
    assert (probs >= RARE).sum() >= 8
    model = _mixture_model()
    with model:
        step = pmd.CollapsedNUTS([model["c"]])
    assert step.possible.shape == (4, 3) and step.possible.all()
    idata = _sample(model, step)
    c = idata.posterior["c"].values
    codes = c @ (3 ** np.arange(Y_MIX.size)[::-1])  # itertools.product order
    _assert_frequencies(codes, probs, labellings)
    for name, (point, k) in (("mu_b", (1, 1)), ("mu_c", (3, 2))):
        x = idata.posterior[name].values
        _assert_mean(x, *moments[name], f"E[{name}]")
        label = f"{name} [c{point} = {k}]"
        _assert_mean((c[..., point] == k) * x, *moments[label], f"E[{label}]")


COUNTS_CP = np.array([4, 5, 3, 6, 4, 2, 1, 0, 2, 1, 1, 0])
SWITCH_RANGE = (2, 10)  # DiscreteUniform: site values have an offset of 2
GAMMA_CP = (2.0, 1.0)  # Gamma(alpha, beta) prior of both rates


def _change_point_model() -> pm.Model:
    t = np.arange(COUNTS_CP.size)
    with pm.Model() as model:
        early = pm.Gamma("early", *GAMMA_CP)
        late = pm.Gamma("late", *GAMMA_CP)
        s = pm.DiscreteUniform("s", *SWITCH_RANGE)
        pm.Poisson("d", pt.switch(t < s, early, late), observed=COUNTS_CP)
    return model


def _change_point_truth():
    """Exact P(s = v) and the mean and sd of both rates and of rate x s: given s each rate
    is Gamma-Poisson conjugate, ``p(counts | s) = prod_j G(a + S_j) / (b + n_j)^(a + S_j)``
    up to constants, and ``rate | s, counts ~ Gamma(a + S_j, b + n_j)``."""
    a, b = GAMMA_CP
    values = np.arange(SWITCH_RANGE[0], SWITCH_RANGE[1] + 1)
    logw, shape_rate = [], []
    for s in values:
        parts = [(COUNTS_CP[:s].sum(), s), (COUNTS_CP[s:].sum(), COUNTS_CP.size - s)]
        logw.append(sum(gammaln(a + S) - (a + S) * np.log(b + n) for S, n in parts))
        shape_rate.append([(a + S, b + n) for S, n in parts])
    w = np.exp(np.array(logw) - max(logw))
    w /= w.sum()
    shape_rate = np.array(shape_rate)  # (values, rate, [shape, rate])
    cond_mean = shape_rate[..., 0] / shape_rate[..., 1]
    cond_second = shape_rate[..., 0] * (shape_rate[..., 0] + 1) / shape_rate[..., 1] ** 2
    moments = {}
    for j, name in enumerate(("early", "late")):
        for label, g in ((name, np.ones(values.size)), (f"{name} s", values)):
            mean = float(w @ (g * cond_mean[:, j]))
            moments[label] = (mean, float(np.sqrt(w @ (g**2 * cond_second[:, j]) - mean**2)))
    return values, w, moments


@pytest.mark.slow
def test_change_point_matches_the_conjugate_posterior():
    """A DiscreteUniform switch on 2..10 (one site with 9 values and an offset) with two
    Gamma-Poisson rates: P(s = v) for every v of probability >= 1 % (the rest pooled),
    E[rate] and E[rate s] for both rates against the closed-form posterior."""
    values, probs, moments = _change_point_truth()
    model = _change_point_model()
    with model:
        step = pmd.CollapsedNUTS([model["s"]])
    assert step.possible.shape == (1, values.size) and step.possible.all()
    idata = _sample(model, step, chains=2)
    s = idata.posterior["s"].values
    assert s.min() >= values[0] and s.max() <= values[-1]
    _assert_frequencies(s - values[0], probs, values.tolist())
    for name in ("early", "late"):
        x = idata.posterior[name].values
        _assert_mean(x, *moments[name], f"E[{name}]")
        _assert_mean(x * s, *moments[f"{name} s"], f"E[{name} s]")


# ---------------------------------------------------------------------------------------
# 4. Refusals


def test_sites_that_share_a_term_are_refused():
    """Potentials coupling z0, z1 and z2 in a cycle: the block is three colours and no
    chain, so its sum would factorise neither over the sites nor along a path. (A
    coupling of z0 and z1 alone is a chain, which CollapsedNUTS sums by the forward
    algorithm.)"""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        z = pm.Bernoulli("z", 0.5, shape=3)
        pm.Normal("y", mu * z, 1.0, observed=np.array([0.3, 1.0, -0.2]))
        pm.Potential("c", z[0] * z[1] * 1.0 + z[1] * z[2] * 0.5 + z[0] * z[2] * 0.2)
        with pytest.raises(pmd.NotCollapsible, match="share terms"):
            pmd.CollapsedNUTS([z])
        assert pmd.recommend([z], model=model).step is pmd.JointGibbs  # 8 joint states


def test_support_that_depends_on_the_continuous_variables_is_refused():
    """z_i = 1 is impossible where theta > 0.5: which values the sum runs over would move
    with theta, so construction refuses (NotCollapsible is a ValueError), and recommend()
    falls back to BlockedGibbs saying why."""
    assert issubclass(pmd.NotCollapsible, ValueError)
    with pm.Model() as model:
        theta = pm.Normal("theta", 0.0, 1.0)
        z = pm.Bernoulli("z", 0.5, shape=2)
        pm.Potential("s", pt.switch(pt.and_(pt.eq(z, 1), theta > 0.5), -np.inf, 0.0).sum())
        with pytest.raises(pmd.NotCollapsible, match="depends on the continuous variables"):
            pmd.CollapsedNUTS([z])
        choice = pmd.recommend([z], model=model)
    assert choice.step is pmd.BlockedGibbs and "not summed out" in choice.reason


def test_support_that_moves_away_from_the_probes_is_caught_while_sampling(monkeypatch):
    """The model above with its support read at the initial point alone (theta = 0, no
    perturbed probes): construction passes, but the first draw of z at a theta past the
    threshold finds a value the sum counted impossible and raises NotCollapsible rather
    than go on biased."""
    monkeypatch.setattr(collapsible, "SUPPORT_PROBES", 0)
    with pm.Model() as model:
        theta = pm.Normal("theta", 0.0, 1.0)
        z = pm.Bernoulli("z", 0.5, shape=2)
        pm.Potential("s", pt.switch(pt.and_(pt.eq(z, 1), theta > 0.5), -np.inf, 0.0).sum())
        step = pmd.CollapsedNUTS([z])
    assert step.possible.all()
    with pytest.raises(pmd.NotCollapsible, match="depends on the continuous variables"):
        _sample(model, step, draws=500, tune=100, chains=1, seed=3)


def test_a_sum_too_large_to_evaluate_at_every_nuts_step_is_refused(monkeypatch):
    """Terms x values above MAX_SUMMED_TERMS: CollapsedNUTS refuses and recommend() sweeps
    the block with BlockedGibbs instead, saying why."""
    model = _occupancy_model()
    monkeypatch.setattr(collapsible, "MAX_SUMMED_TERMS", 8)
    with model, pytest.raises(pmd.NotCollapsible, match="more than 8"):
        pmd.CollapsedNUTS([model["z"]])
    choice = pmd.recommend([model["z"]], model=model)
    assert choice.step is pmd.BlockedGibbs
    assert "not summed out" in choice.reason and "more than 8" in choice.reason


def test_a_model_without_continuous_variables_is_refused():
    """Nothing for NUTS to sample: NotCollapsible, and recommend() picks BlockedGibbs."""
    with pm.Model() as model:
        z = pm.Bernoulli("z", 0.3, shape=4)
        with pytest.raises(pmd.NotCollapsible, match="no"):
            pmd.CollapsedNUTS([z])
        assert pmd.recommend([z], model=model).step is pmd.BlockedGibbs


# ---------------------------------------------------------------------------------------
# 5. The automatic choice


def _assigned_step(model, step=None, step_kwargs=None):
    """The step ``pm.sample`` would build (its assignment and instantiation)."""
    with model:
        provided, selected = assign_step_methods(model, step)
        return provided, selected, instantiate_steppers(
            model, provided, selected, step_kwargs=step_kwargs,
            initial_point=model.initial_point())


def test_recommend_says_the_block_is_summed_out():
    """recommend() picks CollapsedNUTS for a one-colour block next to continuous
    variables, with a reason that says it is summed out."""
    model = _occupancy_model()
    choice = pmd.recommend([model["z"]], model=model)
    assert choice.step is pmd.CollapsedNUTS and choice.n_colours == 1
    assert "summed out" in choice.reason


def test_register_builds_one_collapsed_nuts_for_every_variable(registered):
    """After register(), PyMC gives AutoStep the continuous variables as well as the
    block, and it returns one CollapsedNUTS over all of them."""
    model = _occupancy_model()
    _, selected, step = _assigned_step(model)
    assert list(selected) == [AutoStep]
    assert isinstance(step, pmd.CollapsedNUTS)
    assert "summed out" in step.choice_reason
    nuts, draw = step.methods
    assert isinstance(nuts, pm.NUTS)
    assert set(nuts.var_names) == {"psi_logodds__", "p_logodds__"}
    assert draw.var_names == ("z",)


@pytest.mark.slow
def test_plain_pm_sample_runs_the_collapsed_step(registered):
    """``pm.sample()`` with PyMC's NUTS after register(): NUTS's statistics and the draw's
    side by side, and site 0 is occupied in every draw (with nutpie the block is summed
    out of a model of its own instead: test_marginal_model)."""
    idata = _sample(_occupancy_model(), draws=100, tune=100, chains=2, nuts_sampler="pymc")
    assert {"tree_depth", "diverging", "jump_distance"} <= set(idata.sample_stats.data_vars)
    assert (idata.posterior["z"].values[..., 0] == 1).all()


@pytest.mark.slow
def test_pymc_lists_the_parts_under_their_documented_names(caplog):
    """PyMC's log names the parts of a compound step by class name: the documented names
    of CollapsedNUTS's two parts, next to another step, and no private class name."""
    model = _occupancy_model()
    with model:
        extra = pm.Categorical("extra", np.ones(3) / 3)
        step = [pmd.CollapsedNUTS([model["z"]]), pmd.ARWM([extra])]
        with caplog.at_level(logging.INFO, logger="pymc"):
            pm.sample(draws=5, tune=5, chains=1, cores=1, step=step, random_seed=1,
                      progressbar=False, compute_convergence_checks=False)
    steps = [r.getMessage().lstrip(">") for r in caplog.records
             if r.name.startswith("pymc") and r.getMessage().startswith(">")]
    assert ">>CollapsedNUTS (NUTS on the marginal): [psi, p]" in caplog.text
    assert ">>CollapsedNUTS (exact draw): [z]" in caplog.text
    assert ">ARWM: [extra]" in caplog.text
    assert steps and not [line for line in steps if line.startswith("_")], steps
    nuts, draw = step[0].methods
    assert isinstance(nuts, pm.NUTS)
    # the classes the code and pickles know are public ones, documented where they live
    for part in (nuts, draw):
        assert not type(part).__qualname__.startswith("_"), type(part).__qualname__
        assert type(part).__qualname__ not in caplog.text
        assert inspect.getdoc(type(part))


def test_target_accept_reaches_the_nuts_inside(registered):
    """``pm.sample(target_accept=0.95)`` passes ``{"nuts": {"target_accept": 0.95}}`` to the
    step named "nuts": AutoStep, which hands it to the NUTS inside CollapsedNUTS."""
    _, _, step = _assigned_step(_occupancy_model(),
                                step_kwargs={"nuts": {"target_accept": 0.95}})
    assert isinstance(step, pmd.CollapsedNUTS)
    assert step.methods[0].target_accept == 0.95


def test_register_without_continuous_variables_still_gives_blocked_gibbs(registered):
    """Ten independent Bernoulli sites and a potential that couples none of them: no
    continuous variable, so BlockedGibbs."""
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.3, shape=10)
        pm.Potential("tilt", 0.4 * x.sum())
    _, selected, step = _assigned_step(model)
    assert list(selected) == [AutoStep]
    assert isinstance(step, pmd.BlockedGibbs)


def test_register_with_a_user_step_for_the_block_gives_plain_nuts(registered):
    """The user samples z with BlockedGibbs: the continuous variables get a plain NUTS
    (nothing is summed out)."""
    model = _occupancy_model()
    with model:
        gibbs = pmd.BlockedGibbs([model["z"]])
    _, selected, steps = _assigned_step(model, step=[gibbs])
    assert list(selected) == [AutoStep]  # asked for psi and p, it built a plain NUTS
    assert steps[0] is gibbs and len(steps) == 2
    nuts = steps[1]
    assert type(nuts) is pm.NUTS
    assert set(nuts.var_names) == {"psi_logodds__", "p_logodds__"}


@pytest.mark.slow
def test_collapsed_nuts_next_to_a_step_for_a_variable_its_density_reads(registered):
    """register() sums z out while the user samples w (whose term reads psi) with another
    step: the marginal NUTS reads w's current value, which it does not own, and the draws
    of w and z keep their posterior constraints (site 0 occupied)."""
    model = _occupancy_model()
    with model:
        w = pm.Bernoulli("w", model["psi"])
        gibbs = pmd.BlockedGibbs([w])
    _, _, steps = _assigned_step(model, step=[gibbs])
    assert isinstance(steps[1], pmd.CollapsedNUTS)
    idata = _sample(model, step=[gibbs], draws=60, tune=60, chains=1)
    assert (idata.posterior["z"].values[..., 0] == 1).all()
    assert set(np.unique(idata.posterior["w"].values)) <= {0, 1}


def test_a_term_added_after_the_first_choice_is_not_missed(registered):
    """The structure register() reads is cached per model; a variable added to the model
    afterwards invalidates it (else the new term would be left out of the sum)."""
    model = _occupancy_model()
    first = _assigned_step(model)[2]
    with model:
        pm.Bernoulli("y2", model["z"][1] * model["p"], observed=1)
    second = _assigned_step(model)[2]
    assert second.exact_ratios is not first.exact_ratios
    assert second.exact_ratios.n_terms == first.exact_ratios.n_terms + 1
    assert not second.possible[1, 0]  # the new detection forces site 1 to be occupied


# ---------------------------------------------------------------------------------------
# 6. Reproducibility


@pytest.mark.slow
def test_same_seed_same_draws_on_one_and_two_cores():
    """The same random_seed gives identical draws of z and psi twice on one core, and on
    two cores (the step pickled into worker processes)."""
    model = _occupancy_model()

    def run(cores):
        with model:
            step = pmd.CollapsedNUTS([model["z"]])
        return _sample(model, step, draws=100, tune=100, chains=2, seed=11, cores=cores)

    runs = [run(1), run(1), run(2)]
    for other in runs[1:]:
        for name in ("z", "psi"):
            np.testing.assert_array_equal(runs[0].posterior[name].values,
                                          other.posterior[name].values)
    # the draws are not trivially constant
    assert np.unique(runs[0].posterior["psi"].values).size > 50
    assert runs[0].posterior["z"].values[..., 1:].std() > 0


def test_the_block_is_not_drawn_in_tuning_where_no_other_step_reads_it():
    """Owning every variable, CollapsedNUTS skips the block's draw while tuning (NUTS
    samples the marginal; a draw depends on the continuous values alone): the warm-up
    keeps the initial values, every draw after tuning is drawn afresh. Next to another
    step (which may read the block), or called by hand, it draws."""
    model = _occupancy_model()
    with model:
        step = pmd.CollapsedNUTS()
    draw = step.methods[1]
    assert draw.draws_in_tuning is False
    idata = _sample(model, step=step, draws=200, tune=50, chains=1,
                    discard_tuned_samples=False)
    warm = idata.warmup_posterior["z"].values[0]
    assert (warm == warm[0]).all()
    assert (idata.warmup_sample_stats["jump_distance"].values == 0).all()
    kept = idata.posterior["z"].values[0]
    assert (kept[:, 0] == 1).all()  # the forced site stays occupied
    # the free sites move, and the draws after tuning are not the initial values
    assert len({tuple(row) for row in kept}) > 1
    # called by hand (no chain set up to tune), the step draws
    point = model.initial_point()
    drawn = {tuple(draw.step(point)[0]["z"]) for _ in range(40)}
    assert len(drawn) > 1

    with model:
        pm.Bernoulli("w", model["psi"])  # another step's variable
        shared = pmd.CollapsedNUTS([model["z"]])
    assert shared.methods[1].draws_in_tuning is True


def test_the_nuts_on_the_marginal_hands_its_trusting_function_a_vector_of_its_type():
    """The compiled marginal skips PyTensor's input checks (PyMC's integrator calls it
    directly), so the step brings a start vector of another dtype, or a strided view, to
    the function's own type: the same draw as from the float64 vector."""
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        mu = pm.Normal("mu", 0.0, 1.0)
        z = pm.Bernoulli("z", p, shape=12)
        pm.Normal("y", mu + z, 1.0, observed=np.linspace(-1.0, 2.0, 12))
    nuts = pmd.CollapsedNUTS([z], model=model).methods[0]
    assert nuts._logp_dlogp_func._pytensor_function.trust_input
    point = model.initial_point()
    own = {name: point[name] for name in nuts.var_names}
    start = pm.blocking.DictToArrayBijection.map(own)
    wide = np.repeat(start.data.astype(np.float32), 2)[::2]  # float32, and not contiguous
    draws = []
    for data in (start.data, wide):
        nuts.setup_chain(np.random.default_rng(5), tune=0, draws=1)
        nuts.tune = False  # nothing adapts between the two draws
        new, _ = nuts.astep(pm.blocking.RaveledVars(data, start.point_map_info))
        assert new.data.dtype == np.float64
        draws.append(new.data)
    np.testing.assert_allclose(draws[1], draws[0], rtol=1e-6)
