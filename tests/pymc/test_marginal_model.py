"""pmd.marginalize and pmd.recover_discrete: the summed-out model as a PyMC model, and exact
draws of the discrete variables added back; register() routing pm.sample() through them
when nutpie runs.

The log density of the summed-out model is compared with the log-sum-exp of the original
model's over every discrete state; the recovered draws' joint frequencies and joint
moments with quadrature times enumeration (the exact answers of test_collapsed)."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pymc as pm
import pytest
from pymc.sampling import mcmc
from scipy.special import logsumexp

import pymc_discrete as pmd
from tests.pymc.test_collapsed import (
    _assert_frequencies,
    _assert_mean,
    _change_point_model,
    _change_point_truth,
    _mixture_model,
    _mixture_truth,
    _occupancy_model,
    _occupancy_truth,
    _switch_model,
    _switch_truth,
)

MODELS = {
    "switch": _switch_model,
    "occupancy": _occupancy_model,
    "mixture": _mixture_model,
    "change point": _change_point_model,
}


def _discrete_states(model) -> tuple[list[str], list[dict]]:
    """Every joint state of the model's discrete variables, as point dictionaries."""
    point = model.initial_point()
    names = [rv.name for rv in model.free_RVs if rv.type.dtype.startswith("int")]
    ranges = []
    for name in names:
        rv = model[name]
        op = type(rv.owner.op).__name__
        if op == "BernoulliRV":
            values = [0, 1]
        elif op == "CategoricalRV":
            values = list(range(int(rv.owner.inputs[-1].shape[-1].eval())))
        else:  # DiscreteUniform
            # bounds that differ by site: the widest range (values outside a site's
            # own have probability 0 and add nothing to the sum)
            lower, upper = (x.eval() for x in rv.owner.inputs[-2:])
            lower, upper = int(np.min(lower)), int(np.max(upper))
            values = list(range(lower, upper + 1))
        ranges.append((name, np.shape(point[name]), values))
    sites = [(name, shape, values) for name, shape, values in ranges
             for _ in range(int(np.prod(shape)))]
    states = []
    for combination in itertools.product(*[values for _, _, values in sites]):
        state, lo = {}, 0
        for name, shape, _ in ranges:
            size = int(np.prod(shape))
            state[name] = np.array(combination[lo:lo + size]).reshape(shape)
            lo += size
        states.append(state)
    return names, states


def _assert_sum_over_every_state(model, summed, seed: int, points: int) -> None:
    """At ``points`` continuous points near the initial one, ``summed``'s log density
    equals log-sum-exp of ``model``'s over every joint discrete state, to 1e-9."""
    _, states = _discrete_states(model)
    original, marginal = model.compile_logp(), summed.compile_logp()
    rng = np.random.default_rng(seed)
    start = summed.initial_point()
    for _ in range(points):
        point = {k: v + rng.normal(0.0, 0.7, np.shape(v)) for k, v in start.items()}
        exact = logsumexp([original({**point, **state}) for state in states])
        assert marginal(point) == pytest.approx(exact, abs=1e-9, rel=1e-12)


@pytest.mark.parametrize("name", list(MODELS))
def test_log_density_is_the_sum_over_every_discrete_state(name):
    """At random continuous points, the summed-out model's log density (with the
    transforms' Jacobians) equals log-sum-exp over every joint discrete state of the
    original model's, to 1e-9."""
    model = MODELS[name]()
    summed = pmd.marginalize(model)
    assert {rv.name for rv in summed.free_RVs} == {
        rv.name for rv in model.free_RVs if not rv.type.dtype.startswith("int")}
    _assert_sum_over_every_state(model, summed, seed=0, points=5)


def test_a_mixture_sums_its_labels_without_gathers():
    """Labels drawn with learned weights (a Categorical reads ``log w`` at its value,
    clipped) and two data points alike: every state reads rows of the weights and the
    means, no gathered copy (the compiled log density and gradient index nothing by an
    array), and the density is log-sum-exp over the 3^4 labellings."""
    y = np.array([-1.2, 0.3, 0.3, 1.9])
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(3))
        mu = pm.Normal("mu", [-1.0, 0.0, 1.0], 1.0)
        z = pm.Categorical("z", w, shape=y.size)
        pm.Normal("y", mu[z], 0.8, observed=y)
    summed = pmd.marginalize(model)
    function = summed.logp_dlogp_function(ravel_inputs=True)
    ops = {type(node.op).__name__
           for node in function._pytensor_function.maker.fgraph.toposort()}
    assert not ops & {"AdvancedSubtensor", "AdvancedSubtensor1", "AdvancedIncSubtensor",
                      "AdvancedIncSubtensor1"}
    _assert_sum_over_every_state(model, summed, seed=1, points=3)


