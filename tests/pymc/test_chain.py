"""ChainGibbs: a hidden Markov chain drawn exactly by forward filtering, backward
sampling, inside pm.sample; chosen by register() whatever the transitions' phrasing."""

from __future__ import annotations

import logging

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy.special import logsumexp

import pymc_discrete as pmd
from tests.pymc.joint import assert_joint_frequencies_match, enumerate_block

K = 3
T = 5
_P = np.full((K, K), 0.1) + 0.7 * np.eye(K)
LOG_P = np.log(_P / _P.sum(axis=1, keepdims=True))
Y = np.array([-1.2, -0.8, 0.3, 1.9, 2.2])
MU = np.array([-1.0, 0.5, 2.0])


def _hmm(phrasing: str, mu=None) -> pm.Model:
    """A sticky 3-state chain of T steps with Gaussian emissions, the transitions
    written as ``phrasing``; the state means fixed (``mu`` None) or free."""
    with pm.Model() as model:
        z = pm.Categorical("z", np.ones(K) / K, shape=T)
        means = pt.as_tensor(MU) if mu is None else pm.Normal("mu", 0.0, 2.0, shape=K)
        log_p = pt.as_tensor(LOG_P)
        if phrasing == "index":
            pm.Potential("chain", pt.sum(log_p[z[:-1], z[1:]]))
        elif phrasing == "rows":
            rows = pt.exp(log_p)[z[:-1]]
            pm.Potential("chain", pt.sum(pt.log(rows[pt.arange(T - 1), z[1:]])))
        elif phrasing == "one-hot":
            one_hot = pt.eye(K)[z]
            pm.Potential("chain", pt.sum((one_hot[:-1] @ LOG_P) * one_hot[1:]))
        pm.Normal("y", means[z], 0.7, observed=Y)
    return model


@pytest.mark.parametrize("phrasing", ["index", "rows", "one-hot"])
def test_chain_gibbs_draws_the_joint_distribution(phrasing):
    """All 3^5 joint states per chain within 4 MCSE of enumeration, each phrasing."""
    model = _hmm(phrasing)
    states, probs = enumerate_block(model, ["z"])
    with model:
        step = pmd.ChainGibbs([model["z"]])
        idata = pm.sample(draws=3000, tune=100, chains=2, cores=1, step=step,
                          random_seed=11, progressbar=False,
                          compute_convergence_checks=False)
    assert step.layout.order.tolist() in (list(range(T)), list(range(T))[::-1])
    assert step.static_pairs  # constant transitions: read once, then K states a draw
    assert_joint_frequencies_match(idata, ["z"], states, probs)
    assert np.all(idata.sample_stats["accept"].values == 1.0)


def test_with_free_means_it_matches_the_forward_algorithm_model():
    """The means' posterior with ChainGibbs + NUTS against NUTS on the model with the
    chain summed out by hand (the forward algorithm in log space)."""
    model = _hmm("index", mu=True)
    with pm.Model() as marginal:
        mu = pm.Normal("mu", 0.0, 2.0, shape=K)
        emit = pm.logp(pm.Normal.dist(mu[None, :], 0.7), Y[:, None])  # (T, K)
        alpha = emit[0] + np.log(1.0 / K)
        for t in range(1, T):
            alpha = emit[t] + pm.math.logsumexp(alpha[:, None] + LOG_P, axis=0).ravel()
        pm.Potential("forward", pm.math.logsumexp(alpha))
    kwargs = dict(draws=2000, tune=1000, chains=2, cores=1, random_seed=3,
                  progressbar=False, compute_convergence_checks=False)
    with model:
        ours = pm.sample(step=[pmd.ChainGibbs([model["z"]])], **kwargs)
    with marginal:
        reference = pm.sample(**kwargs)
    import arviz as az

    for j in range(K):
        a = ours.posterior["mu"].values[..., j]
        b = reference.posterior["mu"].values[..., j]
        se = np.hypot(float(az.mcse(a)), float(az.mcse(b)))
        assert abs(a.mean() - b.mean()) <= 4.5 * se, (j, a.mean(), b.mean(), se)


