"""The per-draw statistics every site step reports, and the columns of PyMC's progress
bar that show them."""

from __future__ import annotations

import numpy as np
from pymc.stats.convergence import SamplerWarning
from rich.progress import TextColumn
from rich.table import Column

from pymc_discrete.pymc.steps.stall import STALLED_DRAWS_FAILING

__all__ = ["STATS_DTYPES_SHAPES", "progressbar_config", "progressbar_update_functions"]

#: Per-draw sampler statistics of every step of this package (name -> dtype, shape).
STATS_DTYPES_SHAPES: dict[str, tuple[type, list]] = {
    "accept": (np.float64, []),
    "accepted": (np.float64, []),
    "scaling": (np.float64, []),
    "jump_distance": (np.int64, []),
    "n_proposed": (np.int64, []),
    # the acceptance rate the scale is tuned toward (NaN for a step that tunes nothing),
    # so that a trace alone says what tuning aimed at (pmd.plot_tuning marks it)
    "target_accept": (np.float64, []),
    # running means over the draws of the current phase (tuning, then sampling) and the
    # number of consecutive draws that left the block unchanged: what the progress bar
    # shows, kept in the trace as NUTS keeps its running count of divergences
    "mean_accept": (np.float64, []),
    "mean_jump": (np.float64, []),
    "stalled": (np.int64, []),
    # Metropolis-Hastings steps (sweeps for BlockedGibbs) the draw made: with
    # steps_per_draw="auto" one per tuning draw, then the number chosen after tuning
    "steps_per_draw": (np.int64, []),
    # the scale this draw ran at: the tuned one ('scaling'), or after tuning now and then
    # a smaller one (pymc_discrete.adaptation.scale_mixture)
    "draw_scale": (np.float64, []),
    # a chain that stopped moving after tuning, reported as PyMC's own steps report
    # theirs: pm.sample logs it (pymc_discrete.pymc.steps.stall)
    "warning": (SamplerWarning, None),
}


def progressbar_config(n_chains: int = 1) -> tuple[list, dict]:
    """Columns of PyMC's progress bar: the chain's mean acceptance, scale and mean
    jump distance over the current phase (tuning, then sampling)."""
    columns = [
        TextColumn("{task.fields[pmd_accept]:0.2f}",
                   table_column=Column("Accept", ratio=1)),
        TextColumn("{task.fields[pmd_scale]:0.3g}", table_column=Column("Scale", ratio=1)),
        TextColumn("{task.fields[pmd_jump]:0.3g}",
                   table_column=Column("Jump", ratio=1)),
    ]
    stats = {name: [0.0] * n_chains for name in ("pmd_accept", "pmd_scale", "pmd_jump")}
    return columns, stats

def progressbar_update_functions() -> tuple:
    """The draw's stats -> the bar's fields; ``failing`` (a red bar) once the block
    went :data:`STALLED_DRAWS_FAILING` draws without changing."""

    def update_stats(stats: dict) -> dict:
        return {
            "pmd_accept": stats["mean_accept"],
            "pmd_scale": stats["scaling"],
            "pmd_jump": stats["mean_jump"],
            "failing": stats["stalled"] >= STALLED_DRAWS_FAILING,
        }

    return (update_stats,)
