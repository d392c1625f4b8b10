"""A model written one scalar variable per site is one block for the package: its alike
terms are stacked into the vectorised phrasing's few, it gets the vectorised phrasing's
step and colours, its exact ratios are single-site changes of its log density, and its
joint distribution is sampled right."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest
from pymc.pytensorf import make_shared_replacements
from scipy.special import logsumexp

import pymc_discrete as pmd
from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.model.terms import read_block_pieces
from pymc_discrete.pymc.model.validation import check_discrete_block
from tests.pymc.joint import assert_joint_frequencies_match, enumerate_block
from tests.pymc.per_variable import per_variable, site_names, vectorised

KINDS = ["hmm", "mixture", "occupancy", "lattice"]


def _size(kind: str, large: bool) -> int:
    """Sites of a test model: a lattice's side, else its length."""
    if kind == "lattice":
        return 6 if large else 3
    return 30 if large else 5


def _block(model):
    return [model.rvs_to_values[model[name]] for name in site_names(model)]


@pytest.mark.parametrize("kind", KINDS)
def test_alike_terms_are_stacked_whatever_the_number_of_sites(kind):
    """The pieces of a per-variable model are as few as a vectorised model's, and as
    many at 30 sites as at 10: set-up does not grow a graph per variable."""
    counts = {}
    for n in ((3, 6) if kind == "lattice" else (10, 30)):
        model = per_variable(kind, n)
        read = read_block_pieces(model, _block(model))
        counts[n] = len(read.pieces)
        # every original term is in exactly one stacked piece
        sources = [name for names in read.sources for name in names]
        assert len(sources) == len(set(sources))
    assert len(set(counts.values())) == 1 and max(counts.values()) <= 4, counts


@pytest.mark.parametrize("kind", KINDS)
def test_a_vectorised_model_is_left_as_it_is(kind):
    model = vectorised(kind, _size(kind, large=True))
    read = read_block_pieces(model, _block(model))
    assert all(len(names) == 1 for names in read.sources)


@pytest.mark.parametrize("kind", KINDS)
def test_per_variable_gets_the_vectorised_step_and_colours(kind):
    n = _size(kind, large=True)
    choices = []
    for build in (per_variable, vectorised):
        model = build(kind, n)
        choice = pmd.recommend([model[name] for name in site_names(model)], model=model)
        assert choice.exact_ratios.proven
        choices.append((choice.step.__name__, choice.n_colours))
    assert choices[0] == choices[1], choices


@pytest.mark.parametrize("kind", KINDS)
def test_exact_ratios_are_single_site_changes_of_the_log_density(kind):
    model = per_variable(kind, 4 if kind == "lattice" else 8)
    names = site_names(model)
    block = _block(model)
    point = model.initial_point()
    support = check_discrete_block(model, block, "test", point)
    exact = ExactRatios(model, block, point, make_shared_replacements(point, block, model),
                        n_categories=None if support.is_binary else support.n_values)
    logp = model.compile_logp()
    ks = support.n_values
    x = np.random.default_rng(5).integers(0, ks)
    if kind == "occupancy":  # a site with a detection is occupied
        detected = [model.rvs_to_values[model[f"y_{i}"]].data.any() for i in range(x.size)]
        x = np.maximum(x, detected)
    _, ratios = exact(x)
    table = ratios[:, None] if support.is_binary else ratios

    def at(state):
        return logp({**point, **{name: np.int64(v) for name, v in zip(names, state)}})

    base = at(x)
    for i in range(x.size):
        for v in range(int(ks[i])):
            if v == x[i]:
                continue
            y = x.copy()
            y[i] = v
            column = 0 if support.is_binary else v
            assert table[i, column] == pytest.approx(at(y) - base, abs=1e-9), (i, v)


