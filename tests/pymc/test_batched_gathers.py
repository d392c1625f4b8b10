"""Batched gathers by the block's values rewritten as one advanced index: the same values
to the bit, in every indexing form the rewrite accepts, and left alone where it does
not apply."""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.traversal import toposort
from pytensor.tensor.blockwise import Blockwise

import pymc_discrete as pmd
from pymc_discrete.pymc.model.batched_gathers import flatten_batched_gathers
from tests.pymc.joint import assert_joint_frequencies_match, enumerate_block

K = 3
RNG = np.random.default_rng(0)
LOG_P = RNG.normal(size=(K, K))
MU = RNG.normal(size=(K, 4))
SRC = RNG.integers(0, 12, 20)
DST = RNG.integers(0, 12, 20)


def _gathers(z, mu):
    """name -> (graph of z, whether the rewrite applies to it)."""
    eye = pt.eye(K)
    return {
        "one-hot rows": (eye[z], True),
        "one-hot products on an edge list": ((eye[z][SRC] * eye[z][DST]).ravel(), True),
        "transition table": (pt.as_tensor(LOG_P)[z[:-1], z[1:]], True),
        "rows of a variable": (mu[z].ravel(), True),
        "negative indices": (pt.as_tensor(LOG_P)[z - K, -z], True),
        "a 2-d index with a 1-d one": (
            pt.as_tensor(LOG_P)[z[:6].reshape((2, 3)), z[3:6]].ravel(), True),
        "a batched index with a constant one": (
            pt.as_tensor(LOG_P)[z[:6].reshape((3, 2))[:, :, None],
                                np.array([0, 2, 1, 1])].ravel(), True),
        "a constant index first": (pt.as_tensor(LOG_P)[np.arange(12) % K, z], True),
        "whole axis after the index": (mu[z, :].ravel(), True),
        "an index into rows the state chose": (
            pt.as_tensor(LOG_P)[z][np.arange(12), z[::-1]], True),
        "bounded slice after the index": (mu[z, 1:3].ravel(), False),
        "slice before the index": (mu.T[:, z].ravel(), False),
    }


def _blockwise_gathers(graph) -> int:
    return sum(isinstance(node.op, Blockwise) for node in toposort([graph]))


@pytest.mark.parametrize("name", list(_gathers(pt.lvector(), pt.matrix())))
def test_flat_gather_equals_the_gather_of_every_state(name):
    z = pt.vector("z", dtype="int64")
    mu = pt.matrix("mu")
    graph, applies = _gathers(z, mu)[name]
    states = pt.matrix("states", dtype="int64")
    batched = vectorize_graph(graph, replace={z: states})
    [flat] = flatten_batched_gathers([batched])
    assert _blockwise_gathers(batched) >= 1
    assert (_blockwise_gathers(flat) == 0) is applies
    x = RNG.integers(0, K, (5, 12))
    one = pytensor.function([z, mu], graph, on_unused_input="ignore")
    expected = np.stack([one(row, MU) for row in x])
    got = pytensor.function([states, mu], flat, mode="NUMBA",
                            on_unused_input="ignore")(x, MU)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def _scalar_gathers(a, b, mu):
    """name -> (graph of the scalars a and b, whether the rewrite applies to it): what a
    model written one variable per site indexes, stacked over its sites."""
    log_p = pt.as_tensor(LOG_P)
    return {
        "a row by one scalar": (log_p[a], True),
        "an element by two scalars": (log_p[a, b], True),
        "an element of a row the other scalar chose": ((2.0 * log_p)[a][b], True),
        "a negative scalar index": (log_p[-a - 1, b], True),
        "rows of a variable": (mu[b], True),
        "a slice after the scalar": (mu[b, 1:3], True),
        "a slice after two scalars": (pt.as_tensor(MU.reshape(K, 2, 2))[a, b % 2, ::-1], True),
        "a slice before the scalar": (mu[1:3, b], False),
    }


@pytest.mark.parametrize("name", list(_scalar_gathers(pt.lscalar(), pt.lscalar(),
                                                      pt.matrix())))
def test_flat_scalar_gather_equals_the_gather_of_every_member(name):
    """Scalar indices stacked over members (``vectorize_graph``: a ``Blockwise`` loop of
    the scalar gather) read as one advanced index, with the same values and gradient."""
    a, b = pt.lscalar("a"), pt.lscalar("b")
    mu = pt.matrix("mu")
    graph, applies = _scalar_gathers(a, b, mu)[name]
    a_s, b_s = pt.lvector("a_s"), pt.lvector("b_s")
    batched = vectorize_graph(graph, replace={a: a_s, b: b_s})
    [flat] = flatten_batched_gathers([batched])
    assert _blockwise_gathers(batched) >= 1
    assert (_blockwise_gathers(flat) == 0) is applies
    x = RNG.integers(0, K, (2, 7))
    one = pytensor.function([a, b, mu], graph, on_unused_input="ignore")
    expected = np.stack([one(i, j, MU) for i, j in x.T])
    gradient = pt.grad(flat.sum(), mu, disconnected_inputs="ignore")
    # PyTensor's numba code for a Blockwise of a slice does not compile: the graphs the
    # rewrite leaves alone run in Python
    fn = pytensor.function([a_s, b_s, mu], [flat, gradient],
                           mode="NUMBA" if applies else "FAST_COMPILE", on_unused_input="ignore")
    got, gradient = fn(x[0], x[1], MU)
    np.testing.assert_array_equal(got, expected)
    expected_gradient = pytensor.function(
        [a_s, b_s, mu], pt.grad(batched.sum(), mu, disconnected_inputs="ignore"),
        on_unused_input="ignore")(x[0], x[1], MU)
    np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-12)


def test_exact_ratios_of_a_one_hot_lattice_gather_in_one_call():
    side = 4
    with pm.Model() as model:
        z = pm.Categorical("z", np.ones(K) / K, shape=side * side)
        grid = pt.eye(K)[z].reshape((side, side, K))
        pm.Potential("agree", pt.sum(grid[1:] * grid[:-1]) + pt.sum(grid[:, 1:] * grid[:, :-1]))
    step = pmd.BlockedGibbs([model["z"]], model=model)
    batched = step.exact_ratios._batch_graph[1][0]
    assert _blockwise_gathers(batched) == 0


def test_blocked_gibbs_on_a_chain_of_gathers_matches_the_joint_distribution():
    """A seven-step hidden chain written with gathers by its values (transitions
    ``log_p[z[:-1], z[1:]]``, emissions ``mu[z]``), both rewritten: the joint frequencies
    of all 3^7 states within tolerance of enumeration."""
    y = np.array([-1.2, 0.1, 0.9, 1.4, -0.3, 0.2, 1.1])
    with pm.Model() as model:
        z = pm.Categorical("z", np.ones(K) / K, shape=y.size)
        pm.Potential("chain", pt.sum(pt.as_tensor(0.8 * LOG_P)[z[:-1], z[1:]]))
        pm.Normal("y", pt.as_tensor(np.array([-1.0, 0.0, 1.0]))[z], 0.7, observed=y)
        step = pmd.BlockedGibbs([z])
    assert _blockwise_gathers(step.exact_ratios._batch_graph[1][0]) == 0 and step.proven
    states, probs = enumerate_block(model, ["z"])
    with model:
        idata = pm.sample(draws=4000, tune=200, chains=2, cores=1, step=[step],
                          random_seed=5, progressbar=False, compute_convergence_checks=False)
    assert_joint_frequencies_match(idata, ["z"], states, probs)
