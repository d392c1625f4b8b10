"""Models written one scalar variable per site, in a Python loop, as BUGS, JAGS and
nimble users write them, beside their vectorised phrasings."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

K = 3
_P = np.full((K, K), 0.1) + 0.7 * np.eye(K)
P = _P / _P.sum(axis=1, keepdims=True)
MU = np.array([-1.5, 0.0, 1.5])


def per_variable(kind: str, n: int, seed: int = 3, continuous: bool = True) -> pm.Model:
    """A hidden Markov chain, a mixture, an occupancy model or an Ising lattice with
    ``n`` sites (an ``n`` x ``n`` lattice), one ``pm.Categorical`` or ``pm.Bernoulli`` per
    site. With ``continuous=False`` the means, scales and probabilities are fixed, so the
    discrete sites are the model's only free variables (enumerable)."""
    rng = np.random.default_rng(seed)
    with pm.Model() as model:
        if kind in ("hmm", "mixture"):
            y = rng.normal(size=n)
            mu = pm.Normal("mu", MU, 1.0, shape=K) if continuous else pt.as_tensor(MU)
            sigma = pm.HalfNormal("sigma", 1.0) if continuous else 1.0
            z = pm.Categorical("z_0", p=np.ones(K) / K)
            pm.Normal("y_0", mu[z], sigma, observed=y[0])
            for t in range(1, n):
                p = pt.as_tensor(P)[z] if kind == "hmm" else np.ones(K) / K
                z = pm.Categorical(f"z_{t}", p=p)
                pm.Normal(f"y_{t}", mu[z], sigma, observed=y[t])
        elif kind == "occupancy":
            detections = rng.random((n, 4)) < 0.3
            psi = pm.Beta("psi", 1.0, 1.0) if continuous else 0.6
            p = pm.Beta("p", 1.0, 1.0) if continuous else 0.4
            for i in range(n):
                z = pm.Bernoulli(f"z_{i}", psi)
                pm.Bernoulli(f"y_{i}", z * p, observed=detections[i])
        elif kind == "lattice":
            field = rng.normal(scale=0.3, size=(n, n))
            x = [[pm.Bernoulli(f"x_{i}_{j}", pm.math.invlogit(field[i, j]))
                  for j in range(n)] for i in range(n)]
            for i in range(n):
                for j in range(n):
                    for a, b in ((i + 1, j), (i, j + 1)):
                        if a < n and b < n:
                            pm.Potential(f"e_{i}_{j}_{a}_{b}",
                                         0.4 * (2 * x[i][j] - 1) * (2 * x[a][b] - 1))
        else:
            raise ValueError(kind)
    return model


def vectorised(kind: str, n: int, seed: int = 3, continuous: bool = True) -> pm.Model:
    """The same model as :func:`per_variable`, written with one vector variable."""
    rng = np.random.default_rng(seed)
    with pm.Model() as model:
        if kind in ("hmm", "mixture"):
            y = rng.normal(size=n)
            mu = pm.Normal("mu", MU, 1.0, shape=K) if continuous else pt.as_tensor(MU)
            sigma = pm.HalfNormal("sigma", 1.0) if continuous else 1.0
            z = pm.Categorical("z", p=np.ones(K) / K, shape=n)
            if kind == "hmm":  # the prior of z_0 stays uniform: the rest is the chain
                pm.Potential("chain", pt.sum(pt.log(pt.as_tensor(P))[z[:-1], z[1:]])
                             - (n - 1) * np.log(1.0 / K))
            pm.Normal("y", mu[z], sigma, observed=y)
        elif kind == "occupancy":
            detections = rng.random((n, 4)) < 0.3
            psi = pm.Beta("psi", 1.0, 1.0) if continuous else 0.6
            p = pm.Beta("p", 1.0, 1.0) if continuous else 0.4
            z = pm.Bernoulli("z", psi, shape=n)
            pm.Bernoulli("y", z[:, None] * p, observed=detections)
        elif kind == "lattice":
            field = rng.normal(scale=0.3, size=(n, n))
            x = pm.Bernoulli("x", pm.math.invlogit(field), shape=(n, n))
            s = 2 * x - 1
            pm.Potential("edges", 0.4 * ((s[1:] * s[:-1]).sum() + (s[:, 1:] * s[:, :-1]).sum()))
        else:
            raise ValueError(kind)
    return model


def site_names(model: pm.Model) -> list[str]:
    """The discrete variables of a model, in the order they were written."""
    return [rv.name for rv in model.free_RVs if rv.type.dtype.startswith("int")]
