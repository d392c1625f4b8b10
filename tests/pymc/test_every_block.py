"""Every step is correct on every block: joint distributions of blocks with pinned and
free sites, values of probability zero in every proposal mode, and random small blocks,
all through ``pm.sample`` against enumeration of the model's own log density."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_discrete as pmd
from tests.pymc.joint import assert_joint_frequencies_match, draws_of, enumerate_block

#: every step and proposal mode a block can be sampled with
STEPS = {
    "albp": lambda v: pmd.ALBP(v),
    "albp-sqrt": lambda v: pmd.ALBP(v, weight="sqrt"),
    "albp-exact": lambda v: pmd.ALBP(v, proposal="exact"),
    "pas": lambda v: pmd.PAS(v),
    "pas-exact": lambda v: pmd.PAS(v, proposal="exact"),
    "arwm": lambda v: pmd.ARWM(v),
    "gibbs": lambda v: pmd.BlockedGibbs(v),
}


def _sample(model, step, draws=1500, tune=300, seed=7, **kwargs):
    with model:
        return pm.sample(
            draws=draws, tune=tune, chains=2, cores=1, step=step, random_seed=seed,
            progressbar=False, compute_convergence_checks=False, **kwargs,
        )


def _pinned_binary(n_pinned: int, n_free: int, coupling: float) -> pm.Model:
    """Free sites among sites pinned at 0 by p = 1e-9 (the block a fixed number of
    changes made reducible: R = 2 flipped both free sites of 8 + 2 in every move)."""
    p = np.r_[np.full(n_pinned, 1e-9), np.linspace(0.35, 0.6, n_free)]
    with pm.Model() as model:
        b = pm.Bernoulli("b", p, shape=n_pinned + n_free)
        free = b[n_pinned:]
        pm.Potential("coupling", coupling * (free[1:] * free[:-1]).sum())
    return model


def _pinned_categorical() -> pm.Model:
    """Two categorical sites pinned at 0 and two free ones, coupled (Potts term)."""
    pinned = [1 - 2e-9, 1e-9, 1e-9]
    with pm.Model() as model:
        c = pm.Categorical("c", p=np.array([pinned, pinned, [0.2, 0.3, 0.5], [0.4, 0.4, 0.2]]),
                           shape=4)
        pm.Potential("potts", 0.8 * pt.eq(c[2], c[3]))
    return model


@pytest.mark.parametrize("step", sorted(STEPS))
@pytest.mark.parametrize(
    "case", ["binary-8+2", "binary-5+3", "categorical-2+2"]
)
def test_joint_distribution_with_pinned_sites(case, step):
    if case == "categorical-2+2":
        model, name = _pinned_categorical(), "c"
    else:
        n_pinned, n_free = (8, 2) if case == "binary-8+2" else (5, 3)
        model, name = _pinned_binary(n_pinned, n_free, 0.7), "b"
    states, probs = enumerate_block(model, [name])
    with model:
        built = STEPS[step]([model[name]])
    idata = _sample(model, built)
    assert_joint_frequencies_match(idata, [name], states, probs)


def test_joint_distribution_with_pinned_sites_in_the_compiled_loop():
    model = _pinned_binary(8, 2, 0.0)
    states, probs = enumerate_block(model, ["b"])
    with model:
        step = pmd.ALBP([model["b"]], compiled_loop=True, steps_per_draw=2)
    idata = _sample(model, step, draws=1000, tune=200)
    assert_joint_frequencies_match(idata, ["b"], states, probs)


def _structural_zeros() -> pm.Model:
    """Bernoulli sites with p exactly 0 and 1 and a categorical site with a category of
    probability zero, next to free coupled sites."""
    with pm.Model() as model:
        b = pm.Bernoulli("b", np.array([0.0, 1.0, 0.4, 0.55]), shape=4)
        c = pm.Categorical("c", p=np.array([[0.5, 0.0, 0.5], [0.2, 0.3, 0.5]]), shape=2)
        pm.Potential("tie", 0.9 * b[2] * b[3] - 0.6 * b[3] * pt.eq(c[0], 2) + 0.4 * pt.eq(c[1], 0))
    return model


@pytest.mark.parametrize("step", sorted(STEPS))
def test_values_of_probability_zero_are_never_visited(step):
    model = _structural_zeros()
    names = ["b", "c"]
    states, probs = enumerate_block(model, names)
    with model:
        built = STEPS[step]([model["b"], model["c"]])
    idata = _sample(model, built, draws=1200)
    draws = draws_of(idata, names)
    assert (draws[..., 0] == 0).all() and (draws[..., 1] == 1).all() and (draws[..., 4] != 1).all()
    assert_joint_frequencies_match(idata, names, states, probs)


def test_structural_zeros_in_the_compiled_loop():
    with pm.Model() as model:
        b = pm.Bernoulli("b", np.array([0.0, 1.0, 0.4, 0.55, 0.3]), shape=5)
        pm.Potential("tie", 0.9 * b[2] * b[3] - 0.7 * b[3] * b[4])
        step = pmd.ALBP([b], compiled_loop=True, steps_per_draw=2)
    states, probs = enumerate_block(model, ["b"])
    idata = _sample(model, step, draws=1000, tune=200)
    draws = draws_of(idata, ["b"])
    assert (draws[..., 0] == 0).all() and (draws[..., 1] == 1).all()
    assert_joint_frequencies_match(idata, ["b"], states, probs)


def test_registered_sampling_of_structural_zeros():
    """Plain ``pm.sample()`` after ``register()`` (the gradient proposal) on p = 0 and 1."""
    model = _structural_zeros()
    states, probs = enumerate_block(model, ["b", "c"])
    pmd.register()
    try:
        with model:
            idata = pm.sample(draws=1200, tune=300, chains=2, cores=1, random_seed=3,
                              progressbar=False, compute_convergence_checks=False)
    finally:
        pmd.unregister()
    assert_joint_frequencies_match(idata, ["b", "c"], states, probs)


def _random_block(seed: int) -> tuple[pm.Model, list[str]]:
    """A random block of 1 to 8 sites: Bernoulli sites with random fields (some pinned
    by p = 1e-9 or exactly 0 or 1), categorical sites with 2 or 3 values (some of
    probability zero), and random pairwise couplings."""
    rng = np.random.default_rng(seed)
    n_binary = int(rng.integers(0, 5))
    n_categorical = int(rng.integers(0 if n_binary else 1, 5 if n_binary < 4 else 4))
    n_categorical = min(n_categorical, 8 - n_binary)
    names = []
    with pm.Model() as model:
        sites = []
        if n_binary:
            p = 1 / (1 + np.exp(-rng.normal(0, 1.0, n_binary)))
            kind = rng.random(n_binary)
            p = np.where(kind < 0.15, 1e-9, np.where(kind < 0.25, 0.0, np.where(kind < 0.3, 1.0, p)))
            b = pm.Bernoulli("b", p, shape=n_binary)
            sites += [b[i] for i in range(n_binary)]
            names.append("b")
        if n_categorical:
            k = int(rng.integers(2, 4))
            p = rng.dirichlet(np.ones(k), size=n_categorical)
            zero = rng.random(n_categorical) < 0.3
            p[zero, rng.integers(0, k, zero.sum())] = 0.0
            p = p / p.sum(axis=1, keepdims=True)
            c = pm.Categorical("c", p=p, shape=n_categorical)
            sites += [pt.eq(c[i], 0) for i in range(n_categorical)]
            names.append("c")
        n = len(sites)
        terms = []
        for i in range(n):
            for j in range(i + 1, n):
                if rng.random() < 0.5:
                    terms.append(rng.normal(0, 0.8) * sites[i] * sites[j])
        if terms:
            pm.Potential("couplings", pt.add(*terms) if len(terms) > 1 else terms[0])
    return model, names


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("step", ["albp", "albp-exact", "pas", "arwm", "gibbs"])
def test_random_small_blocks_match_enumeration(seed, step):
    """Property test: random fields, couplings, pinned sites and categories, sizes 1 to 8."""
    model, names = _random_block(seed)
    states, probs = enumerate_block(model, names)
    with model:
        built = STEPS[step]([model[name] for name in names])
    idata = _sample(model, built, draws=1500, seed=seed)
    assert_joint_frequencies_match(idata, names, states, probs)
