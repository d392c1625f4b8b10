"""The runnable examples run (at reduced size) and produce what they promise.

``make docs`` runs every example at the size its ``main()`` defaults to (the gallery);
here each ``main`` runs at a small size, and the exact answers the pages compare the
samplers with are checked against brute-force enumeration.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    """Load an example from its file, as a user runs it (not through ``examples``)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_are_standalone(name):
    """Examples are user-facing scripts: no sys.path edits, nothing from the benchmarks."""
    source = (ROOT / "examples" / f"{name}.py").read_text()
    assert "sys.path" not in source
    assert not re.search(r"^\s*(from|import)\s+benchmarks\b", source, flags=re.M)


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_are_gallery_pages(name):
    """Each example is a sphinx-gallery page: a docstring with a title, and nothing runs
    on import (the gallery runs it as __main__; tests and benchmarks import it)."""
    source = (ROOT / "examples" / f"{name}.py").read_text()
    assert re.match(r'r?"""\n[^\n]+\n=+\n', source), "docstring with an rst title first"
    assert 'if __name__ == "__main__":' in source
    assert "__file__" not in source  # sphinx-gallery runs the code without it


# --------------------------------------------------------------------------------------
# the exact answers the pages compare with, against brute force


def _weights(log_density):
    w = np.exp(log_density - log_density.max())
    return w / w.sum()


def test_ising_exact_marginals():
    ising = _load("ising_lattice")
    alpha, coupling = ising.ising_fields(3, 4, seed=1), 0.4
    x = np.array(list(itertools.product((0, 1), repeat=12))).reshape(-1, 3, 4)
    s = 2 * x - 1
    log_p = ((alpha * s).sum((1, 2)) + coupling * ((s[:, :, 1:] * s[:, :, :-1]).sum((1, 2))
                                                   + (s[:, 1:] * s[:, :-1]).sum((1, 2))))
    brute = np.tensordot(_weights(log_p), x, 1)
    np.testing.assert_allclose(ising.exact_marginals(alpha, coupling), brute, atol=1e-12)


def test_potts_exact_marginals():
    potts = _load("potts_lattice")
    fields = np.random.default_rng(1).uniform(-1, 1, (3, 2, 3))
    z = np.array(list(itertools.product(range(3), repeat=6))).reshape(-1, 3, 2)
    one_hot = z[..., None] == np.arange(3)
    log_p = ((fields * one_hot).sum((1, 2, 3))
             + 0.7 * ((z[:, :, 1:] == z[:, :, :-1]).sum((1, 2))
                      + (z[:, 1:] == z[:, :-1]).sum((1, 2))))
    brute = np.tensordot(_weights(log_p), one_hot.astype(float), 1)
    np.testing.assert_allclose(potts.exact_marginals(fields, 0.7), brute, atol=1e-12)


def test_rbm_exact_marginals():
    rbm = _load("rbm_digits")
    rng = np.random.default_rng(2)
    W, b, c = rng.normal(size=(6, 3)), rng.normal(size=6), rng.normal(size=3)
    v = np.array(list(itertools.product((0, 1), repeat=6)), dtype=float)
    log_p = v @ b + np.logaddexp(0.0, c + v @ W).sum(1)
    brute = _weights(log_p) @ v
    np.testing.assert_allclose(rbm.exact_pixel_marginals(W, b, c), brute, atol=1e-12)


def test_fhmm_exact_posterior():
    fhmm = _load("fhmm_posterior")
    from pymc_discrete.example_models import fhmm_model

    model = fhmm_model(4, 2, sigma2=0.5, seed=3)
    x = np.array(list(itertools.product((0, 1), repeat=8))).reshape(-1, 4, 2)
    same = (x[:, 1:] == x[:, :-1]).sum((1, 2))
    log_p = (np.where(x[:, 0], np.log(0.1), np.log(0.9)).sum(1)
             + same * np.log(0.8) + (6 - same) * np.log(0.2)
             - ((model.observed - x @ model.loadings - model.offset) ** 2).sum(1) / 1.0)
    brute = np.tensordot(_weights(log_p), x, 1)
    np.testing.assert_allclose(fhmm.exact_posterior(model, 0.5), brute, atol=1e-12)


def test_change_point_exact_posterior():
    """The closed-form switch-year posterior against quadrature over both rates."""
    cp = _load("change_point")
    candidates, prob, means = cp.exact_posterior(cp.counts, cp.years)
    rate = np.linspace(1e-3, 8.0, 4000)
    late = cp.years[None, :] >= candidates[:, None]
    log_lik = np.log(rate)[:, None] * cp.counts - rate[:, None]  # (rate, year)

    def log_integral(mask):  # log of the integral over the rate, prior exp(-rate) included
        lp = log_lik @ mask.T - rate[:, None]
        top = lp.max(0)
        return top + np.log(np.trapezoid(np.exp(lp - top), rate, axis=0))

    brute = _weights(log_integral(~late) + log_integral(late))
    np.testing.assert_allclose(prob, brute, atol=1e-6)
    assert 1889 < means["switchpoint"] < 1893


