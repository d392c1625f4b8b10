"""The same lattice written the ways users write it has the same structure: a linear term
is separable whether it is a sum of products or a dot product with constants, and the
exact ratios of every phrasing are the single-site changes of the log density."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pymc.pytensorf import make_shared_replacements

import pymc_discrete as pmd
from pymc_discrete.pymc.model.exact import ExactRatios
from tests.pymc.joint import assert_joint_frequencies_match, enumerate_block

L = 5
N = L * L
_rng = np.random.default_rng(0)
ALPHA = _rng.normal(size=N)
DESIGN = _rng.normal(size=(3, N))

#: the field of an Ising lattice, written as users write it (s = 2x - 1, a vector)
FIELDS = {
    "sum": lambda s: pt.sum(ALPHA * s),
    "dot": lambda s: pt.dot(ALPHA, s),
    "matmul": lambda s: ALPHA @ s,
    "tensordot": lambda s: pt.tensordot(ALPHA, s, axes=1),
    "einsum": lambda s: pt.einsum("i,i->", ALPHA, s),
    "matrix-vector": lambda s: pt.sum(pt.as_tensor(DESIGN) @ s),
    "transposed": lambda s: pt.sum(pt.dot(s.reshape((L, L)).T, ALPHA.reshape((L, L))[:, :1])),
}


def _lattice(field) -> pm.Model:
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.5, shape=N)
        s = 2 * x - 1
        grid = s.reshape((L, L))
        pm.Potential("couplings", 0.3 * ((grid[1:] * grid[:-1]).sum()
                                         + (grid[:, 1:] * grid[:, :-1]).sum()))
        pm.Potential("field", field(s))
    return model


def _exact(model) -> ExactRatios:
    point = model.initial_point()
    value_vars = [model.rvs_to_values[model["x"]]]
    return ExactRatios(model, value_vars, point,
                       make_shared_replacements(point, value_vars, model))


@pytest.mark.parametrize("phrasing", sorted(FIELDS))
def test_a_linear_term_couples_no_sites(phrasing):
    model = _lattice(FIELDS[phrasing])
    exact = _exact(model)
    assert exact.structure.n_colours == 2, phrasing
    assert exact.setup_report["structure"] == "graph"
    logp = model.compile_logp()
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.integers(0, 2, N)
        total, ratios = exact(x)
        base = logp({"x": x})
        for i in range(N):
            y = x.copy()
            y[i] = 1 - y[i]
            assert ratios[i] == pytest.approx(logp({"x": y}) - base, abs=1e-9)


def test_a_product_of_the_block_with_itself_still_couples():
    """``s @ W @ s`` couples every pair W does: no phrasing rule may separate it."""
    coupling = np.triu(_rng.normal(size=(N, N)), 1)
    model = _lattice(lambda s: s @ pt.as_tensor(coupling) @ s)
    assert _exact(model).structure.n_colours == N


@pytest.mark.slow
@pytest.mark.parametrize("phrasing", ["dot", "einsum"])
def test_register_samples_a_dot_phrased_lattice_right(phrasing, registered):
    """register() + pm.sample() on a 3 x 3 lattice whose field is a dot product: the
    joint frequencies of all 512 states, per chain, within 4 MCSE of enumeration."""
    side = 3
    alpha = np.linspace(-0.6, 0.6, side * side)
    fields = {"dot": lambda s: pt.dot(alpha, s),
              "einsum": lambda s: pt.einsum("i,i->", alpha, s)}
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.5, shape=side * side)
        s = 2 * x - 1
        grid = s.reshape((side, side))
        pm.Potential("lattice", 0.4 * ((grid[1:] * grid[:-1]).sum()
                                       + (grid[:, 1:] * grid[:, :-1]).sum()) + fields[phrasing](s))
    states, probs = enumerate_block(model, ["x"])
    with model:
        idata = pm.sample(draws=3000, tune=300, chains=2, cores=1, random_seed=7,
                          progressbar=False, compute_convergence_checks=False)
    # the package's sweep (its stats), moving the block in most draws
    assert (idata.sample_stats["jump_distance"].values > 0).mean() > 0.5
    assert_joint_frequencies_match(idata, ["x"], states, probs)


@pytest.mark.parametrize("phrasing", ["sum", "dot"])
def test_register_sweeps_every_phrasing_with_blocked_gibbs(phrasing):
    model = _lattice(FIELDS[phrasing])
    choice = pmd.recommend([model["x"]], model=model)
    assert choice.step is pmd.BlockedGibbs, choice.reason


K = 3
_GRID = np.arange(N).reshape(L, L)
#: the edges of the lattice as a constant index list
SRC = np.r_[_GRID[1:].ravel(), _GRID[:, 1:].ravel()]
DST = np.r_[_GRID[:-1].ravel(), _GRID[:, :-1].ravel()]

#: a Potts lattice's agreement count, written as users write it (z the labels)
AGREEMENTS = {
    "slices": lambda z: (pt.sum(pt.eq(z.reshape((L, L))[1:], z.reshape((L, L))[:-1]))
                         + pt.sum(pt.eq(z.reshape((L, L))[:, 1:], z.reshape((L, L))[:, :-1]))),
    "edge-list": lambda z: pt.sum(pt.eq(z[SRC], z[DST])),
    "one-hot": lambda z: pt.sum(pt.eye(K)[z][SRC] * pt.eye(K)[z][DST]),
    "one-hot-grid": lambda z: (
        pt.sum(pt.eye(K)[z].reshape((L, L, K))[1:] * pt.eye(K)[z].reshape((L, L, K))[:-1])
        + pt.sum(pt.eye(K)[z].reshape((L, L, K))[:, 1:]
                 * pt.eye(K)[z].reshape((L, L, K))[:, :-1])),
    "deterministic": lambda z: pt.sum(pm.Deterministic("agree", pt.eq(z[SRC], z[DST]))),
    "dot-of-one-hot": lambda z: pt.sum(pt.eye(K)[z][SRC] @ np.eye(K) * pt.eye(K)[z][DST]),
}


def _potts(agreements, as_likelihood: bool = False) -> pm.Model:
    with pm.Model() as model:
        z = pm.Categorical("z", np.ones(K) / K, shape=N)
        if as_likelihood:  # the same density as the likelihood of a CustomDist
            pm.CustomDist("lattice", z, logp=lambda value, labels: 0.5 * agreements(labels)
                          + 0.0 * value.sum(), observed=np.zeros(1))
        else:
            pm.Potential("lattice", 0.5 * agreements(z))
    return model


@pytest.mark.parametrize("phrasing", sorted(AGREEMENTS) + ["customdist"])
def test_every_phrasing_of_a_potts_lattice_is_two_proven_colours(phrasing):
    if phrasing == "customdist":
        model = _potts(AGREEMENTS["edge-list"], as_likelihood=True)
    else:
        model = _potts(AGREEMENTS[phrasing])
    point = model.initial_point()
    value_vars = [model.rvs_to_values[model["z"]]]
    exact = ExactRatios(model, value_vars, point,
                        make_shared_replacements(point, value_vars, model),
                        n_categories=np.full(N, K))
    assert exact.structure.n_colours == 2 and exact.proven, exact.setup_report
    logp = model.compile_logp()
    z = np.random.default_rng(2).integers(0, K, N)
    _, table = exact(z)
    base = logp({"z": z})
    for i in range(N):
        for v in range(K):
            if v == z[i]:
                assert np.isnan(table[i, v])
                continue
            y = z.copy()
            y[i] = v
            assert table[i, v] == pytest.approx(logp({"z": y}) - base, abs=1e-9)


T = 30
_P = np.full((K, K), 0.1) + 0.7 * np.eye(K)
LOG_P = np.log(_P / _P.sum(axis=1, keepdims=True))
_Y = np.random.default_rng(3).normal(size=T)
_DETECTIONS = np.random.default_rng(4).random((T, 5)) < 0.4


_X = np.random.default_rng(6).normal(size=(T, 4))


def _applied(kind: str) -> pm.Model:
    """A hidden Markov chain (2 colours), a mixture's labels and occupancy indicators (1
    colour each) and a spike-and-slab regression's indicators (4 colours: every
    observation depends on every indicator), each written several ways."""
    family = kind.split("-")[0]
    with pm.Model() as model:
        if family in ("hmm", "mixture"):
            z = pm.Categorical("z", np.ones(K) / K, shape=T)
            mu = pm.Normal("mu", 0.0, 1.0, shape=K)
        elif family == "occupancy":
            z = pm.Bernoulli("z", 0.5, shape=T)
            p = pm.Beta("p", 1.0, 1.0)
        else:
            z = pm.Bernoulli("z", 0.3, shape=4)
            beta = pm.Normal("beta", 0.0, 1.0, shape=4)
            X = pt.as_tensor(_X)
        log_p = pt.as_tensor(LOG_P)
        if kind == "hmm-index":
            pm.Potential("chain", pt.sum(log_p[z[:-1], z[1:]]))
        elif kind == "hmm-one-hot":
            one_hot = pt.eye(K)[z]
            pm.Potential("chain", pt.sum((one_hot[:-1] @ LOG_P) * one_hot[1:]))
        elif kind == "hmm-flat-index":
            pm.Potential("chain", pt.sum(log_p.ravel()[z[:-1] * K + z[1:]]))
        elif kind == "hmm-comparisons":  # sum over (a, b) of log P[a, b] [z_t = a][z_t+1 = b]
            pm.Potential("chain", sum(
                LOG_P[a, b] * pt.sum(pt.eq(z[:-1], a) * pt.eq(z[1:], b))
                for a in range(K) for b in range(K)))
        elif kind == "hmm-rows":  # the row of the previous state, as a Categorical's logp
            rows = pm.Deterministic("rows", pt.exp(log_p)[z[:-1]])
            pm.Potential("chain", pt.sum(pt.log(rows[pt.arange(T - 1), z[1:]])))
        if family == "hmm" or kind == "mixture-index":
            pm.Normal("y", mu[z], 1.0, observed=_Y)
        elif kind == "mixture-one-hot":
            pm.Normal("y", pt.eye(K)[z] @ mu, 1.0, observed=_Y)
        elif kind == "mixture-potential":
            pm.Potential("y", pt.sum(pm.logp(pm.Normal.dist(mu[z], 1.0), _Y)))
        elif kind == "mixture-switch":
            mean = pt.switch(pt.eq(z, 0), mu[0], pt.switch(pt.eq(z, 1), mu[1], mu[2]))
            pm.Normal("y", mean, 1.0, observed=_Y)
        elif kind == "mixture-deterministic":
            pm.Normal("y", pm.Deterministic("mean", pt.take(mu, z)), 1.0, observed=_Y)
        elif kind == "occupancy-product":
            pm.Bernoulli("y", z[:, None] * p, observed=_DETECTIONS)
        elif kind == "occupancy-switch":
            pm.Bernoulli("y", pt.switch(z[:, None], p, 0.0), observed=_DETECTIONS)
        elif kind == "occupancy-outer":
            pm.Bernoulli("y", pt.outer(z, pt.ones(5)) * p, observed=_DETECTIONS)
        elif kind == "occupancy-deterministic":
            detect = pm.Deterministic("detect", pt.broadcast_to(z[:, None] * p, (T, 5)))
            pm.Bernoulli("y", detect, observed=_DETECTIONS)
        elif kind == "occupancy-potential":
            pm.Potential("y", pt.sum(pm.logp(pm.Bernoulli.dist(z[:, None] * p), _DETECTIONS)))
        elif kind == "regression-matmul":
            pm.Normal("y", X @ (z * beta), 1.0, observed=_Y)
        elif kind == "regression-dot":
            pm.Normal("y", pm.math.dot(X, z * beta), 1.0, observed=_Y)
        elif kind == "regression-sum":
            pm.Normal("y", (X * (z * beta)).sum(axis=1), 1.0, observed=_Y)
        elif kind == "regression-einsum":
            pm.Normal("y", pt.einsum("ij,j->i", X, z * beta), 1.0, observed=_Y)
        elif kind == "regression-switch":
            pm.Normal("y", X @ pt.switch(z, beta, 0.0), 1.0, observed=_Y)
    return model


#: colours of each phrasing
APPLIED = {"hmm-index": 2, "hmm-one-hot": 2, "hmm-flat-index": 2, "hmm-comparisons": 2,
           "hmm-rows": 2, "mixture-index": 1, "mixture-one-hot": 1, "mixture-potential": 1,
           "mixture-switch": 1, "mixture-deterministic": 1, "occupancy-product": 1,
           "occupancy-switch": 1, "occupancy-outer": 1, "occupancy-deterministic": 1,
           "occupancy-potential": 1, "regression-matmul": 4, "regression-dot": 4,
           "regression-sum": 4, "regression-einsum": 4, "regression-switch": 4}
FAMILIES = sorted({kind.split("-")[0] for kind in APPLIED})


def test_every_family_is_written_at_least_five_ways():
    for family in FAMILIES:
        assert sum(kind.startswith(family + "-") for kind in APPLIED) >= 5, family


@pytest.mark.parametrize("family", FAMILIES)
def test_every_phrasing_of_a_family_gets_the_same_recommendation(family):
    """recommend() reads the same structure from every phrasing and picks the same step
    (and, for a paired indicator, the same coefficients)."""
    choices = {}
    for kind in (k for k in APPLIED if k.startswith(family + "-")):
        model = _applied(kind)
        choice = pmd.recommend([model["z"]], model=model)
        coefficients = None if choice.coefficients is None else choice.coefficients.name
        choices[kind] = (choice.step.__name__, choice.n_colours, coefficients)
    assert len(set(choices.values())) == 1, choices


@pytest.mark.parametrize("kind", sorted(APPLIED))
def test_applied_models_in_several_phrasings(kind):
    model = _applied(kind)
    point = model.initial_point()
    value_vars = [model.rvs_to_values[model["z"]]]
    binary = kind.startswith(("occupancy", "regression"))
    n = point["z"].size
    exact = ExactRatios(model, value_vars, point,
                        make_shared_replacements(point, value_vars, model),
                        n_categories=None if binary else np.full(n, K))
    assert exact.structure.n_colours == APPLIED[kind] and exact.proven, exact.setup_report
    logp = model.compile_logp()
    z = np.random.default_rng(5).integers(0, 2 if binary else K, n)
    if kind.startswith("occupancy"):  # a site with a detection is occupied
        z = np.maximum(z, _DETECTIONS.any(axis=1))
    _, ratios = exact(z)
    table = ratios[:, None] if binary else ratios
    base = logp({**point, "z": z})
    for i in range(n):
        for v in range(2 if binary else K):
            if v == z[i]:
                continue
            y = z.copy()
            y[i] = v
            column = 0 if binary else v
            assert table[i, column] == pytest.approx(logp({**point, "z": y}) - base, abs=1e-9)
