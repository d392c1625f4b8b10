"""What the scale mixture after tuning costs where nothing stalls, and what it buys
where a chain would freeze.

After tuning, one draw in ten runs at a scale drawn log-uniformly below the tuned one
(:mod:`pymc_discrete.adaptation.scale_mixture`). The cost is measured from the
default step's own statistics, without changing the step: the expected jump distance
(EJD, the efficiency measure of the optimal-scaling paper) of the draws that ran at the
tuned scale is what a chain at that scale alone gets, and the EJD of all draws is what
the default gets, so ``1 - all / tuned`` is the share of the paper's efficiency the
mixture gives up. Models: the paper's Bernoulli (N = 800) and Ising (50 x 50) targets,
configuration C2, ALBP's defaults, several seeds.

Where a chain would freeze: the gallery's Gaussian mixture (500 Categorical labels),
ALBP's defaults over several seeds, 4 chains each: the share of draws after tuning that
changed the labels, per chain (its smallest over chains), the longest run of draws
that changed nothing, and the r-hat of the cluster means.

Run with ``python -m benchmarks.run_scale_mixture [--quick | --smoke]``; writes the section
``scale_mixture`` of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm

import pymc_discrete as pmd
from benchmarks.harness import (
    cli,
    markdown_table,
    provenance,
    size_name,
    spread_over_seeds,
    write_section,
)
from pymc_discrete.example_models import bernoulli_model, gallery_mixture, ising_model


def _longest_run(moved: np.ndarray) -> int:
    best = run = 0
    for m in moved:
        run = 0 if m else run + 1
        best = max(best, run)
    return best


def cost_rows(draws: int, tune: int, seeds: tuple[int, ...], n: int, side: int) -> list:
    """Table rows: EJD at the tuned scale, over all draws, and the share lost."""
    rows = []
    for name, build in ((f"Bernoulli, N = {n}", lambda: bernoulli_model(n)),
                        (f"Ising {side} x {side}", lambda: ising_model(side))):
        tuned, mixed, lost = [], [], []
        for seed in seeds:
            with build() as model:
                idata = pm.sample(draws, tune=tune, chains=2, cores=1, random_seed=seed,
                                  step=pmd.ALBP([model["x"]]), progressbar=False,
                                  compute_convergence_checks=False)
            stats = idata.sample_stats
            jumps = stats["jump_distance"].values
            at_tuned = stats["draw_scale"].values == stats["scaling"].values
            tuned.append(float(jumps[at_tuned].mean()))
            mixed.append(float(jumps.mean()))
            lost.append(100.0 * (1.0 - mixed[-1] / tuned[-1]))
        rows.append([name, spread_over_seeds(tuned), spread_over_seeds(mixed),
                     f"{spread_over_seeds(lost)} %"])
    return rows


def freeze_rows(draws: int, tune: int, seeds: tuple[int, ...], points: int) -> list:
    """Table rows: per seed, the smallest share of moving draws over the chains, the
    longest run without a move and the largest tuned scale."""
    rows = []
    for seed in seeds:
        with gallery_mixture(points):
            idata = pm.sample(draws, tune=tune, chains=4, cores=1, random_seed=seed,
                              step=pmd.ALBP(), progressbar=False,
                              compute_convergence_checks=False)
        stats = idata.sample_stats
        moved = stats["jump_distance"].values > 0
        longest = max(_longest_run(m) for m in moved)
        rhat = float(az.rhat(idata, var_names=["means"])["means"].max())
        rows.append([seed, f"{moved.mean(axis=1).min():.3f}", longest,
                     f"{stats['scaling'].values[:, -1].max():.1f}", f"{rhat:.3f}"])
    return rows


#: draws (as many tuning draws) and seeds of the cost; of the mixture; sizes of the
#: Bernoulli target, the Ising lattice and the mixture
BUDGETS = {"full": (2000, 1000, (1, 2, 3), 1000, (1, 2, 3, 4, 5, 6, 7, 2024), 800, 50, 500),
           "quick": (500, 500, (1, 2, 3), 300, (1, 2, 3), 800, 50, 500),
           "smoke": (40, 40, (1,), 30, (1,), 50, 6, 40)}


def main(quick: bool = False, smoke: bool = False) -> None:
    """Measure and write the section (``quick``, ``smoke``: fewer draws and seeds)."""
    size = size_name(quick, smoke)
    draws, tune, seeds, mixture_draws, mixture_seeds, n, side, points = BUDGETS[size]
    cost = cost_rows(draws, tune, seeds, n, side)
    freeze = freeze_rows(mixture_draws, mixture_draws, mixture_seeds, points)
    body = "\n".join([
        "## Scale mixture after tuning",
        "",
        provenance("run_scale_mixture", size),
        "",
        f"ALBP's defaults, 2 chains x {draws} draws after {tune}, seeds "
        f"{', '.join(map(str, seeds))}: median (min-max) over seeds of the mean jump "
        "distance of the draws at the tuned scale, of all draws, and the share given up.",
        "",
        markdown_table(["target (C2)", "EJD at the tuned scale", "EJD of all draws",
                        "efficiency given up"], cost),
        "",
        f"Gallery Gaussian mixture ({points} labels), ALBP's defaults, 4 chains: per seed, the "
        "smallest share of draws after tuning that changed the labels (over the chains), "
        "the longest run of draws that changed nothing, and the largest tuned scale (a "
        "chain whose scale was fitted to a mode it left late in tuning has a large one), "
        "and the largest r-hat of the cluster means. A chain that spent tuning in a mode "
        "where one wide component covers the data (its labels nearly exchangeable, so "
        "very large moves are accepted) can stay there: the r-hat says so; the smaller "
        "scales keep it moving but do not make it leave.",
        "",
        markdown_table(["seed", "smallest share of moving draws",
                        "longest run without a move", "largest tuned scale", "r-hat (means)"],
                       freeze),
    ])
    print(body)
    write_section("scale_mixture", body)


if __name__ == "__main__":
    cli(main)
