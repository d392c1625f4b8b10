"""proposal="exact": every single-flip log-ratio exactly, at (colours + 1) evaluations of
the model's elementwise terms per draw."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_discrete as pmd
from pymc_discrete.example_models import ising_model
from tests.exact import albp_matrix, all_states, assert_reversible, target_distribution
from tests.structure_lists import greedy_colouring


def _brute_force_ratios(model, step, x, point):
    """Exact log-ratios from the model's own compiled logp, one flip at a time."""
    fn = model.compile_logp()
    name = step.vars[0].name
    shape = point[name].shape

    def logp(z):
        p = dict(point)
        p[name] = z.reshape(shape)
        return fn(p)

    base = logp(x)
    out = []
    for i in range(x.size):
        y = x.copy()
        y[i] = 1 - y[i]
        out.append(logp(y) - base)
    return np.array(out)


@pytest.fixture(scope="module")
def regression_model():
    """Indicators in a Gaussian likelihood with continuous coefficients: gradient ratios
    are first-order only."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 6))
    y = X @ np.array([1.5, 0, -2.0, 0, 0, 1.0]) + rng.normal(0, 0.5, 12)
    with pm.Model() as model:
        g = pm.Bernoulli("g", 0.3, shape=6)
        beta = pm.Normal("beta", 0, 2, shape=6)
        pm.Normal("y", mu=pt.as_tensor(X) @ (g * beta), sigma=0.5, observed=y)
    return model


def test_exact_ratios_match_brute_force_at_random_points(regression_model):
    model = regression_model
    step = pmd.ALBP([model["g"]], model=model, proposal="exact")
    gradient = pmd.ALBP([model["g"]], model=model, proposal="gradient")
    assert step.ratios_are_exact
    rng = np.random.default_rng(2)
    for _ in range(4):
        point = model.initial_point()
        point["beta"] = rng.normal(0, 2, 6)
        point["g"] = rng.integers(0, 2, 6)
        for s in (step, gradient):
            s.shared["beta"].set_value(point["beta"])
        x = point["g"].astype(np.int64)
        truth = _brute_force_ratios(model, step, x, point)
        np.testing.assert_allclose(step._logp_and_ratios(x)[1], truth, rtol=1e-9, atol=1e-9)
        # the gradient estimate misses the quadratic term of the likelihood
        assert not np.allclose(gradient._logp_and_ratios(x)[1], truth, atol=1e-3)
    assert not gradient.ratios_are_exact


def test_ising_needs_few_colours_and_matches_the_gradient_ratios():
    """Multilinear model: the gradient ratios are exact too, and the lattice is coloured
    with a handful of colours (cost independent of N)."""
    model = ising_model(12)
    exact = pmd.ALBP([model["x"]], model=model, proposal="exact")
    gradient = pmd.ALBP([model["x"]], model=model, proposal="gradient")
    assert exact._logp_and_ratios.structure.n_colours <= 5
    assert exact.ratios_are_exact and gradient.ratios_are_exact
    x = np.random.default_rng(3).integers(0, 2, 144)
    np.testing.assert_allclose(exact._logp_and_ratios(x)[1], gradient._logp_and_ratios(x)[1],
                               rtol=1e-9, atol=1e-9)


def test_greedy_colouring_separates_sites_that_share_a_term():
    terms = [np.array([0]), np.array([0, 1]), np.array([1, 2]), np.array([3]), np.array([2])]
    colour, n = greedy_colouring(terms, 4)
    for k in range(4):
        sharing = [i for i, t in enumerate(terms) if k in t]
        assert len({colour[i] for i in sharing}) == len(sharing)
    assert n == 2


@pytest.mark.parametrize("potential,op", [
    (lambda g: pt.switch(pt.eq(g[0] + g[1], 1), 0.8, -0.3) + 0.5 * g[2] * g[0], "eq"),
    (lambda g: 0.9 * pt.mod(g.sum(), 2), "mod"),
])
def test_fallback_to_exact_samples_the_right_marginals(potential, op):
    with pm.Model() as model:
        g = pm.Bernoulli("g", np.array([0.3, 0.6, 0.45]), shape=3)
        pm.Potential("term", potential(g))
    with pytest.warns(pmd.RelaxationWarning, match=op):
        step = pmd.ALBP([g], model=model, proposal="gradient")
    assert step.proposal == "exact" and step.ratios_are_exact
    fn = model.compile_logp()
    states = all_states(3)
    p = np.exp([fn({"g": s}) for s in states])
    truth = (p / p.sum()) @ states
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        idata = pm.sample(step=step, draws=3000, tune=500, chains=2, cores=1, random_seed=5,
                          progressbar=False, compute_convergence_checks=False)
    import arviz as az

    mean = idata.posterior["g"].mean(("chain", "draw")).values
    mcse = az.mcse(idata, var_names=["g"])["g"].values
    assert np.all(np.abs(mean - truth) <= 4 * mcse), (mean, truth, mcse)


def test_albp_with_exact_ratios_is_reversible_on_a_gaussian_target():
    """Transition matrix of ALBP driven by the exact ratios of a target whose gradient
    ratios are inexact (the enumeration takes the ratios as given)."""
    from tests.targets import exact_ratios, gaussian_target

    base = gaussian_target(5, 8)

    def target(x):
        return base(x)[0], exact_ratios(base, x)

    for r in (1, 2, 3):
        for weight in ("barker", "sqrt"):
            assert_reversible(albp_matrix(target, 5, r, weight), target_distribution(target, 5))


def test_fhmm_and_rbm_exact_ratios():
    """The paper's FHMM (sparse: few colours) and an RBM (dense: one colour per site)."""
    from pymc_discrete.example_models import fhmm_model, rbm_model

    fhmm = fhmm_model(40, 3, 1.0, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the FHMM relaxes: no fallback warning
        gradient = pmd.ALBP([fhmm["x"]], model=fhmm, proposal="gradient")
    exact = pmd.ALBP([fhmm["x"]], model=fhmm, proposal="exact")
    assert exact.ratios_are_exact and not gradient.ratios_are_exact
    assert exact._logp_and_ratios.structure.n_colours <= 8  # independent of L
    rng = np.random.default_rng(4)
    W, b, c = rng.normal(0, 1, (8, 5)), rng.normal(0, 1, 8), rng.normal(0, 1, 5)
    rbm = rbm_model(W, b, c)
    exact = pmd.ALBP([rbm["x"]], model=rbm, proposal="exact")
    assert exact.ratios_are_exact
    assert exact._logp_and_ratios.structure.n_colours == 8
    x = rng.integers(0, 2, 8)

    def logp(v):
        v = v.astype(float)
        return b @ v + np.logaddexp(0, c + v @ W).sum()

    flips = [logp(np.where(np.arange(8) == i, 1 - x, x)) - logp(x) for i in range(8)]
    np.testing.assert_allclose(exact._logp_and_ratios(x)[1], flips, rtol=1e-9, atol=1e-9)


# --- set-up: grouped discovery of the term structure (linear in N on sparse models) ----

FAST = {"mode": "FAST_COMPILE"}  # no code generation: these tests are about set-up


def _exact_ratios(model, n_categories=None):
    from pymc.pytensorf import make_shared_replacements

    from pymc_discrete.pymc.model.exact import ExactRatios

    value_vars = [model.rvs_to_values[model["x"]]]
    point = model.initial_point()
    shared = make_shared_replacements(point, value_vars, model)
    exact = ExactRatios(model, value_vars, point, shared, FAST, n_categories=n_categories)
    return exact, np.ravel(point["x"]).astype(np.int64)


def _structure_lists(structure):
    s = structure
    return [s.site_terms[s.site_ptr[i]:s.site_ptr[i + 1]] for i in range(s.site_ptr.size - 1)]


def _brute_force_structure(exact, x0, n_categories=None, seed=0):
    """The original site-by-site probing at the probes set-up uses (the models below have
    no continuous variable, so set-up draws nothing before its probes)."""
    from pymc_discrete.pymc.model.exact import probe_points
    from tests.kernels.test_structure_discovery import brute_force_reference

    probes = probe_points(x0, n_categories, np.random.default_rng(seed))
    shifts = (1,) if n_categories is None else tuple(range(1, int(n_categories.max())))
    return brute_force_reference(exact.batch_terms, probes, n_categories, shifts)


def random_sparse_binary_model(n, seed):
    """Bernoulli priors, couplings of random pairs by index arrays, a lattice by slices,
    a product of three sites, a switch and an inc_subtensor. (No matrix product: a
    batched one may round differently from a single-row one, and then differs from the
    reference in the last bit; see the dense test below.)"""
    rng = np.random.default_rng(seed)
    i, j = rng.integers(0, n, (2, 2 * n))
    keep = i != j
    with pm.Model() as model:
        x = pm.Bernoulli("x", pm.Data("p", rng.uniform(0.2, 0.8, n)), shape=n)
        s = 2.0 * x - 1.0
        pm.Potential("pairs", (rng.normal(size=keep.sum()) * s[i[keep]] * s[j[keep]]).sum())
        grid = s[: (n // 6) * 6].reshape((n // 6, 6))
        pm.Potential("lattice", 0.3 * ((grid[:, 1:] * grid[:, :-1]).sum()
                                       + (grid[1:] * grid[:-1]).sum()))
        pm.Potential("triple", 1.3 * x[0] * x[5] * x[7])
        pm.Potential("switch", pt.switch(pt.eq(x[3] + x[4], 2), 0.7, -0.2))
        pm.Normal("y", mu=x[: n // 2] - 0.5 * x[n // 2 :], sigma=1.0,
                  observed=rng.normal(size=n // 2))
        z = pt.inc_subtensor(pt.zeros(5)[np.array([0, 0, 3])], x[np.array([1, 2, 9])] * 1.0)
        pm.Potential("inc", (z ** 2).sum())
    return model


def random_sparse_categorical_model(n, k, seed):
    """Categorical priors, Potts couplings of random pairs, fields indexed by the value,
    a table of neighbouring values and a Gaussian likelihood with value-dependent means."""
    rng = np.random.default_rng(seed)
    i, j = rng.integers(0, n, (2, 2 * n))
    keep = i != j
    with pm.Model() as model:
        z = pm.Categorical("x", rng.dirichlet(np.ones(k), size=n), shape=n)
        pm.Potential("potts", (0.7 * pt.eq(z[i[keep]], z[j[keep]])).sum())
        pm.Potential("fields", pt.as_tensor(rng.normal(size=(n, k)))[pt.arange(n), z].sum())
        pm.Potential("table", pt.as_tensor(rng.normal(size=(k, k)))[z[:-1], z[1:]].sum())
        pm.Normal("y", mu=pt.as_tensor(rng.normal(size=k))[z], sigma=1.0,
                  observed=rng.normal(size=n))
    return model


@pytest.mark.parametrize("seed", [0, 1])
def test_setup_structure_equals_brute_force_on_random_sparse_binary_models(seed):
    exact, x0 = _exact_ratios(random_sparse_binary_model(36, seed))
    assert exact.setup_report["method"] == "grouped"
    assert exact.setup_report["imprecise_ops"] == []
    truth = _brute_force_structure(exact, x0)
    found = _structure_lists(exact.structure)
    assert all(np.array_equal(a, b) for a, b in zip(found, truth, strict=True))
    assert exact.structure.n_colours == greedy_colouring(truth, exact.n_terms)[1]


def test_setup_structure_equals_brute_force_on_a_random_sparse_categorical_model():
    ks = np.full(30, 3)
    exact, x0 = _exact_ratios(random_sparse_categorical_model(30, 3, 0), ks)
    assert exact.setup_report["method"] == "grouped"
    truth = _brute_force_structure(exact, x0, ks)
    found = _structure_lists(exact.structure)
    assert all(np.array_equal(a, b) for a, b in zip(found, truth, strict=True))


def test_setup_of_a_dense_model_keeps_every_dependency():
    """One Gaussian likelihood term per observation on every indicator (``X @ g``, with
    zeros in X): a group per site (brute-force cost), a superset of the site-by-site
    structure (batched matrix products may differ in the last bit), exact ratios."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(8, 10)) * (rng.random((8, 10)) < 0.6)
    with pm.Model() as model:
        g = pm.Bernoulli("x", 0.3, shape=10)
        pm.Normal("y", mu=pt.as_tensor(X) @ g, sigma=0.5, observed=rng.normal(size=8))
    exact, x0 = _exact_ratios(model)
    assert exact.setup_report["groups"] == 10
    truth = _brute_force_structure(exact, x0)
    found = _structure_lists(exact.structure)
    assert all(set(b) <= set(a) for a, b in zip(found, truth, strict=True))
    assert all(np.flatnonzero(X[:, i]).size <= len(a) - 1 for i, a in enumerate(found))
    fn = model.compile_logp()
    x = rng.integers(0, 2, 10)
    base = fn({"x": x})
    flips = [fn({"x": np.where(np.arange(10) == i, 1 - x, x)}) - base for i in range(10)]
    np.testing.assert_allclose(exact(x)[1], flips, rtol=1e-9, atol=1e-9)


def test_dependency_superset_is_sound_at_random_states():
    """Every term that changes when one site moves, at random states (not only the
    probes), is listed for that site, including ops without a precise rule."""
    from pymc.pytensorf import join_nonshared_inputs, make_shared_replacements
    from pytensor.graph.traversal import variable_depends_on

    from pymc_discrete.pymc.model.dependencies import dependency_superset
    from pymc_discrete.pymc.model.terms import split_into_pieces

    rng = np.random.default_rng(0)
    n = 12
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.4, shape=n)
        w = pm.Normal("w", 0.0, 1.0)
        z = pt.set_subtensor(pt.zeros(8)[2:6], x[4:8] * 2.0)
        pm.Potential("set", (z ** 2).sum())
        pm.Potential("join", pt.concatenate([x[:3], x[-3:]]) * pt.stack([x[6], x[7], x[8],
                                                                        x[9], x[10], x[11]]))
        pm.Potential("cumsum", w * pt.cumsum(x[:5]))
        pm.Potential("max", pt.max(x.reshape((3, 4)), axis=1) + pt.argmax(x.reshape((4, 3)), 0).sum())
        pm.Potential("mean", (x[6:10] - x[6:10].mean()) ** 2)
        pm.Potential("dot", pt.dot(x.reshape((3, 4)), rng.normal(size=(4, 2))) * w)
        pm.Potential("by_w", x[pt.cast(pt.abs(w) < 10, "int64")] * 0.5)
    value_vars = [model.rvs_to_values[model["x"]]]
    point = model.initial_point()
    shared = make_shared_replacements(point, value_vars, model)
    terms = model.logp(vars=model.free_RVs + model.potentials, sum=False)
    pieces = [p for t in terms if variable_depends_on(t, value_vars)
              for p in split_into_pieces(t, value_vars) if variable_depends_on(p, value_vars)]
    vector = pt.concatenate([pt.cast(p, "float64").ravel() for p in pieces])
    [vector], joined = join_nonshared_inputs(point, [vector], value_vars, shared)
    report = {}
    superset = dependency_superset(vector, joined, np.zeros(n, np.int64),
                                   varying=list(shared.values()), report=report)
    assert "Cumsum{axis=0}" in report["imprecise_ops"]
    _assert_superset_sound(superset, joined, vector, shared, n, rng, 8)
    # indexing by another variable is not taken as fixed: "by_w" may read any site
    allowed = [set(superset.term_sites[superset.term_ptr[k]:superset.term_ptr[k + 1]])
               for k in range(superset.term_ptr.size - 1)]
    assert len(allowed[-1]) == n


def _assert_superset_sound(superset, joined, vector, shared, n, rng, trials,
                           categories: int = 2) -> None:
    """Every term that changes when one site moves, at random states and random values of
    the other variables, is listed for that site."""
    import pytensor

    fn = pytensor.function([joined], vector, mode="FAST_COMPILE")
    allowed = [set(superset.term_sites[superset.term_ptr[k]:superset.term_ptr[k + 1]])
               for k in range(superset.term_ptr.size - 1)]
    seen = 0
    for trial in range(trials):
        for s in shared.values():
            value = s.get_value()
            s.set_value(np.asarray(rng.normal(size=np.shape(value)), dtype=value.dtype))
        state = rng.integers(0, categories, n)
        base = fn(state)
        for i in range(n):
            for shift in range(1, categories):
                other = state.copy()
                other[i] = (other[i] + shift) % categories
                for k in np.flatnonzero(fn(other) != base):
                    seen += 1
                    assert i in allowed[k], (trial, i, k)
    assert seen > 100


def test_a_gather_with_varying_indices_reads_only_the_rows_it_can_reach():
    """``rows[arange, z[1:]]`` with ``rows = table[z[:-1]]`` (a Markov chain's transition
    probabilities written as a Categorical's rows): term t may read every column of row
    t, so it depends on sites t and t + 1 alone (2 colours, not one per site); the
    superset is sound at random states, with a varying index on the first axis and a
    fixed one on the second too."""
    from pymc.pytensorf import join_nonshared_inputs, make_shared_replacements
    from pytensor.graph.traversal import variable_depends_on

    from pymc_discrete.pymc.model.dependencies import dependency_superset
    from pymc_discrete.pymc.model.terms import split_into_pieces

    n, k = 10, 3
    rng = np.random.default_rng(1)
    table = rng.dirichlet(np.ones(k), size=k)
    with pm.Model() as model:
        z = pm.Categorical("z", np.ones(k) / k, shape=n)
        w = pm.Normal("w", 0.0, 1.0, shape=k)
        rows = pt.as_tensor(table)[z[:-1]] * pt.exp(w)
        pm.Potential("chain", pt.log(rows[pt.arange(n - 1), z[1:]]))
        cube = pt.exp(w)[None, :, None] * pt.ones((4, k, 2))
        pm.Potential("fixed_first", cube[pt.as_tensor([0, 3, 1]), z[:3]].sum(axis=-1) * z[4])
    value_vars = [model.rvs_to_values[z]]
    point = model.initial_point()
    shared = make_shared_replacements(point, value_vars, model)
    terms = model.logp(vars=model.potentials, sum=False)
    pieces = [p for t in terms for p in split_into_pieces(t, value_vars)
              if variable_depends_on(p, value_vars)]
    vector = pt.concatenate([pt.cast(p, "float64").ravel() for p in pieces])
    [vector], joined = join_nonshared_inputs(point, [vector], value_vars, shared)
    superset = dependency_superset(vector, joined, np.zeros(n, np.int64),
                                   varying=list(shared.values()))
    allowed = [sorted(superset.term_sites[superset.term_ptr[t]:superset.term_ptr[t + 1]])
               for t in range(superset.term_ptr.size - 1)]
    assert allowed[: n - 1] == [[t, t + 1] for t in range(n - 1)]
    assert allowed[n - 1:] == [[0, 4], [1, 4], [2, 4]]
    _assert_superset_sound(superset, joined, vector, shared, n, rng, 6, categories=k)


@pytest.mark.parametrize("side", [10, 40])
def test_setup_rows_do_not_grow_with_the_lattice(side):
    """Batched term evaluations at set-up: (colours + 1) per probe plus a fixed number of
    checks on 100 and on 1600 sites (site by site it was N + 1 per probe)."""
    exact, _ = _exact_ratios(ising_model(side))
    report = exact.setup_report
    assert report["method"] == "grouped" and report["groups"] == 2
    # per probe: the probe and the 2 colours in one call, then the checked sites with
    # the probe again as the base of their call
    assert report["rows"] == 6 * 4 + report["checks"] <= 75


@pytest.mark.parametrize("max_pairs", [100, 40, 10])
def test_setup_falls_back_term_by_term_when_the_analysis_gives_up(monkeypatch, max_pairs):
    """The whole term vector has too many possible dependencies to hold (166 in its
    last join): each piece is read on its own, and only the pieces that still cannot be
    are probed site by site (none of them with a budget of 100, some with 40, every one
    with 10); the structure found is the same."""
    from pymc_discrete.pymc.model import dependencies

    model = random_sparse_binary_model(18, 2)
    grouped, x0 = _exact_ratios(model)
    monkeypatch.setattr(dependencies, "MAX_DEPENDENCY_PAIRS", max_pairs)
    fallback, _ = _exact_ratios(model)
    report = fallback.setup_report
    assert f"more than {max_pairs}" in report["fallback"]
    if max_pairs == 100:
        assert report["method"] == "grouped" and report["rows_unread"] == 0
        assert "every piece was read on its own" in report["fallback"]
    elif max_pairs == 40:
        assert report["method"] == "grouped, and site by site for the terms not read"
        assert "34 of 95 terms are probed" in report["fallback"]
        assert report["rows_unread"] == 6 * 19  # 6 probe points, N + 1 states each
    else:
        assert report["method"] == "site by site"
    for a, b in zip(_structure_lists(grouped.structure), _structure_lists(fallback.structure),
                    strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_piece_the_graph_cannot_read_is_probed_on_its_own(monkeypatch):
    """An Ising lattice with a Potential of the smaller of each pair of horizontal
    neighbours written with ``pt.sort``, whose reading fails (simulated): the lattice's
    terms keep their graph dependencies and two colours, the sort's terms are probed site
    by site with a function of their own, so the whole model is evaluated at a number of
    states that does not grow with the lattice; every dependency the probes see is
    listed, and the ratios are those of the model read whole."""
    from pytensor.tensor.sort import SortOp

    from pymc_discrete.pymc.model import dependencies

    def model_with_sort(side):
        model = ising_model(side)
        with model:
            x = model["x"]
            pairs = pt.sort(x.reshape((side * side // 2, 2)), axis=1)
            pm.Potential("smaller", 0.3 * pairs[:, 0])
        return model

    side = 8
    read, x0 = _exact_ratios(model_with_sort(side))
    # read whole, the sort has no precise rule and makes its rows dense: those rows are
    # taken from the probes, the lattice's from the graph (not the whole block's from
    # the probes, as when one coarse piece made the block's colouring coarse)
    assert read.setup_report["method"] == "grouped"
    assert read.setup_report["structure"] == "graph and probes"
    real_rule = dependencies._rule

    def rule(g, node, in_deps):
        if isinstance(node.op, SortOp):
            raise dependencies.Unanalysable("no rule for a sort (simulated)")
        return real_rule(g, node, in_deps)

    monkeypatch.setattr(dependencies, "_rule", rule)
    probed, _ = _exact_ratios(model_with_sort(side))
    report = probed.setup_report
    assert report["method"] == "grouped, and site by site for the terms not read"
    assert report["structure"] == "graph and probes"
    assert "32 of" in report["fallback"]  # the sort's 32 terms, the others read
    assert probed.structure.n_colours == read.structure.n_colours == 2
    for a, b in zip(_structure_lists(read.structure), _structure_lists(probed.structure),
                    strict=True):
        np.testing.assert_array_equal(a, b)
    # every dependency the probes see is listed (and more: the graph's, exact at every
    # state, e.g. the prior's terms, constant here)
    truth = _brute_force_structure(probed, x0)
    for seen, listed in zip(truth, _structure_lists(probed.structure), strict=True):
        assert set(seen) <= set(listed)
    x = np.random.default_rng(1).integers(0, 2, x0.size)
    np.testing.assert_allclose(probed(x)[1], read(x)[1], rtol=1e-12, atol=1e-12)
    # the whole model at the grouped probes and checks only, as without the sort; the
    # sort's terms at N + 1 states per probe point, with their own function
    for side_ in (side, 2 * side):
        report = _exact_ratios(model_with_sort(side_))[0].setup_report
        assert report["rows"] <= 75
        assert report["rows_unread"] == 6 * (side_ * side_ + 1)


def test_setup_with_a_wrong_superset_warns_and_probes_site_by_site(monkeypatch, caplog):
    """A bug in the graph analysis (simulated: a dependency dropped) is caught by the
    grouped discovery's checks, and set-up still ends with the right structure."""
    from pymc_discrete.kernels.structure import DependencySuperset
    from pymc_discrete.pymc.model import dependencies

    model = ising_model(6)
    right, x0 = _exact_ratios(model)
    real = dependencies.dependency_superset

    def drop_one(*args, **kwargs):
        s = real(*args, **kwargs)
        lists = [s.term_sites[s.term_ptr[k]:s.term_ptr[k + 1]]
                 for k in range(s.term_ptr.size - 1)]
        lists[-1] = lists[-1][:1]  # the last coupling forgets one of its two sites
        ptr = np.concatenate([[0], np.cumsum([t.size for t in lists])])
        return DependencySuperset(ptr, np.concatenate(lists))

    monkeypatch.setattr(dependencies, "dependency_superset", drop_one)
    with caplog.at_level("WARNING", logger="pymc.pymc_discrete"):
        wrong, _ = _exact_ratios(model)
    assert wrong.setup_report["method"] == "site by site"
    assert wrong.setup_report["structure"] == "probes"  # the wrong superset is not used
    assert any("failed its check" in r.message for r in caplog.records)
    truth = _brute_force_structure(wrong, x0)
    for a, b in zip(truth, _structure_lists(wrong.structure), strict=True):
        np.testing.assert_array_equal(a, b)
    x = np.random.default_rng(0).integers(0, 2, x0.size)
    np.testing.assert_allclose(wrong(x)[1], right(x)[1], rtol=1e-12, atol=1e-12)


def test_slow_setup_says_what_it_is_doing(monkeypatch, caplog):
    """Past PROGRESS_AFTER seconds every stage is logged on a child of PyMC's logger
    (shown by PyMC's own stderr handler when logging is not configured)."""
    from pymc_discrete.pymc.model import setup_progress

    monkeypatch.setattr(setup_progress, "PROGRESS_AFTER", 0.0)
    with caplog.at_level("INFO", logger="pymc"):
        _exact_ratios(ising_model(5))
    messages = [r.getMessage() for r in caplog.records if r.name == "pymc.pymc_discrete"]
    assert any("compiling" in m for m in messages)
    assert any("probing 2 groups" in m for m in messages)
    assert "done in" in messages[-1]
    caplog.clear()
    monkeypatch.setattr(setup_progress, "PROGRESS_AFTER", 1e9)
    with caplog.at_level("INFO", logger="pymc"):
        _exact_ratios(ising_model(5))
    assert not [r for r in caplog.records if r.name == "pymc.pymc_discrete"]


def test_a_dependency_that_shows_at_no_probe_point_is_still_exact():
    """``x_i = 1, x_{i+1} = 0, x_{i+2} = 1`` is rewarded: a triple's term changes only
    where its other two sites have that pattern, so some triples show no dependency at
    any of the six probe points. Colouring by the graph's superset keeps every ratio
    exact anyway (probed dependencies alone put such sites in one colour)."""
    n = 60
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.5, shape=n)
        pm.Potential("pattern", 1.7 * pt.eq(x[:-2] - x[1:-1] + x[2:], 2).sum())
    exact, x0 = _exact_ratios(model)
    assert exact.setup_report["structure"] == "graph"
    probed = _brute_force_structure(exact, x0)
    graph = _structure_lists(exact.structure)
    hidden = sum(len(t) < len(g) for t, g in zip(probed, graph, strict=True))
    assert hidden > 0  # the probes alone would miss some dependencies
    rng = np.random.default_rng(4)
    logp = model.compile_logp()
    for _ in range(20):
        x = rng.integers(0, 2, n)
        base, ratios = exact(x)
        flips = []
        for i in range(n):
            y = x.copy()
            y[i] = 1 - y[i]
            flips.append(logp({"x": y}) - logp({"x": x}))
        np.testing.assert_allclose(ratios, flips, rtol=1e-12, atol=1e-12)


def _check_shared_by_a_colour() -> pm.Model:
    """One check guards a vector parameter whose elements depend on z0 and z2, which share
    no term (one colour): the state flipping the whole colour fails the check because of
    z0 alone (p > 1), which says nothing of z2."""
    with pm.Model() as model:
        z = pm.Bernoulli("z", 0.5, shape=3, initval=np.zeros(3, dtype=int))
        p = pt.stack([0.3 + 0.8 * z[0], 0.3 + 0.5 * z[2]])
        pm.Bernoulli("y", p, observed=np.array([1, 1]))
        pm.Potential("tie", 0.4 * z[1] * z[0] - 0.7 * z[1] * z[2])
    return model


@pytest.mark.parametrize("step", ["albp", "pas", "albp-compiled", "pas-compiled"])
def test_exact_ratios_where_a_check_fails_for_a_colour_keep_every_site_movable(step):
    """Exact ratios read off the colour states gave every site of that colour ratio -inf
    (z2 = 1 was never proposed: a reducible chain that never left z2 = 0). The colour's
    ratios are now taken site by site, in the Python and the compiled paths."""
    from tests.pymc.joint import assert_joint_frequencies_match, enumerate_block

    model = _check_shared_by_a_colour()
    states, probs = enumerate_block(model, ["z"])
    assert probs[states[:, 2] == 1].sum() > 0.3
    cls = pmd.ALBP if step.startswith("albp") else pmd.PAS
    kwargs = {"compiled_loop": True, "steps_per_draw": 2} if step.endswith("compiled") else {}
    with model:
        built = cls([model["z"]], proposal="exact", **kwargs)
        idata = pm.sample(draws=2000, tune=300, chains=2, cores=1, step=[built],
                          random_seed=5, progressbar=False, compute_convergence_checks=False)
    assert_joint_frequencies_match(idata, ["z"], states, probs)


@pytest.mark.parametrize("kind", ["bernoulli", "switch point"])
def test_a_one_site_block_is_not_read_and_its_ratios_are_exact(kind):
    """A block of one site skips the graph reading and the probes (nothing to colour):
    its ratios still equal the model's own log density differences, at every value."""
    years = np.arange(20)
    counts = np.r_[np.full(8, 4), np.full(12, 1)]
    with pm.Model() as model:
        rates = pm.Exponential("rates", 1.0, shape=2)
        if kind == "bernoulli":
            site = pm.Bernoulli("site", 0.4)
            rate = pt.switch(pt.eq(site, 1), rates[0], rates[1])
        else:
            site = pm.DiscreteUniform("site", 0, 19)
            rate = pt.switch(years < site, rates[0], rates[1])
        pm.Poisson("counts", rate, observed=counts)
    step = (pmd.ALBP([site], model=model, proposal="exact") if kind == "bernoulli"
            else pmd.BlockedGibbs([site], model=model))
    exact = step.exact_ratios
    assert exact.setup_report["method"] == "one site" and exact.proven
    assert exact.structure.n_colours == 1
    fn = model.compile_logp()
    point = model.initial_point()
    point["rates_log__"] = np.log([3.5, 1.2])
    for name, s in step.shared.items():
        s.set_value(point[name])
    values = np.arange(2 if kind == "bernoulli" else 20)
    logps = np.array([fn({**point, "site": np.array(v)}) for v in values])
    for v in values:
        logp, ratios = exact(np.array([v]))
        expected = logps - logps[v]
        if kind == "bernoulli":
            np.testing.assert_allclose(ratios, [expected[1 - v]], rtol=1e-10, atol=1e-10)
        else:
            others = values != v
            np.testing.assert_allclose(ratios[0][others], expected[others], rtol=1e-10,
                                       atol=1e-10)
