"""Applied model families with discrete unknowns, each with its discrete variables summed out.

The models of the applied benchmark (``benchmarks/run_applied.py``):

* :func:`gaussian_mixture` -- iris, K = 3 diagonal Gaussians, 150 cluster labels;
* :func:`site_occupancy` -- MacKenzie et al. (2002), 200 sites x 5 visits, simulated;
* :func:`capture_recapture` -- model M0 with data augmentation (Royle 2009), simulated;
* :func:`change_point` -- the UK coal-mining disasters of PyMC's own change-point example;
* :func:`variable_selection` -- spike-and-slab on the 10 diabetes predictors;
* :func:`small_spike_and_slab` -- a 4-predictor regression whose spike is a narrow
  Gaussian (a scale mixture, as in Liesel's tutorial), simulated;
* :func:`gaussian_hmm` -- a Gaussian hidden Markov model, 300 steps, 3 sticky states,
  simulated (the chain a ``pm.Potential``, summed out by the forward algorithm);
* :func:`n_mixture` -- Royle's (2004) N-mixture model, 150 sites x 4 visits, simulated:
  Poisson abundances (latent counts of unbounded support) counted with Binomial error.

Every builder returns an :class:`AppliedModel`: the PyMC model with the discrete latent
variables as free variables, the same model with them summed out by hand (a logsumexp
``pm.Potential`` next to the same continuous priors, names and transforms, so that a point
of one is a point of the other), functions giving the discrete summaries (e.g. the
abundance ``N = sum z``) from draws of the discrete model and their Rao-Blackwellised
values ``E[summary | continuous parameters]`` from draws of the marginal model, a NumPyro
version for ``DiscreteHMCGibbs`` and the hand-picked best configuration of
``pymc_discrete`` steps. ``tests/test_applied_models.py`` checks, on reduced data, that
each marginal log density equals the logsumexp of the discrete model's over every
discrete configuration.

The marginals are written by hand (pymc-extras' ``marginalize`` is not installed and
may not support PyMC 6.4); each is the exact sum, not an approximation.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy.special import log_softmax

import pymc_discrete as pmd
from benchmarks.exact_selection import exact_selection
from benchmarks.run_models import numpyro_mixture
from examples.iris_mixture import mixture_parameters

__all__ = [
    "AppliedModel",
    "BUILDERS",
    "COAL_MINING_DISASTERS",
    "capture_recapture",
    "change_point",
    "exact_scale_mixture",
    "gaussian_hmm",
    "gaussian_mixture",
    "hmm_smoothing",
    "hmm_transitions",
    "n_mixture",
    "simulate_hmm",
    "simulate_n_mixture",
    "simulate_spike_and_slab",
    "site_occupancy",
    "small_spike_and_slab",
    "variable_selection",
]

#: draws of named variables, each of shape (chain, draw, *shape)
Draws = Mapping[str, np.ndarray]


@dataclass
class AppliedModel:
    """One applied model in both forms, with what the benchmark measures on it.

    Attributes
    ----------
    name : str
        Short key (``--models`` on the command line).
    title : str
        Heading of its table.
    source : str
        Where the data and settings come from (shown under the table).
    model : pymc.Model
        The model with the discrete latent variables as free variables.
    marginal : pymc.Model
        The same model with the discrete variables summed out: same continuous
        parameters, names, priors and transforms.
    continuous : list of str
        Continuous parameters measured (every element of each).
    discrete : list of str
        The discrete latent variables of ``model``.
    summaries : dict
        Name -> function of the posterior draws of ``model`` (a mapping of arrays of shape
        (chain, draw, *shape)) giving an array of shape (chain, draw): a scalar per draw.
    marginal_summaries : callable
        Function of the posterior draws of the continuous parameters (of either model)
        giving, for every name of ``summaries``, an array (chain, draw) of the conditional
        expectation of the summary given those parameters and the data. Its mean over the
        marginal model's draws is the summary's posterior mean (Rao-Blackwellised).
    headline : list of str
        The summaries shown in the table (the others enter the agreement check only).
    best_steps : callable
        Model -> list of step methods: the hand-picked best ``pymc_discrete``
        configuration (PyMC assigns the remaining variables).
    start : callable
        ``start(chains, seed)``: a list of one dict of discrete initial values per chain
        (dispersed, valid starting points), passed to ``pm.sample(initvals=...)`` by every
        run of ``model`` and to NumPyro as ``init_params``.
    numpyro_model : callable or None
        Zero-argument factory of the NumPyro model (site names as in ``model``), or None
        where ``DiscreteHMCGibbs`` cannot express the model. A factory, so that importing
        this module does not need NumPyro.
    numpyro_start : callable or None
        Maps one dict of ``start`` to the NumPyro model's discrete sites (None: the
        same names and values).
    best_label : str
        What ``best_steps`` is, for the tables ("BlockedGibbs": data augmentation; on
        the HMM and the N-mixture model, the alternative to ``register()``'s choice).
    exact_means : callable or None
        Zero-argument function giving the exact posterior mean of every continuous
        element (named like ``beta[0]``) and every summary, where they can be computed
        without Monte Carlo error; the benchmark then measures agreement against them
        instead of against the marginalised NUTS run.
    """

    name: str
    title: str
    source: str
    model: pm.Model
    marginal: pm.Model
    continuous: list[str]
    discrete: list[str]
    summaries: dict[str, Callable[[Draws], np.ndarray]]
    marginal_summaries: Callable[[Draws], dict[str, np.ndarray]]
    headline: list[str]
    best_steps: Callable[[pm.Model], list]
    start: Callable[[int, int], list[dict]]
    numpyro_model: Callable[[], Callable] | None = None
    numpyro_start: Callable[[dict], dict] | None = None
    exact_means: Callable[[], dict[str, float]] | None = None
    best_label: str = "BlockedGibbs"


def albp_exact(names: list[str]) -> Callable[[pm.Model], list]:
    """One ALBP block with exact local ratios over the discrete variables ``names``."""

    def steps(model: pm.Model) -> list:
        return [pmd.ALBP([model[n] for n in names], proposal="exact")]

    return steps


def collapsed_nuts(names: list[str]) -> Callable[[pm.Model], list]:
    """One CollapsedNUTS over the discrete variables ``names``: summed out for NUTS (a
    chain by the forward algorithm), then drawn exactly."""

    def steps(model: pm.Model) -> list:
        return [pmd.CollapsedNUTS([model[n] for n in names])]

    return steps


def count_lbp(names: list[str]) -> Callable[[pm.Model], list]:
    """One CountLBP over the latent counts ``names`` (NUTS for the rest)."""

    def steps(model: pm.Model) -> list:
        return [pmd.CountLBP([model[n] for n in names])]

    return steps


def blocked_gibbs(names: list[str]) -> Callable[[pm.Model], list]:
    """One BlockedGibbs block over the discrete variables ``names``: exact conditional
    draws of whole colour classes (all labels or indicators at once when, given the
    continuous parameters, they are independent).

    The hand-picked best on every model: on 4 chains x 300-400 draws (seed 1) its
    smallest continuous ESS/s was 2.5-14x that of ALBP (exact) and 1.3-9x that of ALBP
    (exact) with 4 steps per draw on the mixture, occupancy, capture-recapture and
    selection models, and about 2.5x ALBP (exact)'s on the change point (4 x 100 draws:
    the switch year drawn from its exact conditional). Change a model's
    ``best_steps`` in its builder to try another configuration (:func:`albp_exact`).
    """

    def steps(model: pm.Model) -> list:
        return [pmd.BlockedGibbs([model[n] for n in names])]

    return steps


def _flatten_draws(a: np.ndarray) -> tuple[np.ndarray, tuple[int, int]]:
    """(chain, draw, *shape) -> (chain * draw, *shape) and the leading shape."""
    return a.reshape(-1, *a.shape[2:]), a.shape[:2]


# --------------------------------------------------------------------------------------
# a. Gaussian mixture on iris
# --------------------------------------------------------------------------------------


def iris_standardised() -> np.ndarray:
    """The 150 x 4 iris measurements, each column standardised (as ``examples/iris_mixture.py``)."""
    from sklearn.datasets import load_iris

    data = load_iris().data
    return (data - data.mean(0)) / data.std(0)


def _mixture_log_resp(draws: Draws, data: np.ndarray) -> np.ndarray:
    """log P(z_i = k | w, mu, sigma, y), shape (n_draws, n, k), at every draw."""
    w, _ = _flatten_draws(draws["w"])
    first, _ = _flatten_draws(draws["mu_first"])
    rest, _ = _flatten_draws(draws["mu_rest"])
    sigma, _ = _flatten_draws(draws["sigma"])
    mu = np.concatenate([first[:, :, None], rest], axis=2)  # (S, k, d)
    y = data[None, :, None, :]  # (1, n, 1, d)
    z = (y - mu[:, None]) / sigma[:, None]
    comp = (-0.5 * z**2 - np.log(sigma[:, None]) - 0.5 * np.log(2 * np.pi)).sum(-1)
    return log_softmax(comp + np.log(w)[:, None, :], axis=-1)


def gaussian_mixture(data: np.ndarray | None = None, k: int = 3) -> AppliedModel:
    """Mixture of ``k`` diagonal Gaussians on the standardised iris measurements.

    Data: scikit-learn's ``load_iris`` (150 flowers, 4 measurements), standardised. Model:
    exactly ``examples/iris_mixture.py``, with the labels summed out in the marginal
    model: ``w ~ Dirichlet(1)``, means ``Normal(0, 2)`` ordered on
    the first coordinate (this identifies the components, so means are comparable across
    chains; the marginal model carries the same ordering), scales ``HalfNormal(1)``,
    labels ``z_i ~ Categorical(w)``. Summaries: the cluster sizes ``n_j = #{i: z_i = j}``.

    Parameters
    ----------
    data : ndarray, optional
        Observations (n, d); default the standardised iris data.
    k : int
        Number of components.

    Returns
    -------
    AppliedModel
    """
    data = iris_standardised() if data is None else np.asarray(data, dtype=float)
    n, d = data.shape
    with pm.Model() as model:
        w, mu, sigma = mixture_parameters(k, d)
        z = pm.Categorical("z", w, shape=n)
        pm.Normal("y", mu=mu[z], sigma=sigma[z], observed=data)
    with pm.Model() as marginal:
        w, mu, sigma = mixture_parameters(k, d)
        y = pt.as_tensor(data)[:, None, :]
        component = pm.logp(pm.Normal.dist(mu[None], sigma[None]), y).sum(-1) + pt.log(w)
        pm.Potential("mixture", pt.logsumexp(component, axis=1).sum())

    summaries = {f"n_{j}": (lambda draws, j=j: (draws["z"] == j).sum(-1).astype(float))
                 for j in range(k)}

    def marginal_summaries(draws: Draws) -> dict[str, np.ndarray]:
        shape = draws["w"].shape[:2]
        resp = np.exp(_mixture_log_resp(draws, data)).sum(1)  # (S, k)
        return {f"n_{j}": resp[:, j].reshape(shape) for j in range(k)}

    def start(chains: int, seed: int) -> list[dict]:
        # PyMC's initial point puts every label in one component; random labels instead
        return [{"z": np.random.default_rng(seed + c).integers(0, k, n)}
                for c in range(chains)]

    return AppliedModel(
        name="mixture", title=f"Gaussian mixture: iris, K = {k} ({n} labels)",
        source="scikit-learn's iris data, standardised; the model of "
               "`examples/iris_mixture.py` (means ordered on the first coordinate)",
        model=model, marginal=marginal, continuous=["w", "mu_first", "mu_rest", "sigma"],
        discrete=["z"], summaries=summaries, marginal_summaries=marginal_summaries,
        headline=[f"n_{j}" for j in range(k)], best_steps=blocked_gibbs(["z"]), start=start,
        numpyro_model=lambda: numpyro_mixture(data, k),
    )


# --------------------------------------------------------------------------------------
# b. Site occupancy
# --------------------------------------------------------------------------------------


def simulate_occupancy(n_sites: int = 200, n_visits: int = 5, psi: float = 0.6,
                       p: float = 0.3, seed: int = 0) -> np.ndarray:
    """Detection histories (n_sites, n_visits) of 0/1: site i is occupied with
    probability ``psi``, an occupied site is detected at each visit with probability ``p``."""
    rng = np.random.default_rng(seed)
    occupied = rng.random(n_sites) < psi
    return ((rng.random((n_sites, n_visits)) < p) & occupied[:, None]).astype(np.int64)


def _occupancy_start(detected: np.ndarray) -> Callable[[int, int], list[dict]]:
    """Per chain: z = 1 at every site with a detection (z = 0 there has no density),
    a fair coin elsewhere."""

    def start(chains: int, seed: int) -> list[dict]:
        out = []
        for c in range(chains):
            coin = np.random.default_rng(seed + c).integers(0, 2, detected.size)
            out.append({"z": np.where(detected, 1, coin).astype(np.int64)})
        return out

    return start


def site_occupancy(y: np.ndarray | None = None) -> AppliedModel:
    """Single-season site occupancy (MacKenzie et al. 2002, Ecology 83: 2248-2255).

    Settings: 200 sites, 5 visits each, occupancy ``psi = 0.6`` and detection ``p = 0.3``,
    simulated with seed 0 (:func:`simulate_occupancy`). Model: ``psi, p ~ Beta(1, 1)``,
    ``z_i ~ Bernoulli(psi)``, ``y_ij ~ Bernoulli(z_i p)``. Summary: the number of occupied
    sites ``sum z``. Marginal: a site with a detection is occupied; one without is
    occupied with weight ``psi (1 - p)^J`` against ``1 - psi``.

    Parameters
    ----------
    y : ndarray, optional
        Detection histories (sites, visits); default the simulated 200 x 5.

    Returns
    -------
    AppliedModel
    """
    y = simulate_occupancy() if y is None else np.asarray(y, dtype=np.int64)
    n_sites, n_visits = y.shape
    counts = y.sum(1)
    detected = counts > 0
    with pm.Model() as model:
        psi = pm.Beta("psi", 1.0, 1.0)
        p = pm.Beta("p", 1.0, 1.0)
        z = pm.Bernoulli("z", psi, shape=n_sites)
        pm.Bernoulli("y", z[:, None] * p, observed=y)
    with pm.Model() as marginal:
        psi = pm.Beta("psi", 1.0, 1.0)
        p = pm.Beta("p", 1.0, 1.0)
        # occupied: psi times the site's detection history; empty: 1 - psi, and only
        # possible for a site never detected (log 0 = -inf otherwise)
        occupied = pt.log(psi) + counts * pt.log(p) + (n_visits - counts) * pt.log1p(-p)
        empty = pt.log1p(-psi) + np.where(detected, -np.inf, 0.0)
        pm.Potential("sites", pt.logaddexp(occupied, empty).sum())

    def marginal_summaries(draws: Draws) -> dict[str, np.ndarray]:
        psi_, p_ = draws["psi"], draws["p"]
        q = psi_ * (1 - p_) ** n_visits
        return {"occupied": detected.sum() + (~detected).sum() * q / (q + 1 - psi_)}

    return AppliedModel(
        name="occupancy",
        title=f"Site occupancy: {n_sites} sites x {n_visits} visits",
        source="simulated (seed 0) with psi = 0.6, p = 0.3, the single-season model of "
               "MacKenzie et al. (2002)",
        model=model, marginal=marginal, continuous=["psi", "p"], discrete=["z"],
        summaries={"occupied": lambda draws: draws["z"].sum(-1).astype(float)},
        marginal_summaries=marginal_summaries, headline=["occupied"],
        best_steps=blocked_gibbs(["z"]), start=_occupancy_start(detected),
        numpyro_model=lambda: _numpyro_occupancy(y),
    )


def _numpyro_occupancy(y: np.ndarray) -> Callable:
    """The occupancy model in NumPyro."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    y = jnp.asarray(y)

    def model():
        psi = numpyro.sample("psi", dist.Beta(1.0, 1.0))
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        z = numpyro.sample("z", dist.Bernoulli(probs=psi).expand([y.shape[0]]))
        numpyro.sample("y", dist.Bernoulli(probs=z[:, None] * p), obs=y)

    return model


