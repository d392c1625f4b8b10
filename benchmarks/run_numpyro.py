"""Against NumPyro's ``DiscreteHMCGibbs`` (JAX, CPU) on the models it can express.

Product Bernoulli (N = 800, C2), Ising 50x50 (C2), an FHMM posterior (L = 200, K = 5,
C2) and a 4-state Potts model (30x30): ESS per second and per log density evaluation of
NumPyro's ``DiscreteHMCGibbs`` (Gibbs updates of the discrete sites inside one
JAX-compiled step; the model gets a standard normal ``z`` because the kernel wraps an
HMC kernel for the continuous sites), of ALBP (one and several M-H steps per PyMC draw),
PAS and PyMC's Gibbs samplers. Each NumPyro model is written in NumPyro by hand from the
PyMC model's parameters; ESS is ArviZ's bulk ESS of the PyMC model's log density at every
draw and the median over sites, exactly as for the PyMC samplers
(``benchmarks/harness.py``). NumPyro's time is that of ``mcmc.run`` after a first run
that compiled it (warm-up iterations included, as PyMC's tuning is).

NumPyro and JAX are benchmark-only dependencies (``pip install -e .[bench]``; ``make
bench`` installs them). Writes the section ``numpyro`` of ``benchmarks/RESULTS.md``. Run
with ``python -m benchmarks.run_numpyro`` (``--quick``: fewer draws).
"""

from __future__ import annotations

import datetime
import sys
import time
import warnings
from collections.abc import Callable

import arviz as az
import numpy as np
import pymc as pm

import pymc_discrete as pmd
from benchmarks.harness import (
    Measurement,
    _logp_trace,
    format_table,
    jump_distance,
    machine_description,
    measure,
    median_site_ess,
    split_time,
    write_section,
)
from pymc_discrete.example_models import (
    ISING_CONFIGS,
    bernoulli_model,
    fhmm_model,
    ising_fields,
    ising_model,
    potts_model,
)

POTTS = dict(side=30, n_states=4, coupling=0.5, field=0.5, seed=0)
FHMM = dict(length=200, chains=5, sigma2=1.0, seed=0)