def test_occupancy_exact_posterior():
    """The grid posterior of (psi, p) against the joint model enumerated over z."""
    occ = _load("occupancy")
    y, _ = occ.simulate(n_sites=6, n_visits=3, seed=4)
    grid, weight, means = occ.exact_posterior(y, n_grid=60)
    psi, p = np.meshgrid(grid, grid, indexing="ij")
    k = y.sum(1)
    total = np.zeros_like(psi)
    for z in itertools.product((0, 1), repeat=6):
        z = np.array(z)
        if np.any(k[z == 0] > 0):
            continue
        total += np.prod([psi * p ** k[i] * (1 - p) ** (3 - k[i]) if z[i] else 1 - psi
                          for i in range(6)], axis=0)
    np.testing.assert_allclose(weight, total / total.sum(), rtol=1e-10)


def test_spike_and_slab_exact_inclusion():
    """The enumerated inclusion probabilities against a direct Gaussian evaluation."""
    ss = _load("spike_and_slab")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(20, 3))
    y = X[:, 0] + rng.normal(size=20)
    sigma = np.linspace(0.3, 1.5, 600)
    patterns = np.array(list(itertools.product((0, 1), repeat=3)))
    for spike in (0.0, ss.SPIKE):
        log_post = np.empty((8, sigma.size))
        for i, g in enumerate(patterns):
            d = np.where(g, ss.SLAB, spike)
            for j, s in enumerate(sigma):
                cov = s**2 * np.eye(20) + 1.0 + (X * d**2) @ X.T
                _, logdet = np.linalg.slogdet(cov)
                log_post[i, j] = (-0.5 * (logdet + y @ np.linalg.solve(cov, y))
                                  - 0.5 * s**2 + g.sum() * np.log(ss.INCLUSION)
                                  + (3 - g.sum()) * np.log1p(-ss.INCLUSION))
        w = np.exp(log_post - log_post.max()).sum(1)
        np.testing.assert_allclose(ss.exact_inclusion(X, y, spike), w @ patterns / w.sum(),
                                   rtol=1e-8)


# --------------------------------------------------------------------------------------
# every main() at a small size


def test_ising_example_runs(tmp_path):
    out = tmp_path / "ising.png"
    runs = _load("ising_lattice").main(rows=4, cols=3, draws=100, out=out)
    assert out.stat().st_size > 0
    assert set(runs) == {"register()", "ALBP"}
    assert all(0.0 <= r["max_error"] < 1.0 and r["changed"] > 0 for r in runs.values())


def test_potts_lattice_example_runs(tmp_path):
    potts = _load("potts_lattice")
    out = tmp_path / "potts.png"
    summary = potts.main(rows=6, cols=3, draws=200, out=out)
    assert out.stat().st_size > 0
    assert summary["ratios_are_exact"]
    assert 0.0 < summary["accept"] <= 1.0 and summary["jump_distance"] > 0


@pytest.mark.slow
def test_iris_mixture_example_runs():
    iris = _load("iris_mixture")
    # from PyMC's start (every label in one component), the default choice must find the
    # species as well as long runs do (95% agreement at 1000 + 1000 draws)
    score = iris.main(draws=100, tune=100)
    assert score >= 0.9
    labels = np.array([0, 0, 1, 1, 2, 2])
    assert iris.agreement(labels, np.array([2, 2, 0, 0, 1, 1])) == 1.0


def test_occupancy_example_runs(tmp_path):
    out = tmp_path / "occupancy.png"
    table = _load("occupancy").main(draws=100, tune=100, out=out)
    assert out.stat().st_size > 0
    assert set(table) == {"psi", "p", "occupied sites"}
    assert abs(table["psi"]["mean"] - table["psi"]["exact"]) < 0.1


def test_change_point_example_runs(tmp_path):
    out = tmp_path / "change_point.png"
    result = _load("change_point").main(draws=100, tune=100, out=out)
    assert out.stat().st_size > 0
    assert abs(result["table"]["switchpoint"]["mean"] - 1890.8) < 3


def test_spike_and_slab_example_runs(tmp_path):
    example = _load("spike_and_slab")
    out = tmp_path / "pip.png"
    results = example.main(draws=60, tune=60, out=out, chains=1)
    assert out.stat().st_size > 0
    assert set(results) == {"g * beta", "scale mixture"}
    for r in results.values():
        assert len(r["sampled"]) == 10 and np.all((0 <= r["sampled"]) & (r["sampled"] <= 1))
        assert r["sampled"][r["names"].index("bmi")] > 0.5  # the strongest predictor
    # the benchmarks (benchmarks/run_models.py) use the 55-column design and this model
    Z, y, labels = example.design()
    assert Z.shape == (442, 55) and "bmi:bp" in labels
    assert example.spike_and_slab_model(Z, y)["g"].type.shape == (55,)