# --------------------------------------------------------------------------------------
# c. Capture-recapture M0 with data augmentation
# --------------------------------------------------------------------------------------


def simulate_captures(n_true: int = 100, occasions: int = 5, p: float = 0.3,
                      augmented: int = 300, seed: int = 0) -> np.ndarray:
    """Capture counts of the individuals caught at least once among ``n_true``, each
    caught with probability ``p`` on each of ``occasions``, padded with zeros to
    ``augmented`` rows (data augmentation)."""
    rng = np.random.default_rng(seed)
    counts = rng.binomial(occasions, p, size=n_true)
    caught = counts[counts > 0]
    if caught.size > augmented:
        raise ValueError(f"{caught.size} individuals caught, more than {augmented} rows")
    return np.concatenate([caught, np.zeros(augmented - caught.size, dtype=caught.dtype)])


def capture_recapture(y: np.ndarray | None = None, occasions: int = 5) -> AppliedModel:
    """Closed-population model M0 with data augmentation (Royle 2009, Biometrics 65:
    267-274; Royle & Dorazio 2008, ch. 5).

    Settings: true N = 100, T = 5 occasions, capture probability p = 0.3, augmented to
    M = 300 rows, simulated with seed 0 (:func:`simulate_captures`). Model:
    ``omega, p ~ Beta(1, 1)``, ``z_i ~ Bernoulli(omega)``, capture counts
    ``y_i ~ Binomial(T, z_i p)``. Summary: the abundance ``N = sum z``. Marginal: an
    individual caught is real; an uncaught row is real with weight
    ``omega (1 - p)^T`` against ``1 - omega``.

    Parameters
    ----------
    y : ndarray, optional
        Capture counts of the M augmented rows; default the simulated data.
    occasions : int
        Number of capture occasions T.

    Returns
    -------
    AppliedModel
    """
    y = simulate_captures(occasions=occasions) if y is None else np.asarray(y, np.int64)
    rows = y.size
    caught = y > 0
    with pm.Model() as model:
        omega = pm.Beta("omega", 1.0, 1.0)
        p = pm.Beta("p", 1.0, 1.0)
        z = pm.Bernoulli("z", omega, shape=rows)
        pm.Binomial("y", occasions, z * p, observed=y)
    with pm.Model() as marginal:
        omega = pm.Beta("omega", 1.0, 1.0)
        p = pm.Beta("p", 1.0, 1.0)
        real = pt.log(omega) + pm.logp(pm.Binomial.dist(occasions, p), y)
        # a row that is not a real individual has no captures: Binomial(T, 0) at y = 0
        # is 1 (log 0), at y > 0 impossible
        absent = pt.log1p(-omega) + np.where(caught, -np.inf, 0.0)
        pm.Potential("rows", pt.logaddexp(real, absent).sum())

    def marginal_summaries(draws: Draws) -> dict[str, np.ndarray]:
        omega_, p_ = draws["omega"], draws["p"]
        q = omega_ * (1 - p_) ** occasions
        return {"N": caught.sum() + (~caught).sum() * q / (q + 1 - omega_)}

    return AppliedModel(
        name="capture", title=f"Capture-recapture M0, data augmentation to M = {rows}",
        source=f"simulated (seed 0): N = 100, T = {occasions}, p = 0.3, {caught.sum()} "
               "individuals caught; model M0 with data augmentation (Royle 2009)",
        model=model, marginal=marginal, continuous=["omega", "p"], discrete=["z"],
        summaries={"N": lambda draws: draws["z"].sum(-1).astype(float)},
        marginal_summaries=marginal_summaries, headline=["N"],
        best_steps=blocked_gibbs(["z"]), start=_occupancy_start(caught),
        numpyro_model=lambda: _numpyro_capture(y, occasions),
    )


