r"""
Hidden Markov chain: regimes in a noisy series
==============================================

A series of 300 noisy observations that switches between three regimes: a hidden state
:math:`z_t \in \{0, 1, 2\}` follows a sticky Markov chain (it stays with probability
0.95 and moves to either other state with probability 0.025; the first state is
uniform), and each observation is Gaussian around its state's mean:

.. code-block:: text

    mu ~ Normal(0, 3), ordered          (3 state means)
    sigma ~ HalfNormal(1)               (one noise sd)
    z_1 uniform, z_t | z_(t-1) ~ P[z_(t-1)]   (P known: 0.95 on the diagonal)
    y_t ~ Normal(mu[z_t], sigma)

The data are simulated with means (-1.5, 0, 1.5) and sd 0.6, so the true regimes are
known; the transition matrix is fixed (known to the model) to keep the page short. The
chain is written the way PyMC users write it: a ``Categorical`` per step, whose uniform
probabilities are a constant of the density, and the transitions as a potential,
``pm.Potential("chain", pt.sum(log_P[z[:-1], z[1:]]))``.

PyMC's default gives the 300 states ``CategoricalGibbsMetropolis``, which redraws one
state at a time given its neighbours: in a sticky chain a regime boundary then moves by
about one step per draw, and the means, sampled by NUTS given the states, can only
follow. After ``pmd.register()`` a plain ``pm.sample()`` reads off the graph that every
term touches one state or two neighbours (a chain) and picks ``ChainGibbs`` for the
states (the log below says so): each draw redraws the whole chain exactly from its
conditional given the means and sd, by forward filtering and backward sampling; NUTS
samples the means and sd given the chain.

Given the means and sd, the forward-backward algorithm gives every state's exact
posterior probability :math:`P(z_t = k \mid y, \mu, \sigma)`; averaged over the draws
of :math:`(\mu, \sigma)` it is the posterior probability of each state at each step,
which the states' draws estimate too. What to look for: the sampled state frequencies
agree with these smoothed probabilities within 4 standard errors (plus one draw's share,
for the rare states) at nearly every step, the means' r-hat is near 1 with an effective
sample size (ESS) of several hundred from 2 x 500 draws, and the decoded regimes (the
most probable state at each step) follow the simulated ones. PyMC's default, run with
the same settings for comparison, does not converge on this series: one of its two
chains stays in another arrangement of the regimes, with other means and a larger sd,
and r-hat is far above 1.01 (on other simulated series it may converge, with a smaller
ESS). The comparison with forward-backward checks the chain's draws given the means and
sd; the posterior of the means themselves is judged by r-hat, ESS and the simulated
truth.
"""

# %%
# Data and model
# --------------
import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy.special import logsumexp
from scipy.stats import norm

import pymc_discrete as pmd

MEANS, SD, STAY = (-1.5, 0.0, 1.5), 0.6, 0.95


def transition_matrix(k: int = 3, stay: float = STAY) -> np.ndarray:
    """(k, k): ``stay`` on the diagonal, the rest of each row spread evenly."""
    P = np.full((k, k), (1.0 - stay) / (k - 1))
    np.fill_diagonal(P, stay)
    return P


def simulate(T: int = 300, means=MEANS, sd: float = SD, stay: float = STAY,
             seed: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """States ``z`` (T,) and observations ``y`` (T,): the first state uniform, then the
    sticky chain of :func:`transition_matrix`, ``y_t ~ Normal(means[z_t], sd)``."""
    rng = np.random.default_rng(seed)
    P = transition_matrix(len(means), stay)
    z = np.empty(T, dtype=np.int64)
    z[0] = rng.integers(len(means))
    for t in range(1, T):
        z[t] = rng.choice(len(means), p=P[z[t - 1]])
    return z, np.asarray(means)[z] + sd * rng.normal(size=T)


def hmm_model(y: np.ndarray, log_P: np.ndarray) -> pm.Model:
    k = log_P.shape[0]
    with pm.Model() as model:
        z = pm.Categorical("z", p=np.ones(k) / k, shape=len(y))
        pm.Potential("chain", pt.sum(pt.as_tensor(log_P)[z[:-1], z[1:]]))
        mu = pm.Normal("mu", 0.0, 3.0, shape=k, transform=pm.distributions.transforms.ordered,
                       initval=np.linspace(-1.0, 1.0, k))
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu[z], sigma, observed=y)
    return model