def test_the_pointwise_log_likelihood_is_by_site():
    """Each observation of a mixture carries its own site's sum: pm.compute_log_likelihood
    gives log sum_k w_k N(y_i | mu_k, sd) for every point i, in the data's shape."""
    model = _mixture_model()
    summed = pmd.marginalize(model)
    with summed:
        idata = pm.sample(draws=20, tune=20, chains=1, random_seed=1, progressbar=False,
                          nuts_sampler="pymc", compute_convergence_checks=False)
        log_lik = pm.compute_log_likelihood(idata, progressbar=False)["log_likelihood"]["y"]
    from tests.pymc.test_collapsed import MU_FIXED, SD_MIX, W_MIX, Y_MIX

    post = idata["posterior"]
    means = np.stack([np.full(post["mu_b"].shape, MU_FIXED), post["mu_b"].values,
                      post["mu_c"].values], axis=-1)
    per_component = (np.log(W_MIX) - 0.5 * ((Y_MIX[:, None] - means[..., None, :]) / SD_MIX) ** 2
                     - np.log(SD_MIX) - 0.5 * np.log(2 * np.pi))
    np.testing.assert_allclose(log_lik.values, logsumexp(per_component, axis=-1), rtol=1e-10)


def test_occupancy_rows_carry_their_site_in_their_first_visit():
    """Sites with several observations (a row of visits): the site's sum sits at its first
    visit and the other visits carry zero, so the total is the model's log likelihood."""
    model = _occupancy_model()
    summed = pmd.marginalize(model)
    logp = summed.logp(vars=summed.observed_RVs, sum=False)[0]
    values = summed.compile_fn(logp, inputs=summed.value_vars)(summed.initial_point())
    assert values.shape == (3, 4)
    assert (values[:, 1:] == 0).all() and (values[:, 0] < 0).all()


def test_predictive_draws_integrate_the_discrete_variables_out():
    """Prior predictive draws of the summed-out occupancy model are those of the original
    model: the frequency of an all-zero row matches within 4.5 standard errors, and the
    data keep their name and shape."""
    model, summed = _occupancy_model(), None
    summed = pmd.marginalize(model)
    with model:
        original = pm.sample_prior_predictive(4000, random_seed=3)["prior_predictive"]["y"]
    with summed:
        marginal = pm.sample_prior_predictive(4000, random_seed=4)["prior_predictive"]["y"]
    assert marginal.shape == original.shape
    a = (original.values.sum(-1) == 0).mean(axis=(0, 1))
    b = (marginal.values.sum(-1) == 0).mean(axis=(0, 1))
    se = np.sqrt(a * (1 - a) / 4000 + b * (1 - b) / 4000)
    assert (np.abs(a - b) <= 4.5 * se).all(), (a, b)


@pytest.mark.parametrize("shared", ["observed", "covariate"])
def test_data_in_shared_variables_is_followed_by_set_data(shared):
    """Occupancy with its detections (or a detection covariate) in ``pm.Data``: the model
    sums out (a CustomDist's draws may not read a shared variable implicitly: it raised
    before), and after ``pm.set_data`` on both models the summed-out density still
    equals log-sum-exp over every state of the original, to 1e-9."""
    rng = np.random.default_rng(1)
    n = 5
    y = [(rng.random((n, 4)) < q).astype("int64") for q in (0.3, 0.5)]
    x = [rng.normal(size=(n, 4)) for _ in range(2)]
    with pm.Model() as model:
        data = pm.Data("D", y[0] if shared == "observed" else x[0])
        psi = pm.Beta("psi", 1.0, 1.0)
        b = pm.Normal("b", 0.0, 1.0)
        z = pm.Bernoulli("z", psi, shape=n)
        if shared == "observed":
            pm.Bernoulli("y", z[:, None] * pm.math.invlogit(b), observed=data)
        else:
            pm.Bernoulli("y", z[:, None] * pm.math.invlogit(b * data), observed=y[0])
    summed = pmd.marginalize(model)
    values = y if shared == "observed" else x
    densities = []
    for value in values:
        for m in (model, summed):
            with m:
                pm.set_data({"D": value})
        original, marginal = model.compile_logp(), summed.compile_logp()
        point = {k: v + 0.2 for k, v in summed.initial_point().items()}
        exact = logsumexp([original({**point, "z": np.array(state)})
                           for state in itertools.product(range(2), repeat=n)])
        assert marginal(point) == pytest.approx(exact, abs=1e-9, rel=1e-12)
        densities.append(exact)
    assert densities[0] != pytest.approx(densities[1])  # the new data was read


