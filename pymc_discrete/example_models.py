"""Example models: the reference targets of the optimal-scaling and path-auxiliary papers
written as PyMC models (Bernoulli, Ising, parity, FHMM, RBM, Potts).

Not part of the samplers: the demo, the examples, the benchmarks and the tests use them,
and a user can try the samplers on a known target with them. Training the RBM needs
scikit-learn (its digits data), imported only there.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

__all__ = [
    "BERNOULLI_CONFIGS",
    "ISING_CONFIGS",
    "bernoulli_model",
    "binarised_digits",
    "fhmm_model",
    "gallery_mixture",
    "ising_fields",
    "ising_model",
    "potts_model",
    "rbm_model",
    "train_rbm",
]

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
    >>> from pymc_discrete.example_models import bernoulli_model
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
    """External fields alpha of the paper's Ising configuration (shape (side, side)).

    Parameters
    ----------
    side : int
        Lattice side.
    config : {"C1", "C2", "C3"}
        Configuration of the optimal-scaling paper (Appendix D.2).
    seed : int
        Seed of the random part of the fields.

    Returns
    -------
    ndarray, shape (side, side)

    Examples
    --------
    >>> ising_fields(4, "C2").shape
    (4, 4)
    """
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
    >>> from pymc_discrete.example_models import ising_model
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





def parity_model(p: int = 100, u: float = 5.0) -> pm.Model:
    """The parity distribution of the path auxiliary paper (section 5.2).

    ``pi(x) ~ exp(-U * (sum(x) mod 2))`` on {0, 1}^p: odd states are e^U less likely than
    even ones, every single-site move changes the parity, and the exact mean is 1/2 at
    every site (for p >= 2). The potential is written as ``-U (1 - prod(1 - 2x)) / 2``,
    which equals the parity term at every 0/1 point and is multilinear, so gradient
    ratios are exact.

    Parameters
    ----------
    p : int
        Number of sites.
    u : float
        Energy gap U.

    Returns
    -------
    pymc.Model
        With one free variable ``x`` of shape (p,).

    Examples
    --------
    >>> from pymc_discrete.example_models import parity_model
    >>> parity_model(10, 3.0).free_RVs
    [x]
    """
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.5, shape=p)
        pm.Potential("parity", -u * (1.0 - pt.prod(1.0 - 2.0 * x)) / 2.0)
    return model


def fhmm_model(
    length: int = 1000,
    chains: int = 5,
    sigma2: float = 1.0,
    seed: int = 0,
    markov_axis: str = "time",
    prior: str = "stated",
) -> pm.Model:
    """Posterior of a factorial hidden Markov model (the paper's Appendix D.3).

    ``K = chains`` independent binary Markov chains of ``length`` steps, with
    ``P(x_1k = 1) = 0.1`` and probability 0.8 of keeping the previous state; observations
    ``y_l ~ N(w . x_l + b, sigma2)`` with Gaussian ``w`` and ``b``. ``x`` and ``y`` are
    simulated from the model with ``seed``; the PyMC model is the posterior of ``x`` given
    ``y`` (the prior as a multilinear potential, the likelihood quadratic in x, so
    gradient ratios are first-order only).

    The optimal-scaling paper's eq. (185) writes the Markov dependence the other way,
    ``p(x_l1) prod_k p(x_lk | x_l,k-1)``: a chain over the K components *within* each time
    step, so that the posterior is a product over l of independent blocks of K sites.
    ``markov_axis="components"`` builds that model; the default is the factorial HMM
    proper.

    ``prior="paper_code"`` builds the density that the paper's released code evaluates
    (``ha0ransun/LBP_Scale``, ``lbp/model/fhmm.py``) and so the posterior its FHMM numbers
    were measured on: there the prior's log-probabilities enter with the opposite sign,
    and the probability of a change is given as a logit (``logits = 1 - 0.8``, so
    ``P(change) = sigmoid(0.2) = 0.55``). Each transition then favours staying by 0.2
    nats instead of log 4 = 1.39, and the first row favours 1 over 0 by log 9: a much
    flatter posterior. The data are simulated from the stated model either way, as there,
    and, as there, W and b are drawn first, so that a seed gives the same W at every
    length.

    Parameters
    ----------
    length : int
        Number of time steps L.
    chains : int
        Number of hidden chains K.
    sigma2 : float
        Observation variance (C1: 2, C2: 1, C3: 0.5).
    seed : int
        Seed of the simulation.
    markov_axis : {"time", "components"}
        Along which axis of x the Markov chains run.
    prior : {"stated", "paper_code"}
        The prior of the paper's text, or the density of the paper's code (see above).

    Returns
    -------
    pymc.Model
        With one free variable ``x`` of shape (length, chains); ``model.truth`` holds the
        simulated hidden states, ``model.loadings``, ``model.offset`` and
        ``model.observed`` the w, b and y of the simulation.

    Examples
    --------
    >>> from pymc_discrete.example_models import fhmm_model
    >>> fhmm_model(20, 3).free_RVs
    [x]
    """
    if markov_axis not in ("time", "components"):
        raise ValueError(f"markov_axis must be 'time' or 'components', got {markov_axis!r}")
    if prior not in ("stated", "paper_code"):
        raise ValueError(f"prior must be 'stated' or 'paper_code', got {prior!r}")
    rng = np.random.default_rng(seed)
    if prior == "paper_code":  # as there, W and b first: one seed, one W at every length
        w, b = rng.normal(size=chains), rng.normal()
    # simulate with the Markov axis first, then put x in (length, chains) layout
    steps, width = (length, chains) if markov_axis == "time" else (chains, length)
    x = np.zeros((steps, width), dtype=np.int64)
    x[0] = rng.random(width) < 0.1
    for t in range(1, steps):
        keep = rng.random(width) < 0.8
        x[t] = np.where(keep, x[t - 1], 1 - x[t - 1])
    if markov_axis == "components":
        x = x.T.copy()
    if prior == "stated":
        w, b = rng.normal(size=chains), rng.normal()
    y = x @ w + b + rng.normal(0.0, np.sqrt(sigma2), length)
    with pm.Model() as model:
        h = pm.Bernoulli("x", 0.5, shape=(length, chains))
        chain = h if markov_axis == "time" else h.T
        same = chain[1:] * chain[:-1] + (1 - chain[1:]) * (1 - chain[:-1])
        # P(change): 0.2, or the code's Bernoulli(logits=1 - 0.8), whose -log_prob it adds
        change, sign = (0.2, 1.0) if prior == "stated" else (1.0 / (1.0 + np.exp(-0.2)), -1.0)
        pm.Potential(
            "prior",
            sign * ((chain[0] * np.log(0.1) + (1 - chain[0]) * np.log(0.9)).sum()
                    + (same * np.log1p(-change) + (1 - same) * np.log(change)).sum()),
        )
        pm.Normal("y", mu=pm.math.dot(h, w) + b, sigma=np.sqrt(sigma2), observed=y)
    model.truth = x
    model.loadings, model.offset, model.observed = w, b, y
    return model


def binarised_digits() -> np.ndarray:
    """scikit-learn's 8x8 digits, thresholded at half intensity: (1797, 64) of 0/1.

    Examples
    --------
    >>> binarised_digits().shape  # doctest: +SKIP
    (1797, 64)
    """
    from sklearn.datasets import load_digits

    return (load_digits().data > 8).astype(np.int64)


def train_rbm(
    data: np.ndarray, n_hidden: int = 50, epochs: int = 30, lr: float = 0.05, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Train a binary RBM by contrastive divergence (CD-1, minibatches of 50).

    Parameters
    ----------
    data : ndarray of 0/1, shape (n, n_visible)
        Training vectors.
    n_hidden : int
        Number of hidden units.
    epochs : int
        Passes over the data.
    lr : float
        Learning rate.
    seed : int
        Seed of the initial weights, minibatches and Gibbs draws.

    Returns
    -------
    W : ndarray, shape (n_visible, n_hidden)
    b : ndarray, shape (n_visible,)
        Visible biases.
    c : ndarray, shape (n_hidden,)
        Hidden biases.

    Examples
    --------
    >>> import numpy as np
    >>> data = (np.random.default_rng(0).random((100, 6)) < 0.5).astype(np.int64)
    >>> W, b, c = train_rbm(data, n_hidden=3, epochs=2)
    >>> W.shape, b.shape, c.shape
    ((6, 3), (6,), (3,))
    """
    rng = np.random.default_rng(seed)
    n, n_visible = data.shape
    W = rng.normal(0.0, 0.01, (n_visible, n_hidden))
    b = np.log((data.mean(0) + 1e-2) / (1 - data.mean(0) + 1e-2))
    c = np.zeros(n_hidden)

    def sigmoid(z):
        return 1.0 / (1.0 + np.exp(-z))

    for _ in range(epochs):
        for batch in np.array_split(rng.permutation(n), max(1, n // 50)):
            v0 = data[batch].astype(float)
            ph0 = sigmoid(v0 @ W + c)
            h0 = (rng.random(ph0.shape) < ph0).astype(float)
            v1 = (rng.random(v0.shape) < sigmoid(h0 @ W.T + b)).astype(float)
            ph1 = sigmoid(v1 @ W + c)
            W += lr * (v0.T @ ph0 - v1.T @ ph1) / len(batch)
            b += lr * (v0 - v1).mean(0)
            c += lr * (ph0 - ph1).mean(0)
    return W, b, c


def rbm_model(W: np.ndarray, b: np.ndarray, c: np.ndarray) -> pm.Model:
    """Marginal distribution of the visible units of a binary RBM.

    ``log p(v) = b . v + sum_j softplus(c_j + (v W)_j) + const``: every hidden unit couples
    all visible units, and the softplus makes the gradient ratios first-order only.

    Parameters
    ----------
    W : ndarray, shape (n_visible, n_hidden)
        Weights.
    b : ndarray, shape (n_visible,)
        Visible biases.
    c : ndarray, shape (n_hidden,)
        Hidden biases.

    Returns
    -------
    pymc.Model
        With one free variable ``x`` of shape (n_visible,).

    Examples
    --------
    >>> import numpy as np
    >>> rbm_model(np.zeros((6, 3)), np.zeros(6), np.zeros(3)).free_RVs
    [x]
    """
    with pm.Model() as model:
        v = pm.Bernoulli("x", 0.5, shape=W.shape[0])
        pm.Potential("visible", pm.math.dot(v, b))
        pm.Potential("hidden", pt.softplus(c + pm.math.dot(v, W)).sum())
    return model


def potts_model(
    side: int = 30, n_states: int = 4, coupling: float = 0.5, field: float = 0.5, seed: int = 0
) -> pm.Model:
    """Potts model on a ``side x side`` lattice with free boundaries.

    ``log pi(z) = sum_i h[i, z_i] + coupling * sum_<ij> [z_i == z_j] + const`` with fields
    ``h ~ U(-field, field)`` drawn with ``seed``. ``coupling = 0.5`` is below the critical
    value ``log(1 + sqrt(4)) = 1.10`` of the 4-state model (a moderately sharp target, as
    the DISCS benchmark's lattice models).

    Parameters
    ----------
    side : int
        Lattice side (N = side^2 sites).
    n_states : int
        Number of values K of every site.
    coupling : float
        Ferromagnetic coupling of equal neighbours.
    field : float
        Half-width of the uniform external fields.
    seed : int
        Seed of the fields.

    Returns
    -------
    pymc.Model
        With one free variable ``x`` of shape (side, side).

    Examples
    --------
    >>> from pymc_discrete.example_models import potts_model
    >>> potts_model(4).free_RVs
    [x]
    """
    h = np.random.default_rng(seed).uniform(-field, field, (side, side, n_states))
    with pm.Model() as model:
        z = pm.Categorical("x", np.full(n_states, 1.0 / n_states), shape=(side, side))
        fields = pm.Data("fields", h)
        one_hot = pt.eq(z[..., None], pt.arange(n_states))
        pm.Potential("field", (fields * one_hot).sum())
        pm.Potential(
            "coupling",
            coupling * (pt.eq(z[:, 1:], z[:, :-1]).sum() + pt.eq(z[1:, :], z[:-1, :]).sum()),
        )
    return model


def gallery_mixture(n: int = 500, seed: int = 42) -> pm.Model:
    """PyMC's gallery Gaussian mixture written with one Categorical label per point.

    ``n`` points from three unit-variance clusters at -5, 0 and 5; weights
    ``p ~ Dirichlet(1, 1, 1)`` kept above 0.1 and means ``Normal(0, 15)`` kept ordered by
    Potentials, one shared ``sd ~ Uniform(0, 20)``, labels ``category ~ Categorical(p)``.
    A chain of a label sampler can spend its tuning in a mode where one wide component
    covers the data, whose labels are nearly exchangeable.

    Parameters
    ----------
    n : int
        Number of points (labels).
    seed : int
        Seed of the simulated data.

    Returns
    -------
    pymc.Model

    Examples
    --------
    >>> model = gallery_mixture(n=20)
    >>> model["category"].type.shape
    (20,)
    """
    rng = np.random.default_rng(seed)
    centers = np.array([-5.0, 0.0, 5.0])
    data = centers[rng.integers(0, 3, n)] + rng.standard_normal(n)
    model = pm.Model()
    with model:
        p = pm.Dirichlet("p", a=np.ones(3))
        pm.Potential("p_min_potential", pm.math.switch(pm.math.min(p) < 0.1, -np.inf, 0))
        means = pm.Normal("means", mu=[0, 0, 0], sigma=15, shape=3)
        pm.Potential("order_means_potential",
                     pm.math.switch(means[1] - means[0] < 0, -np.inf, 0)
                     + pm.math.switch(means[2] - means[1] < 0, -np.inf, 0))
        sd = pm.Uniform("sd", lower=0, upper=20)
        category = pm.Categorical("category", p=p, shape=n)
        pm.Normal("obs", mu=means[category], sigma=sd, observed=data)
    return model
