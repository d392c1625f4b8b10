"""JointGibbs through pm.sample: exact joint draws of small blocks, alone (the explaining-
away network single-site moves cannot cross) and coupled to a continuous variable that
NUTS moves between draws, against enumerated or analytic references."""

from __future__ import annotations

import doctest
import itertools
import logging
from types import SimpleNamespace

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import xarray as xr
from pymc.pytensorf import make_shared_replacements
from scipy import stats

import pymc_discrete as pmd
import pymc_discrete.pymc.steps.joint as joint_module
from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.steps.block_step import STATS_DTYPES_SHAPES
from pymc_discrete.pymc.steps.joint import JOINT_MAX_STATES
from tests.pymc.joint import N_MCSE, assert_joint_frequencies_match, enumerate_block

#: P(wet grass | rain, sprinkler), indexed [rain, sprinkler]
P_WET = np.array([[0.0, 0.9], [0.8, 0.99]])


def rain_sprinkler() -> pm.Model:
    """Rain (0.2) and the sprinkler (0.4 without rain, 0.01 with it) given wet grass: the
    posterior sits on (0, 1) and (1, 0); (1, 1) has probability 0.0044 and (0, 0) zero,
    so single-site moves between the two go through a state of probability 0.004."""
    with pm.Model() as model:
        rain = pm.Bernoulli("rain", 0.2)
        sprinkler = pm.Bernoulli("sprinkler", pt.switch(rain, 0.01, 0.4))
        pm.Bernoulli("wet", pt.as_tensor(P_WET)[rain, sprinkler], observed=1)
    return model


def _sample(model, step, draws=2000, tune=100, seed=1, chains=2, **kwargs):
    with model:
        return pm.sample(draws=draws, tune=tune, chains=chains, cores=1, step=step,
                         random_seed=seed, progressbar=False,
                         compute_convergence_checks=False, **kwargs)


def _count_evaluations(step) -> list:
    """Count the step's batched evaluations of its terms (one list entry per call)."""
    calls = []
    batch_terms = step._exact.batch_terms

    def counted(states, checked=True):
        calls.append(states.shape[0])
        return batch_terms(states, checked)

    step._exact.batch_terms = counted
    return calls


def test_rain_sprinkler_is_drawn_exactly_with_independent_draws():
    model = rain_sprinkler()
    states, probs = enumerate_block(model, ["rain", "sprinkler"])
    np.testing.assert_allclose(probs, np.array([0.0, 0.288, 0.1584, 0.00198]) / 0.44838)
    # the model's own initial point (no rain, no sprinkler) is impossible: the joint draw
    # needs no possible start
    assert model.initial_point()["rain"] == 0 and model.initial_point()["sprinkler"] == 0
    with model:
        step = pmd.JointGibbs()
    assert step.var_names == ("rain", "sprinkler") and step.n_joint_states == 4
    np.testing.assert_array_equal(step.joint_states, states)
    calls = _count_evaluations(step)
    draws, chains = 2000, 2
    idata = _sample(model, step, draws=draws, chains=chains)
    assert_joint_frequencies_match(idata, ["rain", "sprinkler"], states, probs)
    # nothing outside the block changes: the conditional is evaluated once per chain,
    # at all four states in one call
    assert calls == [4] * chains
    ess = az.ess(idata, var_names=["rain", "sprinkler"], method="bulk")
    for name in ("rain", "sprinkler"):
        assert float(ess[name]) > 0.7 * draws * chains, (name, float(ess[name]))
    sample_stats = idata.sample_stats
    for name, (dtype, shape) in STATS_DTYPES_SHAPES.items():
        if shape is not None:  # (objects such as warnings are not stored)
            assert sample_stats[name].dtype == np.dtype(dtype), name
    assert (sample_stats["accept"].values == 1.0).all()
    assert (sample_stats["accepted"].values == 1.0).all()
    assert (sample_stats["scaling"].values == 4.0).all()
    assert (sample_stats["steps_per_draw"].values == 1).all()
    assert np.isnan(sample_stats["target_accept"].values).all()
    np.testing.assert_array_equal(sample_stats["jump_distance"].values,
                                  sample_stats["n_proposed"].values)
    assert sample_stats["jump_distance"].values.mean() > 0.5  # the two explanations swap