def test_map_and_variational_fit_run_on_the_summed_out_model():
    """find_MAP reaches a point where the summed-out density's gradient vanishes, and
    ADVI's fit runs: both take the model as PyMC's tools take any model."""
    summed = pmd.marginalize(_switch_model())
    with summed:
        point = pm.find_MAP(progressbar=False)
        gradient = summed.compile_dlogp()(point)
        approx = pm.fit(n=200, random_seed=1, progressbar=False)
    assert np.abs(gradient).max() < 1e-3
    assert np.isfinite(approx.hist).all()


def test_discrete_variables_that_share_a_term_are_refused():
    with pm.Model() as model:
        mu = pm.Normal("mu")
        z = pm.Bernoulli("z", 0.5, shape=3)
        pm.Normal("y", mu + z * z[[1, 2, 0]], 1.0, observed=[0.1, 0.2, 0.3])  # a triangle
    with pytest.raises(pmd.NotCollapsible, match="nor as a chain"):
        pmd.marginalize(model)


def test_a_prior_that_reads_the_discrete_variables_is_refused():
    with pm.Model() as model:
        g = pm.Bernoulli("g", 0.5, shape=3)
        beta = pm.Normal("beta", 0.0, pm.math.switch(g, 1.0, 0.1), shape=3)
        pm.Normal("y", beta.sum(), 1.0, observed=[0.3])
    with pytest.raises(pmd.NotCollapsible, match="spike-and-slab"):
        pmd.marginalize(model)


def _recovered(model, sampler: str, seed: int = 7, chains: int = 4):
    with pmd.marginalize(model):
        idata = pm.sample(draws=1000, tune=500, chains=chains, random_seed=seed,
                          progressbar=False, nuts_sampler=sampler,
                          compute_convergence_checks=False)
    return pmd.recover_discrete(idata, model, random_seed=seed)


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["pymc", "nutpie"])
def test_recovered_switches_match_quadrature_jointly(sampler):
    """The joint frequency of every pattern of three switches, E[mu] and E[mu z_i],
    with the continuous draws from PyMC's NUTS or nutpie on the summed-out model."""
    patterns, probs, moments = _switch_truth()
    idata = _recovered(_switch_model(), sampler)
    z = idata["posterior"]["z"].values
    _assert_frequencies(z @ np.array([4, 2, 1]), probs, patterns)
    mu = idata["posterior"]["mu"].values
    _assert_mean(mu, *moments["mu"], "E[mu]")
    for i in range(3):
        _assert_mean(mu * z[..., i], *moments[f"mu z{i}"], f"E[mu z{i}]")


@pytest.mark.slow
def test_recovered_occupancy_mixture_and_change_point_match_their_exact_answers():
    """Occupancy (a forced site), mixture labels (K = 3) and a DiscreteUniform switch,
    sampled by nutpie on the summed-out model: joint frequencies and joint moments."""
    patterns, probs, moments = _occupancy_truth()
    idata = _recovered(_occupancy_model(), "nutpie")
    z = idata["posterior"]["z"].values
    assert (z[..., 0] == 1).all()
    _assert_frequencies(z[..., 1] * 2 + z[..., 2], probs, patterns)
    for name in ("psi", "p"):
        x = idata["posterior"][name].values
        _assert_mean(x, *moments[name], f"E[{name}]")
        _assert_mean(x * z[..., 1], *moments[f"{name} z1"], f"E[{name} z1]")

    labellings, probs, moments = _mixture_truth()
    idata = _recovered(_mixture_model(), "nutpie")
    c = idata["posterior"]["c"].values
    _assert_frequencies(c @ (3 ** np.arange(4)[::-1]), probs, labellings)
    for name, (point, k) in (("mu_b", (1, 1)), ("mu_c", (3, 2))):
        x = idata["posterior"][name].values
        _assert_mean(x, *moments[name], f"E[{name}]")
        _assert_mean((c[..., point] == k) * x, *moments[f"{name} [c{point} = {k}]"], name)

    values, probs, moments = _change_point_truth()
    idata = _recovered(_change_point_model(), "nutpie")
    s = idata["posterior"]["s"].values
    _assert_frequencies(s - values[0], probs, values.tolist())
    for name in ("early", "late"):
        x = idata["posterior"][name].values
        _assert_mean(x, *moments[name], f"E[{name}]")
        _assert_mean(x * s, *moments[f"{name} s"], f"E[{name} s]")


