"""register() + a plain pm.sample() with nutpie installed: nutpie samples the summed-out
model where the run is long enough to pay back its compilation, its chains started at the
mode reached from the initial point; short runs, chains and blocks that do not sum out
stay in PyMC's loop with the package's steps."""

from __future__ import annotations

import logging
import subprocess
import sys

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pymc.sampling import mcmc

from pymc_discrete.pymc.choosing import summed_route
from pymc_discrete.pymc.choosing.mode_start import mode_start
from pymc_discrete.pymc.choosing.nutpie_choice import NUTPIE_MIN_ITERATIONS, iterations_per_core
from tests.pymc.test_collapsed import (
    _assert_frequencies,
    _assert_mean,
    _switch_model,
    _switch_truth,
)

pytestmark = pytest.mark.skipif(not mcmc.NUTPIE_INSTALLED, reason="nutpie is an optional extra")


def _lattice() -> pm.Model:
    """Four binary sites on a ring: neighbours share a term, so they do not sum out."""
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.5, shape=4)
        pm.Potential("ring", 0.8 * pt.sum(pt.eq(x, pt.roll(x, 1))))
        pm.Normal("mu", 0.0, 1.0)
    return model


def _chain() -> pm.Model:
    from tests.pymc.test_chain import _hmm

    return _hmm("index", mu=True)


def _route(model, **kwargs):
    return summed_route._external_route(model, (), kwargs)


def test_iterations_a_core_runs_follow_pymcs_defaults(monkeypatch):
    """PyMC's defaults: cores = min(4, CPUs), chains = max(2, cores); a core runs its
    chains in turn."""
    monkeypatch.setattr(mcmc, "_cpu_count", lambda: 2)
    assert iterations_per_core((), {}) == 2000
    assert iterations_per_core((), {"chains": 4}) == 4000
    assert iterations_per_core((3000,), {"tune": 500, "chains": 3}) == 7000
    monkeypatch.setattr(mcmc, "_cpu_count", lambda: 8)
    assert iterations_per_core((), {"chains": 4, "draws": 9000}) == 10000


def test_the_run_length_decides_where_the_block_sums_out():
    """Sites that share no term: PyMC's loop for a short run (the structure is not even
    read), nutpie from NUTPIE_MIN_ITERATIONS a core; a named sampler whatever the length."""
    model = _switch_model()
    short = {"draws": 1000, "chains": 2, "cores": 2}
    sampler, why = _route(model, **short)
    assert sampler is None and why.startswith("short run") and "2,000 iterations" in why
    sampler, why = _route(model, draws=NUTPIE_MIN_ITERATIONS - 1000, chains=2, cores=2)
    assert sampler == "nutpie" and f"{NUTPIE_MIN_ITERATIONS:,} iterations" in why
    assert _route(model, nuts_sampler="nutpie", **short)[0] == "nutpie"
    assert _route(model, nuts_sampler="pymc", draws=50_000)[0] is None
    assert _route(model, draws=50_000, step=object())[0] is None


