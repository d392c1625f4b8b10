"""Potts model on a lattice (K = 4 states), sampled with ALBP's one-hot gradient proposal.

Prints acceptance, tuned R and jump distance, and saves a picture of one draw and of the
posterior probability of state 0 at every site. Run:
``.venv/bin/python examples/potts_lattice.py`` (about 30 seconds).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_discrete as pmd  # noqa: E402
from pymc_discrete.example_models import potts_model  # noqa: E402

HERE = Path(__file__).resolve().parent


def main(side: int = 30, draws: int = 2000, out: Path = HERE / "potts_lattice.png") -> dict:
    """Sample the lattice; returns summary numbers."""
    model = potts_model(side, n_states=4, coupling=0.5)
    with model:
        step = pmd.ALBP([model["x"]])
        idata = pm.sample(step=step, draws=draws, tune=draws, chains=2, random_seed=1,
                          progressbar=False, compute_convergence_checks=False)
    stats = idata.sample_stats
    summary = {
        "accept": float(stats["accept"].mean()),
        "R": float(stats["scaling"].values[:, -1].mean()),
        "jump_distance": float(stats["jump_distance"].mean()),
        "ratios_are_exact": step.ratios_are_exact,
    }
    print(f"Potts {side}x{side}, K=4: acceptance {summary['accept']:.3f}, tuned R "
          f"{summary['R']:.1f}, {summary['jump_distance']:.1f} sites change per draw; "
          f"gradient ratios exact: {summary['ratios_are_exact']}")
    z = idata.posterior["x"].values
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    axes[0].imshow(z[0, -1], cmap="tab10", vmin=0, vmax=9)
    axes[0].set_title("one draw")
    im = axes[1].imshow((z == 0).mean(axis=(0, 1)), cmap="viridis", vmin=0, vmax=1)
    axes[1].set_title("P(state 0)")
    fig.colorbar(im, ax=axes[1])
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"saved {out}")
    return summary


if __name__ == "__main__":
    main()