def test_deterministics_that_read_the_discrete_variables_come_back():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        z = pm.Bernoulli("z", 0.4, shape=3)
        pm.Deterministic("n_on", z.sum())
        pm.Deterministic("shift", 2 * mu)
        pm.Normal("y", mu * z, 1.0, observed=[1.9, 0.6, -0.3])
    summed = pmd.marginalize(model)
    assert [d.name for d in summed.deterministics] == ["shift"]
    with summed:
        idata = pm.sample(draws=50, tune=50, chains=1, random_seed=2, progressbar=False,
                          nuts_sampler="pymc", compute_convergence_checks=False)
    pmd.recover_discrete(idata, model, random_seed=2)
    post = idata["posterior"]
    np.testing.assert_array_equal(post["n_on"].values, post["z"].values.sum(-1))


# ---------------------------------------------------------------------------------------
# register(): pm.sample() routed through the summed-out model when nutpie runs


@pytest.mark.slow
def test_pm_sample_with_nutpie_named_runs_it_on_the_summed_out_model(registered, caplog):
    """register() + pm.sample(nuts_sampler="nutpie") samples the summed-out model with
    nutpie (the log says so), returns the discrete draws beside the continuous ones, and
    the same seed gives the same draws; without nuts_sampler, nutpie being installed
    does not change register()'s choice (CollapsedNUTS under PyMC's NUTS)."""
    model = _switch_model()
    with caplog.at_level(logging.INFO, logger="pymc"), model:
        first = pm.sample(draws=200, tune=200, chains=2, random_seed=5, progressbar=False,
                          nuts_sampler="nutpie")
        second = pm.sample(draws=200, tune=200, chains=2, random_seed=5, progressbar=False,
                           nuts_sampler="nutpie")
        assert "sampling the rest with nutpie" in caplog.text
        caplog.clear()
        default = pm.sample(draws=20, tune=20, chains=1, random_seed=5, progressbar=False,
                            compute_convergence_checks=False)
    assert "chose CollapsedNUTS for [z]" in caplog.text
    assert default["sample_stats"].attrs["inference_library"] == "pymc"
    assert first["sample_stats"].attrs["inference_library"] == "nutpie"
    assert first["posterior"]["z"].shape == (2, 200, 3)
    for name in ("mu", "z"):
        np.testing.assert_array_equal(first["posterior"][name].values,
                                      second["posterior"][name].values)


def test_without_nutpie_the_collapsed_step_runs_as_before(registered, monkeypatch):
    """Where PyMC would run its own NUTS on the summed-out model, pm.sample() is PyMC's,
    with CollapsedNUTS assigned by register()."""
    monkeypatch.setattr(mcmc, "NUTPIE_INSTALLED", False)
    with _switch_model():
        idata = pm.sample(draws=20, tune=20, chains=1, random_seed=5, progressbar=False,
                          compute_convergence_checks=False)
    assert "collapsed_draw" in str(list(idata["sample_stats"].data_vars)) or \
        "jump_distance" in idata["sample_stats"]
    assert idata["sample_stats"].attrs["inference_library"] == "pymc"


def test_unregister_gives_pymc_its_own_sample_back():
    before = pm.sample
    pmd.register()
    try:
        assert pm.sample is not before and mcmc.sample is not before
    finally:
        pmd.unregister()
    assert pm.sample is before and mcmc.sample is before


# ---------------------------------------------------------------------------------------
# A hidden Markov chain: summed out by the forward algorithm, drawn back by forward
# filtering, backward sampling


