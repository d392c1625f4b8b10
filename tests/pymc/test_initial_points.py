"""The model's plain initial-point function compiled once per registered ``pm.sample``,
without PyTensor's rewrites: the points are PyMC's own, to the bit, on every model here
(strategies, transforms, random initial values, symbolic distributions, loops)."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pymc.initial_point import make_initial_point_expression

from pymc_discrete import example_models
from pymc_discrete.pymc.model.graph_evaluation import graph_evaluator
from pymc_discrete.pymc.model.initial_point_templates import templated_initial_point
from pymc_discrete.pymc.model.plain_initial_point import (
    initial_point,
    plain_initial_point_function,
)
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


@pytest.mark.parametrize("name", ["strategies", "occupancy per variable", "hmm per variable"])
def test_initial_point_is_pymcs_point(name):
    """What ``pmd.marginalize`` reads: ``model.initial_point(seed)``, the same keys,
    dtypes and values; on the copy without value transforms it reads too (a model with
    given initial values is copied without them)."""
    from pymc.model.transform.conditioning import remove_value_transforms

    model = _models()[name]()
    copies = [model] if name == "strategies" else [model, remove_value_transforms(model)]
    for m in copies:
        for seed in (3, 11):
            expected = m.initial_point(random_seed=seed)
            got = initial_point(m, random_seed=seed)
            assert list(got) == list(expected)
            for key, value in expected.items():
                assert got[key].dtype == value.dtype, key
                np.testing.assert_array_equal(got[key], value, err_msg=key)


def test_a_random_initial_value_is_drawn_from_the_seed():
    model = _strategies()
    ours = plain_initial_point_function(model)
    assert not np.array_equal(ours(3)["mu"], ours(4)["mu"])
    np.testing.assert_array_equal(ours(3)["mu"], ours(3)["mu"])


@pytest.mark.parametrize("kind", KINDS)
def test_a_model_written_per_variable_is_evaluated_without_compiling(kind):
    model = per_variable(kind, 4 if kind == "lattice" else 9)
    expressions = make_initial_point_expression(
        free_rvs=model.free_RVs, rvs_to_transforms=model.rvs_to_transforms,
        initval_strategies=dict(model.rvs_to_initial_values), return_transformed=True)
    evaluate = graph_evaluator(expressions)
    assert evaluate is not None
    first = evaluate()
    for value in first:  # the points handed out are copies, not the graph's constants
        value[...] = -7
    expected = list(model.initial_point().values())
    for got, value in zip(evaluate(), expected, strict=True):
        np.testing.assert_array_equal(got, value)


def test_a_graph_that_draws_or_checks_is_compiled():
    with pm.Model():
        mu = pm.Normal("mu", 0, 1, initval="prior")
        pm.Normal("x", mu, 1.0)
    assert graph_evaluator([mu]) is None  # a random variable draws in place once compiled
    checked = pm.logp(pm.Normal.dist(0.0, -1.0), 0.0)
    assert graph_evaluator([checked]) is None  # its check becomes a switch once compiled
    assert graph_evaluator([pm.math.exp(pt.as_tensor(1.0))]) is not None


@pytest.mark.parametrize("name", list(_models()))
def test_the_point_computed_variable_by_variable_is_pymcs(name):
    """Computed from shared templates, the point is PyMC's to the bit, in PyMC's order;
    a model with a random initial value is left to PyMC's expression."""
    model = _models()[name]()
    point = templated_initial_point(model)
    if name == "strategies":  # initval="prior": drawn, so PyMC's expression
        assert point is None
        return
    assert point is not None
    expected = model.initial_point()
    assert list(point) == list(expected)
    for key, value in expected.items():
        assert np.asarray(point[key]).dtype == np.asarray(value).dtype, key
        np.testing.assert_array_equal(point[key], value, err_msg=key)


def test_alike_variables_share_one_template_with_their_own_leaves():
    """Sites of one kind read different constants and parents, and data: each gets its
    own value, PyMC's."""
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 5.0)
        start = pm.Data("start", np.array(0.0))
        walk = [pm.Normal("w_0", start, 1.0)]
        for t in range(1, 4):
            walk.append(pm.Normal(f"w_{t}", walk[-1] + 0.5 * t, 1.0))
        for t, level in enumerate((0.2, 0.7, 0.4)):
            pm.Bernoulli(f"b_{t}", p * 0 + level)
        pm.HalfNormal("s", 1.0, initval=0.7)
    pm.set_data({"start": np.array(0.3)}, model=model)  # read when the point is computed
    point = templated_initial_point(model)
    expected = model.initial_point()
    assert list(point) == list(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(point[key], value, err_msg=key)
    assert [float(point[f"w_{t}"]) for t in range(4)] == [0.3, 0.8, 1.8, 3.3]
    assert [int(point[f"b_{t}"]) for t in range(3)] == [0, 1, 0]
