"""A model written one scalar variable per site is one block for the package: its alike
terms are stacked into the vectorised phrasing's few, it gets the vectorised phrasing's
step and colours, its exact ratios are single-site changes of its log density, and its
joint distribution is sampled right."""

from __future__ import annotations

import numpy as np
import pytest
from pymc.pytensorf import make_shared_replacements

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
