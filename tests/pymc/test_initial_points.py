"""The model's plain initial-point function compiled once per registered ``pm.sample``,
without PyTensor's rewrites: the points are PyMC's own, to the bit, on every model here
(strategies, transforms, random initial values, symbolic distributions, loops)."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

from pymc_discrete import example_models
from pymc_discrete.pymc.choosing.initial_points import plain_initial_point_function
from tests.pymc.per_variable import per_variable, vectorised

KINDS = ["hmm", "mixture", "occupancy", "lattice"]


def _strategies() -> pm.Model:
    with pm.Model(coords={"k": range(3)}) as model:
        data = pm.Data("data", np.array([0.3, -1.2, 2.0]))
        w = pm.Dirichlet("w", np.ones(3), dims="k")
        mu = pm.Normal("mu", 0, 1, dims="k", initval="prior")
        pm.Normal("nu", 0, 1, shape=2, initval=[0.5, -0.5])
        pm.HalfCauchy("tau", 1.0, initval="support_point")
        pm.Truncated("t", pm.Normal.dist(0.0, 1.0), lower=-1.0, upper=3.0)
        pm.ZeroSumNormal("zs", sigma=1.0, shape=4)
        pm.GaussianRandomWalk("walk", sigma=0.5, init_dist=pm.Normal.dist(0, 1), steps=5)
        z = pm.Categorical("z", w, shape=3)
        pm.Poisson("count", 3.0)
        pm.Normal("y", mu[z], 1.0, observed=data)
        pm.NormalMixture("mix", w, mu, sigma=1.0, observed=data)
    return model


def _models() -> dict:
    models = {"strategies": _strategies,
              "gallery mixture": lambda: example_models.gallery_mixture(n=40),
              "fhmm": lambda: example_models.fhmm_model(),
              "potts": lambda: example_models.potts_model()}
    for kind in KINDS:
        models[f"{kind} per variable"] = lambda kind=kind: per_variable(kind, 4 if kind == "lattice" else 9)
        models[f"{kind} vectorised"] = lambda kind=kind: vectorised(kind, 4 if kind == "lattice" else 9)
    return models


@pytest.mark.parametrize("name", list(_models()))
def test_plain_initial_point_is_pymcs(name):
    model = _models()[name]()
    ours = plain_initial_point_function(model)
    for seed in (3, 11):
        expected = model.initial_point(random_seed=seed)
        got = ours(seed)
        assert list(got) == list(expected)
        for key, value in expected.items():
            assert np.asarray(got[key]).dtype == np.asarray(value).dtype, key
            np.testing.assert_array_equal(got[key], value, err_msg=key)


def test_a_random_initial_value_is_drawn_from_the_seed():
    model = _strategies()
    ours = plain_initial_point_function(model)
    assert not np.array_equal(ours(3)["mu"], ours(4)["mu"])
    np.testing.assert_array_equal(ours(3)["mu"], ours(3)["mu"])
