"""BlockedGibbs: colour classes drawn from exact conditionals, exact whatever the
colouring (a probed colouring that misses a coupling is corrected by Metropolis-Hastings)."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pymc.pytensorf import make_shared_replacements

import pymc_discrete as pmd
from pymc_discrete.example_models import ising_model
from pymc_discrete.kernels.exact_tables import colour_conditionals
from pymc_discrete.pymc.model.exact import ExactRatios
from tests.pymc.joint import assert_joint_frequencies_match, enumerate_block
from tests.pymc.test_exact_ratios import _brute_force_structure
from tests.structure_lists import build_structure


def _sample(model, step, draws=1500, tune=200, seed=5):
    with model:
        return pm.sample(draws=draws, tune=tune, chains=2, cores=1, step=[step],
                         random_seed=seed, progressbar=False,
                         compute_convergence_checks=False)


def _pattern_model(n: int = 9) -> pm.Model:
    """A reward for the pattern 1, 0, 1 in consecutive sites: a triple's term changes with
    one site only where the other two have the pattern, so probes miss couplings."""
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.5, shape=n)
        pm.Potential("pattern", 1.7 * pt.eq(x[:-2] - x[1:-1] + x[2:], 2).sum())
    return model


def _probed_only(model: pm.Model) -> ExactRatios:
    """Exact ratios whose colouring uses the probed dependencies alone, which miss some
    of the couplings of :func:`_pattern_model`."""
    value_vars = [model.rvs_to_values[model["x"]]]
    point = model.initial_point()
    shared = make_shared_replacements(point, value_vars, model)
    exact = ExactRatios(model, value_vars, point, shared)
    x0 = np.ravel(point["x"]).astype(np.int64)
    probed = _brute_force_structure(exact, x0)
    graph = exact.structure
    true_terms = [graph.site_terms[graph.site_ptr[i]:graph.site_ptr[i + 1]]
                  for i in range(x0.size)]
    assert sum(len(a) < len(b) for a, b in zip(probed, true_terms, strict=True)) > 0
    exact.setup_report["structure"] = "probes"  # before the structure, which reads it
    exact.structure = build_structure(probed, exact.n_terms)
    assert not exact.layout.value_rows_only
    return exact


def test_a_missed_coupling_is_corrected_not_a_bias():
    model = _pattern_model()
    states, probs = enumerate_block(model, ["x"])
    exact = _probed_only(model)
    graph = ExactRatios(model, [model.rvs_to_values[model["x"]]], model.initial_point(),
                        {}).structure
    terms = [set(graph.site_terms[graph.site_ptr[i]:graph.site_ptr[i + 1]]) for i in range(9)]
    colour = exact.structure.colour
    shared_in_a_colour = [(i, j) for i in range(9) for j in range(i + 1, 9)
                          if colour[i] == colour[j] and terms[i] & terms[j]]
    assert shared_in_a_colour  # the probed colouring puts coupled sites together
    with model:
        step = pmd.BlockedGibbs([model["x"]], exact_ratios=exact)
    assert not step.proven
    idata = _sample(model, step, draws=3000)
    assert_joint_frequencies_match(idata, ["x"], states, probs)
    # the correction is what keeps it exact: some colour draws are rejected
    assert idata.sample_stats["accept"].values.min() < 1.0


def test_without_the_correction_the_probed_colouring_would_be_biased():
    """The same sampler told that the probed colouring is proven: the test above has
    teeth (its frequencies would fail)."""
    model = _pattern_model()
    states, probs = enumerate_block(model, ["x"])
    exact = _probed_only(model)
    with model:
        step = pmd.BlockedGibbs([model["x"]], exact_ratios=exact)
    step.proven = True
    step._rebuild_kernel()
    idata = _sample(model, step, draws=3000)
    with pytest.raises(AssertionError):
        assert_joint_frequencies_match(idata, ["x"], states, probs)


def test_ising_lattice_is_two_colours_and_every_sweep_is_accepted():
    model = ising_model(6)
    with model:
        step = pmd.BlockedGibbs()
    assert step.n_colours == 2 and step.proven
    idata = _sample(model, step, draws=300, tune=50)
    assert (idata.sample_stats["accept"].values == 1.0).all()
    assert (idata.sample_stats["scaling"].values == 2.0).all()
    assert idata.sample_stats["jump_distance"].values.mean() > 3


def test_occupancy_indicators_match_the_summed_out_posterior():
    """Site occupancy (200 sites, 5 visits): psi and p from NUTS, the indicators from
    BlockedGibbs, against the posterior with the indicators summed out."""
    rng = np.random.default_rng(0)
    n_sites, n_visits = 200, 5
    z_true = rng.random(n_sites) < 0.6
    y = ((rng.random((n_sites, n_visits)) < 0.3) & z_true[:, None]).astype(int)
    detected = y.any(axis=1)
    with pm.Model() as model:
        psi = pm.Beta("psi", 1, 1)
        p = pm.Beta("p", 1, 1)
        z = pm.Bernoulli("z", psi, shape=n_sites)
        pm.Bernoulli("y", z[:, None] * p, observed=y)
        step = pmd.BlockedGibbs([z])
    idata = _sample(model, step, draws=1000, tune=500)
    with pm.Model():
        psi = pm.Beta("psi", 1, 1)
        p = pm.Beta("p", 1, 1)
        hits = y.sum(axis=1)
        present = pt.log(psi) + hits * pt.log(p) + (n_visits - hits) * pt.log1p(-p)
        absent = pt.log1p(-psi)
        pm.Potential("y", pt.switch(detected, present,
                                    pt.logaddexp(present, absent)).sum())
        reference = pm.sample(draws=2000, tune=500, chains=2, cores=1, random_seed=1,
                              progressbar=False, compute_convergence_checks=False)
    import arviz as az
    for name in ("psi", "p"):
        got = idata.posterior[name].values.ravel().mean()
        want = reference.posterior[name].values.ravel().mean()
        mcse = np.hypot(float(az.mcse(idata, var_names=[name])[name]),
                        float(az.mcse(reference, var_names=[name])[name]))
        assert abs(got - want) < 4 * mcse, (name, got, want, mcse)
    # every detected site is occupied in every draw
    assert (idata.posterior["z"].values[..., detected] == 1).all()


def test_a_parameter_check_that_fails_in_a_colour_is_corrected():
    """``p = 0.2 + 0.5 z0 + 0.4 z1 + 0.1 z2`` leaves [0, 1] when z0 = z1 = 1, and PyMC's
    check then makes the whole term -inf. The structure is read without the checks (they
    would couple everything), so an evaluation where a check fails is flagged and that
    colour's draw is corrected: the states with z0 = z1 = 1 are never visited and the
    joint distribution is exact."""
    with pm.Model() as model:
        z = pm.Bernoulli("z", 0.5, shape=5, initval=np.zeros(5, dtype=int))
        pm.Bernoulli("y", 0.2 + 0.5 * z[0] + 0.4 * z[1] + 0.1 * z[2], observed=1)
        pm.Potential("pair", 0.6 * z[3] * z[4] - 0.3 * z[2] * z[3])
        step = pmd.BlockedGibbs([z])
    assert step.proven and step._exact.setup_report["structure"] == "graph"
    states, probs = enumerate_block(model, ["z"])
    assert probs[(states[:, 0] == 1) & (states[:, 1] == 1)].sum() == 0.0
    idata = _sample(model, step, draws=3000)
    draws = idata.posterior["z"].values
    assert not ((draws[..., 0] == 1) & (draws[..., 1] == 1)).any()
    assert_joint_frequencies_match(idata, ["z"], states, probs)


def test_a_check_shared_by_the_terms_of_one_colour_keeps_every_state_reachable():
    """One check guards a vector parameter whose elements depend on sites of one colour
    (z0 and z2 share no term): the state moving the whole colour fails the check because
    of z0 alone, which says nothing of z2. The colour's ratios are then taken site by
    site, so z2 = 1 is still proposed, and the joint distribution is exact."""
    with pm.Model() as model:
        z = pm.Bernoulli("z", 0.5, shape=3, initval=np.zeros(3, dtype=int))
        p = pt.stack([0.3 + 0.8 * z[0], 0.3 + 0.5 * z[2]])
        pm.Bernoulli("y", p, observed=np.array([1, 1]))
        pm.Potential("tie", 0.4 * z[1] * z[0] - 0.7 * z[1] * z[2])
        step = pmd.BlockedGibbs([z])
    assert step.proven and step.n_colours == 2  # {z0, z2} and {z1}
    states, probs = enumerate_block(model, ["z"])
    assert probs[states[:, 0] == 1].sum() == 0.0 and probs[states[:, 2] == 1].sum() > 0.3
    idata = _sample(model, step, draws=3000)
    assert_joint_frequencies_match(idata, ["z"], states, probs)


@pytest.mark.parametrize("phrasing", ["ising", "potts", "potts one-hot"])
def test_conditionals_from_the_value_states_alone_are_those_with_x_to_the_bit(phrasing):
    """Under a proven colouring whose checks read no site, a colour's conditionals come
    from its K value states without x itself: the log density and every d(i, v) equal
    those of the 1 + K states, to the bit, at random states."""
    side, k = 6, (2 if phrasing == "ising" else 3)
    with pm.Model():
        if phrasing == "ising":
            x = pm.Bernoulli("x", 0.5, shape=side * side)
            grid = (2 * x - 1).reshape((side, side))
            agree = (grid[1:] * grid[:-1]).sum() + (grid[:, 1:] * grid[:, :-1]).sum()
        else:
            x = pm.Categorical("x", np.ones(k) / k, shape=side * side)
            if phrasing == "potts":
                grid = x.reshape((side, side))
                agree = pt.eq(grid[1:], grid[:-1]).sum() + pt.eq(grid[:, 1:], grid[:, :-1]).sum()
            else:
                one_hot = pt.eye(k)[x].reshape((side, side, k))
                agree = ((one_hot[1:] * one_hot[:-1]).sum()
                         + (one_hot[:, 1:] * one_hot[:, :-1]).sum())
        pm.Potential("lattice", 0.4 * agree + 0.1 * pt.sum(x))
        step = pmd.BlockedGibbs([x])
    exact = step.exact_ratios
    assert exact.layout.value_rows_only and step.proven and step.n_colours == 2
    with_x = exact.layout._replace(value_rows_only=False)
    rng = np.random.default_rng(7)
    for _ in range(5):
        state = rng.integers(0, k, side * side)
        for sites in exact.colour_sites():
            logp, table, held = exact.colour_conditionals(state, sites)
            logp_x, table_x, held_x = colour_conditionals(exact.checked_terms, with_x, state,
                                                          sites)
            assert held and held_x and logp == logp_x
            assert np.array_equal(table, table_x)


def test_a_check_that_reads_the_sites_keeps_x_among_the_evaluated_states():
    """Where a parameter check reads the block's sites, a check that held at the value
    states need not hold at x: x stays among the evaluated states."""
    with pm.Model():
        z = pm.Bernoulli("z", 0.5, shape=3)
        pm.Bernoulli("y", 0.2 + 0.5 * z[0] + 0.4 * z[1], observed=1)
        step = pmd.BlockedGibbs([z])
    assert step.proven and not step.exact_ratios.layout.value_rows_only
    assert step.exact_ratios.layout.rows_per_conditional == 3
