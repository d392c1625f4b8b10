"""Pieces that are a fixed function of one site, read from tables: the same terms as the
pieces' own graphs at every state, and only where the graph proves it."""

from __future__ import annotations

import itertools

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pymc.pytensorf import make_shared_replacements

import pymc_discrete as pmd
from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.model.unary_tables import (
    MAX_COMPARED_VALUES,
    tabulate_unary_pieces,
    unary_table,
)
from tests.pymc.joint import assert_joint_frequencies_match, enumerate_block


def _exact(model, name, n_categories=None, offsets=None, **kwargs) -> ExactRatios:
    value_vars = [model.rvs_to_values[model[name]]]
    point = model.initial_point()
    shared = make_shared_replacements(point, value_vars, model)
    return ExactRatios(model, value_vars, point, shared, n_categories=n_categories,
                       offsets=offsets, **kwargs)


def _all_states(n_values: list[int]) -> np.ndarray:
    return np.array(list(itertools.product(*[range(k) for k in n_values])), dtype=np.int64)


def test_a_tabulated_piece_gives_the_terms_of_its_graph_at_every_state():
    """Three sites of 3, 4 and 2 values, prior probabilities that differ by site, a
    DiscreteUniform-like offset, and a coupling: the prior piece is read from a table,
    the coupling is not, and every term equals the untabulated terms at all 24 states."""
    p = np.array([[0.2, 0.5, 0.3, 0.0], [0.1, 0.2, 0.3, 0.4], [0.6, 0.4, 0.0, 0.0]])
    with pm.Model() as model:
        z = pm.Categorical("z", p, shape=3)
        pm.Potential("pair", 0.7 * pt.eq(z[0], z[1]) - 0.4 * z[1] * z[2])
    ks = np.array([3, 4, 2])
    tabulated = _exact(model, "z", n_categories=ks)
    plain = _exact(model, "z", n_categories=ks, within_values=False)
    assert tabulated.setup_report["tabulated_pieces"] == 1
    assert plain.setup_report["tabulated_pieces"] == 0
    states = _all_states([3, 4, 2])
    np.testing.assert_array_equal(tabulated.batch_terms(states), plain.batch_terms(states))
    assert tabulated.structure.n_colours == plain.structure.n_colours


def test_values_outside_a_sites_support_read_minus_inf():
    """The table's lookup gives -inf for a value the site does not have, as the
    Categorical's own graph does (a state the samplers never evaluate, checked all the
    same)."""
    x = pt.vector("x", dtype="int64")
    piece = pt.log(pt.as_tensor(np.array([[0.2, 0.8], [0.5, 0.5]]))[pt.arange(2), x])
    pieces, n = tabulate_unary_pieces([piece], [False], x, np.zeros(2, np.int64),
                                      np.array([2, 2]), None)
    assert n == 1
    fn = pytensor.function([x], pieces[0])
    np.testing.assert_allclose(fn(np.array([1, 0])), np.log([0.8, 0.5]))
    assert np.isneginf(fn(np.array([2, -1]))).all()


def test_pieces_that_are_not_a_function_of_one_site_are_kept():
    """A piece coupling two sites, one that reads another variable, and one whose check
    reads the sites are left as they are."""
    x = pt.vector("x", dtype="int64")
    mu = pt.scalar("mu")
    table = pt.as_tensor(np.array([0.1, 0.7]))
    coupling = table[x[1:]] * table[x[:-1]]
    reading = mu * table[x]
    values, ks = np.zeros(3, np.int64), np.full(3, 2)
    assert unary_table(coupling, x, values, ks, None) is None
    _, n = tabulate_unary_pieces([coupling, reading], [False, True], x, values, ks, None)
    assert n == 0
    with pm.Model() as model:
        z = pm.Categorical("z", np.array([0.2, 0.3, 0.5]), shape=3)
        pm.Bernoulli("y", 0.2 + 0.3 * z, observed=np.ones(3))  # its check reads z
    exact = _exact(model, "z", n_categories=np.full(3, 3))
    # the prior is tabulated; the likelihood, whose check 0 <= p <= 1 reads z, is not
    assert exact.setup_report["tabulated_pieces"] == 1
    assert not exact.layout.value_rows_only