def test_fhmm_example_runs(tmp_path):
    example = _load("fhmm_posterior")
    out = tmp_path / "fhmm.png"
    runs = example.main(length=30, n_chains=2, draws=100, out=out)
    assert out.stat().st_size > 0
    assert set(runs) == {"register()", "ALBP"}
    assert all(0.5 < r["recovered"] <= 1.0 for r in runs.values())


def test_rbm_example_runs(tmp_path):
    example = _load("rbm_digits")
    out = tmp_path / "rbm.png"
    runs = example.main(draws=60, epochs=1, n_hidden=4, out=out, n_images=4)
    assert out.stat().st_size > 0
    assert set(runs) == {"register()", "PAS"}
    assert all(r["jump_distance"] > 0 for r in runs.values())


# --------------------------------------------------------------------------------------
# latent counts and hidden Markov chains


def test_n_mixture_marginal_density():
    """The hand-marginalised density (the reference's potential) and the enumerated
    conditionals of the abundances against the joint summed over every abundance vector."""
    from scipy.special import logit, logsumexp
    from scipy.stats import binom, poisson

    nm = _load("n_mixture")
    x, _, y = nm.simulate(n_sites=3, n_visits=2, b0=0.5, b1=0.4, p=0.5, seed=3)
    b0, b1, p = 0.7, -0.3, 0.45
    model = nm.marginal_model(x, y)
    potential = model.compile_logp(vars=[model["abundance"]], jacobian=False)
    marginal = potential({"b0": b0, "b1": b1, "p_logodds__": logit(p)})
    # every abundance vector with N_i <= 40 (lambda_i < 3: the mass beyond is < 1e-25)
    top = 40
    N = np.array(list(itertools.product(range(top + 1), repeat=3)))    # (41^3, 3)
    lam = np.exp(b0 + b1 * x)
    log_joint = (poisson.logpmf(N, lam).sum(1)
                 + binom.logpmf(y[None, :, :], N[:, :, None], p).sum((1, 2)))
    np.testing.assert_allclose(marginal, logsumexp(log_joint), rtol=1e-10)
    brute_means = _weights(log_joint) @ N
    w = nm.abundance_posterior(b0, b1, p, x, y)[0]                    # (sites, values)
    np.testing.assert_allclose(w @ np.arange(w.shape[1]), brute_means, rtol=1e-10)


def test_hidden_markov_smoothed_marginals():
    """Forward-backward against enumeration of all 3^5 state sequences, at two draws."""
    from scipy.stats import norm

    hmm = _load("hidden_markov")
    _, y = hmm.simulate(T=5, seed=1)
    log_P = np.log(hmm.transition_matrix(3, 0.8))
    mu, sigma = np.array([[-1.0, 0.2, 1.1], [-0.5, 0.0, 2.0]]), np.array([0.7, 1.3])
    got = hmm.smoothed_marginals(mu, sigma, y, log_P)
    z = np.array(list(itertools.product(range(3), repeat=5)))          # (243, 5)
    one_hot = (z[..., None] == np.arange(3)).astype(float)
    for s in range(2):
        log_p = (np.log(1 / 3) + log_P[z[:, :-1], z[:, 1:]].sum(1)
                 + norm.logpdf(y, mu[s][z], sigma[s]).sum(1))
        brute = np.tensordot(_weights(log_p), one_hot, 1)                 # (5, 3)
        np.testing.assert_allclose(got[s], brute, atol=1e-12)


def test_n_mixture_example_runs(tmp_path):
    out = tmp_path / "n_mixture.png"
    result = _load("n_mixture").main(draws=200, tune=200, out=out, n_sites=50)
    assert out.stat().st_size > 0
    assert set(result["table"]) == {"b0", "b1", "p"}
    for row in result["table"].values():  # register() against the model summed by hand
        assert abs(row["mean"] - row["reference"]) < 5 * row["mcse"], row
    abundance = result["abundance"]
    assert abundance["within_4_mcse"] >= 0.9
    # the window starts at every site's largest count, and no draw goes below it
    assert np.array_equal(result["window"].lower, abundance["largest_count"])
    assert np.all(abundance["interval"][:, 0] >= abundance["largest_count"])
    assert np.all(result["widths"] >= result["window"].width)
    assert result["truncation_mass"] < 1e-20  # the reference's truncation is immaterial


def test_hidden_markov_example_runs(tmp_path):
    out = tmp_path / "hidden_markov.png"
    result = _load("hidden_markov").main(T=100, draws=200, tune=200, out=out)
    assert out.stat().st_size > 0
    assert set(result["table"]) == {"register()", "PyMC default"}
    assert result["sampled"].shape == result["smoothed"].shape == (100, 3)
    np.testing.assert_allclose(result["sampled"].sum(1), 1.0)
    # the state frequencies against forward-backward averaged over the draws
    assert result["within_4_se"] >= 0.95
    assert result["max_error"] < 0.1
    assert result["recovered"] > 0.8


def test_per_variable_hmm_example_runs():
    result = _load("per_variable_hmm").main(T=30, draws=300, tune=300)
    assert result["gap"] <= 4, result
    assert result["r_hat"] <= 1.01, result
    assert result["decoded"] > 0.7, result