@pytest.mark.parametrize("kind", KINDS)
def test_register_samples_the_joint_distribution_of_a_per_variable_model(kind, registered):
    """register() + pm.sample() on a small per-variable model whose discrete sites are its
    only free variables: the joint frequencies of all its states (243 to 512), per
    chain, within 4 MCSE of enumeration."""
    import pymc as pm

    model = per_variable(kind, _size(kind, large=False), continuous=False)
    names = site_names(model)
    states, probs = enumerate_block(model, names)
    with model:
        idata = pm.sample(draws=3000, tune=300, chains=2, cores=1, random_seed=7,
                          progressbar=False, compute_convergence_checks=False)
    assert_joint_frequencies_match(idata, names, states, probs)


def _misc_model():
    """Transformed, mixture, CustomDist, Potential and missing-data terms."""
    import pymc as pm

    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(3))
        mu = pm.Normal("mu", 0, 1, shape=3)
        pm.NormalMixture("y", w, mu, sigma=1.0, observed=np.array([0.1, 1.0]))
        u = pm.Uniform("u", -1, pm.math.exp(mu[0]) + 1)
        pm.CustomDist("c", u, logp=lambda v, u: -(v - u) ** 2, observed=np.ones(2))
        pm.Potential("pot", -u ** 2)
        pm.Normal("missing", u, 1.0, observed=np.array([0.1, np.nan]))  # two variables
    return model


@pytest.mark.parametrize("kind", KINDS + ["misc"])
def test_terms_built_one_variable_at_a_time_are_pymcs(kind):
    """local_model_terms gives model.logp's terms, to the bit, at several points."""
    import pytensor

    from pymc_discrete.pymc.model.local_terms import local_model_terms

    models = [_misc_model()] if kind == "misc" else [per_variable(kind, 4), vectorised(kind, 4)]
    for model in models:
        rvs = model.free_RVs + model.observed_RVs + model.potentials
        ours = local_model_terms(model, rvs)
        theirs = model.logp(vars=rvs, sum=False)
        fn = pytensor.function(model.value_vars, [*ours, *theirs], on_unused_input="ignore")
        point = model.initial_point()
        rng = np.random.default_rng(0)
        for _ in range(3):
            values = [point[v.name] if v.dtype.startswith("int")
                      else point[v.name] + rng.normal(scale=0.3, size=np.shape(point[v.name]))
                      for v in model.value_vars]
            out = fn(*values)
            for a, b in zip(out[:len(rvs)], out[len(rvs):], strict=True):
                assert np.array_equal(a, b), kind
            point = {v.name: rng.integers(0, 2, np.shape(point[v.name])).astype(v.dtype)
                     if v.dtype.startswith("int") else point[v.name] for v in model.value_vars}


def test_data_with_missing_values_falls_back_to_pymcs_terms():
    import pymc as pm

    from pymc_discrete.pymc.model.local_terms import local_model_terms
    from pymc_discrete.pymc.model.terms import model_terms

    with pm.Model() as model:  # a mixture's missing values: one node, two outputs
        mu = pm.Normal("mu", 0, 1, shape=2)
        pm.NormalMixture("y", np.array([0.3, 0.7]), mu, sigma=1.0,
                         observed=np.array([0.1, np.nan]))
    rvs = model.free_RVs + model.observed_RVs
    with pytest.raises(NotImplementedError, match="valued together"):
        local_model_terms(model, rvs)
    assert len(model_terms(model)[1]) == len(rvs)


@pytest.mark.parametrize("kind", ["hmm", "occupancy"])
def test_stacked_log_density_is_the_models(kind):
    import pytensor

    from pymc_discrete.pymc.model.terms import stacked_model_logp

    model = per_variable(kind, 12)
    stacked = stacked_model_logp(model, _block(model))
    fn = pytensor.function(model.value_vars, [stacked, model.logp()])
    point = model.initial_point()
    ours, theirs = fn(*[point[v.name] for v in model.value_vars])
    assert ours == pytest.approx(theirs, rel=1e-12)
    assert stacked_model_logp(vectorised(kind, 12), _block(vectorised(kind, 12))) is None