def _numpyro_capture(y: np.ndarray, occasions: int) -> Callable:
    """Model M0 with data augmentation in NumPyro."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    y = jnp.asarray(y)

    def model():
        omega = numpyro.sample("omega", dist.Beta(1.0, 1.0))
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        z = numpyro.sample("z", dist.Bernoulli(probs=omega).expand([y.shape[0]]))
        numpyro.sample("y", dist.Binomial(occasions, probs=z * p), obs=y)

    return model


# --------------------------------------------------------------------------------------
# d. Change point: coal-mining disasters
# --------------------------------------------------------------------------------------

#: Yearly numbers of UK coal-mining disasters, 1851-1961 (111 years), as in PyMC's
#: "Case study 2: Coal mining disasters" (docs, PyMC overview); the two NaN (1890, 1934)
#: are the missing values that example imputes. Jarrett (1979), Biometrika 66: 191-193.
COAL_MINING_DISASTERS = np.array([
    4, 5, 4, 0, 1, 4, 3, 4, 0, 6, 3, 3, 4, 0, 2, 6,
    3, 3, 5, 4, 5, 3, 1, 4, 4, 1, 5, 5, 3, 4, 2, 5,
    2, 2, 3, 4, 2, 1, 3, np.nan, 2, 1, 1, 1, 1, 3, 0, 0,
    1, 0, 1, 1, 0, 0, 3, 1, 0, 3, 2, 2, 0, 1, 1, 1,
    0, 1, 0, 1, 0, 0, 0, 2, 1, 0, 0, 0, 1, 1, 0, 2,
    3, 3, 1, np.nan, 2, 1, 1, 1, 1, 2, 4, 2, 0, 0, 1, 4,
    0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1,
])
COAL_MINING_YEARS = np.arange(1851, 1962)


def change_point(counts: np.ndarray | None = None, years: np.ndarray | None = None,
                 lower: int = 1851, upper: int = 1961) -> AppliedModel:
    """Poisson change point with a discrete switch year (PyMC's coal-mining example).

    Data: :data:`COAL_MINING_DISASTERS` with the two missing years dropped (PyMC's
    example imputes them; dropping them keeps every unknown but the switch point
    continuous, and the switch point's posterior hardly depends on two of 111 years).
    Model: ``switchpoint ~ DiscreteUniform(1851, 1961)``,
    ``early_rate, late_rate ~ Exponential(1)``, disasters in year t
    ``~ Poisson(late_rate if t >= switchpoint else early_rate)``. Summary: the switch
    point. Marginal: a logsumexp over the 111 possible years.

    Parameters
    ----------
    counts, years : ndarray, optional
        Observed counts and their years (NaN counts are dropped); default the data above.
    lower, upper : int
        Bounds of the switch point's uniform prior.

    Returns
    -------
    AppliedModel
    """
    counts = COAL_MINING_DISASTERS if counts is None else np.asarray(counts, dtype=float)
    years = COAL_MINING_YEARS if years is None else np.asarray(years)
    keep = ~np.isnan(counts)
    counts, years = counts[keep].astype(np.int64), years[keep].astype(np.int64)
    candidates = np.arange(lower, upper + 1)
    # late[s, t] = 1 if year t is on or after candidate switch year s
    late = (years[None, :] >= candidates[:, None]).astype(float)
    with pm.Model() as model:
        s = pm.DiscreteUniform("switchpoint", lower=lower, upper=upper)
        early = pm.Exponential("early_rate", 1.0)
        late_rate = pm.Exponential("late_rate", 1.0)
        pm.Poisson("disasters", pm.math.switch(years >= s, late_rate, early), observed=counts)
    with pm.Model() as marginal:
        early = pm.Exponential("early_rate", 1.0)
        late_rate = pm.Exponential("late_rate", 1.0)
        lp_early = pm.logp(pm.Poisson.dist(early), counts)
        lp_late = pm.logp(pm.Poisson.dist(late_rate), counts)
        by_year = pt.dot(1.0 - late, lp_early) + pt.dot(late, lp_late)
        # the prior of every candidate year as PyMC computes it (in float32: PyMC's
        # DiscreteUniform logp is -log(111) of a small integer type)
        prior = pm.logp(pm.DiscreteUniform.dist(lower=lower, upper=upper), candidates)
        pm.Potential("switch", pt.logsumexp(by_year + prior))

    from scipy.special import gammaln

    log_fact = gammaln(counts + 1.0)

    def marginal_summaries(draws: Draws) -> dict[str, np.ndarray]:
        e, _ = _flatten_draws(draws["early_rate"])
        l, shape = _flatten_draws(draws["late_rate"])

        def lp(rate):  # (S, T)
            return counts * np.log(rate[:, None]) - rate[:, None] - log_fact

        logw = lp(e) @ (1.0 - late).T + lp(l) @ late.T  # (S, candidates)
        prob = np.exp(log_softmax(logw, axis=1))
        return {"switchpoint": (prob @ candidates).reshape(shape)}

    def start(chains: int, seed: int) -> list[dict]:
        return [{"switchpoint": np.int64(np.random.default_rng(seed + c).integers(
            lower, upper + 1))} for c in range(chains)]

    return AppliedModel(
        name="changepoint", title="Change point: UK coal-mining disasters 1851-1961",
        source="the yearly counts of PyMC's coal-mining change-point example (Jarrett 1979) "
               "without its two missing years",
        model=model, marginal=marginal, continuous=["early_rate", "late_rate"],
        discrete=["switchpoint"],
        summaries={"switchpoint": lambda draws: draws["switchpoint"].astype(float)},
        marginal_summaries=marginal_summaries, headline=["switchpoint"],
        best_steps=blocked_gibbs(["switchpoint"]), start=start,
        numpyro_model=lambda: _numpyro_change_point(counts, years, lower, upper),
        numpyro_start=lambda values: {
            "switchpoint_offset": values["switchpoint"] - np.int64(lower)},
    )


def _numpyro_change_point(counts: np.ndarray, years: np.ndarray, lower: int,
                          upper: int) -> Callable:
    """The change point in NumPyro.

    ``DiscreteHMCGibbs`` proposes the values 0, 1, ..., K - 1 of a discrete site whatever
    its support (numpyro/infer/gibbs.py, ``_discrete_gibbs_proposal_body_fn``), so a
    ``DiscreteUniform(1851, 1961)`` site never moves: the model samples the offset from
    1851 instead (the same prior) and records the year as the deterministic
    ``switchpoint``.
    """
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    counts, years = jnp.asarray(counts), jnp.asarray(years)

    def model():
        offset = numpyro.sample("switchpoint_offset", dist.DiscreteUniform(0, upper - lower))
        s = numpyro.deterministic("switchpoint", lower + offset)
        early = numpyro.sample("early_rate", dist.Exponential(1.0))
        late = numpyro.sample("late_rate", dist.Exponential(1.0))
        numpyro.sample("disasters", dist.Poisson(jnp.where(years >= s, late, early)),
                       obs=counts)

    return model


# --------------------------------------------------------------------------------------
# e. Bayesian variable selection
# --------------------------------------------------------------------------------------

#: prior inclusion probability, coefficient scale, as in examples/spike_and_slab.py
INCLUSION, SLAB = 0.1, 0.5


def diabetes_standardised() -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The 10 diabetes predictors standardised, the response standardised, the names
    (the main effects of ``examples/spike_and_slab.py``, without its interactions)."""
    from sklearn.datasets import load_diabetes

    data = load_diabetes()
    X = (data.data - data.data.mean(0)) / data.data.std(0)
    y = (data.target - data.target.mean()) / data.target.std()
    return X, y, list(data.feature_names)


def all_patterns(p: int) -> np.ndarray:
    """Every 0/1 vector of length ``p``, shape (2^p, p)."""
    return np.array(list(itertools.product((0.0, 1.0), repeat=p)))


def variable_selection(X: np.ndarray | None = None, y: np.ndarray | None = None,
                       names: list[str] | None = None) -> AppliedModel:
    """Spike-and-slab regression on the 10 standardised diabetes predictors.

    Data: scikit-learn's ``load_diabetes`` (442 patients), predictors and response
    standardised. Model: the priors of ``examples/spike_and_slab.py``: indicators
    ``g_j ~ Bernoulli(0.1)``, coefficients ``beta_j ~ Normal(0, 0.5)`` (the regression
    uses ``g * beta``), intercept ``alpha ~ Normal(0, 1)``, noise ``sigma ~ HalfNormal(1)``,
    but with the 10 main effects only so that the marginal can enumerate all 2^10 = 1024
    inclusion patterns (a logsumexp over them, with the residual sum of squares from the
    sufficient statistics X'X, X'y). Summaries: the model size ``sum g`` (shown) and the
    10 posterior inclusion probabilities. Its posterior means are also known exactly
    (``exact_means``: conjugate in the coefficients given the pattern and ``sigma``,
    summed over the patterns, integrated over ``sigma`` on a grid;
    ``benchmarks/exact_selection.py``).

    Parameters
    ----------
    X, y : ndarray, optional
        Predictors (n, p) and response (n,); default the diabetes data.
    names : list of str, optional
        Predictor names (for the summaries).

    Returns
    -------
    AppliedModel
    """
    if X is None:
        X, y, names = diabetes_standardised()
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    n, p = X.shape
    names = names or [f"x{j}" for j in range(p)]
    G = all_patterns(p)
    log_prior = G @ np.full(p, np.log(INCLUSION)) + (1 - G) @ np.full(p, np.log1p(-INCLUSION))
    XtX, Xty, Xt1, yty, y1 = X.T @ X, X.T @ y, X.sum(0), y @ y, y.sum()
    with pm.Model() as model:
        g = pm.Bernoulli("g", INCLUSION, shape=p)
        beta = pm.Normal("beta", 0.0, SLAB, shape=p)
        sigma = pm.HalfNormal("sigma", 1.0)
        alpha = pm.Normal("alpha", 0.0, 1.0)
        pm.Normal("y", mu=alpha + pm.math.dot(X, g * beta), sigma=sigma, observed=y)
    with pm.Model() as marginal:
        beta = pm.Normal("beta", 0.0, SLAB, shape=p)
        sigma = pm.HalfNormal("sigma", 1.0)
        alpha = pm.Normal("alpha", 0.0, 1.0)
        B = pt.as_tensor(G) * beta[None, :]  # coefficients of every pattern
        # |y - alpha - X b|^2 = |y - alpha|^2 - 2 b'X'(y - alpha) + b'X'X b
        resid0 = yty - 2.0 * alpha * y1 + n * alpha**2
        rss = resid0 - 2.0 * pt.dot(B, Xty - alpha * Xt1) + (pt.dot(B, XtX) * B).sum(1)
        loglik = -0.5 * n * np.log(2 * np.pi) - n * pt.log(sigma) - rss / (2.0 * sigma**2)
        pm.Potential("patterns", pt.logsumexp(log_prior + loglik))

    def marginal_summaries(draws: Draws, chunk: int = 500) -> dict[str, np.ndarray]:
        beta_, shape = _flatten_draws(draws["beta"])
        alpha_, _ = _flatten_draws(draws["alpha"])
        sigma_, _ = _flatten_draws(draws["sigma"])
        pip = np.empty_like(beta_)
        for lo in range(0, beta_.shape[0], chunk):  # (chunk, 1024, p) at a time
            b, a, s = beta_[lo:lo + chunk], alpha_[lo:lo + chunk], sigma_[lo:lo + chunk]
            B = G[None] * b[:, None, :]
            rss = (yty - 2 * a * y1 + n * a**2)[:, None] \
                - 2 * B @ Xty + 2 * a[:, None] * (B @ Xt1) + ((B @ XtX) * B).sum(-1)
            logw = log_prior - n * np.log(s)[:, None] - rss / (2 * s[:, None] ** 2)
            pip[lo:lo + chunk] = np.exp(log_softmax(logw, axis=1)) @ G
        out = {"size": pip.sum(1).reshape(shape)}
        out.update({f"pip[{names[j]}]": pip[:, j].reshape(shape) for j in range(p)})
        return out

    summaries = {"size": lambda draws: draws["g"].sum(-1).astype(float)}
    summaries.update({f"pip[{names[j]}]": (lambda draws, j=j: draws["g"][..., j].astype(float))
                      for j in range(p)})

    def start(chains: int, seed: int) -> list[dict]:
        return [{"g": np.random.default_rng(seed + c).integers(0, 2, p)}
                for c in range(chains)]

    def exact_means() -> dict[str, float]:
        exact = exact_selection(X, y, inclusion=INCLUSION, slab=SLAB, patterns=G)
        out = {f"beta[{j}]": float(exact["beta"][j]) for j in range(p)}
        out.update(alpha=exact["alpha"], sigma=exact["sigma"], size=exact["size"])
        out.update({f"pip[{names[j]}]": float(exact["pip"][j]) for j in range(p)})
        return out

    return AppliedModel(
        name="selection", title=f"Variable selection: diabetes, {p} predictors, spike-and-slab",
        source="scikit-learn's diabetes data (442 patients, 10 standardised predictors); the "
               "priors of `examples/spike_and_slab.py`",
        model=model, marginal=marginal, continuous=["beta", "alpha", "sigma"],
        discrete=["g"], summaries=summaries, marginal_summaries=marginal_summaries,
        headline=["size"], best_steps=blocked_gibbs(["g"]), start=start,
        numpyro_model=lambda: _numpyro_selection(X, y), exact_means=exact_means,
    )


def _numpyro_selection(X: np.ndarray, y: np.ndarray) -> Callable:
    """The spike-and-slab regression in NumPyro."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    X, y = jnp.asarray(X), jnp.asarray(y)
    p = X.shape[1]

    def model():
        g = numpyro.sample("g", dist.Bernoulli(INCLUSION).expand([p]))
        beta = numpyro.sample("beta", dist.Normal(0.0, SLAB).expand([p]))
        sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
        alpha = numpyro.sample("alpha", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(alpha + X @ (g * beta), sigma), obs=y)

    return model


# --------------------------------------------------------------------------------------
# f. A small spike-and-slab regression with a continuous spike (scale mixture)
# --------------------------------------------------------------------------------------

#: prior inclusion probability, slab and spike standard deviations of the scale mixture
SCALE_INCLUSION, SCALE_SLAB, SCALE_SPIKE = 0.5, 1.0, 0.1

#: the seed of :func:`small_spike_and_slab`'s data: the first (0, 1, 2, ...) at which
#: every posterior inclusion probability is within 4e-4 of 0 or 1 or at least 0.02 from
#: both. In between, a run of 400-4,000 draws may never see the rarer value of g_j, and
#: its mean of g_j is then off by more than the agreement check's floor allows (1e-4, so
#: 4 MCSE = 4e-4) whatever the sampler: at seed 0, P(g_1 = 1 | y) = 0.99908 (9.2 "MCSE"
#: off when g_1 stays 1), at seed 1 0.99191; at seed 2 0.99981.
SCALE_DATA_SEED = 2


def simulate_spike_and_slab(n: int = 100, coef: tuple[float, ...] = (1.0, 0.5, 0.0, 0.0),
                            noise: float = 1.0, seed: int = SCALE_DATA_SEED,
                            ) -> tuple[np.ndarray, np.ndarray]:
    """Predictors ``X`` (n, p), standard normal, and ``y = X coef + noise * e`` with
    standard normal ``e``, simulated with ``seed``."""
    rng = np.random.default_rng(seed)
    coef_ = np.asarray(coef, dtype=float)
    X = rng.normal(size=(n, coef_.size))
    return X, X @ coef_ + noise * rng.normal(size=n)


def exact_scale_mixture(X: np.ndarray, y: np.ndarray, *, inclusion: float = SCALE_INCLUSION,
                        slab: float = SCALE_SLAB, spike: float = SCALE_SPIKE,
                        s_grid: np.ndarray | None = None) -> dict[str, np.ndarray | float]:
    """Exact posterior means of :func:`small_spike_and_slab`'s model.

    Given the indicators ``g`` and the noise ``s``, the coefficients are a conjugate
    Gaussian regression with prior standard deviations ``slab`` (``g_j = 1``) or
    ``spike`` (``g_j = 0``), and the evidence ``p(y | g, s)`` is Gaussian in closed form
    (the algebra of ``benchmarks/exact_selection.py``, without intercept and with every
    coefficient kept). The means are a sum over the ``2^p`` patterns and a Riemann sum over
    ``s`` on an equally spaced grid (its end cells must hold no posterior mass).

    Parameters
    ----------
    X, y : ndarray
        Predictors (n, p) and response (n,).
    inclusion, slab, spike : float
        Prior inclusion probability and the two prior standard deviations.
    s_grid : ndarray, optional
        Equally spaced values of ``s``; default 4,000 points on [0.05, 4].

    Returns
    -------
    dict
        ``beta`` (p,), ``s``: posterior means; ``pip`` (p,): posterior inclusion
        probabilities; ``edge_mass``: the posterior mass in the grid's end cells.

    Raises
    ------
    ValueError
        If the grid misses posterior mass at its ends.
    """
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    n, p = X.shape
    grid = np.linspace(0.05, 4.0, 4000) if s_grid is None else np.asarray(s_grid, float)
    s2 = grid**2
    gram, cross, yty = X.T @ X, X.T @ y, float(y @ y)
    patterns = all_patterns(p)
    log_joint = np.empty((len(patterns), len(grid)))
    pieces = []
    for i, g in enumerate(patterns):
        scale = np.where(g > 0, slab, spike)
        # whitened prior: beta = scale * v, v ~ N(0, I); scale X'X scale = U lam U'
        lam, U = np.linalg.eigh(scale[:, None] * gram * scale[None, :])
        c = U.T @ (scale * cross)
        log_joint[i] = -0.5 * (np.log1p(lam[None, :] / s2[:, None]).sum(1)
                               + n * np.log(2 * np.pi * s2) + yty / s2
                               - (c[None, :] ** 2 / (s2[:, None] + lam[None, :])).sum(1) / s2)
        pieces.append((scale, lam, U, c))
    size = patterns.sum(1)
    log_joint += (size * np.log(inclusion) + (p - size) * np.log1p(-inclusion))[:, None]
    log_joint += -0.5 * s2[None, :]  # HalfNormal(1) on s (the grid is in s)
    weight = np.exp(log_joint - log_joint.max())
    weight /= weight.sum()
    edge_mass = float(weight[:, 0].sum() + weight[:, -1].sum())
    if edge_mass > 1e-12:
        raise ValueError(f"the s grid misses posterior mass ({edge_mass:.2e} at its ends)")
    beta = np.zeros(p)
    for (scale, lam, U, c), w in zip(pieces, weight):
        # E[beta | g, s, y] = scale U c / (s^2 + lam), averaged over s per pattern
        beta += scale * (U @ (c * (w @ (1.0 / (s2[:, None] + lam[None, :])))))
    return {"beta": beta, "s": float(weight.sum(0) @ grid),
            "pip": weight.sum(1) @ patterns, "edge_mass": edge_mass}


def small_spike_and_slab(X: np.ndarray | None = None,
                         y: np.ndarray | None = None) -> AppliedModel:
    """Spike-and-slab regression whose spike is a narrow Gaussian (a scale mixture).

    The kind of model of Liesel's spike-and-slab tutorial. Data: 100 rows, 4 standard
    normal predictors, true coefficients (1, 0.5, 0, 0), noise sd 1, simulated with seed
    2 (:func:`simulate_spike_and_slab`; :data:`SCALE_DATA_SEED` says why 2). Model:
    indicators ``g_j ~ Bernoulli(0.5)``, coefficients
    ``beta_j ~ Normal(0, switch(g_j, 1, 0.1))`` (slab 1, spike 0.1), noise
    ``s ~ HalfNormal(1)``, ``y ~ Normal(X beta, s)``. Marginal: each ``beta_j`` with its
    two-component prior summed out, ``NormalMixture(w=[0.5, 0.5], mu=0,
    sigma=[0.1, 1])``. Summaries: the 4 posterior inclusion probabilities ``pip[j]``;
    given ``beta``, ``g_j`` depends on ``beta_j`` alone (its prior's responsibility).
    Exact posterior means: :func:`exact_scale_mixture`.

    Parameters
    ----------
    X, y : ndarray, optional
        Predictors (n, p) and response (n,); default the simulated data.

    Returns
    -------
    AppliedModel
    """
    if X is None or y is None:
        X, y = simulate_spike_and_slab()
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    n, p = X.shape
    with pm.Model() as model:
        # a float64 0.5: PyTensor stores the Python float 0.5 as float32 (exact), and
        # Bernoulli's log(0.5) in float32 is 1.9e-9 off per site
        g = pm.Bernoulli("g", np.float64(SCALE_INCLUSION), shape=p)
        beta = pm.Normal("beta", 0.0, pm.math.switch(g, SCALE_SLAB, SCALE_SPIKE), shape=p)
        s = pm.HalfNormal("s", 1.0)
        pm.Normal("y", mu=pm.math.dot(X, beta), sigma=s, observed=y)
    with pm.Model() as marginal:
        # component 0 the spike (g = 0), component 1 the slab (g = 1)
        beta = pm.NormalMixture("beta", w=[1.0 - SCALE_INCLUSION, SCALE_INCLUSION],
                                mu=0.0, sigma=[SCALE_SPIKE, SCALE_SLAB], shape=p)
        s = pm.HalfNormal("s", 1.0)
        pm.Normal("y", mu=pm.math.dot(X, beta), sigma=s, observed=y)

    def marginal_summaries(draws: Draws) -> dict[str, np.ndarray]:
        b = np.asarray(draws["beta"], dtype=float)

        def log_normal(sd: float) -> np.ndarray:
            return -0.5 * (b / sd) ** 2 - np.log(sd)

        # P(g_j = 1 | beta_j): the slab's responsibility for beta_j
        logit = (np.log(SCALE_INCLUSION) + log_normal(SCALE_SLAB)
                 - np.log1p(-SCALE_INCLUSION) - log_normal(SCALE_SPIKE))
        pip = 1.0 / (1.0 + np.exp(-logit))
        return {f"pip[{j}]": pip[..., j] for j in range(p)}

    summaries = {f"pip[{j}]": (lambda draws, j=j: draws["g"][..., j].astype(float))
                 for j in range(p)}

    def start(chains: int, seed: int) -> list[dict]:
        return [{"g": np.random.default_rng(seed + c).integers(0, 2, p)}
                for c in range(chains)]

    def exact_means() -> dict[str, float]:
        exact = exact_scale_mixture(X, y)
        out = {f"beta[{j}]": float(exact["beta"][j]) for j in range(p)}
        out["s"] = exact["s"]
        out.update({f"pip[{j}]": float(exact["pip"][j]) for j in range(p)})
        return out

    return AppliedModel(
        name="small_spike_and_slab",
        title=f"Spike-and-slab, continuous spike: {p} predictors, {n} rows",
        source=f"simulated (seed {SCALE_DATA_SEED}): {n} rows, {p} standard normal predictors, "
               "coefficients (1, 0.5, 0, 0), noise sd 1; indicators Bernoulli(0.5), "
               f"coefficients Normal(0, {SCALE_SLAB:g} if g else {SCALE_SPIKE:g}), "
               "noise HalfNormal(1) (a scale mixture, as in Liesel's spike-and-slab "
               "tutorial)",
        model=model, marginal=marginal, continuous=["beta", "s"], discrete=["g"],
        summaries=summaries, marginal_summaries=marginal_summaries,
        headline=[f"pip[{j}]" for j in range(p)], best_steps=blocked_gibbs(["g"]),
        start=start, numpyro_model=lambda: _numpyro_scale_mixture(X, y),
        exact_means=exact_means,
    )


def _numpyro_scale_mixture(X: np.ndarray, y: np.ndarray) -> Callable:
    """The scale-mixture spike-and-slab regression in NumPyro."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    X, y = jnp.asarray(X), jnp.asarray(y)
    p = X.shape[1]

    def model():
        g = numpyro.sample("g", dist.Bernoulli(SCALE_INCLUSION).expand([p]))
        beta = numpyro.sample("beta", dist.Normal(0.0, jnp.where(g, SCALE_SLAB, SCALE_SPIKE)))
        s = numpyro.sample("s", dist.HalfNormal(1.0))
        numpyro.sample("y", dist.Normal(X @ beta, s), obs=y)

    return model


# --------------------------------------------------------------------------------------
# g. A Gaussian hidden Markov model
# --------------------------------------------------------------------------------------

#: number of states, probability of staying in a state, true state means, emission sd
#: and data seed of :func:`gaussian_hmm`
HMM_STATES, HMM_STAY, HMM_MEANS, HMM_NOISE, HMM_DATA_SEED = 3, 0.95, (-2.0, 0.0, 2.0), 0.5, 0


def hmm_transitions(k: int = HMM_STATES, stay: float = HMM_STAY) -> np.ndarray:
    """The (k, k) transition matrix with ``stay`` on the diagonal and the rest of each row
    spread evenly over the other states (0.025 for k = 3, stay = 0.95)."""
    P = np.full((k, k), (1.0 - stay) / (k - 1))
    np.fill_diagonal(P, stay)
    return P


def simulate_hmm(T: int = 300, means: tuple[float, ...] = HMM_MEANS, noise: float = HMM_NOISE,
                 stay: float = HMM_STAY, seed: int = HMM_DATA_SEED,
                 ) -> tuple[np.ndarray, np.ndarray]:
    """States ``z`` (T,) and observations ``y`` (T,) of a Gaussian hidden Markov model:
    the first state uniform, then :func:`hmm_transitions`, ``y_t ~ Normal(means[z_t],
    noise)``; simulated with ``seed``."""
    rng = np.random.default_rng(seed)
    k = len(means)
    P = hmm_transitions(k, stay)
    z = np.empty(T, dtype=np.int64)
    z[0] = rng.integers(k)
    for t in range(1, T):
        z[t] = rng.choice(k, p=P[z[t - 1]])
    return z, np.asarray(means, dtype=float)[z] + noise * rng.normal(size=T)


def _log_sum_exp(a: np.ndarray, axis: int) -> np.ndarray:
    """``log(sum(exp(a), axis))``, stable, without scipy's overhead (called per step)."""
    m = a.max(axis=axis, keepdims=True)
    return (m + np.log(np.exp(a - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def hmm_smoothing(mu: np.ndarray, sigma: np.ndarray, y: np.ndarray, log_P: np.ndarray,
                  chunk: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """Posterior state occupancies and expected number of switches of a Gaussian HMM at
    every draw of its parameters (forward-backward in log space).

    The first state is uniform, the transitions ``exp(log_P)``, ``y_t ~ Normal(mu[z_t],
    sigma)``. With the forward and backward messages ``a_t``, ``b_t`` and the normaliser
    ``Z``, ``P(z_t = k | y) = exp(a_t(k) + b_t(k) - log Z)`` and ``P(z_t = z_{t+1} = k |
    y) = exp(a_t(k) + log_P[k, k] + e_{t+1}(k) + b_{t+1}(k) - log Z)``.

    Parameters
    ----------
    mu : ndarray
        State means, (S, K).
    sigma : ndarray
        Emission standard deviations, (S,).
    y : ndarray
        Observations, (T,).
    log_P : ndarray
        Log transition matrix, (K, K).
    chunk : int
        Draws processed at once (memory: chunk x T x K messages).

    Returns
    -------
    occupancy : ndarray
        (S, K): the expected fraction of the T sites in each state, ``mean_t P(z_t = k | y)``.
    switches : ndarray
        (S,): the expected number of switches, ``sum_t 1 - sum_k P(z_t = z_{t+1} = k | y)``.
    """
    mu, sigma = np.asarray(mu, dtype=float), np.asarray(sigma, dtype=float)
    y = np.asarray(y, dtype=float)
    S, K = mu.shape
    T = y.size
    stay = np.diag(log_P)
    occupancy, switches = np.empty((S, K)), np.empty(S)
    for lo in range(0, S, chunk):
        m, s = mu[lo:lo + chunk], sigma[lo:lo + chunk]
        # the emissions' log densities up to a constant, which cancels: (c, T, K)
        emit = -0.5 * ((y[None, :, None] - m[:, None, :]) / s[:, None, None]) ** 2 \
            - np.log(s)[:, None, None]
        fwd = np.empty_like(emit)
        bwd = np.zeros_like(emit)
        fwd[:, 0] = emit[:, 0] - np.log(K)
        for t in range(1, T):
            fwd[:, t] = emit[:, t] + _log_sum_exp(fwd[:, t - 1, :, None] + log_P, axis=1)
        for t in range(T - 2, -1, -1):
            bwd[:, t] = _log_sum_exp(log_P + (emit[:, t + 1] + bwd[:, t + 1])[:, None, :],
                                     axis=2)
        log_z = _log_sum_exp(fwd[:, -1], axis=1)[:, None, None]
        occupancy[lo:lo + chunk] = np.exp(fwd + bwd - log_z).mean(1)
        same = np.exp(fwd[:, :-1] + stay + emit[:, 1:] + bwd[:, 1:] - log_z).sum(-1)
        switches[lo:lo + chunk] = (1.0 - same).sum(1)
    return occupancy, switches


def gaussian_hmm(T: int = 300, y: np.ndarray | None = None,
                 means: tuple[float, ...] = HMM_MEANS, noise: float = HMM_NOISE,
                 stay: float = HMM_STAY, name: str = "hmm") -> AppliedModel:
    """Gaussian hidden Markov model: K = 3 sticky states, the chain as a Potential.

    Data: ``T`` = 300 steps simulated with seed 0 (:func:`simulate_hmm`): the first state
    uniform, the transition matrix 0.95 on the diagonal and 0.025 elsewhere (fixed and
    known), ``y_t ~ Normal(mu[z_t], 0.5)`` with true means (-2, 0, 2). Model: states
    ``z_t ~ Categorical(1/3, 1/3, 1/3)`` each (a constant), the chain
    ``pm.Potential("transitions", sum_t log_P[z_t, z_{t+1}])``, means
    ``mu ~ Normal(0, 3)`` ordered (started at (-1, 0, 1)), ``sigma ~ HalfNormal(1)``,
    ``y_t ~ Normal(mu[z_t], sigma)``. Marginal: the forward algorithm in log space with
    ``pytensor.scan``. Summaries: the number of switches ``sum_t [z_t != z_{t+1}]`` and
    the occupancies (fraction of the sites in each state); Rao-Blackwellised by
    forward-backward smoothing (:func:`hmm_smoothing`).

    Parameters
    ----------
    T : int
        Number of steps (at least 2); a short chain for the tests.
    y : ndarray, optional
        Observations (T,); default simulated with :func:`simulate_hmm`.
    means, noise, stay : optional
        The simulation's state means and emission sd, and the transitions' diagonal
        (known to the model); :func:`sticky_hmm` makes the states overlap.
    name : str
        The benchmark's key for the model.

    Returns
    -------
    AppliedModel
    """
    import pytensor

    k = len(means)
    y = (simulate_hmm(T, means=means, noise=noise, stay=stay)[1] if y is None
         else np.asarray(y, dtype=float))
    T = y.size
    if T < 2:
        raise ValueError(f"an HMM of at least 2 steps: got T = {T}")
    log_P = np.log(hmm_transitions(k, stay))
    log_uniform = np.float64(np.log(1.0 / k))

    def parameters() -> tuple:
        mu = pm.Normal("mu", 0.0, 3.0, shape=k, transform=pm.distributions.transforms.ordered,
                       initval=np.linspace(-1.0, 1.0, k))
        return mu, pm.HalfNormal("sigma", 1.0)

    with pm.Model() as model:
        z = pm.Categorical("z", np.ones(k) / k, shape=T)
        pm.Potential("transitions", pt.sum(pt.as_tensor(log_P)[z[:-1], z[1:]]))
        mu, sigma = parameters()
        pm.Normal("y", mu[z], sigma, observed=y)
    with pm.Model() as marginal:
        mu, sigma = parameters()
        emit = pm.logp(pm.Normal.dist(mu, sigma), pt.as_tensor(y)[:, None])  # (T, K)

        def forward(emit_t, alpha, log_p):
            return emit_t + pt.logsumexp(alpha[:, None] + log_p, axis=0)

        alpha = pytensor.scan(forward, sequences=[emit[1:]],
                              outputs_info=[log_uniform + emit[0]],
                              non_sequences=[pt.as_tensor(log_P)], return_updates=False)
        # the forward algorithm has the first site's uniform prior; the other T - 1
        # sites' (constants) are added so that this is the joint summed over z exactly
        pm.Potential("forward", pt.logsumexp(alpha[-1]) + (T - 1) * log_uniform)

    def switches(draws: Draws) -> np.ndarray:
        z_ = draws["z"]
        return (z_[..., 1:] != z_[..., :-1]).sum(-1).astype(float)

    summaries = {"switches": switches}
    summaries.update({f"occupancy[{j}]": (lambda draws, j=j: (draws["z"] == j).mean(-1))
                      for j in range(k)})

    def marginal_summaries(draws: Draws) -> dict[str, np.ndarray]:
        mu_, shape = _flatten_draws(draws["mu"])
        sigma_, _ = _flatten_draws(draws["sigma"])
        occupancy, expected = hmm_smoothing(mu_, sigma_, y, log_P)
        out = {"switches": expected.reshape(shape)}
        out.update({f"occupancy[{j}]": occupancy[:, j].reshape(shape) for j in range(k)})
        return out

    def start(chains: int, seed: int) -> list[dict]:
        return [{"z": np.random.default_rng(seed + c).integers(0, k, T)}
                for c in range(chains)]

    return AppliedModel(
        name=name, title=(f"Gaussian hidden Markov model: {T} steps, K = {k} sticky states"
                          + (", overlapping" if name != "hmm" else "")),
        source=f"simulated (seed {HMM_DATA_SEED}): {T} steps, first state uniform, "
               f"transitions {stay:g} on the diagonal and "
               f"{(1 - stay) / (k - 1):g} elsewhere (fixed, known), emissions "
               f"Normal(mu[z], {noise:g}) with means {tuple(means)}; means Normal(0, 3) "
               "ordered, sd HalfNormal(1); the chain a `pm.Potential`, summed out by the "
               "forward algorithm (`pytensor.scan`) in the marginal",
        model=model, marginal=marginal, continuous=["mu", "sigma"], discrete=["z"],
        summaries=summaries, marginal_summaries=marginal_summaries,
        headline=["switches", *(f"occupancy[{j}]" for j in range(k))],
        best_steps=collapsed_nuts(["z"]), best_label="CollapsedNUTS", start=start,
        numpyro_model=lambda: _numpyro_hmm(y, log_P),
    )


def sticky_hmm(T: int = 300) -> AppliedModel:
    """:func:`gaussian_hmm` with states that overlap: means (-1, 0, 1), emission sd 1,
    0.97 on the transitions' diagonal. A state is then rarely identified by its own
    observation, so single-site updates move a regime boundary one site a draw."""
    return gaussian_hmm(T, means=(-1.0, 0.0, 1.0), noise=1.0, stay=0.97, name="sticky_hmm")


def _numpyro_hmm(y: np.ndarray, log_P: np.ndarray) -> Callable:
    """The Gaussian HMM in NumPyro: the states as discrete sites (Gibbs-updated one at a
    time by ``DiscreteHMCGibbs``), the chain a ``numpyro.factor``, the ordered means an
    ``ImproperUniform`` on ordered vectors with their ``Normal(0, 3)`` prior as a factor
    (PyMC's ordered transform keeps the Normal density at the ordered values)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    y, log_P = jnp.asarray(y), jnp.asarray(log_P)
    T, k = y.shape[0], log_P.shape[0]

    def model():
        z = numpyro.sample("z", dist.Categorical(probs=jnp.ones(k) / k).expand([T]))
        numpyro.factor("transitions", log_P[z[:-1], z[1:]].sum())
        mu = numpyro.sample("mu", dist.ImproperUniform(dist.constraints.ordered_vector,
                                                       (), (k,)))
        numpyro.factor("mu_prior", dist.Normal(0.0, 3.0).log_prob(mu).sum())
        sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
        numpyro.sample("y", dist.Normal(mu[z], sigma), obs=y)

    return model


# --------------------------------------------------------------------------------------
# h. N-mixture: latent abundances with an unbounded Poisson prior
# --------------------------------------------------------------------------------------

#: intercept and slope of log abundance, detection probability and data seed of
#: :func:`n_mixture`
NMIX_B0, NMIX_B1, NMIX_P, NMIX_DATA_SEED = 1.5, 0.5, 0.5, 0

#: the hand-written marginal sums every site's abundance up to ``K = max(y) + NMIX_EXTRA``
NMIX_EXTRA = 100


def simulate_n_mixture(n_sites: int = 150, n_visits: int = 4, b0: float = NMIX_B0,
                       b1: float = NMIX_B1, p: float = NMIX_P, seed: int = NMIX_DATA_SEED,
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Site covariate ``x`` (n_sites,), abundances ``N`` (n_sites,) and counts ``y``
    (n_sites, n_visits) of an N-mixture model: ``x_i ~ Normal(0, 1)``,
    ``N_i ~ Poisson(exp(b0 + b1 x_i))``, ``y_ij ~ Binomial(N_i, p)``; simulated with
    ``seed``."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n_sites)
    N = rng.poisson(np.exp(b0 + b1 * x))
    return x, N, rng.binomial(N[:, None], p, size=(n_sites, n_visits))


def _abundance_table(y: np.ndarray, upper: int) -> tuple[np.ndarray, np.ndarray]:
    """The values ``n = 0 .. upper`` and, per site, the part of
    ``log Poisson(n | lambda) + sum_j log Binomial(y_ij | n, p)`` that depends on neither
    lambda nor p: ``sum_j log C(n, y_ij) - log n!``, -inf where ``n < max_j y_ij``;
    shapes (upper + 1,) and (n_sites, upper + 1)."""
    from scipy.special import gammaln

    n = np.arange(upper + 1)
    yy = y[:, None, :]
    nn = n[None, :, None].astype(float)
    possible = n[None, :] >= y.max(axis=1)[:, None]
    # log C(n, y) where n >= y (the other values are masked below)
    choose = gammaln(nn + 1) - gammaln(yy + 1) - gammaln(np.maximum(nn - yy, 0) + 1)
    const = choose.sum(-1) - gammaln(n + 1.0)[None, :]
    return n, np.where(possible, const, -np.inf)


def n_mixture(x: np.ndarray | None = None, y: np.ndarray | None = None,
              extra: int = NMIX_EXTRA) -> AppliedModel:
    """Binomial N-mixture model of abundance (Royle 2004, Biometrics 60: 108-115).

    Data: 150 sites x 4 visits simulated with seed 0 (:func:`simulate_n_mixture`): a site
    covariate ``x_i ~ Normal(0, 1)``, abundances ``N_i ~ Poisson(exp(1.5 + 0.5 x_i))``,
    counts ``y_ij ~ Binomial(N_i, 0.5)``. Model, as a user writes it: ``b0, b1 ~
    Normal(0, 2)``, ``p ~ Beta(1, 1)``, ``N = pm.Poisson("N", exp(b0 + b1 x))`` started at
    ``max_j y_ij + 1`` (PyMC's own initial value of a Poisson, ``floor(exp(0)) = 1``, is
    below the counts of most sites: log density -inf), ``y ~ Binomial(N[:, None], p)``.
    The abundances are latent counts of unbounded support: ``register()`` sums them out
    over a window of values (CollapsedNUTS); PyMC's default updates them by Metropolis.
    Summary: the total abundance ``sum N``.

    Marginal, as a Stan user writes it: every site's abundance summed out over
    ``n = max_j y_ij .. K`` with one truncation ``K = max(y) + extra`` (default
    ``extra = 100``: ``K = 111`` on the default data, whose largest count is 11; every
    site's conditional mass beyond K is below 1e-150 at the true values and below 1e-60
    at ``(b0, b1, p) = (2.0, 0.7, 0.3)``, far in the posterior's tail, where the largest
    ``lambda_i`` is 30), ``logsumexp_n [log Poisson(n | lambda_i) + sum_j log
    Binomial(y_ij | n, p)]`` as a ``pm.Potential`` (the binomial coefficients and
    ``log n!`` precomputed). The Rao-Blackwellised total abundance is
    ``sum_i E[N_i | b0, b1, p, y_i]`` over the same values.

    No NumPyro version: ``DiscreteHMCGibbs`` updates only sites with an enumerable
    support, which a Poisson has not; a hand truncation would make every Gibbs sweep
    evaluate the model at each of the ~110 values of each of the 150 sites. The
    ``BlockedGibbs`` variant is kept as the other families have it: the finite-value
    steps refuse a latent count, so its row says so.

    Parameters
    ----------
    x, y : ndarray, optional
        Site covariate (sites,) and counts (sites, visits); default the simulated data.
    extra : int
        The marginal's truncation above the largest count (small in the tests, so that
        the discrete model can be enumerated up to the same bound).

    Returns
    -------
    AppliedModel
    """
    if x is None or y is None:
        x, _, y = simulate_n_mixture()
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=np.int64)
    n_sites, n_visits = y.shape
    lower = y.max(axis=1)
    upper = int(y.max()) + int(extra)
    values, const = _abundance_table(y, upper)
    totals = y.sum(axis=1)

    def parameters() -> tuple:
        b0 = pm.Normal("b0", 0.0, 2.0)
        b1 = pm.Normal("b1", 0.0, 2.0)
        return b0, b1, pm.Beta("p", 1.0, 1.0)

    with pm.Model() as model:
        b0, b1, p = parameters()
        N = pm.Poisson("N", pm.math.exp(b0 + b1 * x), initval=lower + 1)
        pm.Binomial("y", n=N[:, None], p=p, observed=y)
    with pm.Model() as marginal:
        b0, b1, p = parameters()
        eta = (b0 + b1 * x)[:, None]  # log lambda_i
        # log Poisson(n | lambda_i) + sum_j log Binomial(y_ij | n, p) at every n = 0 .. K:
        # (sites, K + 1), -inf below the site's largest count (in const)
        table = (const + values[None, :] * eta - pt.exp(eta)
                 + totals[:, None] * pt.log(p)
                 + (n_visits * values[None, :] - totals[:, None]) * pt.log1p(-p))
        pm.Potential("abundance", pt.logsumexp(table, axis=1).sum())

    def marginal_summaries(draws: Draws, chunk: int = 500) -> dict[str, np.ndarray]:
        b0_, shape = _flatten_draws(draws["b0"])
        b1_, _ = _flatten_draws(draws["b1"])
        p_, _ = _flatten_draws(draws["p"])
        total = np.empty(b0_.shape[0])
        for lo in range(0, b0_.shape[0], chunk):  # (chunk, sites, K + 1) at a time
            e = b0_[lo:lo + chunk, None, None] + b1_[lo:lo + chunk, None, None] * x[:, None]
            q = p_[lo:lo + chunk, None, None]
            logw = (const + values * e - np.exp(e) + totals[:, None] * np.log(q)
                    + (n_visits * values - totals[:, None]) * np.log1p(-q))
            total[lo:lo + chunk] = (np.exp(log_softmax(logw, axis=-1)) @ values).sum(-1)
        return {"N_total": total.reshape(shape)}

    def start(chains: int, seed: int) -> list[dict]:
        # each site 0 to 10 above its largest count: below it the counts have no density
        return [{"N": lower + np.random.default_rng(seed + c).integers(0, 11, n_sites)}
                for c in range(chains)]

    return AppliedModel(
        name="nmixture", title=f"N-mixture abundance: {n_sites} sites x {n_visits} visits",
        source=f"simulated (seed {NMIX_DATA_SEED}): {n_sites} sites, {n_visits} visits, "
               f"abundance Poisson(exp({NMIX_B0:g} + {NMIX_B1:g} x)) with a standard normal "
               f"site covariate x, detection p = {NMIX_P:g} (Royle 2004); b0, b1 "
               "Normal(0, 2), p Beta(1, 1); the marginal sums each abundance from the "
               f"site's largest count to K = {upper} (the largest count + {extra})",
        model=model, marginal=marginal, continuous=["b0", "b1", "p"], discrete=["N"],
        summaries={"N_total": lambda draws: draws["N"].sum(-1).astype(float)},
        marginal_summaries=marginal_summaries, headline=["N_total"],
        best_steps=count_lbp(["N"]), best_label="CountLBP", start=start,
    )


#: every family, by its key (``--models``)
BUILDERS: dict[str, Callable[[], AppliedModel]] = {
    "mixture": gaussian_mixture,
    "occupancy": site_occupancy,
    "capture": capture_recapture,
    "changepoint": change_point,
    "selection": variable_selection,
    "small_spike_and_slab": small_spike_and_slab,
    "hmm": gaussian_hmm,
    "sticky_hmm": sticky_hmm,
    "nmixture": n_mixture,
}