def test_forward_algorithm_reference_is_the_joint_summed_out():
    """The hand-marginalised log density above equals the joint's logsumexp over the 3^5
    chains at a value of the means (the prior of z, uniform, is a constant)."""
    mu = np.array([-0.3, 0.4, 1.1])
    emit = -0.5 * ((Y[:, None] - mu[None, :]) / 0.7) ** 2 - np.log(0.7 * np.sqrt(2 * np.pi))
    alpha = emit[0] + np.log(1.0 / K)
    for t in range(1, T):
        alpha = emit[t] + logsumexp(alpha[:, None] + LOG_P, axis=0)
    import itertools

    total = []
    for z in itertools.product(range(K), repeat=T):
        z = np.array(z)
        total.append(emit[np.arange(T), z].sum() + LOG_P[z[:-1], z[1:]].sum())
    np.testing.assert_allclose(logsumexp(alpha), logsumexp(total) + np.log(1.0 / K),
                               rtol=1e-12)


def test_a_check_that_fails_at_one_position_hides_no_other_pair():
    """Emissions y_t ~ Categorical(E_t[z_t]) where only E_2's last row is invalid
    (negative): z_2 = 2 is impossible, z_t = 2 elsewhere is not. The pair states' rows
    that put 2 at position 2 fail the check for every term; they are evaluated again
    pair by pair (else every even position would lose value 2), and the draws match
    enumeration, where the other positions do take value 2."""
    good = np.array([[0.7, 0.2, 0.1], [0.2, 0.6, 0.2], [0.1, 0.3, 0.6]])
    E = np.stack([good] * T)
    E[2, 2] = [0.5, 0.6, -0.1]
    obs = np.array([2, 0, 1, 1, 2])
    with pm.Model() as model:
        z = pm.Categorical("z", np.ones(K) / K, shape=T)
        pm.Potential("chain", pt.sum(pt.as_tensor(LOG_P)[z[:-1], z[1:]]))
        pm.Categorical("y", p=pt.as_tensor(E)[pt.arange(T), z], observed=obs)
    states, probs = enumerate_block(model, ["z"])
    assert probs[states[:, 2] == 2].max() == 0.0
    assert probs[states[:, 0] == 2].sum() > 0.2 and probs[states[:, 4] == 2].sum() > 0.2
    with model:
        step = pmd.ChainGibbs([z])
        idata = pm.sample(draws=2000, tune=50, chains=2, cores=1, step=step,
                          random_seed=2, progressbar=False, compute_convergence_checks=False)
    assert_joint_frequencies_match(idata, ["z"], states, probs)


def test_register_picks_chain_gibbs_for_a_chain_and_nothing_else_takes_it(caplog):
    """register() + pm.sample() with PyMC's NUTS on the HMM: ChainGibbs with NUTS on the
    means (with nutpie the chain is summed out instead: test_marginal_model); a lattice
    (sites with four neighbours) is refused by ChainGibbs, and recommend() does not pick
    it there."""
    model = _hmm("rows", mu=True)
    assert pmd.recommend([model["z"]], model=model).step is pmd.ChainGibbs
    pmd.register()
    try:
        with caplog.at_level(logging.INFO, logger="pymc"), model:
            pm.sample(draws=20, tune=20, chains=1, random_seed=1, progressbar=False,
                      compute_convergence_checks=False, nuts_sampler="pymc")
    finally:
        pmd.unregister()
    assert "pymc_discrete chose ChainGibbs for [z]" in caplog.text
    with pm.Model() as lattice:
        x = pm.Bernoulli("x", 0.5, shape=(4, 4))
        s = 2 * x - 1
        pm.Potential("c", 0.3 * ((s[1:] * s[:-1]).sum() + (s[:, 1:] * s[:, :-1]).sum()))
    assert pmd.recommend([lattice["x"]], model=lattice).step is not pmd.ChainGibbs
    with lattice, pytest.raises(ValueError, match="not one: its terms do not link"):
        pmd.ChainGibbs([x])


