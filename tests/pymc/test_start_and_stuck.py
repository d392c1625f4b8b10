"""What a new user meets first: constructors without variables, initvals, empty and
scalar variables, clear messages, the site-occupancy model, and chains that never move."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_discrete as pmd
from tests.pymc.joint import assert_joint_frequencies_match, enumerate_block


def _sample(model, step, **kwargs):
    kwargs = {"draws": 500, "tune": 200, "chains": 2, "cores": 1, "random_seed": 5,
              "progressbar": False, "compute_convergence_checks": False} | kwargs
    with model:
        return pm.sample(step=step, **kwargs)


# ---- the promised API -------------------------------------------------------------------
@pytest.mark.parametrize("cls", [pmd.ALBP, pmd.ARWM, pmd.PAS])
def test_steps_without_variables_take_every_supported_free_variable(cls):
    with pm.Model() as model:
        pm.Bernoulli("g", 0.3, shape=4)
        pm.Categorical("c", p=[0.2, 0.3, 0.5], shape=2)
        mu = pm.Normal("mu")
        pm.Normal("y", mu, 1.0, observed=[0.1, -0.3])
        step = cls()
    assert step.var_names == ("g", "c")
    idata = _sample(model, step, draws=100, tune=100)  # NUTS takes mu
    assert idata.posterior["g"].shape == (2, 100, 4)
    assert "diverging" in idata.sample_stats


def test_a_model_without_discrete_variables_is_refused_clearly():
    with pm.Model():
        pm.Normal("mu")
        with pytest.raises(ValueError, match="no free Bernoulli or Categorical"):
            pmd.ALBP()


def test_a_variable_of_another_model_is_named_as_such():
    with pm.Model():
        other = pm.Bernoulli("x", 0.5)
    with pm.Model():
        pm.Bernoulli("x", 0.5)
        with pytest.raises(ValueError, match="belongs to another model"):
            pmd.ALBP([other])


def test_initvals_are_the_start_the_step_checks():
    """The default initial point (all ones) has probability zero; the step is built
    before ``pm.sample`` chooses the start and must not refuse the model for it."""
    with pm.Model() as model:
        b = pm.Bernoulli("b", 0.5, shape=3)
        pm.Potential("not_all_ones", pt.switch(pt.eq(b.sum(), 3), -np.inf, 0.0))
        assert model.initial_point()["b"].tolist() == [1, 1, 1]
    states, probs = enumerate_block(model, ["b"])
    for make in (lambda: pmd.ALBP([b]), lambda: pmd.PAS([b]), lambda: pmd.ARWM([b])):
        with model, warnings.catch_warnings():
            warnings.simplefilter("ignore", pmd.RelaxationWarning)
            step = make()
        idata = _sample(model, step, draws=1500, initvals={"b": np.array([1, 0, 0])})
        assert_joint_frequencies_match(idata, ["b"], states, probs)


def test_an_impossible_start_is_a_clear_error_naming_the_terms():
    with pm.Model() as model:
        b = pm.Bernoulli("b", 0.5, shape=3)
        pm.Potential("not_all_ones", pt.switch(pt.eq(b.sum(), 3), -np.inf, 0.0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pmd.RelaxationWarning)
            step = pmd.ALBP([b])
    with pytest.raises(Exception, match="not_all_ones"):
        _sample(model, step)
    # the step's own check, where PyMC's does not run first
    point = model.initial_point()
    q0 = pm.blocking.DictToArrayBijection.map({"b": point["b"]})
    step.setup_chain(np.random.default_rng(0), 10, 10)
    with pytest.raises(ValueError, match="not_all_ones"):
        step.astep(q0)


@pytest.mark.parametrize("cls", [pmd.ALBP, pmd.ARWM, pmd.PAS])
def test_an_empty_variable_samples(cls):
    with pm.Model() as model:
        e = pm.Bernoulli("e", 0.5, shape=(0,))
        step = cls([e])
    idata = _sample(model, step, draws=20, tune=20)
    assert idata.posterior["e"].shape == (2, 20, 0)


def test_sharp_targets_with_exact_ratios_do_not_warn():
    """A scalar Bernoulli and a frozen Ising lattice: the ratios are exact, R = 1 is the
    best possible and a low acceptance is the target's nature; no "try exact" advice."""
    with pm.Model() as scalar:
        s = pm.Bernoulli("s", 0.995)
        step_scalar = pmd.ALBP([s])
    side = 6
    with pm.Model() as lattice:
        x = pm.Bernoulli("x", 0.5, shape=(side, side))
        spin = 2 * x - 1
        pm.Potential("coupling", 1.5 * ((spin[:, 1:] * spin[:, :-1]).sum()
                                        + (spin[1:] * spin[:-1]).sum()))
        step_lattice = pmd.ALBP([x])
    assert step_scalar.ratios_are_exact and step_lattice.ratios_are_exact
    with warnings.catch_warnings():
        warnings.simplefilter("error", pmd.TuningWarning)
        _sample(scalar, step_scalar)
        _sample(lattice, step_lattice)


def test_scale_bounds_are_explained():
    with pm.Model():
        x = pm.Bernoulli("x", 0.5, shape=4)
        with pytest.raises(ValueError, match=r"\[1, 2\] for this block of 4 sites.*half"):
            pmd.ALBP([x], initial_scale=3.0)
        with pytest.raises(ValueError, match=r"path_length must lie in \[1.5, 4\].*aperiodic"):
            pmd.PAS([x], path_length=1.0)
        with pytest.raises(ValueError, match=r"path_length must lie in \[1.5, 4\]"):
            pmd.PAS([x], path_length=10.0)


