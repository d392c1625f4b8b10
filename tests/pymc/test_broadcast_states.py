"""A block's terms at K states with the states along a broadcast axis
(``pymc/summing/broadcast_states.py``): the narrowed graph has the values of the
vectorised one wherever it is built, is refused where a state's value meets full-size data
(where per-state copies fold it), and the summed-out models it builds equal log-sum-exp
over every discrete state."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.traversal import toposort

import pymc_discrete as pmd
from pymc_discrete.pymc.model.terms import block_pieces, states_as_constants, without_checks
from pymc_discrete.pymc.summing import marginal
from pymc_discrete.pymc.summing.broadcast_states import may_narrow, narrowed
from tests.pymc.test_marginal_model import _assert_sum_over_every_state

Y = np.array([[-1.2, 0.4], [0.3, -0.1], [0.3, -0.1], [1.9, 0.8]])
GATHERS = {"AdvancedSubtensor", "AdvancedSubtensor1", "AdvancedIncSubtensor",
           "AdvancedIncSubtensor1"}


def _gaussian_mixture():
    """Three diagonal Gaussians in two dimensions, labels with learned weights."""
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(3))
        mu = pm.Normal("mu", 0.0, 1.0, shape=(3, 2))
        sigma = pm.HalfNormal("sigma", 1.0, shape=(3, 2))
        z = pm.Categorical("z", w, shape=len(Y))
        pm.Normal("y", mu[z], sigma[z], observed=Y)
    return model


def _site_weights():
    """Each site with its own label probabilities (a Categorical of a (N, K) p)."""
    with pm.Model() as model:
        logits = pm.Normal("logits", 0.0, 1.0, shape=(len(Y), 3))
        mu = pm.Normal("mu", [-1.0, 0.0, 1.0], 1.0)
        z = pm.Categorical("z", pt.special.softmax(logits, axis=-1), shape=len(Y))
        pm.Normal("y", mu[z], 0.7, observed=Y[:, 0])
    return model


def _offset_labels():
    """Labels 1..3 (a DiscreteUniform) reading their component as ``mu[z - 1]``."""
    with pm.Model() as model:
        mu = pm.Normal("mu", [-1.0, 0.0, 1.0], 1.0)
        z = pm.DiscreteUniform("z", 1, 3, shape=len(Y))
        pm.Normal("y", mu[z - 1], 0.7, observed=Y[:, 0])
    return model


def _two_components():
    """A binary label with a shared probability selecting one of two means."""
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 2.0)
        mu = pm.Normal("mu", [-1.0, 1.0], 1.0)
        z = pm.Bernoulli("z", p, shape=len(Y))
        pm.Normal("y", mu[z], 0.7, observed=Y[:, 0])
    return model


def _indicator():
    """An indicator against per-site data (``z * psi_i``): the states' values meet
    full-size data, so the graph is not narrowed."""
    with pm.Model() as model:
        psi = pm.Beta("psi", 2.0, 2.0, shape=len(Y))
        z = pm.Bernoulli("z", psi, shape=len(Y))
        pm.Normal("y", 2.0 * z, 1.0, observed=Y[:, 0])
    return model


NARROWED = {"gaussian mixture": (_gaussian_mixture, 3), "site weights": (_site_weights, 3),
            "offset labels": (_offset_labels, 3), "two components": (_two_components, 2)}


def _block_graphs(model, values, vectorised=True):
    """The block's pieces and checks vectorised over the (K, N) ``values``, and the
    state constants they read (``vectorised=False``: the graphs as they are, and the
    block's value variable)."""
    z = model.rvs_to_values[model["z"]]
    pieces, _ = block_pieces(model, [z])
    graphs = [g for piece in pieces for g in without_checks(piece, [z])]
    if not vectorised:
        return graphs, [z]
    replace = states_as_constants([z], model.initial_point(), values, graphs)
    return vectorize_graph(graphs, replace=replace), list(replace.values())


def _values_at(model, graphs, seed):
    """``graphs`` evaluated at a random point of the model's continuous values."""
    inputs = [v for v in model.value_vars if v.name != "z"]
    rng = np.random.default_rng(seed)
    point = model.initial_point()
    given = [point[v.name] + rng.normal(0.0, 0.5, np.shape(point[v.name])) for v in inputs]
    function = pytensor.function(inputs, graphs, on_unused_input="ignore")
    return function(*given)


def _site_gathers(graphs):
    """The gathers in ``graphs`` whose result varies along the sites' axis (axis 1)."""
    return [node for node in toposort(graphs)
            if type(node.op).__name__ in ("AdvancedSubtensor", "Blockwise")
            and not node.outputs[0].type.broadcastable[1]]


@pytest.mark.parametrize("name", list(NARROWED))
def test_narrowed_graphs_equal_the_vectorised_ones(name):
    """With every site at v in state v, the narrowed graphs have the vectorised graphs'
    values at random points, and gather nothing by the states (a run of states reads a
    slice of the parameters)."""
    build, k = NARROWED[name]
    model = build()
    offset = 1 if name == "offset labels" else 0
    values = np.repeat(np.arange(k)[:, None] + offset, len(Y), axis=1)
    assert may_narrow(*_block_graphs(model, values, vectorised=False))
    graphs, states = _block_graphs(model, values)
    narrow = narrowed(graphs, states)
    assert narrow is not None
    assert [g.type for g in narrow] == [g.type for g in graphs]
    if name != "site weights":  # each site's own probabilities are gathered per site
        assert _site_gathers(graphs), "the vectorised graphs gather by site"
        assert not _site_gathers(narrow), "a gather by the states still reads every site"
    for seed in range(3):
        for mine, reference in zip(_values_at(model, narrow, seed),
                                   _values_at(model, graphs, seed)):
            np.testing.assert_allclose(mine, reference, rtol=1e-12, atol=0)


@pytest.mark.parametrize("order", [[2, 0, 1], [0, 2]])
def test_states_out_of_order_are_gathered_by_row(order):
    """States that are not a run of consecutive values (the order [2, 0, 1], or two
    values with a gap) gather their rows, and equal the vectorised graphs."""
    model = _gaussian_mixture()
    values = np.repeat(np.array(order)[:, None], len(Y), axis=1)
    graphs, states = _block_graphs(model, values)
    narrow = narrowed(graphs, states)
    assert narrow is not None and not _site_gathers(narrow)
    for mine, reference in zip(_values_at(model, narrow, 0), _values_at(model, graphs, 0)):
        np.testing.assert_allclose(mine, reference, rtol=1e-12, atol=0)


def test_six_components_sum_out_exactly():
    """More values than the per-state copies take (six components, where the states were
    one vectorised graph before): the summed-out density is the sum over every
    labelling."""
    y = np.array([-2.0, 0.1, 1.7])
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(6))
        mu = pm.Normal("mu", np.linspace(-2.5, 2.5, 6), 1.0)
        z = pm.Categorical("z", w, shape=y.size)
        pm.Normal("y", mu[z], 0.6, observed=y)
    _assert_sum_over_every_state(model, pmd.marginalize(model), seed=3, points=2)