def test_transitions_that_read_a_free_variable_are_read_every_draw():
    """A stickiness ``kappa`` with its own prior in the pair terms: the pair table is
    read again at every draw (static_pairs False), and kappa's posterior matches NUTS on
    the hand-written forward algorithm."""
    import arviz as az

    def chain_terms(kappa):
        return kappa * pt.as_tensor(np.eye(K))

    with pm.Model() as model:
        z = pm.Categorical("z", np.ones(K) / K, shape=T)
        kappa = pm.HalfNormal("kappa", 2.0)
        pm.Potential("chain", pt.sum(chain_terms(kappa)[z[:-1], z[1:]]))
        pm.Normal("y", pt.as_tensor(MU)[z], 0.7, observed=Y)
    with pm.Model() as marginal:
        kappa_m = pm.HalfNormal("kappa", 2.0)
        emit = pm.logp(pm.Normal.dist(pt.as_tensor(MU)[None, :], 0.7), Y[:, None])
        alpha = emit[0]
        for t in range(1, T):
            alpha = emit[t] + pm.math.logsumexp(alpha[:, None] + chain_terms(kappa_m),
                                                axis=0).ravel()
        pm.Potential("forward", pm.math.logsumexp(alpha))
    kwargs = dict(draws=2000, tune=1000, chains=2, cores=1, random_seed=4,
                  progressbar=False, compute_convergence_checks=False)
    with model:
        step = pmd.ChainGibbs([z])
        assert not step.static_pairs
        ours = pm.sample(step=[step], **kwargs)
    with marginal:
        reference = pm.sample(**kwargs)
    a, b = ours.posterior["kappa"].values, reference.posterior["kappa"].values
    se = np.hypot(float(az.mcse(a)), float(az.mcse(b)))
    assert abs(a.mean() - b.mean()) <= 4.5 * se, (a.mean(), b.mean(), se)


@pytest.mark.parametrize("kind", ["bernoulli", "discrete-uniform"])
def test_binary_and_offset_chains_draw_the_joint_distribution(kind):
    """A binary chain (a 1-D Ising model with a field, two variables forming one path)
    and a DiscreteUniform(1, 3) chain (values offset from the site indices): joint
    frequencies of every state per chain within 4 MCSE of enumeration."""
    rng = np.random.default_rng(7)
    with pm.Model() as model:
        if kind == "bernoulli":
            a = pm.Bernoulli("a", 0.5, shape=4)
            b = pm.Bernoulli("b", 0.5, shape=4)
            s = 2 * pt.concatenate([a, b]) - 1
            pm.Potential("field", pt.sum(pt.as_tensor(rng.normal(0, 0.5, 8)) * s))
            pm.Potential("couple", 0.9 * pt.sum(s[:-1] * s[1:]))
            names, ranges = ["a", "b"], None
        else:
            z = pm.DiscreteUniform("z", 1, 3, shape=5)
            pm.Potential("chain", -0.8 * pt.sum(pt.abs(z[:-1] - z[1:])))
            pm.Potential("pull", 0.4 * pt.sum(pt.as_tensor(rng.normal(size=5)) * z))
            names, ranges = ["z"], {"z": (1, 3)}
    states, probs = enumerate_block(model, names, ranges)
    variables = [model[name] for name in names]
    # few joint states and nothing else in the model: JointGibbs, exact too, comes first
    assert pmd.recommend(variables, model=model).step is pmd.JointGibbs
    with model:
        step = pmd.ChainGibbs(variables)
        idata = pm.sample(draws=3000, tune=50, chains=2, cores=1, step=step,
                          random_seed=5, progressbar=False, compute_convergence_checks=False)
    assert_joint_frequencies_match(idata, names, states, probs)


@pytest.mark.parametrize("phrasing", ["index", "rows", "one-hot"])
def test_collapsed_nuts_sums_a_chain_out_by_the_forward_algorithm(phrasing):
    """CollapsedNUTS on a chain: the density NUTS samples is the joint summed over the
    3^5 chains (enumerated with the model's own log density) to 1e-10 at three values of
    the means, in every phrasing, and its gradient matches finite differences."""
    import itertools

    model = _hmm(phrasing, mu=True)
    with model:
        step = pmd.CollapsedNUTS([model["z"]])
    assert step.chain_layout is not None
    nuts, draw = step.methods
    assert isinstance(draw, pmd.ChainGibbs)
    logp = model.compile_logp()
    f = nuts._logp_dlogp_func
    f.set_extra_values({})  # the density reads no variable but the means
    rng = np.random.default_rng(0)
    for _ in range(3):
        mu = rng.normal(size=K)
        value, grad = f(mu)
        joint = [logp({"z": np.array(z), "mu": mu})
                 for z in itertools.product(range(K), repeat=T)]
        np.testing.assert_allclose(value, logsumexp(joint), rtol=0, atol=1e-10)
        eps = 1e-6
        numeric = [(f(mu + eps * e)[0] - f(mu - eps * e)[0]) / (2 * eps) for e in np.eye(K)]
        np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