def test_only_pieces_that_gather_by_the_sites_and_have_few_values_are_tabulated():
    """An elementwise piece (a Bernoulli prior, a linear field) is one fused loop as it
    is, and sites of more than MAX_COMPARED_VALUES values would need a gather to read a
    table: neither is tabulated."""
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.3, shape=4)
        pm.Potential("field", pt.sum(np.arange(4.0) * x) + 0.5 * x[0] * x[1])
    assert _exact(model, "x").setup_report["tabulated_pieces"] == 0
    k = MAX_COMPARED_VALUES + 1
    with pm.Model() as model:
        z = pm.Categorical("z", np.ones(k) / k, shape=2)
        pm.Potential("pair", 0.5 * pt.eq(z[0], z[1]))
    assert _exact(model, "z", n_categories=np.full(2, k)).setup_report[
        "tabulated_pieces"] == 0


def test_latent_counts_are_never_tabulated():
    """Counts are evaluated beyond the two values their structure is read at: a table of
    those two would make every other count impossible."""
    with pm.Model():
        n = pm.Poisson("N", np.array([6.0, 25.0]), initval=np.array([1, 1]))
        pm.Potential("tie", -((n[0] - n[1] + 10.0) ** 2) / 20.0)
        step = pmd.CountLBP()
    assert step.exact_ratios.setup_report["tabulated_pieces"] == 0


def test_blocked_gibbs_with_a_tabulated_prior_matches_the_joint_distribution():
    """A 3x3 Potts lattice whose sites have different constant prior probabilities (the
    prior read from a table): the joint frequencies of all 3^9 states within tolerance
    of enumeration."""
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(3), size=9)
    with pm.Model() as model:
        z = pm.Categorical("z", p, shape=9)
        grid = z.reshape((3, 3))
        pm.Potential("agree", 0.6 * (pt.eq(grid[1:], grid[:-1]).sum()
                                     + pt.eq(grid[:, 1:], grid[:, :-1]).sum()))
        step = pmd.BlockedGibbs([z])
    assert step.exact_ratios.setup_report["tabulated_pieces"] == 1 and step.proven
    states, probs = enumerate_block(model, ["z"])
    with model:
        idata = pm.sample(draws=4000, tune=200, chains=2, cores=1, step=[step],
                          random_seed=4, progressbar=False, compute_convergence_checks=False)
    assert_joint_frequencies_match(idata, ["z"], states, probs)


@pytest.mark.parametrize("lower", [0, 3])
def test_a_gather_by_offset_sites_is_tabulated_in_site_indices(lower):
    """DiscreteUniform(lower, lower + 4) sites (values are offset + index) with a weight
    looked up by value: the table is read by site index and the terms equal the
    untabulated ones at every state."""
    weights = np.log(np.array([0.1, 0.2, 0.3, 0.25, 0.15]))
    with pm.Model() as model:
        d = pm.DiscreteUniform("d", lower, lower + 4, shape=2)
        pm.Potential("weight", pt.as_tensor(weights)[d - lower])
        pm.Potential("pull", -0.3 * (d[0] - d[1]) ** 2)
    ks, offsets = np.array([5, 5]), np.full(2, lower)
    tabulated = _exact(model, "d", n_categories=ks, offsets=offsets)
    plain = _exact(model, "d", n_categories=ks, offsets=offsets, within_values=False)
    assert tabulated.setup_report["tabulated_pieces"] == 1
    states = _all_states([5, 5])
    np.testing.assert_array_equal(tabulated.batch_terms(states), plain.batch_terms(states))