def test_a_value_against_full_size_data_is_not_narrowed():
    """``z * 2`` against per-site data and a Bernoulli's switch against per-site
    probabilities: per-state copies fold those, so no narrowed graph is offered, and the
    graphs as they are already say so (nothing is vectorised for such a block)."""
    values = np.repeat(np.arange(2)[:, None], len(Y), axis=1)
    model = _indicator()
    graphs, states = _block_graphs(model, values)
    assert narrowed(graphs, states) is None
    assert not may_narrow(*_block_graphs(model, values, vectorised=False))


def test_states_that_differ_by_site_are_not_narrowed():
    """States whose sites take different values (no broadcast axis) are left alone."""
    values = np.array([[0, 1, 2, 0], [1, 2, 0, 1], [2, 0, 1, 2]])
    graphs, states = _block_graphs(_gaussian_mixture(), values)
    assert narrowed(graphs, states) is None


@pytest.mark.parametrize("name", list(NARROWED))
def test_the_summed_out_model_is_the_sum_over_every_state(name, monkeypatch):
    """The models summed out through narrowed graphs (the narrowing seen to be taken)
    equal log-sum-exp over every labelling, to 1e-9; the mixture's compiled log density
    and gradient gather nothing."""
    taken = []

    def spy(graphs, states):
        taken.append(narrowed(graphs, states) is not None)
        return narrowed(graphs, states)

    monkeypatch.setattr(marginal, "narrowed", spy)
    model = NARROWED[name][0]()
    summed = pmd.marginalize(model)
    assert taken and all(taken)
    _assert_sum_over_every_state(model, summed, seed=2, points=3)
    if name == "gaussian mixture":
        function = summed.logp_dlogp_function(ravel_inputs=True)
        ops = {type(node.op).__name__
               for node in function._pytensor_function.maker.fgraph.toposort()}
        assert not ops & GATHERS
