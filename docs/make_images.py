"""Make the images of docs/diagnostics.md: ``pmd.plot_tuning`` and ``pmd.plot_moves`` on
a 2D Ising model sampled by ALBP (about 20 s on one core).

Run from the repository root::

    .venv/bin/python docs/make_images.py

It writes ``docs/images/tuning.png`` and ``docs/images/moves.png``.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_discrete as pmd  # noqa: E402
from pymc_discrete.example_models import ising_model  # noqa: E402

IMAGES = Path(__file__).resolve().parent / "images"
#: lattice side, tuning draws and draws: the scale settles in the first few hundred
SIDE, TUNE, DRAWS, CHAINS = 30, 600, 400, 3


def sample():
    """ALBP on a 30 x 30 Ising lattice (configuration C2), tuning draws kept."""
    with ising_model(SIDE, "C2", seed=0) as model:
        step = pmd.ALBP([model["x"]])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the short-chain diagnostics warnings
            idata = pm.sample(
                step=step, draws=DRAWS, tune=TUNE, chains=CHAINS, cores=1,
                random_seed=7, discard_tuned_samples=False, progressbar=False,
                compute_convergence_checks=False,
            )
    return idata, step


def main() -> None:
    start = time.perf_counter()
    idata, step = sample()
    IMAGES.mkdir(exist_ok=True)

    axes = pmd.plot_tuning(idata, steps=[step], figsize=(10, 3.4))
    axes[0, 0].figure.savefig(IMAGES / "tuning.png", dpi=110)
    plt.close(axes[0, 0].figure)

    axes = pmd.plot_moves(idata, steps=[step], figsize=(10, 3.4))
    axes[0, 0].figure.savefig(IMAGES / "moves.png", dpi=110)
    plt.close(axes[0, 0].figure)
    print(f"wrote {IMAGES / 'tuning.png'} and {IMAGES / 'moves.png'} "
          f"in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