# ---- site occupancy ---------------------------------------------------------------------
def _occupancy_data(n_sites=120, n_visits=5, seed=42):
    rng = np.random.default_rng(seed)
    z = rng.random(n_sites) < 0.6
    return ((rng.random((n_sites, n_visits)) < 0.3) & z[:, None]).astype(np.int64)


def _occupancy_truth(y, grid=400):
    """Posterior means of psi, p and of the occupancy of the sites without detections,
    by quadrature over (psi, p) with z summed out (uniform priors)."""
    detections = y.sum(axis=1)
    visits = y.shape[1]
    u = (np.arange(grid) + 0.5) / grid
    psi, p = np.meshgrid(u, u, indexing="ij")
    log_lik = np.zeros_like(psi)
    for d in detections:
        seen = psi * p**d * (1 - p) ** (visits - d)
        log_lik += np.log(seen + (1 - psi) * (d == 0))
    w = np.exp(log_lik - log_lik.max())
    w /= w.sum()
    missed = psi * (1 - p) ** visits
    occupied_if_unseen = missed / (missed + 1 - psi)
    return (w * psi).sum(), (w * p).sum(), (w * occupied_if_unseen).sum()


def _occupancy_model(y):
    with pm.Model() as model:
        psi = pm.Beta("psi", 1, 1)
        p = pm.Beta("p", 1, 1)
        z = pm.Bernoulli("z", psi, shape=y.shape[0])
        pm.Bernoulli("y", z[:, None] * p, observed=y)
    return model


@pytest.mark.parametrize(
    "make_step",
    [lambda z: pmd.ALBP([z]), lambda z: pmd.PAS([z]),
     lambda z: pmd.ALBP([z], compiled_loop=True, steps_per_draw=2)],
    ids=["albp", "pas", "albp-compiled-loop"],
)
@pytest.mark.slow
def test_site_occupancy_matches_the_summed_out_posterior(make_step):
    """The model where every default gradient proposal used to accept nothing (the
    gradient of the untaken branch log(z p) at z = 0 was NaN) and returned its initial
    values as a posterior."""
    y = _occupancy_data()
    truth = _occupancy_truth(y)
    model = _occupancy_model(y)
    with model:
        step = make_step(model["z"])
    # 2 x 1500 draws: each mean is compared within 4 of its MCSE, which scales with them
    idata = _sample(model, [step], draws=1500, tune=1000, random_seed=11)
    assert idata.sample_stats["accept"].mean() > 0.2
    unseen = y.sum(axis=1) == 0
    occupancy = idata.posterior["z"].values[..., unseen].mean(axis=-1)
    for name, draws, expected in [
        ("psi", idata.posterior["psi"].values, truth[0]),
        ("p", idata.posterior["p"].values, truth[1]),
        ("occupancy of unseen sites", occupancy, truth[2]),
    ]:
        mcse = float(az.mcse(draws))
        assert abs(draws.mean() - expected) <= 4 * mcse, (name, draws.mean(), expected, mcse)


# ---- chains that never move -------------------------------------------------------------
def test_a_gradient_proposal_that_never_moves_switches_to_exact_ratios():
    """Whatever the reason a gradient proposal is never accepted (here its ratios are
    replaced by ones whose reverse moves are impossible), tuning switches to exact ratios
    and the chain samples the target."""
    with pm.Model() as model:
        x = pm.Bernoulli("x", np.array([0.3, 0.5, 0.6, 0.7]), shape=4)
        pm.Potential("pair", 0.8 * x[0] * x[1])
        step = pmd.ALBP([x])
    states, probs = enumerate_block(model, ["x"])
    honest = step._logp_and_ratios
    calls = {"n": 0}

    def broken(y):  # right at the start, NaN (weight zero: no way back) afterwards
        logp, ratios = honest(y)
        calls["n"] += 1
        return logp, ratios if calls["n"] == 1 else np.full_like(ratios, np.nan)

    step._logp_and_ratios = broken
    step._rebuild_kernel()
    with pytest.warns(pmd.RelaxationWarning, match="none of its first 50"):
        idata = _sample(model, step, draws=1500, tune=300, chains=1)
    assert step.proposal == "exact"
    assert_joint_frequencies_match(idata, ["x"], states, probs)


@pytest.mark.parametrize("make_step", [lambda x: pmd.ALBP([x]), lambda x: pmd.ARWM([x]),
                                       lambda x: pmd.ALBP([x], proposal="exact")],
                         ids=["albp", "arwm", "albp-exact"])
def test_a_chain_that_never_moves_is_an_error(make_step):
    """Every site pinned by p = 1e-12: no proposal is ever accepted, and the draws would
    all be the initial value: an error, not a warning and a posterior."""
    with pm.Model() as model:
        x = pm.Bernoulli("x", 1e-12, shape=5)
        step = make_step(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmd.RelaxationWarning)
        with pytest.raises(RuntimeError, match="accepted none of its"):
            _sample(model, step, chains=1, tune=200)


def test_a_block_with_no_possible_move_samples_its_only_state():
    """Every site pinned exactly (p = 0): no move is possible, the only state is the
    posterior, and the chain returns it without complaint."""
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.0, shape=3)
        step = pmd.ALBP([x])
    idata = _sample(model, step, chains=1, tune=100, initvals={"x": np.zeros(3, np.int64)})
    assert (idata.posterior["x"].values == 0).all()
