"""One sampling run for the cache-state test: ``python -m tests.cache_run OUT.npz``.

Run by :mod:`tests.pymc.test_cache_reproducibility` in fresh processes, with PyTensor's
compile directory and numba's cache directory set by the caller (empty, then warm): it
samples two models with ``pmd.register()`` and a plain ``pm.sample(random_seed=7)`` (a
hidden Markov chain, ChainGibbs beside PyMC's own NUTS; an occupancy model,
CollapsedNUTS) and saves every draw and numeric sampler statistic.
"""

from __future__ import annotations

import sys

import numpy as np
import pymc as pm
import pytensor.tensor as pt

import pymc_discrete as pmd


def hidden_markov(steps: int = 120) -> pm.Model:
    """A sticky 3-state chain with Gaussian emissions (the issue's reproduction)."""
    rng = np.random.default_rng(3)
    p = np.full((3, 3), 0.025) + np.eye(3) * 0.925
    z = [0]
    for _ in range(steps - 1):
        z.append(rng.choice(3, p=p[z[-1]]))
    y = np.array([-1.5, 0.0, 1.5])[z] + rng.normal(0, 0.6, steps)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3, shape=3, transform=pm.distributions.transforms.ordered,
                       initval=[-1.0, 0.0, 1.0])
        sigma = pm.HalfNormal("sigma", 1)
        states = pm.Categorical("z", np.ones(3) / 3, shape=steps)
        pm.Potential("chain", pt.sum(pt.log(p)[states[:-1], states[1:]]))
        pm.Normal("y", mu[states], sigma, observed=y)
    return model


def occupancy(sites: int = 60) -> pm.Model:
    """Site occupancy with detections: CollapsedNUTS sums the indicators out."""
    rng = np.random.default_rng(4)
    y = (rng.random((sites, 4)) < 0.4) & (rng.random(sites) < 0.6)[:, None]
    with pm.Model() as model:
        psi = pm.Beta("psi", 1, 1)
        p = pm.Beta("p", 1, 1)
        z = pm.Bernoulli("z", psi, shape=sites)
        pm.Bernoulli("y", z[:, None] * p, observed=y)
    return model


def main(out: str) -> None:
    pmd.register()
    arrays = {}
    for name, build in (("hmm", hidden_markov), ("occupancy", occupancy)):
        with build():
            idata = pm.sample(draws=100, tune=100, chains=2, cores=1, random_seed=7,
                              progressbar=False, compute_convergence_checks=False)
        for group in ("posterior", "sample_stats"):
            for var, values in idata[group].data_vars.items():
                values = np.asarray(values)
                if var == "perf_counter_diff" or var == "perf_counter_start" or \
                        var == "process_time_diff" or not np.issubdtype(values.dtype, np.number):
                    continue
                arrays[f"{name}/{group}/{var}"] = values
    np.savez(out, **arrays)


if __name__ == "__main__":
    main(sys.argv[1])
