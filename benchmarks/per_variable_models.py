"""Models of about a thousand discrete sites, written one scalar variable per site (as
BUGS, JAGS and nimble users write them) and vectorised, for ``run_per_variable``.

* ``hmm``: a Gaussian hidden Markov chain of ``n`` steps, 3 states, free means and scale;
* ``occupancy``: ``n`` sites, 4 visits each, free occupancy and detection probabilities;
* ``occupancy_visits``: the same, each site's observed row given the model's dimension
  ``visit`` (``dims="visit"``) instead of a dimension of its own (``y_i_dim_0``), which
  ArviZ names for it: the user's remedy for PyMC's InferenceData of a thousand observed
  rows (xarray aligns a dataset's indexed dimensions against each other);
* ``ising``: an ``n`` x ``n`` lattice of Bernoulli spins with a fixed field and coupling,
  one Potential per edge in the per-variable phrasing.

Both phrasings of a model have the same density, to the last term (a chain's first state
is uniform; the vectorised chain is a Potential on ``log P[z[:-1], z[1:]]`` less the
uniform prior's terms). :func:`statistics` gives the quantities compared: the continuous
parameters, and for the lattice its magnetisation (the mean spin).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

__all__ = ["KINDS", "build", "statistics"]

KINDS = ("hmm", "occupancy", "occupancy_visits", "ising")
K = 3
_P = np.full((K, K), 0.05) + 0.85 * np.eye(K)
P = _P / _P.sum(axis=1, keepdims=True)
MEANS = np.array([-2.0, 0.0, 2.0])
VISITS = 4
COUPLING = 0.3


def _data(kind: str, n: int) -> dict:
    rng = np.random.default_rng(2026)
    if kind == "hmm":
        states = [0]
        for _ in range(n - 1):
            states.append(rng.choice(K, p=P[states[-1]]))
        return {"y": rng.normal(MEANS[states], 0.8)}
    if kind in ("occupancy", "occupancy_visits"):
        occupied = rng.random(n) < 0.6
        return {"y": (rng.random((n, VISITS)) < 0.4) & occupied[:, None]}
    return {"field": rng.normal(scale=0.2, size=(n, n))}


def build(kind: str, n: int, per_variable: bool) -> pm.Model:
    """The model ``kind`` with ``n`` sites (an ``n`` x ``n`` lattice), one variable per
    site or vectorised."""
    data = _data(kind, n)
    coords = {"visit": np.arange(VISITS)} if kind == "occupancy_visits" else {}
    with pm.Model(coords=coords) as model:
        if kind == "hmm":
            y = data["y"]
            mu = pm.Normal("mu", MEANS, 1.0, shape=K)
            sigma = pm.HalfNormal("sigma", 1.0)
            if per_variable:
                z = pm.Categorical("z_0", p=np.ones(K) / K)
                pm.Normal("y_0", mu[z], sigma, observed=y[0])
                for t in range(1, n):
                    z = pm.Categorical(f"z_{t}", p=pt.as_tensor(P)[z])
                    pm.Normal(f"y_{t}", mu[z], sigma, observed=y[t])
            else:
                z = pm.Categorical("z", p=np.ones(K) / K, shape=n)
                pm.Potential("chain", pt.sum(pt.log(pt.as_tensor(P))[z[:-1], z[1:]])
                             - (n - 1) * np.log(1.0 / K))
                pm.Normal("y", mu[z], sigma, observed=y)
        elif kind in ("occupancy", "occupancy_visits"):
            y = data["y"]
            visits = {"dims": "visit"} if kind == "occupancy_visits" else {}
            psi = pm.Beta("psi", 1.0, 1.0)
            p = pm.Beta("p", 1.0, 1.0)
            if per_variable:
                for i in range(n):
                    z = pm.Bernoulli(f"z_{i}", psi)
                    pm.Bernoulli(f"y_{i}", z * p, observed=y[i], **visits)
            else:
                z = pm.Bernoulli("z", psi, shape=n)
                pm.Bernoulli("y", z[:, None] * p, observed=y)
        elif kind == "ising":
            field = data["field"]
            if per_variable:
                x = [[pm.Bernoulli(f"x_{i}_{j}", pm.math.invlogit(field[i, j]))
                      for j in range(n)] for i in range(n)]
                for i in range(n):
                    for j in range(n):
                        for a, b in ((i + 1, j), (i, j + 1)):
                            if a < n and b < n:
                                pm.Potential(f"edge_{i}_{j}_{a}_{b}", COUPLING
                                             * (2 * x[i][j] - 1) * (2 * x[a][b] - 1))
            else:
                x = pm.Bernoulli("x", pm.math.invlogit(field), shape=(n, n))
                s = 2 * x - 1
                pm.Potential("edges", COUPLING * ((s[1:] * s[:-1]).sum()
                                                  + (s[:, 1:] * s[:, :-1]).sum()))
        else:
            raise ValueError(f"unknown model {kind!r}")
    return model


def statistics(kind: str, posterior, n: int, per_variable: bool) -> dict[str, np.ndarray]:
    """The (chain, draw) arrays compared between runs: every element of the continuous
    parameters, or the lattice's magnetisation."""
    if kind == "hmm":
        mu = np.asarray(posterior["mu"])
        return {**{f"mu[{k}]": mu[..., k] for k in range(K)},
                "sigma": np.asarray(posterior["sigma"])}
    if kind in ("occupancy", "occupancy_visits"):
        return {"psi": np.asarray(posterior["psi"]), "p": np.asarray(posterior["p"])}
    if per_variable:
        total = sum(np.asarray(posterior[f"x_{i}_{j}"], dtype=float)
                    for i in range(n) for j in range(n))
    else:
        total = np.asarray(posterior["x"], dtype=float).sum(axis=(-2, -1))
    return {"magnetisation": 2 * total / (n * n) - 1}
