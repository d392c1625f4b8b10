"""Alike sites summed once: a graph rebuilt at some of its elements equals the whole
graph's values there, elements with the same record have the same value at every
parameter, and the sites of a block are grouped exactly by what their terms read."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pymc.logprob.utils import CheckParameterValue

import pymc_discrete as pmd
from pymc_discrete.pymc.summing.alike_sites import elements_at
from pymc_discrete.pymc.summing.summed_block import cached_summed_block

DATA = np.array([[0, 1, 1, 0], [2, 1, 0, 0], [0, 1, 1, 0], [2, 1, 0, 0], [1, 1, 1, 1],
                 [0, 1, 1, 0]], dtype="float64")


def _graph(with_dot: bool = True):
    """A vector graph of two parameters through every operation the rebuilding walks
    (elementwise, dimshuffles, an alloc, a reshape, constant slices and an integer index,
    a parameter check) and one it does not (a dot product: read at its positions)."""
    theta = pt.vector("theta", shape=(8,))
    scale = pt.scalar("scale")
    data = pt.constant(np.hstack([DATA, DATA]))
    rows = pt.exp(-data * scale) + pt.log1p(theta[None, :] ** 2)  # (6, 8)
    filled = pt.alloc(scale, 6, 8) * rows
    checked = CheckParameterValue("scale > 0")(filled, pt.gt(scale, 0))
    wide = checked[:, ::2]  # (6, 4): a slice
    column = data[:, 1]  # an integer index: (6,)
    dotted = pt.dot(pt.constant(DATA), theta[:4])  # (6,): not elementwise
    per_row = (wide.T * column).T + (dotted[:, None] if with_dot else 0.0)
    return per_row.reshape((24,)), [theta, scale]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rebuilt_elements_equal_the_whole_graph(seed):
    graph, inputs = _graph()
    rng = np.random.default_rng(seed)
    elements = rng.choice(24, size=9, replace=False)
    part, records = elements_at(graph, elements)
    whole = pytensor.function(inputs, graph)
    rebuilt = pytensor.function(inputs, pt.broadcast_to(part, (elements.size,)))
    assert all(r.shape == (elements.size,) for r in records)
    for _ in range(3):
        theta, scale = rng.normal(size=8), abs(rng.normal()) + 0.1
        np.testing.assert_array_equal(rebuilt(theta, scale), whole(theta, scale)[elements])


@pytest.mark.parametrize("with_dot", [False, True])
def test_equal_records_mean_equal_values(with_dot):
    """Elements whose records agree have equal values at any parameters. The walk reads
    the dot product at its positions: with it, no two rows share a record."""
    graph, inputs = _graph(with_dot)
    _, records = elements_at(graph, np.arange(24))
    keys = [tuple(r[e] for r in records) for e in range(24)]
    whole = pytensor.function(inputs, graph)
    rng = np.random.default_rng(3)
    values = [whole(rng.normal(size=8), abs(rng.normal()) + 0.1) for _ in range(3)]
    pairs = [(a, b) for a in range(24) for b in range(a + 1, 24) if keys[a] == keys[b]]
    # rows 0, 2 and 5 of the data are equal: their elements column by column
    alike = [(4 * 0 + j, 4 * 2 + j) for j in range(4)]
    assert (not pairs) if with_dot else all(pair in pairs for pair in alike)
    for a, b in pairs:
        assert all(v[a] == v[b] for v in values)


def _occupancy(y: np.ndarray, per_site_effect: bool = False) -> pm.Model:
    with pm.Model() as model:
        psi = pm.Beta("psi", 1, 1)
        p = pm.Beta("p", 1, 1)
        z = pm.Bernoulli("z", psi, shape=y.shape[0])
        if per_site_effect:  # every site its own detection probability
            b = pm.Normal("b", 0, 1, shape=y.shape[0])
            pm.Bernoulli("y", z[:, None] * pm.math.sigmoid(b)[:, None] * p, observed=y)
        else:
            pm.Bernoulli("y", z[:, None] * p, observed=y)
    return model


def test_sites_are_grouped_by_their_numbers_of_detections():
    """A site's terms are one Bernoulli term per visit: two sites with as many detections
    have the same terms in another order, so the same sums."""
    rng = np.random.default_rng(0)
    y = (rng.random((60, 3)) < 0.3).astype(np.int64)
    block = cached_summed_block(_occupancy(y))
    counts, kinds = np.unique(y.sum(axis=1), return_inverse=True)
    assert block.alike is not None
    assert block.alike.first.size == len(counts)
    # the same partition of the sites
    assert len(set(zip(block.alike.kind, kinds.ravel()))) == len(counts)


def test_sites_with_their_own_parameters_are_never_merged():
    y = np.zeros((8, 3), dtype=np.int64)  # every row alike in the data
    block = cached_summed_block(_occupancy(y, per_site_effect=True))
    assert block.alike is None  # sigmoid(b_i) is read at each site's own position


def test_summed_density_with_alike_sites_equals_the_enumerated_sum():
    """Six sites, three kinds: the summed-out log density equals log-sum-exp over the 64
    joint states of the original model, at random points, to 1e-9."""
    from scipy.special import logsumexp

    y = np.array([[1, 0, 0], [0, 0, 0], [0, 0, 0], [1, 0, 0], [0, 1, 1], [0, 0, 0]])
    model = _occupancy(y)
    summed = pmd.marginalize(model)
    assert cached_summed_block(model).alike.first.size == 3
    original, marginal = model.compile_logp(), summed.compile_logp()
    states = (np.arange(64)[:, None] >> np.arange(6)) & 1
    rng = np.random.default_rng(1)
    start = summed.initial_point()
    for _ in range(5):
        point = {k: v + rng.normal(0.0, 0.7, np.shape(v)) for k, v in start.items()}
        exact = logsumexp([original({**point, "z": z}) for z in states])
        assert marginal(point) == pytest.approx(exact, abs=1e-9, rel=1e-12)


def _stacked_graph():
    """A vector graph through the operations that stack and reduce: a ``MakeVector`` of
    constants and scalars (one variable per site), a ``Join`` of a parameter's row and
    constants, and sums and maxima along an axis."""
    theta = pt.vector("theta", shape=(4,))
    scale = pt.scalar("scale")
    sites = pt.stack([pt.constant(1.0), scale, pt.constant(1.0), scale * 2.0,
                      pt.constant(0.5), pt.constant(1.0)])  # MakeVector: (6,)
    data = pt.constant(DATA)  # (6, 4)
    joined = pt.join(1, data, pt.broadcast_to(theta[None, :], (6, 4)))  # (6, 8)
    by_row = (joined * sites[:, None]).sum(axis=1)  # (6,)
    top = pt.max(pt.join(0, data, data + 1.0), axis=0)  # (4,): a reduction of constants
    return pt.join(0, by_row, pt.exp(top * scale), pt.log1p(sites ** 2)), [theta, scale]


@pytest.mark.parametrize("seed", [0, 1])
def test_stacked_and_reduced_graphs_rebuild_exactly(seed):
    graph, inputs = _stacked_graph()
    rng = np.random.default_rng(seed)
    elements = rng.choice(16, size=10, replace=False)
    part, records = elements_at(graph, elements)
    assert all(r.shape == (elements.size,) for r in records)
    whole = pytensor.function(inputs, graph)
    rebuilt = pytensor.function(inputs, pt.broadcast_to(part, (elements.size,)))
    for _ in range(3):
        theta, scale = rng.normal(size=4), rng.normal()
        np.testing.assert_allclose(rebuilt(theta, scale), whole(theta, scale)[elements],
                                   rtol=1e-15, atol=0)
    # elements with equal records are equal at any parameters: rows 0, 2 and 5 of the
    # data are equal and read equal constants of the stack; rows 1 and 3 read the scale
    _, records = elements_at(graph, np.arange(16))
    keys = [tuple(r[e] for r in records) for e in range(16)]
    assert keys[0] == keys[2] == keys[5] and keys[1] != keys[3]
    values = [whole(rng.normal(size=4), rng.normal()) for _ in range(3)]
    for a in range(16):
        for b in range(a + 1, 16):
            if keys[a] == keys[b]:
                assert all(v[a] == v[b] for v in values)