def test_a_short_run_does_not_import_nutpie():
    """Checking nutpie's version imports it (0.7 s): a registered short run, where nutpie
    will not run, does not pay that (a fresh process, where nothing imported it yet)."""
    script = (
        "import sys, numpy as np, pymc as pm, pymc_discrete as pmd\n"
        "pmd.register()\n"
        "with pm.Model():\n"
        "    z = pm.Bernoulli('z', 0.5, shape=3)\n"
        "    mu = pm.Normal('mu')\n"
        "    pm.Normal('y', mu + z, 1.0, observed=np.zeros(3))\n"
        "    pm.sample(draws=5, tune=5, chains=1, progressbar=False,\n"
        "              compute_convergence_checks=False, random_seed=1)\n"
        "assert 'nutpie' not in sys.modules, 'nutpie was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_long_runs_of_chains_and_lattices_stay_in_pymcs_loop_and_counts_follow_the_sites_rule():
    """A chain summed out by the forward algorithm samples slower than ChainGibbs beside
    PyMC's NUTS at any length; a lattice does not sum out: each says why. Latent counts
    go to nutpie from the sites' threshold, and stay in PyMC's loop below it."""
    sampler, why = _route(_chain(), draws=50_000, chains=2, cores=2)
    assert sampler is None and "forward algorithm" in why and why.startswith("nutpie is")
    from tests.pymc.test_counts import _model

    sampler, why = _route(_model("poisson"), draws=50_000, chains=2, cores=2)
    assert sampler == "nutpie" and "enough to pay back" in why
    sampler, why = _route(_model("poisson"), draws=1000, chains=2, cores=2)
    assert sampler is None and why.startswith("short run")
    sampler, why = _route(_lattice(), draws=50_000, chains=2, cores=2)
    assert sampler is None and why.startswith("not summed out for nutpie")
    # the chain is nutpie's where it is named
    assert _route(_chain(), nuts_sampler="nutpie")[0] == "nutpie"


def test_the_start_is_the_mode_of_the_density_nuts_samples():
    """A normal mean with a known scale: the mode is the posterior mean; a log-normal
    scale: exp(mu) on the log scale NUTS samples (the Jacobian counted), returned on the
    variable's own scale."""
    y = np.array([0.3, 1.9, 1.1, 2.4])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        pm.LogNormal("s", mu=0.5, sigma=0.3)
        pm.Normal("y", mu, 1.0, observed=y)
    start = mode_start(model)
    precision = 1 / 4 + len(y)
    np.testing.assert_allclose(start["mu"], y.sum() / precision, rtol=1e-6)
    np.testing.assert_allclose(start["s"], np.exp(0.5), rtol=1e-6)
    assert set(start) == {"mu", "s"}


@pytest.mark.parametrize("with_data", [False, True])
def test_a_density_without_a_mode_keeps_the_initial_point(with_data):
    """A group's scale can shrink to zero with the group's means (a funnel): the density
    grows without bound and L-BFGS stops on a slope; no start is given."""
    with pm.Model() as model:
        s = pm.HalfNormal("s", 1.0)
        x = pm.Normal("x", 0.0, s, shape=5)
        if with_data:
            pm.Normal("y", x, 1.0, observed=np.arange(5.0))
    assert mode_start(model) is None


@pytest.mark.slow
def test_a_long_registered_run_is_nutpies_and_matches_quadrature_jointly(registered, caplog,
                                                                          monkeypatch):
    """register() + pm.sample() of a long run on three switches: nutpie samples the
    summed-out model from the mode (the log says why), and the recovered switches' 8
    joint patterns and E[mu z_i] match quadrature times enumeration; initial values the
    user gives for the continuous variables are kept (no search)."""
    found = []
    monkeypatch.setattr(summed_route, "mode_start",
                        lambda model: found.append(model) or mode_start(model))
    patterns, probs, moments = _switch_truth()
    with caplog.at_level(logging.INFO, logger="pymc"), _switch_model():
        idata = pm.sample(draws=4000, tune=1000, chains=4, cores=1, random_seed=3,
                          progressbar=False, compute_convergence_checks=False)
        assert "sampling the rest with nutpie" in caplog.text
        assert "each core runs 20,000 iterations" in caplog.text
        assert len(found) == 1
        placed = pm.sample(draws=4000, tune=1000, chains=4, cores=1, random_seed=3,
                           progressbar=False, compute_convergence_checks=False,
                           initvals={"mu": 0.2})
        assert len(found) == 1
    assert idata["posterior"].attrs["inference_library"] == "nutpie"
    assert placed["posterior"].attrs["inference_library"] == "nutpie"
    z = idata["posterior"]["z"].values
    _assert_frequencies(z @ np.array([4, 2, 1]), probs, patterns)
    mu = idata["posterior"]["mu"].values
    for i in range(3):
        _assert_mean(mu * z[..., i], *moments[f"mu z{i}"], f"E[mu z{i}]")


def _symmetric_mixture() -> pm.Model:
    """Two components alike at the initial point (means 0, weights 1/2), written with
    one-hot comparisons: the initial point is a saddle with a zero gradient."""
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(2))
        mu = pm.Normal("mu", 0.0, 3.0, shape=2)
        z = pm.Categorical("z", w, shape=12)
        one_hot = pt.stack([pt.eq(z, 0), pt.eq(z, 1)], axis=1)
        pm.Normal("x", (one_hot * mu).sum(1), 1.0, observed=np.r_[np.full(6, -2.0),
                                                                     np.full(6, 2.0)])
    return model


def test_a_saddle_of_symmetry_gives_no_start():
    """L-BFGS does not leave a point whose gradient is exactly zero, and nutpie refuses
    to start there: no start is given (PyMC's jitter then starts the chains)."""
    import pymc_discrete as pmd

    summed = pmd.marginalize(_symmetric_mixture())
    assert mode_start(summed) is None


@pytest.mark.slow
def test_a_long_registered_run_from_a_saddle_is_sampled(registered):
    """The same model through register() + pm.sample() of a long run: nutpie samples it
    from PyMC's jittered start (it refused the saddle before), and the draws hold the two
    clusters apart: a point at -2 and one at +2 share a label with posterior probability
    below 1e-3 (each point's odds of the far component are about exp(-8)), so in at most
    1% of 18,000 draws (38 standard errors of a proportion of 1e-3 above it, were the
    draws independent: a wide margin for their autocorrelation)."""
    with _symmetric_mixture():
        idata = pm.sample(draws=9000, tune=1000, chains=2, cores=1, random_seed=2,
                          progressbar=False, compute_convergence_checks=False)
    assert idata["posterior"].attrs["inference_library"] == "nutpie"
    z = idata["posterior"]["z"].values
    assert z.shape == (2, 9000, 12)
    assert np.mean(z[..., 0] == z[..., 6]) < 0.01