@pytest.mark.parametrize("kind", ["hmm", "occupancy"])
def test_stacked_nuts_density_is_the_models_at_every_draw(kind):
    """The NUTS of a per-variable model evaluates the terms of the discrete sites alone
    once a draw (a shared scalar the density adds): its log density and gradient equal
    the model's at points where the sites and the continuous values change."""
    import pymc as pm

    from pymc_discrete.pymc.choosing.stacked_nuts import stacked_nuts

    model = per_variable(kind, 6)
    block = _block(model)
    continuous = [v for v in model.value_vars if v not in block]
    start = model.initial_point()
    nuts = stacked_nuts(model, continuous, block, start, {}, {})
    # a chain has terms of its sites alone (its transitions); occupancy none (psi)
    assert (nuts.fixed_function is not None) == (kind == "hmm")
    logp = model.compile_logp()
    dlogp = model.compile_dlogp(vars=[model.values_to_rvs[v] for v in continuous])
    rng = np.random.default_rng(2)
    for _ in range(3):
        point = {**start, **{v.name: start[v.name] + rng.normal(0, 0.3, np.shape(start[v.name]))
                             for v in continuous}}
        for i, v in enumerate(block):  # any state of a chain, a site detected occupied
            data = model.rvs_to_values[model[f"y_{i}"]].data
            value = rng.integers(0, 3) if kind == "hmm" else max(rng.integers(0, 2),
                                                                 int(np.any(data)))
            point[v.name] = np.asarray(value, dtype=start[v.name].dtype)
        with model:
            nuts.step(point)  # sets the sites and the discrete-only sum
        q = pm.blocking.DictToArrayBijection.map({v.name: point[v.name] for v in continuous})
        function = nuts._logp_dlogp_func
        function.set_extra_values({v.name: point[v.name] for v in function._extra_vars})
        ours, gradient = function(q)
        assert ours == pytest.approx(logp(point), abs=1e-10, rel=1e-12)
        np.testing.assert_allclose(gradient, dlogp(point), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kind", KINDS)
def test_the_assignment_is_pymcs(kind, registered):
    """register()'s linear-time assignment gives PyMC's own assignment, variable for
    variable."""
    from pymc.sampling import mcmc

    from pymc_discrete.pymc.choosing import register as registry

    model = per_variable(kind, 3 if kind == "lattice" else 6)
    with model:
        ours = mcmc.assign_step_methods(model, None)
        theirs = registry._pymc_assign(model, None)
    assert ours[0] == theirs[0] and list(ours[1]) == list(theirs[1])
    assert {k: [v.name for v in vs] for k, vs in ours[1].items()} == \
        {k: [v.name for v in vs] for k, vs in theirs[1].items()}


@pytest.mark.parametrize("kind", ["hmm", "occupancy"])
def test_per_variable_posterior_matches_the_vectorised(kind, registered):
    """register() + pm.sample() on the per-variable and the vectorised phrasing: every
    continuous mean within 4 combined MCSE (the per-variable one's NUTS runs on the
    stacked log density)."""
    import arviz as az
    import pymc as pm

    summaries = []
    for build in (per_variable, vectorised):
        with build(kind, 30):
            idata = pm.sample(draws=1000, tune=500, chains=2, cores=1, random_seed=11,
                              progressbar=False, compute_convergence_checks=False)
        names = ["mu", "sigma"] if kind == "hmm" else ["psi", "p"]
        summaries.append(az.summary(idata, var_names=names, kind="all"))
    ours, theirs = summaries
    limit = 4 * np.sqrt(ours["mcse_mean"] ** 2 + theirs["mcse_mean"] ** 2)
    assert (np.abs(ours["mean"] - theirs["mean"]) <= limit).all(), (ours, theirs)


@pytest.mark.parametrize("kind", ["hmm", "mixture", "occupancy"])
def test_summed_out_per_variable_model_equals_the_enumerated_sum(kind):
    """``pmd.marginalize`` on a model written one variable per site: its density equals
    log-sum-exp over every joint state of the original model, at random points, to 1e-9.
    The sums are built on PyMC's copy of the model, which lists its variables in another
    order: an occupancy site never detected, summed over a state where the others sit
    at their fallback value, once read another site's terms."""
    n = 6 if kind == "occupancy" else 4
    model = per_variable(kind, n)
    summed = pmd.marginalize(model)
    original, marginal = model.compile_logp(), summed.compile_logp()
    names = site_names(model)
    states = list(itertools.product(range(2 if kind == "occupancy" else 3), repeat=n))
    rng = np.random.default_rng(4)
    start = summed.initial_point()
    for _ in range(3):
        point = {k: v + rng.normal(0.0, 0.5, np.shape(v)) for k, v in start.items()}
        exact = logsumexp([original({**point, **dict(zip(names, state))})
                           for state in states])
        assert marginal(point) == pytest.approx(exact, abs=1e-9, rel=1e-12)


def test_joined_block_inputs_are_pymcs():
    """``join_block_inputs`` gives the joined vector PyMC's ``join_nonshared_inputs``
    gives (its type) and the same values of every output, a scalar read as one element
    instead of a reshaped slice."""
    import pytensor
    import pytensor.tensor as pt
    from pymc.pytensorf import join_nonshared_inputs

    from pymc_discrete.pymc.model.stacking import join_block_inputs

    a, b = pt.lscalar("a"), pt.bvector("b")
    c, d = pt.dmatrix("c"), pt.lscalar("d")
    point = {"a": np.array(2), "b": np.array([1, 0, 1], np.int8),
             "c": np.zeros((2, 2)), "d": np.array(5)}
    outputs = [a * b.sum() + c.sum() + d, (b * d).astype("float64") + a]
    s = pytensor.shared(np.float64(1.5))
    for inputs, shared in (([a, b, c, d], {}), ([a, d], {c: s * pt.ones((2, 2))}),
                           ([a, d], None)):
        mine, joined = join_block_inputs(point, outputs, inputs, shared)
        theirs, joined_pymc = join_nonshared_inputs(point, outputs, inputs, shared)
        assert joined.type == joined_pymc.type
        sizes = [np.size(point[v.name]) for v in inputs]
        x = np.arange(1, sum(sizes) + 1).astype(joined.type.dtype)
        rest = [v for v in (a, b, c, d) if v not in inputs and v not in (shared or {})]
        values = [x, *[point[v.name] for v in rest]]
        for m, t in zip(mine, theirs, strict=True):
            ours = pytensor.function([joined, *rest], m, on_unused_input="ignore")
            pymcs = pytensor.function([joined_pymc, *rest], t, on_unused_input="ignore")
            np.testing.assert_array_equal(ours(*values), pymcs(*values))


@pytest.mark.parametrize("kind", ["hmm"])
def test_scalar_sites_are_mapped_as_pymc_maps_them(kind, registered, monkeypatch):
    """The steps read and write a per-variable block in one pass
    (:class:`~pymc_discrete.pymc.steps.scalar_point.ScalarSitesMapping`): the same draws,
    to the bit, as with PyMC's own mappings, and the same dtypes and shapes."""
    import pymc as pm

    from pymc_discrete.pymc.steps import scalar_point
    from pymc_discrete.pymc.steps.scalar_point import ScalarSitesMapping

    layouts = []

    def recorded(point, names):
        layouts.append(scalar_layout(point, names))
        return layouts[-1]

    scalar_layout = scalar_point.scalar_layout
    monkeypatch.setattr(scalar_point, "scalar_layout", recorded)

    def run():
        with per_variable(kind, 8):
            return pm.sample(draws=40, tune=40, chains=1, cores=1, random_seed=5,
                             progressbar=False, compute_convergence_checks=False)

    fast = run()
    assert any(layout is not None for layout in layouts)  # the one-pass mapping ran
    monkeypatch.setattr(ScalarSitesMapping, "_scalar_sites", False)
    pymcs = run()
    for name in fast.posterior.data_vars:
        np.testing.assert_array_equal(fast.posterior[name].values,
                                      pymcs.posterior[name].values)
        assert fast.posterior[name].dtype == pymcs.posterior[name].dtype


def test_scalar_sites_are_written_as_shared_read_only_values():
    """A step over scalar sites writes each site as the read-only 0-d array of its value,
    one per value: the dtype and shape PyMC's mapping gives, equal values shared, and an
    attempt to change one in place raises instead of changing every site of that
    value."""
    model = per_variable("hmm", 8, continuous=False)
    sites = [model[f"z_{t}"] for t in range(8)]
    with model:
        step = pmd.ChainGibbs(sites)
    point = model.initial_point()
    step.setup_chain(np.random.default_rng(1), tune=0, draws=5)
    for _ in range(5):
        point, _ = step.step(point)
    values = [point[f"z_{t}"] for t in range(8)]
    for value in values:
        assert isinstance(value, np.ndarray) and value.shape == () and value.dtype == np.int64
        assert not value.flags.writeable
    by_value = {int(v): v for v in values}
    assert all(v is by_value[int(v)] for v in values)
    with pytest.raises(ValueError, match="read-only"):
        values[0][...] = 1
    # pickled (pm.sample(cores=2)), the shared values are made again, read-only
    arrays = pickle.loads(pickle.dumps(step._scalar_sites[2]))
    assert len(arrays) == 0 and not arrays[1].flags.writeable and arrays[1].dtype == np.int64


def _logp_with_value(model, name: str, value: np.ndarray):
    """The model's log density with the observed ``name`` at ``value`` instead of its
    data, compiled as a function of a point."""
    import pymc as pm

    others = [v for v in [*model.free_RVs, *model.observed_RVs] if v.name != name]
    total = model.logp(vars=others) + pm.logp(model[name], value).sum()
    total = model.replace_rvs_by_values([total])[0]
    return model.compile_fn(total, inputs=model.value_vars, on_unused_input="ignore")


def test_summed_out_readers_share_one_graph_and_read_their_value_or_refuse():
    """On a per-variable occupancy model summed out, the observed variables' log
    densities read one graph of the sums (the graph grows by a few nodes a site, where a
    copy of the sums for every reader grew it by the whole sums), and a reader's density
    at another value than its data is exact or refused, never the density at the data."""
    from pytensor.graph.traversal import applys_between

    def nodes(n):
        summed = pmd.marginalize(per_variable("occupancy", n))
        logp = summed.logp()
        return len(list(applys_between(summed.value_vars, [logp])))

    small, large = nodes(6), nodes(16)
    assert large - small <= 10 * 12, (small, large)  # a dozen nodes a site at most

    # a reader's density at another value than its data: exact where the sums read the
    # data (a mixture of continuous data), refused where the data is folded into them
    # (terms alike across sites, data stacked across variables)
    import pymc as pm

    n = 5
    for model in (per_variable("occupancy", n), vectorised("occupancy", n)):
        summed = pmd.marginalize(model)
        reader = summed.observed_RVs[-1]
        with pytest.raises(NotImplementedError, match="defined at the observed data only"):
            pm.logp(reader, 1 - np.asarray(summed.rvs_to_values[reader].data))
    model = vectorised("mixture", n)
    summed = pmd.marginalize(model)
    names = site_names(model)
    value = np.asarray(model.rvs_to_values[model["y"]].data) + 0.3
    original, marginal = (_logp_with_value(m, "y", value) for m in (model, summed))
    point = {k: v + 0.3 for k, v in summed.initial_point().items()}
    states = itertools.product(range(3), repeat=n)
    exact = logsumexp([original({**point, names[0]: np.array(state)}) for state in states])
    assert marginal(point) == pytest.approx(exact, abs=1e-9, rel=1e-12)


def test_the_initial_point_is_compiled_once_with_the_same_draws(registered, monkeypatch):
    """A registered ``pm.sample`` compiles the model's plain initial-point function once
    (the package's reading and PyMC's chains share it, compiled without rewrites), and
    draws exactly what it draws when each compiles PyMC's own."""
    import contextlib

    import pymc as pm
    from pymc.model import core

    from pymc_discrete.pymc.choosing import initial_points, summed_route

    compiled = []
    pymcs, ours = core.make_initial_point_fn, initial_points.plain_initial_point_function

    def counted(kind, make):
        def compile_counted(*args, **kwargs):
            compiled.append(kind)
            return make(*args, **kwargs)
        return compile_counted

    monkeypatch.setattr(core, "make_initial_point_fn", counted("pymc", pymcs))
    monkeypatch.setattr(initial_points, "plain_initial_point_function", counted("ours", ours))

    def run():
        with per_variable("hmm", 8):
            return pm.sample(draws=30, tune=30, chains=2, cores=1, random_seed=5,
                             progressbar=False, compute_convergence_checks=False)

    shared = run()
    assert compiled == ["ours"]
    monkeypatch.setattr(summed_route, "one_initial_point_function",
                        lambda model: contextlib.nullcontext())
    compiled.clear()
    apart = run()
    # each reader compiles PyMC's own: the package's reading, the chains, the trace
    assert "ours" not in compiled and len(compiled) >= 2
    for name in shared.posterior.data_vars:
        np.testing.assert_array_equal(shared.posterior[name].values,
                                      apart.posterior[name].values)


def test_messages_name_a_large_block_by_its_first_and_last_variables():
    from pymc_discrete.pymc.model.setup_progress import listed

    assert listed(["a", "b"]) == "a, b"
    names = [f"z_{t}" for t in range(300)]
    assert listed(names) == "z_0, z_1, z_2, ..., z_299 (300 variables)"


def test_a_block_that_holds_part_of_an_alike_group_stacks_only_its_own():
    """Two chains written alike in one loop share one derivation of their terms; a block
    of one chain stacks that chain's terms, and the other chain's, which read none of its
    sites, are the rest: pieces plus rest are the model's log density at random points,
    and the pieces read only the block's variables' terms."""
    import pymc as pm
    import pytensor
    import pytensor.tensor as pt

    from pymc_discrete.pymc.model.terms import stacked_model_logp

    rng = np.random.default_rng(7)
    transitions = pt.as_tensor(np.array([[0.8, 0.2], [0.3, 0.7]]))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0, shape=2)
        for chain in "ab":
            z = pm.Bernoulli(f"{chain}_0", 0.5)
            pm.Normal(f"y{chain}_0", mu[z], 1.0, observed=rng.normal())
            for t in range(1, 6):
                z = pm.Categorical(f"{chain}_{t}", p=transitions[z])
                pm.Normal(f"y{chain}_{t}", mu[z], 1.0, observed=rng.normal())
    block = [model.rvs_to_values[model[f"a_{t}"]] for t in range(6)]
    read = read_block_pieces(model, block)
    sources = {name for names in read.sources for name in names}
    assert sources <= {f"a_{t}" for t in range(6)} | {f"ya_{t}" for t in range(6)}
    assert any(len(names) > 1 for names in read.sources)  # the chain's terms stacked
    total = pt.add(*[p.sum() for p in read.pieces]) + read.rest
    whole = stacked_model_logp(model, list(model.discrete_value_vars))
    fn = pytensor.function(model.value_vars, [total, whole, model.logp()])
    for _ in range(5):
        point = {v.name: (rng.integers(0, 2, size=()) if v.type.dtype.startswith("int")
                          else rng.normal(size=v.type.shape)).astype(v.type.dtype)
                 for v in model.value_vars}
        ours, stacked, theirs = fn(*[point[v.name] for v in model.value_vars])
        assert ours == pytest.approx(theirs, rel=1e-12)
        assert stacked == pytest.approx(theirs, rel=1e-12)