@pytest.mark.parametrize("phrasing", ["index", "rows", "one-hot"])
def test_a_chain_sums_out_by_the_forward_algorithm(phrasing):
    """The summed-out HMM's log density is the joint's log-sum-exp over the 3^5 chains
    at random means, in every phrasing of the transitions (a Potential: the sum is one
    Potential and the emissions go with it)."""
    from tests.pymc.test_chain import _hmm

    model = _hmm(phrasing, mu=True)
    summed = pmd.marginalize(model)
    assert [rv.name for rv in summed.free_RVs] == ["mu"]
    assert not summed.observed_RVs and len(summed.potentials) == 1
    original, marginal = model.compile_logp(), summed.compile_logp()
    rng = np.random.default_rng(1)
    for _ in range(3):
        mu = rng.normal(size=3)
        joint = [original({"z": np.array(z), "mu": mu})
                 for z in itertools.product(range(3), repeat=5)]
        assert marginal({"mu": mu}) == pytest.approx(logsumexp(joint), abs=1e-9)


# ---------------------------------------------------------------------------------------
# The JAX samplers (on the CPU here) and the report of a run whose chains disagree


def _hmm_with_free_scale() -> tuple[pm.Model, np.ndarray, np.ndarray]:
    """A 5-step 3-state chain with a free emission scale, and the exact joint probability
    of its 243 states (enumeration times Gauss-Legendre quadrature over the scale)."""
    import pytensor.tensor as pt
    from scipy.stats import halfnorm, norm

    from tests.pymc.test_chain import LOG_P, MU, Y

    with pm.Model() as model:
        z = pm.Categorical("z", np.ones(3) / 3, shape=5)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Potential("chain", pt.sum(pt.as_tensor(LOG_P)[z[:-1], z[1:]]))
        pm.Normal("y", pt.as_tensor(MU)[z], sigma, observed=Y)
    states = np.array(list(itertools.product(range(3), repeat=5)))
    nodes, weights = np.polynomial.legendre.leggauss(400)
    s = 2.5 * (nodes + 1.0)  # sigma in (0, 5): the prior mass beyond 5 is 6e-7
    w = 2.5 * weights * halfnorm.pdf(s)
    chain = LOG_P[states[:, :-1], states[:, 1:]].sum(1)
    lik = norm.logpdf(Y[None, None, :], MU[states][:, None, :], s[None, :, None]).sum(-1)
    joint = np.exp(chain[:, None] + lik - (chain[:, None] + lik).max()) * w[None, :]
    return model, states, joint.sum(1) / joint.sum()


@pytest.mark.slow
def test_numpyro_samples_a_summed_out_chain(registered):
    """register() + pm.sample(nuts_sampler="numpyro") on an HMM: the chain's forward
    algorithm runs in JAX, and the recovered chain's 243 joint states are within 4 MCSE
    of enumeration times quadrature."""
    from tests.pymc.joint import assert_joint_frequencies_match

    model, states, probs = _hmm_with_free_scale()
    with model:
        idata = pm.sample(draws=1000, tune=500, chains=4, random_seed=3, progressbar=False,
                          nuts_sampler="numpyro", compute_convergence_checks=False)
    assert idata["posterior"].attrs["inference_library"] == "numpyro"
    assert_joint_frequencies_match(idata, ["z"], states, probs)


@pytest.mark.slow
def test_blackjax_samples_summed_out_switches(registered):
    """register() + pm.sample(nuts_sampler="blackjax") on three switches: every pattern's
    joint frequency and E[mu z_i] against quadrature times enumeration."""
    patterns, probs, moments = _switch_truth()
    with _switch_model():
        idata = pm.sample(draws=1000, tune=500, chains=4, random_seed=3, progressbar=False,
                          nuts_sampler="blackjax", compute_convergence_checks=False)
    z = idata["posterior"]["z"].values
    _assert_frequencies(z @ np.array([4, 2, 1]), probs, patterns)
    mu = idata["posterior"]["mu"].values
    for i in range(3):
        _assert_mean(mu * z[..., i], *moments[f"mu z{i}"], f"E[mu z{i}]")