def test_collapsed_chain_draws_the_joint_posterior():
    """CollapsedNUTS on a chain with a free emission scale: the 243 joint states of the
    chain within 4 MCSE of enumeration times quadrature over the scale, and E[sigma]."""
    with pm.Model() as model:
        z = pm.Categorical("z", np.ones(K) / K, shape=T)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Potential("chain", pt.sum(pt.as_tensor(LOG_P)[z[:-1], z[1:]]))
        pm.Normal("y", pt.as_tensor(MU)[z], sigma, observed=Y)
    import itertools

    from scipy.stats import halfnorm, norm

    states = np.array(list(itertools.product(range(K), repeat=T)))
    nodes, weights = np.polynomial.legendre.leggauss(400)
    s = 2.5 * (nodes + 1.0)  # sigma in (0, 5): the prior mass beyond 5 is 6e-7
    w = 2.5 * weights * halfnorm.pdf(s)
    chain = LOG_P[states[:, :-1], states[:, 1:]].sum(1)
    like = norm.logpdf(Y[None, :, None], MU[states][:, :, None], s[None, None, :]).sum(1)
    joint = np.exp(chain[:, None] + like) * w[None, :]  # (states, nodes)
    probs = joint.sum(1) / joint.sum()
    mean_sigma = float((joint.sum(0) * s).sum() / joint.sum())
    with model:
        step = pmd.CollapsedNUTS([z])
        idata = pm.sample(draws=2000, tune=500, chains=2, cores=1, step=step,
                          random_seed=4, progressbar=False, compute_convergence_checks=False)
    assert_joint_frequencies_match(idata, ["z"], states, probs)
    import arviz as az

    draws = idata.posterior["sigma"].values
    assert abs(draws.mean() - mean_sigma) <= 4 * float(az.mcse(draws)), (draws.mean(),
                                                                          mean_sigma)


@pytest.mark.parametrize("mode", ["NUMBA", "FAST_COMPILE"])
def test_the_chain_sum_op_is_the_forward_algorithm_and_its_gradient(mode):
    """ChainSum compiled by numba (PyTensor's default) and run in Python give the log
    normaliser of a 40-step chain as a ``scan`` of the forward recursion gives it, and
    the same gradient; a second derivative is refused, not wrong."""
    import pytensor

    from pymc_discrete.pymc.summing.chain_sum import forward_log_normaliser

    def scan_reference(unary, pair):
        def step(phi, psi, alpha):
            return phi + pt.logsumexp(alpha[:, None] + psi, axis=0)

        alphas = pytensor.scan(step, sequences=[unary[1:], pair], outputs_info=[unary[0]],
                               return_updates=False)
        return pt.logsumexp(alphas[-1])

    rng = np.random.default_rng(3)
    unary_value = rng.normal(size=(40, K))
    unary_value[7, 2] = -np.inf
    pair_value = rng.normal(size=(39, K, K))
    unary, pair = pt.dmatrix("unary"), pt.dtensor3("pair")
    outputs = []
    for build in (forward_log_normaliser, scan_reference):
        total = build(unary, pair)
        fn = pytensor.function([unary, pair], [total, *pt.grad(total, [unary, pair])],
                               mode=mode)
        outputs.append(fn(unary_value, pair_value))
    for ours, reference in zip(*outputs):
        np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=1e-12)
    total = forward_log_normaliser(unary, pair)
    with pytest.raises(Exception, match="second derivatives"):
        pt.grad(pt.sum(pt.grad(total, unary)), unary)