def test_same_seed_same_draws():
    model = rain_sprinkler()

    def draws(seed):
        with model:
            step = pmd.JointGibbs()
        idata = _sample(model, step, draws=300, seed=seed)
        return np.stack([idata.posterior[n].values for n in ("rain", "sprinkler")])

    np.testing.assert_array_equal(draws(11), draws(11))
    assert not np.array_equal(draws(11), draws(12))


# A categorical and a Bernoulli site set the mean of mu, which NUTS samples: the joint
# conditional of the block changes at every draw.
P_Z = np.array([0.3, 0.5, 0.2])
P_B = 0.4
LOC = np.array([-1.0, 0.0, 1.0])
DELTA = 0.8
Y = np.array([0.3, 0.9])


def coupled_model() -> pm.Model:
    """z ~ Categorical(P_Z), b ~ Bernoulli(P_B), mu ~ N(LOC[z] + DELTA b, 1),
    y_j ~ N(mu, 1)."""
    with pm.Model() as model:
        z = pm.Categorical("z", P_Z)
        b = pm.Bernoulli("b", P_B)
        mu = pm.Normal("mu", pt.as_tensor(LOC)[z] + DELTA * b, 1.0)
        pm.Normal("y", mu, 1.0, observed=Y)
    return model


def coupled_reference() -> tuple[np.ndarray, np.ndarray, float]:
    """Every (z, b, mu > 0) with its posterior probability, and E[mu | y], with mu
    integrated out analytically: given (z, b), ybar ~ N(m, 1 + 1/n) and
    mu | y ~ N((m + n ybar) / (1 + n), 1 / (1 + n))."""
    n, ybar = Y.size, Y.mean()
    cells, probs, mean = [], [], 0.0
    weights = {}
    for z, b in itertools.product(range(3), range(2)):
        m = LOC[z] + DELTA * b
        prior = P_Z[z] * (P_B if b else 1.0 - P_B)
        weights[z, b] = prior * stats.norm.pdf(ybar, m, np.sqrt(1.0 + 1.0 / n))
    total = sum(weights.values())
    for (z, b), w in weights.items():
        m = LOC[z] + DELTA * b
        post_mean, post_sd = (m + n * ybar) / (1.0 + n), np.sqrt(1.0 / (1.0 + n))
        positive = stats.norm.sf(0.0, post_mean, post_sd)
        for sign, p in ((0, 1.0 - positive), (1, positive)):
            cells.append((z, b, sign))
            probs.append(w / total * p)
        mean += w / total * post_mean
    return np.array(cells, dtype=np.int64), np.array(probs), mean


def test_a_block_coupled_to_a_continuous_variable_sampled_with_nuts():
    model = coupled_model()
    cells, probs, mu_mean = coupled_reference()
    with model:
        step = pmd.JointGibbs([model["z"], model["b"]])
    assert step.n_joint_states == 6
    calls = _count_evaluations(step)
    tune, draws = 300, 1500
    idata = _sample(model, [step], draws=draws, tune=tune, seed=3,
                    discard_tuned_samples=False)
    assert "diverging" in idata.sample_stats  # NUTS sampled mu
    # one batched evaluation of the six states at every draw that follows a move of mu
    # (NUTS may stay), and at each chain's first draw; a chain's second draw follows
    # NUTS's first move from the (jittered, unrecorded) initial point
    mu_all = np.concatenate([idata.warmup_posterior["mu"].values,
                             idata.posterior["mu"].values], axis=1)
    moves = int(np.count_nonzero(mu_all[:, 1:-1] != mu_all[:, :-2]))
    assert moves > 0.8 * mu_all[:, 1:-1].size
    assert set(calls) == {6}
    assert 2 + moves <= len(calls) <= 4 + moves, (len(calls), moves)
    positive = (idata.posterior["mu"].values > 0).astype(np.int64)
    joint = SimpleNamespace(posterior={
        "z": idata.posterior["z"], "b": idata.posterior["b"],
        "positive": xr.DataArray(positive, dims=("chain", "draw")),
    })
    assert_joint_frequencies_match(joint, ["z", "b", "positive"], cells, probs)
    mu = idata.posterior["mu"]
    error = abs(float(mu.mean()) - mu_mean)
    assert error < N_MCSE * float(az.mcse(mu.values)), (float(mu.mean()), mu_mean)