# %%
# The exact answer given the means and sd
# ---------------------------------------
# Forward-backward in log space: with the emissions :math:`e_t(k) = \log N(y_t \mid
# \mu_k, \sigma)`, the forward messages :math:`a_1(k) = e_1(k) - \log K`,
# :math:`a_t(k) = e_t(k) + \log \sum_j \exp(a_{t-1}(j) + \log P_{jk})`, the backward ones
# :math:`b_T(k) = 0`, :math:`b_t(j) = \log \sum_k \exp(\log P_{jk} + e_{t+1}(k) +
# b_{t+1}(k))`, and :math:`P(z_t = k \mid y) \propto \exp(a_t(k) + b_t(k))`.


def smoothed_marginals(mu: np.ndarray, sigma: np.ndarray, y: np.ndarray,
                       log_P: np.ndarray) -> np.ndarray:
    """P(z_t = k | y, mu, sigma) at every draw: (draws, T, K) from means (draws, K) and
    sds (draws,); the first state uniform, the transitions ``exp(log_P)``."""
    mu, sigma = np.atleast_2d(mu), np.atleast_1d(sigma)
    emit = norm.logpdf(y[None, :, None], mu[:, None, :], sigma[:, None, None])
    forward, backward = np.empty_like(emit), np.zeros_like(emit)
    forward[:, 0] = emit[:, 0] - np.log(log_P.shape[0])
    for t in range(1, len(y)):
        forward[:, t] = emit[:, t] + logsumexp(forward[:, t - 1, :, None] + log_P, axis=1)
    for t in range(len(y) - 2, -1, -1):
        backward[:, t] = logsumexp(log_P + (emit[:, t + 1] + backward[:, t + 1])[:, None, :],
                                   axis=2)
    log_post = forward + backward
    return np.exp(log_post - logsumexp(log_post, axis=2, keepdims=True))


# %%
# Sampling and checking
# ---------------------