@pytest.mark.slow
def test_a_chain_summed_out_for_nutpie_matches_enumeration(registered, caplog):
    """register() + pm.sample(nuts_sampler="nutpie") sums an HMM out by the forward
    algorithm (the log says so) and recovers the chain by forward filtering, backward
    sampling: its 243 joint states within 4 MCSE of enumeration times quadrature.
    Without nuts_sampler the chain stays with ChainGibbs beside PyMC's NUTS."""
    from tests.pymc.joint import assert_joint_frequencies_match

    model, states, probs = _hmm_with_free_scale()
    with caplog.at_level(logging.INFO, logger="pymc"), model:
        idata = pm.sample(draws=1000, tune=500, chains=4, random_seed=3, progressbar=False,
                          compute_convergence_checks=False, nuts_sampler="nutpie")
        assert "summed out as a chain, by the forward algorithm" in caplog.text
        pm.sample(draws=10, tune=10, chains=1, random_seed=3, progressbar=False,
                  compute_convergence_checks=False)
    assert "pymc_discrete chose ChainGibbs for [z]" in caplog.text
    assert_joint_frequencies_match(idata, ["z"], states, probs)


def test_nutpie_runs_are_checked_for_convergence_as_pymcs_are(registered, caplog):
    """PyMC does not check nutpie's draws; the summed-out route does, with PyMC's own
    checks and messages (here: too few draws to tell)."""
    with caplog.at_level(logging.INFO, logger="pymc"), _switch_model():
        pm.sample(draws=30, tune=30, chains=2, random_seed=5, progressbar=False,
                  nuts_sampler="nutpie")
    assert "sampling the rest with nutpie" in caplog.text
    assert "too small to check convergence reliably" in caplog.text


def test_initial_values_are_kept():
    """A model with initial values (PyMC's graph conversion refuses them) sums out, and
    the summed-out model starts where the original does."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0, initval=0.5)
        z = pm.Bernoulli("z", 0.5, shape=3, initval=[1, 0, 1])
        pm.Normal("y", mu * z, 1.0, observed=np.ones(3))
    summed = pmd.marginalize(model)
    assert summed.initial_point()["mu"] == 0.5
    assert model.rvs_to_initial_values[model["mu"]] == 0.5  # the original is unchanged


# ---------------------------------------------------------------------------------------
# Latent counts: summed over a window, checked at every draw


def test_counts_sum_out_over_their_window():
    """Two Poisson abundances seen through binomial counts: the summed-out density equals
    the sum over 0..299 of every abundance (the window leaves less than 1e-8 beyond it),
    at random detection probabilities."""
    from scipy.stats import binom, poisson

    from tests.pymc.test_counts import RATES, Y, _model

    summed = pmd.marginalize(_model("poisson"))
    assert [rv.name for rv in summed.free_RVs] == ["p"]
    logp = summed.compile_logp()
    values = np.arange(300)
    for p in (0.2, 0.5, 0.8):
        site = [logsumexp(poisson.logpmf(values, RATES[i])
                          + binom.logpmf(Y[i][:, None], values, p).sum(0)) for i in range(2)]
        prior = float(pm.logp(pm.Beta.dist(2.0, 2.0), p).eval())
        jacobian = np.log(p * (1 - p))  # the logit transform's
        exact = sum(site) + prior + jacobian
        assert logp({"p_logodds__": np.log(p / (1 - p))}) == pytest.approx(exact, abs=1e-7)


def test_a_window_too_narrow_for_a_draw_is_caught():
    """A summed-out model whose window misses conditional mass at a draw: recovering the
    counts raises, saying how wide to sum; register()'s route samples again wider."""
    from tests.pymc.test_counts import _model

    model = _model("poisson")
    summed = pmd.marginalize(model, count_width=4)
    with summed:
        idata = pm.sample(draws=20, tune=20, chains=1, random_seed=1, progressbar=False,
                          nuts_sampler="pymc", compute_convergence_checks=False)
    from pymc_discrete.pymc.summing.recover import CountWindowTooNarrow

    with pytest.raises(CountWindowTooNarrow, match="count_width=8"):
        pmd.recover_discrete(idata, model, random_seed=1)


def test_registers_route_widens_a_window_that_proved_too_narrow(registered, caplog,
                                                                monkeypatch):
    """Where the first window proves too narrow after sampling, the route logs it and
    samples again over twice as many values."""
    from pymc_discrete.pymc.summing import summed_block
    from tests.pymc.test_counts import Y, _model

    monkeypatch.setattr(summed_block, "COUNT_WIDTH_MARGIN", 0.25)
    with caplog.at_level(logging.INFO, logger="pymc"), _model("poisson"):
        idata = pm.sample(draws=50, tune=50, chains=1, random_seed=1, progressbar=False,
                          compute_convergence_checks=False, nuts_sampler="nutpie")
    assert "Sampling again, summed over" in caplog.text
    assert (idata["posterior"]["N"].values >= Y.max(axis=1)).all()