def test_finite_integer_sites_with_offsets():
    """A DiscreteUniform on -1..2 and a Binomial(3) coupled by a potential: 16 joint
    states in values, not indices."""
    with pm.Model() as model:
        d = pm.DiscreteUniform("d", -1, 2)
        k = pm.Binomial("k", 3, 0.4)
        pm.Potential("couple", -0.8 * (d - k) ** 2)
        step = pmd.JointGibbs()
    states, probs = enumerate_block(model, ["d", "k"], ranges={"d": (-1, 2), "k": (0, 3)})
    assert step.n_joint_states == 16
    np.testing.assert_array_equal(step.joint_states, states)
    idata = _sample(model, step, draws=2000, seed=4)
    assert_joint_frequencies_match(idata, ["d", "k"], states, probs)


def test_structure_handed_over_gives_the_same_chain():
    """An ExactRatios read beforehand (as recommend() does) serves the step: the same
    draws as a step that compiles its own; one read for another block is refused."""
    model = rain_sprinkler()
    value_vars = [model.rvs_to_values[model[n]] for n in ("rain", "sprinkler")]
    point = model.initial_point()
    exact = ExactRatios(model, value_vars, point,
                        make_shared_replacements(point, value_vars, model))
    with model:
        handed = pmd.JointGibbs(exact_ratios=exact)
        own = pmd.JointGibbs()
    a = _sample(model, handed, draws=200, seed=6)
    b = _sample(model, own, draws=200, seed=6)
    for name in ("rain", "sprinkler"):
        np.testing.assert_array_equal(a.posterior[name].values, b.posterior[name].values)
    with model, pytest.raises(ValueError, match="compiled for the block"):
        pmd.JointGibbs([model["rain"]], exact_ratios=exact)


def test_a_block_above_the_limit_is_refused_with_its_count():
    with pm.Model():
        x = pm.Bernoulli("x", 0.5, shape=12)
        b = pm.Bernoulli("b", 0.5)
        assert pmd.JointGibbs([x]).n_joint_states == JOINT_MAX_STATES
        with pytest.raises(ValueError, match=(
            r"\['x', 'b'\] has 8,192 joint states \(x: 4,096, b: 2\), more than "
            r"JOINT_MAX_STATES = 4,096.*BlockedGibbs or ALBP")):
            pmd.JointGibbs([x, b])
        z = pm.Categorical("z", np.full(100, 0.01), shape=40)
        with pytest.raises(ValueError, match=r"about 10\^80 joint states"):
            pmd.JointGibbs([z])


def test_a_conditional_without_a_possible_state_raises():
    """Once mu is above 3 every state of the block has log density -inf; below -3 the
    states with b[0] = 1 have +inf (an improper conditional, refused as well)."""
    with pm.Model() as model:
        b = pm.Bernoulli("b", 0.5, shape=2)
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Potential("wall", pt.switch(mu > 3.0, -np.inf,
                                       pt.switch(mu < -3.0, np.inf * b[0], 0.3 * b.sum())))
        step = pmd.JointGibbs([b])
    point = model.initial_point()
    step.setup_chain(np.random.default_rng(0), tune=0, draws=1)
    new, _ = step.step({**point, "mu": np.array(0.5)})  # possible: a draw
    assert new["b"].shape == (2,)
    with pytest.raises(ValueError, match=(
            r"JointGibbs on \['b'\]: every one of the 4 joint states has log density -inf "
            r"or NaN given the current values of the other variables \(mu\), so the "
            r"conditional has no state of positive probability")):
        step.step({**point, "mu": np.array(5.0)})
    with pytest.raises(ValueError, match=(
            r"the log density is \+inf at the joint state \[1, 0\] given the current "
            r"values of the other variables \(mu\): the conditional is improper")):
        step.step({**point, "mu": np.array(-5.0)})


def test_a_posterior_on_one_state_is_not_reported_as_a_stalled_chain(caplog):
    """Exact draws that repeat one state are the posterior's weight on it, not a chain
    that stopped moving (which the other steps report)."""
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.5, shape=6)
        pm.Potential("pin", 30.0 * pm.math.eq(x.sum(), 6))
        step = pmd.JointGibbs()
    with caplog.at_level(logging.WARNING, logger="pymc"):
        idata = _sample(model, step, draws=150, tune=100, seed=1)
    assert (idata.posterior["x"].values == 1).all()
    assert "unchanged for" not in caplog.text


def test_the_example_in_the_docstring_runs():
    result = doctest.testmod(joint_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