def numpyro_model(kind: str) -> tuple[Callable, int]:
    """The NumPyro version of the benchmark model ``kind`` and its number of values K."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    if kind == "bernoulli":
        p = jnp.asarray(bernoulli_model(800, "C2").p)

        def model():
            numpyro.sample("z", dist.Normal())
            numpyro.sample("x", dist.Bernoulli(probs=p))

        return model, 2
    if kind == "ising":
        alpha = jnp.asarray(ising_fields(50, "C2"))
        lam = ISING_CONFIGS["C2"][2]

        def model():
            numpyro.sample("z", dist.Normal())
            x = numpyro.sample("x", dist.Bernoulli(probs=0.5 * jnp.ones((50, 50))))
            s = 2.0 * x - 1.0
            numpyro.factor("energy", jnp.sum(alpha * s) + lam * (
                jnp.sum(s[:, 1:] * s[:, :-1]) + jnp.sum(s[1:] * s[:-1])))

        return model, 2
    if kind == "fhmm":
        source = fhmm_model(**FHMM)
        w, b, y = (jnp.asarray(v) for v in (source.loadings, source.offset, source.observed))
        shape = (FHMM["length"], FHMM["chains"])
        scale = float(np.sqrt(FHMM["sigma2"]))

        def model():
            numpyro.sample("z", dist.Normal())
            x = numpyro.sample("x", dist.Bernoulli(probs=0.5 * jnp.ones(shape)))
            same = x[1:] * x[:-1] + (1 - x[1:]) * (1 - x[:-1])
            prior = (jnp.sum(x[0] * np.log(0.1) + (1 - x[0]) * np.log(0.9))
                     + jnp.sum(same * np.log(0.8) + (1 - same) * np.log(0.2)))
            likelihood = jnp.sum(dist.Normal(x @ w + b, scale).log_prob(y))
            numpyro.factor("posterior", prior + likelihood)

        return model, 2
    side, k = POTTS["side"], POTTS["n_states"]
    fields = jnp.asarray(np.random.default_rng(POTTS["seed"]).uniform(
        -POTTS["field"], POTTS["field"], (side, side, k)))

    def model():
        numpyro.sample("z", dist.Normal())
        x = numpyro.sample("x", dist.Categorical(probs=jnp.full((side, side, k), 1.0 / k)))
        one_hot = x[..., None] == jnp.arange(k)
        numpyro.factor("energy", jnp.sum(jnp.where(one_hot, fields, 0.0)) + POTTS["coupling"] * (
            jnp.sum(x[:, 1:] == x[:, :-1]) + jnp.sum(x[1:] == x[:-1])))

    return model, k


def run_discrete_hmc_gibbs(sampler_model: Callable, draws: int, warmup: int,
                           chains: int = 2) -> tuple[dict, float, np.ndarray]:
    """Run NumPyro's ``DiscreteHMCGibbs(NUTS(sampler_model))`` twice (the first run
    compiles); return the second run's samples grouped by chain, its seconds and the
    number of NUTS leapfrog steps of every iteration, shape (chain, draw)."""
    import jax
    import numpyro
    from numpyro.infer import MCMC, NUTS, DiscreteHMCGibbs

    numpyro.set_host_device_count(1)
    mcmc = MCMC(DiscreteHMCGibbs(NUTS(sampler_model)), num_warmup=warmup, num_samples=draws,
                num_chains=chains, chain_method="sequential", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0))  # compiles
    start = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(1), extra_fields=("hmc_state.num_steps",))
    jax.block_until_ready(mcmc.get_samples())
    seconds = time.perf_counter() - start
    samples = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    steps = np.asarray(mcmc.get_extra_fields(group_by_chain=True)["hmc_state.num_steps"])
    return samples, seconds, steps


def numpyro_measure(sampler_model: Callable, n_values: int, model: pm.Model, draws: int,
                    warmup: int, chains: int = 2) -> Measurement:
    """Run DiscreteHMCGibbs on the NumPyro model ``sampler_model`` (discrete site ``x``
    with ``n_values`` values) and measure it like the PyMC samplers (``model``: the PyMC
    version, for the log density of the draws)."""
    samples, seconds, _ = run_discrete_hmc_gibbs(sampler_model, draws, warmup, chains)
    x = samples["x"].astype(np.int64)
    logp = _logp_trace(model, x, model.rvs_to_values[model["x"]].name)
    flat = x.reshape(chains, draws, -1).astype(float)
    n_sites = flat.shape[-1]
    per_draw, sampling_seconds = split_time(seconds, chains, draws, warmup)
    ess_logp = float(az.ess(logp, method="bulk"))
    ess_site = median_site_ess(flat)
    return Measurement(
        sampler="NumPyro DiscreteHMCGibbs", draws=chains * draws, seconds=seconds,
        time_per_draw_ms=1e3 * per_draw,
        ejd=jump_distance(flat),
        ess_logp=ess_logp, ess_site_median=ess_site,
        ess_logp_per_s=ess_logp / sampling_seconds, ess_site_per_s=ess_site / sampling_seconds,
        accept=float("nan"), scale=float("nan"),
        evals_per_draw=float(n_sites * (n_values - 1)),
    )


def _binary_runs(draws: int, gibbs_draws: int) -> list:
    """(label, step, draws, M-H steps per draw) on the binary models."""
    return [
        ("ALBP (barker)", lambda m: pmd.ALBP([m["x"]]), draws, 1),
        ("ALBP (sqrt)", lambda m: pmd.ALBP([m["x"]], weight="sqrt"), draws, 1),
        ("ALBP (sqrt, 4 steps per draw)",
         lambda m: pmd.ALBP([m["x"]], weight="sqrt", steps_per_draw=4), draws // 4, 4),
        ("ALBP (sqrt, compiled loop, 8 steps per draw)",
         lambda m: pmd.ALBP([m["x"]], weight="sqrt", steps_per_draw=8, compiled_loop=True),
         draws // 8, 8),
        ("BinaryGibbsMetropolis", lambda m: pm.BinaryGibbsMetropolis([m["x"]]), gibbs_draws, 1),
    ]


def main(quick: bool = False) -> None:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = "python -m benchmarks.run_numpyro" + (" --quick" if quick else "")
    draws = 400 if quick else 5000
    gibbs_draws = 10 if quick else 200
    lattice_draws = 15 if quick else 500  # NumPyro sweeps of 1000-3600 moves: 10-40 ms
    cases = [  # kind, name, PyMC model, NumPyro draws, our samplers
        ("bernoulli", "Product Bernoulli, N = 800 (C2)", bernoulli_model(800, "C2"), draws,
         _binary_runs(draws, gibbs_draws)),
        ("ising", "Ising 50x50 (C2)", ising_model(50, "C2"), lattice_draws,
         _binary_runs(draws, gibbs_draws)),
        ("fhmm", "FHMM, L = 200, K = 5 (C2)", fhmm_model(**FHMM), lattice_draws, [
            ("ALBP (barker)", lambda m: pmd.ALBP([m["x"]]), draws, 1),
            ("ALBP (exact)", lambda m: pmd.ALBP([m["x"]], proposal="exact"), draws, 1),
            ("PAS (gradient)", lambda m: pmd.PAS([m["x"]]), draws, 1),
            ("BinaryGibbsMetropolis", lambda m: pm.BinaryGibbsMetropolis([m["x"]]),
             gibbs_draws, 1),
        ]),
        ("potts", "Potts 30x30, K = 4", potts_model(**POTTS), lattice_draws, [
            ("ALBP (barker)", lambda m: pmd.ALBP([m["x"]]), draws, 1),
            ("ALBP (barker, 4 steps per draw)",
             lambda m: pmd.ALBP([m["x"]], steps_per_draw=4), draws // 4, 4),
            ("CategoricalGibbsMetropolis (proportional)",
             lambda m: pm.CategoricalGibbsMetropolis([m["x"]], proposal="proportional"),
             gibbs_draws, 1),
        ]),
    ]
    sections = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for kind, name, model, numpyro_draws, runs in cases:
            n_values = POTTS["n_states"] if kind == "potts" else 2
            shape = model.initial_point()["x"].shape
            start = {"x": np.random.default_rng(0).integers(0, n_values, shape)}
            print(f"  {name}: NumPyro", flush=True)
            rows = [numpyro_measure(*numpyro_model(kind), model, numpyro_draws, numpyro_draws)]
            for label, make_step, n_draws, per_draw in runs:
                print(f"  {name}: {label}", flush=True)
                tune = draws // per_draw if per_draw > 1 else n_draws
                rows.append(measure(model, label, make_step, draws=n_draws, tune=tune, seed=6,
                                    initvals=start))
            sections.append(f"### {name}\n\nNumPyro: {numpyro_draws} draws after "
                            f"{numpyro_draws} warm-up per chain.\n\n"
                            f"{format_table(rows, baseline='NumPyro DiscreteHMCGibbs')}")
    import jax
    import numpyro

    write_section("numpyro", f"""## Against NumPyro's DiscreteHMCGibbs

