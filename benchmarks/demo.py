"""Demo: sample the paper's 50x50 Ising model (Appendix D.2, configuration C2) with ALBP
(its defaults, with either weight: one step per tuning draw, then the number of steps per
draw, run in the compiled loop, that the step chooses for this 2,500-site block; and 8
steps per draw in the compiled loop, asked for), ARWM, BlockedGibbs (what
``pmd.register()`` picks for a lattice: a whole sweep per draw in two batched
evaluations) and PyMC's default BinaryGibbsMetropolis, print how they compare, save a
plot.

The samplers are measured as in every benchmark table (``benchmarks.harness.measure``),
with ratios against BinaryGibbsMetropolis. Run with ``make demo``, i.e.
``python -m benchmarks.demo`` from the repository root (about two minutes on two cores);
the plot goes to ``benchmarks/out/ising_demo.png``.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_discrete as pmd  # noqa: E402
from benchmarks.harness import format_table, machine_description, measure  # noqa: E402
from pymc_discrete.example_models import ising_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "out" / "ising_demo.png"


def main(side: int = 50, out: Path = OUT, draws: int = 2000, gibbs_draws: int = 150) -> list:
    """Run the comparison; returns the measurements (one per sampler)."""
    model = ising_model(side, "C2")
    runs = [
        ("ALBP (barker)", lambda m: pmd.ALBP([m["x"]]), draws, draws // 2),
        ("ALBP (sqrt)", lambda m: pmd.ALBP([m["x"]], weight="sqrt"), draws, draws // 2),
        # 8 M-H steps per draw inside one numba-compiled loop: the same number of steps
        ("ALBP (sqrt, 8 compiled steps per draw)",
         lambda m: pmd.ALBP([m["x"]], weight="sqrt", steps_per_draw=8, compiled_loop=True),
         max(draws // 8, 20), max(draws // 16, 10)),
        ("ARWM", lambda m: pmd.ARWM([m["x"]]), draws, draws // 2),
        # what register() picks here: each draw a whole Gibbs sweep of the lattice
        ("BlockedGibbs", lambda m: pmd.BlockedGibbs([m["x"]]), max(draws // 4, 20),
         max(draws // 8, 10)),
        ("BinaryGibbsMetropolis", lambda m: pm.BinaryGibbsMetropolis([m["x"]]), gibbs_draws,
         gibbs_draws // 3),
    ]
    # every sampler starts from the same uniformly random configuration, as in the paper
    start = {"x": np.random.default_rng(0).integers(0, 2, (side, side))}
    rows = []
    for label, make_step, draws, tune in runs:
        print(f"sampling with {label} ({draws} draws + {tune} tuning, 2 chains) ...", flush=True)
        rows.append(measure(model, label, make_step, draws=draws, tune=tune, seed=1,
                            initvals=start, warmup=min(100, draws // 5)))
    print()
    print(f"Ising {side}x{side} (C2), N = {side * side} sites; {machine_description()}")
    print(format_table(rows, baseline="BinaryGibbsMetropolis"))

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    labels = [r.sampler for r in rows]
    axes[0].bar(labels, [r.ess_logp_per_s for r in rows], color="C0")
    axes[0].set_yscale("log")
    axes[0].set_ylabel("ESS of log density per second")
    axes[1].bar(labels, [r.ejd for r in rows], color="C1")
    axes[1].set_yscale("log")
    axes[1].set_ylabel("expected jump distance per draw")
    for ax in axes:
        ax.tick_params(axis="x", rotation=20)
    fig.suptitle(f"Ising {side}x{side}, configuration C2")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    print(f"\nplot saved to {out}")
    return rows


if __name__ == "__main__":
    main()
