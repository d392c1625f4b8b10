r"""
A hidden Markov chain written one variable at a time, as a JAGS user writes it
==============================================================================

BUGS, JAGS and nimble models are written one scalar node per site, in a loop:

.. code-block:: text

    z[1] ~ dcat(p0[])
    y[1] ~ dnorm(mu[z[1]], tau)
    for (t in 2:T) {
        z[t] ~ dcat(P[z[t-1], ])
        y[t] ~ dnorm(mu[z[t]], tau)
    }

Translated line for line into PyMC, that is one ``pm.Categorical`` and one observed
``pm.Normal`` per step, each state indexing the row of the transition matrix by the one
before it. PyMC builds a model of ``2T`` variables; its own log density then grows with
the square of their number (31 s for the graph alone at 300 variables on a 2-core
machine), and its default step assignment evaluates every state's probabilities, compiling
the graph back to the first step each time.

After ``pmd.register()`` a plain ``pm.sample()`` reads the loop as the vectorised model:
each variable's term is derived from its own small graph, the terms of the states and of
the observations are stacked into one vectorised term each, the states are recognised as
a chain and drawn by ``ChainGibbs`` (forward filtering, backward sampling), and NUTS
samples the means and scale on the stacked log density. What to look for: the log names
``ChainGibbs`` and ``NUTS (stacked log density)``, and the posterior means of
:math:`\mu` and :math:`\sigma` agree with those of the same model written vectorised
(``pm.Categorical("z", ..., shape=T)`` and a Potential on the transitions) within 4
combined Monte Carlo standard errors.
"""

# %%
# Data, and the model one variable per step and vectorised
# --------------------------------------------------------
import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt

import pymc_discrete as pmd

K = 2
P = np.array([[0.9, 0.1], [0.15, 0.85]])
MEANS = np.array([-1.0, 1.0])


def simulate(T: int, seed: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """States of the chain and noisy observations of their means."""
    rng = np.random.default_rng(seed)
    states = [0]
    for _ in range(T - 1):
        states.append(rng.choice(K, p=P[states[-1]]))
    return np.array(states), rng.normal(MEANS[states], 0.6)


def hmm(y: np.ndarray, per_variable: bool) -> pm.Model:
    """The chain written one Categorical and one observed Normal per step (as the JAGS
    loop above), or vectorised; the same density."""
    T = len(y)
    with pm.Model() as model:
        mu = pm.Normal("mu", MEANS, 1.0, shape=K)
        sigma = pm.HalfNormal("sigma", 1.0)
        if per_variable:
            z = pm.Categorical("z_0", p=np.ones(K) / K)
            pm.Normal("y_0", mu[z], sigma, observed=y[0])
            for t in range(1, T):
                z = pm.Categorical(f"z_{t}", p=pt.as_tensor(P)[z])
                pm.Normal(f"y_{t}", mu[z], sigma, observed=y[t])
        else:
            z = pm.Categorical("z", p=np.ones(K) / K, shape=T)
            pm.Potential("chain", pt.sum(pt.log(pt.as_tensor(P))[z[:-1], z[1:]])
                         - (T - 1) * np.log(1.0 / K))
            pm.Normal("y", mu[z], sigma, observed=y)
    return model


# %%
# Both sampled after ``register()``
# ---------------------------------
# The gap between the two phrasings' posterior means is measured in their combined Monte
# Carlo standard errors; the decoded states (the most frequent value of every
# :math:`z_t`) are compared with the simulated ones.
def main(T: int = 80, draws: int = 500, tune: int = 500) -> dict:
    states, y = simulate(T)
    pmd.register()
    try:
        runs = {}
        for name, per_variable in (("per variable", True), ("vectorised", False)):
            with hmm(y, per_variable):
                runs[name] = pm.sample(draws=draws, tune=tune, chains=2, cores=1,
                                       random_seed=1, progressbar=False)
    finally:
        pmd.unregister()
    summaries = {name: az.summary(idata, var_names=["mu", "sigma"], kind="all")
                 for name, idata in runs.items()}
    ours, theirs = summaries["per variable"], summaries["vectorised"]
    gap = (ours["mean"] - theirs["mean"]).abs() / np.sqrt(ours["mcse_mean"] ** 2
                                                          + theirs["mcse_mean"] ** 2)
    posterior = runs["per variable"].posterior
    decoded = np.array([np.bincount(posterior[f"z_{t}"].values.ravel(), minlength=K).argmax()
                        for t in range(T)])
    for name, summary in summaries.items():
        print(name)
        print(summary[["mean", "mcse_mean", "ess_bulk", "r_hat"]])
    print("largest gap between the phrasings, in combined MCSE:", round(float(gap.max()), 2))
    return {"gap": float(gap.max()), "r_hat": float(ours["r_hat"].max()),
            "decoded": float((decoded == states).mean())}


# %%
# Run
# ---
if __name__ == "__main__":
    result = main()
    assert result["gap"] <= 4, result
    assert result["r_hat"] <= 1.01, result
    assert result["decoded"] > 0.8, result
    print("\ncheck passed: the per-variable model's means within 4 MCSE of the vectorised "
          f"model's, r-hat <= 1.01, {result['decoded']:.0%} of the steps decoded as simulated")