def main(T: int = 300, draws: int = 500, tune: int = 500, out=None,
         compare_default: bool = True) -> dict:
    """Sample the model with register()'s choice (and PyMC's default), compare the
    states' draws with the smoothed probabilities and plot the decoded regimes; returns
    the numbers."""
    z_true, y = simulate(T)
    log_P = np.log(transition_matrix())
    k = log_P.shape[0]
    model = hmm_model(y, log_P)
    settings = dict(draws=draws, tune=tune, chains=2, cores=1, random_seed=1,
                    progressbar=False, compute_convergence_checks=False)
    idatas = {}
    pmd.register()  # plain pm.sample() now lets the package choose the discrete step
    try:
        with model:
            idatas["register()"] = pm.sample(**settings)
    finally:
        pmd.unregister()
    if compare_default:
        with model:
            idatas["PyMC default"] = pm.sample(**settings)

    print(f"\n{T} steps, {int((z_true[1:] != z_true[:-1]).sum())} regime switches "
          f"simulated; 2 chains x {draws} draws after {tune}")
    print(f"{'':<10}{'truth':>7}" + "".join(f"{name + ': mean':>22}{'ESS':>7}{'r-hat':>7}"
                                           for name in idatas))
    table = {name: {} for name in idatas}
    for var, truth in [*((("mu", i), m) for i, m in enumerate(MEANS)), (("sigma", None), SD)]:
        label = var[0] if var[1] is None else f"{var[0]}[{var[1]}]"
        line = f"{label:<10}{truth:>7.2f}"
        for name, idata in idatas.items():
            draws_ = idata.posterior[var[0]]
            if var[1] is not None:
                draws_ = draws_[..., var[1]]
            row = table[name][label] = {"truth": truth, "mean": float(draws_.mean()),
                                        "ess": float(az.ess(draws_)),
                                        "rhat": float(az.rhat(draws_))}
            line += f"{row['mean']:>22.3f}{row['ess']:>7.0f}{row['rhat']:>7.3f}"
        print(line)

    # register()'s state draws against forward-backward at its draws of (mu, sigma)
    post = idatas["register()"].posterior
    given = smoothed_marginals(post["mu"].values.reshape(-1, k),
                               post["sigma"].values.ravel(), y, log_P)  # (draws, T, K)
    smoothed = given.mean(0)
    sampled = np.stack([(post["z"].values == j).mean((0, 1)) for j in range(k)], axis=1)
    # each draw of the chain is exact given the (mu, sigma) before it, so the difference
    # is a mean of S errors of mean 0 and variance q (1 - q), q the smoothed probability
    # at that draw, uncorrelated: its standard error (up to a term of order 1 / S from
    # the pairing of each chain draw with the next draw of mu and sigma). A single draw
    # moves a frequency by 1 / S, more than 4 standard errors where q << 1 / S: the
    # tolerance is 4 standard errors plus one draw's share
    n_draws = given.shape[0]
    se = np.sqrt((given * (1.0 - given)).mean(0) / n_draws)
    within = float((np.abs(sampled - smoothed) <= 4 * se + 1.0 / n_draws).mean())
    decoded = sampled.argmax(1)
    recovered = float((decoded == z_true).mean())
    print(f"\nstate frequencies against the smoothed probabilities: largest difference "
          f"{np.abs(sampled - smoothed).max():.3f}, within 4 standard errors (+ 1 / S) "
          f"at {within:.1%} of the (step, state) pairs")
    print(f"decoded regimes (most probable state per step) equal the simulated ones at "
          f"{recovered:.1%} of the steps")

    fig, axes = plt.subplots(2, 1, figsize=(10, 5.5), sharex=True, layout="constrained")
    t = np.arange(T)
    axes[0].plot(t, y, color="0.75", lw=0.8, zorder=0)
    for j in range(k):
        axes[0].plot(t[decoded == j], y[decoded == j], ".", color=f"C{j}", ms=5,
                     label=f"decoded state {j}")
    axes[0].step(t, np.asarray(MEANS)[z_true], where="mid", color="k", lw=1,
                 label="true state's mean")
    axes[0].set_ylabel("y")
    axes[0].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    for j in range(k):
        axes[1].plot(t, smoothed[:, j], color=f"C{j}", lw=3, alpha=0.35)
        axes[1].plot(t, sampled[:, j], color=f"C{j}", lw=0.8, label=f"P(z = {j})")
    axes[1].set_ylabel(r"$P(z_t = k)$")
    axes[1].set_xlabel("time step")
    axes[1].set_title("thin: state frequencies of the draws; wide: forward-backward "
                      "averaged over the draws of (mu, sigma)", fontsize=9)
    axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if out is not None:
        fig.savefig(out, dpi=100)
    return {"table": table, "sampled": sampled, "smoothed": smoothed, "se": se,
            "within_4_se": within, "max_error": float(np.abs(sampled - smoothed).max()),
            "decoded": decoded, "truth": z_true, "recovered": recovered}


# %%
# Run
# ---
if __name__ == "__main__":
    result = main()
    assert result["within_4_se"] >= 0.95, result["within_4_se"]
    # r-hat of well-mixed chains scatters above 1 by about 1 / (ESS per chain): a bound
    # of 1 + 6 / (ESS per chain) is passed by mixed chains whatever the seed (0 of 6,000
    # simulated runs failed it), and missed by a chain stuck in another arrangement
    for row in result["table"]["register()"].values():
        assert row["rhat"] < 1 + 6 / (row["ess"] / 2), row
    assert result["recovered"] >= 0.9, result["recovered"]
    print("\ncheck passed: the state frequencies within 4 standard errors (+ 1 / S) of the "
          "smoothed probabilities at 95% of the (step, state) pairs or more, r-hat below "
          "1 + 6 / (ESS per chain) for the means and sd, and 90% of the regimes or more "
          "decoded as simulated")
    plt.show()