Produced by `{command}` on {stamp}.
Machine: {machine_description()}; NumPyro {numpyro.__version__}, JAX {jax.__version__} (CPU).

Each model is written in NumPyro with the PyMC model's parameters, plus a standard normal
`z` (the kernel wraps NUTS for the continuous sites); a `DiscreteHMCGibbs` iteration
updates every discrete site by a Gibbs step (a random scan) and `z` by NUTS. 2 chains run
sequentially, timed on a second run (the first compiles); warm-up iterations are
included in the time, as PyMC's tuning is. ALBP and PAS: {draws} M-H steps after {draws}
tuning steps (with k steps per draw, {draws} / k draws after {draws} / k); the compiled
loop runs the draw's 8 steps inside one numba function that calls the model's NUMBA-mode
log density and gradient (`compiled_loop=True`). PyMC's Gibbs samplers: {gibbs_draws}
draws after {gibbs_draws}. Ratios are against NumPyro. Log density evaluations per draw
(for "ESS logp per 1k evals"): N (K - 1) for a Gibbs sweep (NumPyro, PyMC's proportional
proposal), one per M-H step for ALBP and PAS with the gradient proposal; ALBP with exact
ratios evaluates the model's terms in batches ("-").

{(chr(10) * 2).join(sections)}
""")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