def test_a_binary_site_is_drawn_with_its_conditional_probability():
    """The draw of a site of two values (one uniform against the second value's
    probability) against the exact probabilities, an impossible value never drawn; the
    tolerance is 4 standard errors of each frequency."""
    from pymc_discrete.pymc.summing.recover import _draw_binary

    weights = np.array([[0.0, 0.0], [np.log(0.2), np.log(0.8)], [-3.0, 1.5],
                        [-np.inf, 0.3], [2.0, -np.inf], [700.0, 699.0]])
    second = np.exp(weights[:, 1] - np.logaddexp(weights[:, 0], weights[:, 1]))
    draws = 200_000
    table = np.broadcast_to(weights, (draws, *weights.shape))
    drawn = _draw_binary(table, np.random.default_rng(3))
    assert drawn.dtype == np.int64 and set(np.unique(drawn)) <= {0, 1}
    frequency = drawn.mean(axis=0)
    error = np.sqrt(second * (1 - second) / draws)
    assert np.all(np.abs(frequency - second) <= 4 * error + 1e-12), (frequency, second)
    assert frequency[3] == 1.0 and frequency[4] == 0.0


def test_a_site_of_many_values_is_drawn_with_its_conditional_probabilities():
    """The draw of sites of K values (one uniform against the cumulative weights) against
    the exact probabilities, every value's frequency within 4 standard errors; impossible
    values (-inf: first, inner, last) never drawn; a site with no possible value draws
    its first; the rows' log mass is returned beside."""
    from pymc_discrete.pymc.summing.recover import _draw_by_cdf

    weights = np.array([[0.0, 0.0, 0.0, 0.0],
                        [-np.inf, np.log(0.2), -np.inf, np.log(0.8)],
                        [710.0, 709.0, 700.0, -np.inf],
                        [-3.0, 1.5, -0.5, 2.0],
                        [-np.inf] * 4])
    probs = np.exp(weights[:4] - logsumexp(weights[:4], axis=1, keepdims=True))
    draws = 100_000
    table = np.broadcast_to(weights, (draws, *weights.shape))
    drawn, log_mass = _draw_by_cdf(table, np.random.default_rng(5))
    assert drawn.shape == (draws, 5) and drawn.min() >= 0 and drawn.max() <= 3
    np.testing.assert_allclose(log_mass[0, :4], logsumexp(weights[:4], axis=1), rtol=1e-14)
    assert log_mass[0, 4] == -np.inf and (drawn[:, 4] == 0).all()
    frequency = (drawn[:, :4, None] == np.arange(4)).mean(axis=0)
    error = np.sqrt(probs * (1 - probs) / draws)
    assert np.all(np.abs(frequency - probs) <= 4 * error + 1e-12), (frequency, probs)
    assert frequency[1, 0] == 0 and frequency[1, 2] == 0 and frequency[2, 3] == 0


@pytest.mark.parametrize("k", [3, 12])
def test_logsumexp_rows_value_and_gradient_where_values_are_impossible(k):
    """Each row's log-sum-exp and its gradient (the row's softmax) equal SciPy's, with
    impossible values (-inf) in a row; a row of them alone sums to -inf, not NaN (the
    density is then -inf, whose gradient NUTS does not read), in either path (columns
    by logaddexp up to LOGADDEXP_MAX values, a reduction beyond)."""
    import pytensor
    import pytensor.tensor as pt

    from pymc_discrete.pymc.summing.marginal import logsumexp_rows

    rng = np.random.default_rng(0)
    table = rng.normal(size=(4, k)) * 30
    table[1, ::2] = -np.inf
    table[3, :] = -np.inf
    x = pt.matrix("x", shape=(4, k))
    sums = logsumexp_rows(x)
    weights = pt.grad(sums[:3].sum(), x)
    value, grad = pytensor.function([x], [sums, weights])(table)
    np.testing.assert_allclose(value[:3], logsumexp(table[:3], axis=1), rtol=1e-14)
    assert value[3] == -np.inf
    softmax = np.exp(table[:3] - logsumexp(table[:3], axis=1, keepdims=True))
    np.testing.assert_allclose(grad[:3], softmax, rtol=1e-12, atol=1e-300)
