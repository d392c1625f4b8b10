"""Reference models of the optimal-scaling paper (Appendix D) written as PyMC models.

Used by the demo, the benchmarks and the tests; also a quick way for a user to try the
samplers on a known target.
"""

from __future__ import annotations

import numpy as np
import pymc as pm


__all__ = ["BERNOULLI_CONFIGS", "ISING_CONFIGS", "bernoulli_model", "ising_fields", "ising_model"]

#: p_i ~ U[low, high] for the Bernoulli configurations C1-C3 (Appendix D.1).
BERNOULLI_CONFIGS: dict[str, tuple[float, float]] = {
    "C1": (0.25, 0.75),
    "C2": (0.15, 0.85),
    "C3": (0.05, 0.95),
}

#: (mu, sigma, lambda) of the Ising configurations C1-C3 (Appendix D.2): the field is
#: U(mu - sigma, mu + sigma) inside a central disc of half the lattice's area and
#: U(-mu - sigma, -mu + sigma) outside; lambda couples nearest neighbours.
ISING_CONFIGS: dict[str, tuple[float, float, float]] = {
    "C1": (0.1, 0.3, 0.1),
    "C2": (0.15, 0.45, 0.15),
    "C3": (0.2, 0.6, 0.2),
}


def bernoulli_model(n: int = 800, config: str = "C2", seed: int = 0) -> pm.Model:
    """Product of independent Bernoullis, ``x_i ~ Bernoulli(p_i)``, ``p_i ~ U[a, b]``.

    Parameters
    ----------
    n : int
        Number of sites.
    config : {"C1", "C2", "C3"}
        Range of the p_i (smooth to sharp).
    seed : int
        Seed of the p_i.

    Returns
    -------
    pymc.Model
        With one free variable ``x`` of shape (n,); ``model.p`` holds the probabilities.

    Examples
    --------
    >>> from pymc_discrete.pymc.models import bernoulli_model
    >>> bernoulli_model(10).free_RVs
    [x]
    """
    low, high = BERNOULLI_CONFIGS[config]
    p = np.random.default_rng(seed).uniform(low, high, n)
    with pm.Model() as model:
        pm.Bernoulli("x", p, shape=n)
    model.p = p
    return model


def ising_fields(side: int, config: str = "C2", seed: int = 0) -> np.ndarray:
    """External fields alpha of the paper's Ising configuration (shape (side, side))."""
    mu, sigma, _ = ISING_CONFIGS[config]
    rng = np.random.default_rng(seed)
    i, j = np.meshgrid(np.arange(side), np.arange(side), indexing="ij")
    inside = (i / side - 0.5) ** 2 + (j / side - 0.5) ** 2 < 0.5 / np.pi
    return rng.uniform(-sigma, sigma, (side, side)) + np.where(inside, mu, -mu)


def ising_model(side: int = 50, config: str = "C2", seed: int = 0) -> pm.Model:
    """Ising model on a ``side x side`` lattice with free boundaries.

    ``log pi(x) = sum_i alpha_i s_i + lambda sum_<ij> s_i s_j + const`` with spins
    ``s = 2x - 1``, each nearest-neighbour pair counted once. ``x`` is a Bernoulli(0.5)
    variable (a constant prior) and the energy a ``pm.Potential``; the log density is
    multilinear in x, so ALBP's gradient ratios are exact.

    Parameters
    ----------
    side : int
        Lattice side p (N = p^2 sites).
    config : {"C1", "C2", "C3"}
        Field and coupling strengths.
    seed : int
        Seed of the fields.

    Returns
    -------
    pymc.Model
        With one free variable ``x`` of shape (side, side).

    Examples
    --------
    >>> from pymc_discrete.pymc.models import ising_model
    >>> ising_model(5).free_RVs
    [x]
    """
    _, _, lam = ISING_CONFIGS[config]
    alpha = ising_fields(side, config, seed)
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.5, shape=(side, side))
        s = 2.0 * x - 1.0
        field = pm.Data("alpha", alpha)
        pm.Potential("field", (field * s).sum())
        pm.Potential(
            "coupling",
            lam * ((s[:, 1:] * s[:, :-1]).sum() + (s[1:, :] * s[:-1, :]).sum()),
        )
    return model


def ising_logp(x: np.ndarray, alpha: np.ndarray, lam: float) -> float:
    """Unnormalised log density of the Ising model at a 0/1 lattice ``x`` (numpy)."""
    s = 2.0 * np.asarray(x, dtype=float) - 1.0
    return float((alpha * s).sum() + lam * ((s[:, 1:] * s[:, :-1]).sum() + (s[1:] * s[:-1]).sum()))



