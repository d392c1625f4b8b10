"""The same lattice written the ways users write it: does ``register()`` read the same
structure, and does its lead over PyMC's default hold in every phrasing?

An Ising lattice (couplings 0.25 between neighbours, a field ``alpha ~ N(0, 0.1^2)``)
whose field is written as ``pt.sum(alpha * s)``, ``pt.dot(alpha, s)``, ``alpha @ s`` or
``pt.einsum``, and whose couplings are written as slices of the grid or as a gathered
edge list; a Potts lattice (K = 3, agreements of neighbours) written with slices and
``pt.eq``, an edge list, or one-hot rows ``pt.eye(K)[z]``. For each phrasing:
``pmd.register()`` and a plain ``pm.sample``, the step it chose and the number of colours,
and the median over sites of ArviZ's bulk ESS per second of ``pm.sample``'s wall time
(set-up included); PyMC's default (the same call without ``register()``) on the first
phrasing of each model, the ratio against it, and the largest r-hat over sites of both
(a run that did not converge is marked). Medians (min-max) over seeds.

Run with ``python -m benchmarks.run_phrasings [--quick | --smoke]``; writes the section
``phrasings`` of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import time

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt

import pymc_discrete as pmd
from benchmarks.harness import (
    cli,
    markdown_table,
    provenance,
    size_name,
    spread_over_seeds,
    write_section,
)

K = 3
COUPLING = 0.25


def _edges(side: int) -> tuple[np.ndarray, np.ndarray]:
    grid = np.arange(side * side).reshape(side, side)
    return (np.r_[grid[1:].ravel(), grid[:, 1:].ravel()],
            np.r_[grid[:-1].ravel(), grid[:, :-1].ravel()])


def ising(side: int, field: str, couplings: str) -> pm.Model:
    """The Ising lattice with its field and couplings written as named."""
    n = side * side
    alpha = 0.1 * np.random.default_rng(0).normal(size=n)
    src, dst = _edges(side)
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.5, shape=n)
        s = 2 * x - 1
        if couplings == "slices":
            grid = s.reshape((side, side))
            agree = (grid[1:] * grid[:-1]).sum() + (grid[:, 1:] * grid[:, :-1]).sum()
        else:
            agree = pt.sum(s[src] * s[dst])
        terms = {"sum": lambda: pt.sum(alpha * s), "dot": lambda: pt.dot(alpha, s),
                 "matmul": lambda: alpha @ s, "einsum": lambda: pt.einsum("i,i->", alpha, s)}
        pm.Potential("lattice", COUPLING * agree + terms[field]())
    return model


def potts(side: int, phrasing: str) -> pm.Model:
    """A Potts lattice of K labels whose agreements are written as named."""
    n = side * side
    src, dst = _edges(side)
    with pm.Model() as model:
        z = pm.Categorical("x", np.ones(K) / K, shape=n)
        if phrasing == "slices":
            grid = z.reshape((side, side))
            agree = pt.sum(pt.eq(grid[1:], grid[:-1])) + pt.sum(pt.eq(grid[:, 1:], grid[:, :-1]))
        elif phrasing == "edge list":
            agree = pt.sum(pt.eq(z[src], z[dst]))
        else:
            one_hot = pt.eye(K)[z]
            agree = pt.sum(one_hot[src] * one_hot[dst])
        pm.Potential("lattice", 2 * COUPLING * agree)
    return model


#: (model, phrasing, builder); the first phrasing of each model is PyMC's baseline
PHRASINGS = (
    ("Ising", "field as sum(alpha * s), couplings as slices",
     lambda side: ising(side, "sum", "slices")),
    ("Ising", "field as dot(alpha, s)", lambda side: ising(side, "dot", "slices")),
    ("Ising", "field as alpha @ s", lambda side: ising(side, "matmul", "slices")),
    ("Ising", "field as einsum", lambda side: ising(side, "einsum", "slices")),
    ("Ising", "couplings as an edge list, field as dot",
     lambda side: ising(side, "dot", "edge list")),
    ("Potts, K = 3", "agreements as eq of slices", lambda side: potts(side, "slices")),
    ("Potts, K = 3", "agreements as eq on an edge list", lambda side: potts(side, "edge list")),
    ("Potts, K = 3", "agreements as one-hot products", lambda side: potts(side, "one-hot")),
)


def _run(model: pm.Model, draws: int, tune: int, seed: int) -> tuple[float, float]:
    """Median-site bulk ESS per second of pm.sample's wall time and the largest r-hat over
    sites."""
    with model:
        tick = time.perf_counter()
        idata = pm.sample(draws, tune=tune, chains=2, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
        seconds = time.perf_counter() - tick
    x = idata.posterior["x"]
    ess = az.ess(idata, var_names=["x"])["x"].values
    rhat = az.rhat(idata, var_names=["x"])["x"].values
    # a site that never varies has no ESS or r-hat: those sites are left out of both
    moving = np.isfinite(ess) & (x.std(dim=("chain", "draw")).values > 0)
    return float(np.median(ess[moving])) / seconds, float(np.nanmax(rhat[moving]))


def rows(side: int, draws: int, tune: int, seeds: tuple[int, ...]) -> list:
    """One table row per phrasing."""
    out, baseline = [], {}
    for model_name, phrasing, build in PHRASINGS:
        model = build(side)
        choice = pmd.recommend([model["x"]], model=model)
        colours = choice.n_colours if choice.n_colours is not None else "-"
        if model_name not in baseline:
            pmd.unregister()
            baseline[model_name] = [_run(build(side), draws, tune, seed) for seed in seeds]
        pmd.register()
        ours = [_run(build(side), draws, tune, seed) for seed in seeds]
        pmd.unregister()
        pymc_runs = baseline[model_name]
        ratios = [o[0] / p[0] for o, p in zip(ours, pymc_runs) if p[1] <= 1.01]
        out.append([
            model_name, phrasing, choice.step.__name__, colours,
            spread_over_seeds([o[0] for o in ours]), f"{max(o[1] for o in ours):.3f}",
            spread_over_seeds([p[0] for p in pymc_runs]), f"{max(p[1] for p in pymc_runs):.3f}",
            spread_over_seeds(ratios) + ("" if len(ratios) == len(seeds)
                                         else f" ({len(ratios)} of {len(seeds)} seeds)")
            if ratios else "PyMC's default did not converge",
        ])
    return out


#: lattice side, draws (after as many tuning draws) and seeds
BUDGETS = {"full": (30, 1000, (1, 2, 3)), "quick": (16, 500, (1, 2, 3)),
           "smoke": (4, 20, (1,))}


def main(quick: bool = False, smoke: bool = False) -> None:
    """Measure and write the section (``quick``, ``smoke``: smaller lattices, fewer draws)."""
    size = size_name(quick, smoke)
    side, draws, seeds = BUDGETS[size]
    table = rows(side, draws, draws, seeds)
    body = "\n".join([
        "## Phrasings: the same lattice written several ways",
        "",
        provenance("run_phrasings", size),
        "",
        f"{side} x {side} lattices, 2 chains x {draws} draws after {draws}, seeds "
        f"{', '.join(map(str, seeds))}. `register()` and plain `pm.sample()` against PyMC's "
        "default (without `register()`) on the first phrasing of each model: median (min-max) "
        "over seeds of the median-site bulk ESS per second of pm.sample's wall time (set-up "
        "included), the largest r-hat over sites and seeds, and the ratio of ESS per second "
        "over the seeds where PyMC's default converged (r-hat at most 1.01).",
        "",
        markdown_table(["model", "phrasing", "register() chose", "colours",
                        "ESS/s (ours)", "r-hat (ours)", "ESS/s (PyMC's default)",
                        "r-hat (PyMC's default)", "ours / PyMC's default"], table),
    ])
    print(body)
    write_section("phrasings", body)


if __name__ == "__main__":
    cli(main)
