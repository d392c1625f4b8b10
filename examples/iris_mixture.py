"""
Gaussian mixture: the iris species from their measurements
==========================================================

A mixture of three Gaussians (diagonal covariances) on the four standardised
measurements of the 150 iris flowers, with one label per flower:

.. code-block:: text

    w ~ Dirichlet(1, 1, 1)
    z_i ~ Categorical(w)                    (150 labels)
    y_i ~ Normal(mu[z_i], sigma[z_i])

Sampled the way a user would: ``pmd.register()`` and a plain ``pm.sample()`` from PyMC's
own start, which puts all 150 labels in one component. Every observation depends on its
own label only, so the labels share no term and ``register()`` picks ``CollapsedNUTS``
(the log below says so): the labels are summed out of the density NUTS samples the means
(ordered on their first coordinate, against label switching), scales and weights from,
exactly, flower by flower; each draw then redraws all labels from their exact
conditionals given those values.

The species are not given to the model. What to look for: the posterior's most probable
label of each flower agrees with its species for about 95% of the flowers (the mixture
cannot separate a few *versicolor* and *virginica* flowers), and the components' means
are those of the species.
"""

# %%
# The model
# ---------
import itertools

import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
import pytensor.tensor as pt
from sklearn.datasets import load_iris

import pymc_discrete as pmd


def mixture_parameters(k: int, d: int):
    """Inside a model: Dirichlet weights, means ordered on their first coordinate (against
    label switching) and HalfNormal scales of k diagonal Gaussians in d dimensions."""
    w = pm.Dirichlet("w", np.ones(k))
    first = pm.Normal("mu_first", 0.0, 2.0, shape=k,
                      transform=pm.distributions.transforms.ordered,
                      initval=np.linspace(-1.0, 1.0, k))
    rest = pm.Normal("mu_rest", 0.0, 2.0, shape=(k, d - 1))
    mu = pm.Deterministic("mu", pt.concatenate([first[:, None], rest], axis=1))
    sigma = pm.HalfNormal("sigma", 1.0, shape=(k, d))
    return w, mu, sigma


def mixture_model(data: np.ndarray, k: int = 3) -> pm.Model:
    """Mixture of k diagonal Gaussians with a Dirichlet on the weights; labels ``z``."""
    n, d = data.shape
    with pm.Model() as model:
        w, mu, sigma = mixture_parameters(k, d)
        z = pm.Categorical("z", w, shape=n)
        pm.Normal("y", mu=mu[z], sigma=sigma[z], observed=data)
    return model


# %%
# Comparing labels with species
# -----------------------------
# The components are numbered by their means' first coordinate, the species
# alphabetically: the agreement is the best over the relabellings.


def best_relabelling(labels: np.ndarray, species: np.ndarray, k: int = 3) -> np.ndarray:
    """The permutation ``perm`` that makes ``perm[labels]`` agree most with ``species``."""
    return np.array(max(itertools.permutations(range(k)),
                        key=lambda perm: np.mean(np.array(perm)[labels] == species)))


def agreement(labels: np.ndarray, species: np.ndarray, k: int = 3) -> float:
    """Share of points whose label matches the species, under the best relabelling."""
    return float(np.mean(best_relabelling(labels, species, k)[labels] == species))


# %%
# Sampling and checking
# ---------------------


def main(draws: int = 500, tune: int = 500, out=None) -> float:
    """Sample the mixture, print how its labels and means compare with the species and
    plot them; returns the agreement of the modal labels with the species."""
    iris = load_iris()
    data = (iris.data - iris.data.mean(0)) / iris.data.std(0)
    model = mixture_model(data)
    pmd.register()  # plain pm.sample() now lets the package choose the discrete step
    try:
        with model:
            idata = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=3,
                              progressbar=False, compute_convergence_checks=False)
    finally:
        pmd.unregister()
    z = idata.posterior["z"].values.reshape(-1, data.shape[0])
    modal = np.array([np.bincount(col, minlength=3).argmax() for col in z.T])
    perm = best_relabelling(modal, iris.target)
    score = agreement(modal, iris.target)
    print(f"\n{idata.sample_stats.attrs['sampling_time']:.1f} s of sampling (2 chains x "
          f"{draws} draws after {tune}); agreement of the posterior modal labels with the "
          f"species: {score:.1%}")
    mu = idata.posterior["mu"].mean(("chain", "draw")).values
    print(f"\n{'component means':<28}" + "".join(f"{n[:12]:>13}" for n in iris.feature_names))
    for c in np.argsort(perm):  # in the species' order
        name = iris.target_names[perm[c]]
        species = data[iris.target == perm[c]].mean(0)
        print(f"  {f'posterior, component {c}':<26}" + "".join(f"{v:>13.2f}" for v in mu[c]))
        print(f"  {f'species {name}':<26}" + "".join(f"{v:>13.2f}" for v in species))

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True, sharey=True,
                             layout="constrained")
    for ax, (title, colour) in zip(axes, [("species", iris.target),
                                          ("posterior modal label", perm[modal])]):
        ax.scatter(iris.data[:, 2], iris.data[:, 3], c=colour, cmap="viridis", s=14)
        ax.set_title(title)
        ax.set_xlabel("petal length (cm)")
    wrong = perm[modal] != iris.target
    axes[1].scatter(iris.data[wrong, 2], iris.data[wrong, 3], s=80, facecolors="none",
                    edgecolors="r", label=f"{wrong.sum()} disagree")
    axes[1].legend(loc="upper left")
    axes[0].set_ylabel("petal width (cm)")
    if out is not None:
        fig.savefig(out, dpi=100)
    return score


# %%
# Run
# ---
if __name__ == "__main__":
    score = main()
    assert score >= 0.9, score
    print(f"\ncheck passed: {score:.1%} of the flowers get their species' label")
    plt.show()
