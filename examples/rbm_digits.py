"""Sampling a restricted Boltzmann machine trained on binarised scikit-learn digits.

An RBM (64 visible, 50 hidden units) is trained by contrastive divergence on the 8x8
digits thresholded at half intensity; its visible marginal
``b . v + sum_j softplus(c_j + (v W)_j)`` is then sampled with ALBP and with PAS (both with
gradient proposals). Saves a grid of draws from each. Run:
``.venv/bin/python examples/rbm_digits.py`` (about 15 seconds).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_discrete as pmd  # noqa: E402
from pymc_discrete.example_models import binarised_digits, rbm_model, train_rbm  # noqa: E402

HERE = Path(__file__).resolve().parent


def main(draws: int = 3000, epochs: int = 30, out: Path = HERE / "rbm_digits.png",
         n_images: int = 8) -> dict[str, float]:
    """Train, sample with ALBP and PAS; returns each sampler's mean jump distance."""
    data = binarised_digits()
    W, b, c = train_rbm(data, n_hidden=50, epochs=epochs, seed=0)
    model = rbm_model(W, b, c)
    samplers = {"ALBP": lambda: pmd.ALBP([model["x"]]), "PAS": lambda: pmd.PAS([model["x"]])}
    images, jumps = {}, {}
    for name, make in samplers.items():
        with model:
            idata = pm.sample(step=make(), draws=draws, tune=draws, chains=1, random_seed=5,
                              progressbar=False, compute_convergence_checks=False,
                              initvals={"x": data[0]})
        x = idata.posterior["x"].values[0]
        every = max(1, x.shape[0] // n_images)
        images[name] = x[every - 1::every][:n_images]
        jumps[name] = float(idata.sample_stats["jump_distance"].mean())
        print(f"{name}: acceptance {float(idata.sample_stats['accept'].mean()):.3f}, "
              f"{jumps[name]:.1f} pixels change per draw; mean pixel "
              f"{x.mean():.3f} (data {data.mean():.3f})")
    fig, axes = plt.subplots(len(images), n_images, figsize=(n_images, 1.2 * len(images)))
    for row, (name, imgs) in zip(np.atleast_2d(axes), images.items()):
        for ax, img in zip(row, imgs):
            ax.imshow(img.reshape(8, 8), cmap="gray_r", vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
        row[0].set_ylabel(name)
    fig.suptitle("draws of the RBM's visible units, spaced through the chain")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"saved {out}")
    return jumps


if __name__ == "__main__":
    main()
