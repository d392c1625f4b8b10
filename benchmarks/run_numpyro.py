"""Against NumPyro's ``DiscreteHMCGibbs`` (JAX, CPU) on the models it can express.

Product Bernoulli (N = 800, C2) and Ising 50x50 (C2): ESS per second and per log density
evaluation of NumPyro's ``DiscreteHMCGibbs`` (Gibbs updates of the discrete sites inside
one JAX-compiled step; the model gets a standard normal ``z`` because the kernel wraps an
HMC kernel for the continuous sites), of ALBP (one and several M-H steps per PyMC draw)
and of PyMC's ``BinaryGibbsMetropolis``. ESS is ArviZ's bulk ESS of the model's log
density at every draw and the median over sites, exactly as for the PyMC samplers
(``benchmarks/harness.py``). NumPyro's time is that of ``mcmc.run`` after a first run
that compiled it (warm-up iterations included, as PyMC's tuning is).

NumPyro and JAX are benchmark-only dependencies (``pip install -e .[bench]``; ``make
bench`` installs them). Writes the section ``numpyro`` of ``benchmarks/RESULTS.md``. Run
with ``python benchmarks/run_numpyro.py`` (``--quick``: fewer draws).
"""

from __future__ import annotations

import datetime
import sys
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pymc_discrete as pmd  # noqa: E402
from benchmarks.harness import (  # noqa: E402
    Measurement,
    format_table,
    machine_description,
    measure,
    write_section,
)
from pymc_discrete.pymc.models import (  # noqa: E402
    ISING_CONFIGS,
    bernoulli_model,
    ising_fields,
    ising_logp,
    ising_model,
)


def numpyro_measure(kind: str, draws: int, warmup: int, chains: int = 2) -> Measurement:
    """Run DiscreteHMCGibbs on the model ``kind`` and measure it like the PyMC samplers."""
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS, DiscreteHMCGibbs

    numpyro.set_host_device_count(1)
    if kind == "bernoulli":
        p = bernoulli_model(800, "C2").p
        n_sites = p.size

        def model():
            numpyro.sample("z", dist.Normal())
            numpyro.sample("x", dist.Bernoulli(probs=jnp.asarray(p)))

        def logp_of(x):
            return float(np.sum(x * np.log(p) + (1 - x) * np.log1p(-p)))
    else:
        alpha = ising_fields(50, "C2")
        lam = ISING_CONFIGS["C2"][2]
        n_sites = alpha.size
        alpha_j = jnp.asarray(alpha)

        def model():
            numpyro.sample("z", dist.Normal())
            x = numpyro.sample("x", dist.Bernoulli(probs=0.5 * jnp.ones((50, 50))))
            s = 2.0 * x - 1.0
            numpyro.factor("energy", jnp.sum(alpha_j * s) + lam * (
                jnp.sum(s[:, 1:] * s[:, :-1]) + jnp.sum(s[1:] * s[:-1])))

        def logp_of(x):
            return ising_logp(x.reshape(50, 50), alpha, lam)

    kernel = DiscreteHMCGibbs(NUTS(model))
    mcmc = MCMC(kernel, num_warmup=warmup, num_samples=draws, num_chains=chains,
                chain_method="sequential", progress_bar=False)
    key = jax.random.PRNGKey(0)
    mcmc.run(key)  # compiles
    start = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(1))
    jax.block_until_ready(mcmc.get_samples()["x"])
    seconds = time.perf_counter() - start
    x = np.asarray(mcmc.get_samples(group_by_chain=True)["x"]).reshape(chains, draws, -1)
    flat = x.astype(float)
    logp = np.array([[logp_of(x[c, d]) for d in range(draws)] for c in range(chains)])
    per_draw = seconds / (chains * (draws + warmup))
    sampling_seconds = per_draw * chains * draws
    ess_logp = float(az.ess(logp, method="bulk"))
    site_ess = np.asarray(az.ess(flat, method="bulk"))
    varying = flat.std(axis=(0, 1)) > 0
    ess_site = float(np.median(site_ess[varying]))
    return Measurement(
        sampler="NumPyro DiscreteHMCGibbs", draws=chains * draws, seconds=seconds,
        time_per_draw_ms=1e3 * per_draw,
        ejd=float(np.abs(np.diff(flat, axis=1)).sum(axis=-1).mean()),
        ess_logp=ess_logp, ess_site_median=ess_site,
        ess_logp_per_s=ess_logp / sampling_seconds, ess_site_per_s=ess_site / sampling_seconds,
        accept=float("nan"), scale=float("nan"), evals_per_draw=float(n_sites),
    ), n_sites


def main(quick: bool = False) -> None:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = "python benchmarks/run_numpyro.py" + (" --quick" if quick else "")
    draws = 1000 if quick else 5000
    ising_numpyro_draws = 50 if quick else 500  # a NumPyro sweep of 2500 sites: ~40 ms
    gibbs_draws = 20 if quick else 200
    sections = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for kind, name in (("bernoulli", "Product Bernoulli, N = 800 (C2)"),
                           ("ising", "Ising 50x50 (C2)")):
            model = bernoulli_model(800, "C2") if kind == "bernoulli" else ising_model(50, "C2")
            shape = model.initial_point()["x"].shape
            start = {"x": np.random.default_rng(0).integers(0, 2, shape)}
            print(f"  {name}: NumPyro", flush=True)
            n_numpyro = draws if kind == "bernoulli" else ising_numpyro_draws
            numpyro_row, n_sites = numpyro_measure(kind, n_numpyro, n_numpyro)
            rows = [numpyro_row]
            runs = [  # label, step, draws, M-H steps per draw
                ("ALBP (barker)", lambda m: pmd.ALBP([m["x"]]), draws, 1),
                ("ALBP (sqrt)", lambda m: pmd.ALBP([m["x"]], weight="sqrt"), draws, 1),
                ("ALBP (sqrt, 4 steps per draw)",
                 lambda m: pmd.ALBP([m["x"]], weight="sqrt", steps_per_draw=4), draws // 4, 4),
                ("ALBP (sqrt, compiled loop, 8 steps per draw)",
                 lambda m: pmd.ALBP([m["x"]], weight="sqrt", steps_per_draw=8,
                                    compiled_loop=True), draws // 8, 8),
                ("BinaryGibbsMetropolis", lambda m: pm.BinaryGibbsMetropolis([m["x"]]),
                 gibbs_draws, 1),
            ]
            for label, make_step, n_draws, per_draw in runs:
                print(f"  {name}: {label}", flush=True)
                tune = draws // per_draw if per_draw > 1 else n_draws
                rows.append(measure(model, label, make_step, draws=n_draws, tune=tune, seed=6,
                                    initvals=start))
            sections.append(f"### {name}\n\n"
                            f"{format_table(rows, baseline='NumPyro DiscreteHMCGibbs')}")
    import jax
    import numpyro

    write_section("numpyro", f"""## Against NumPyro's DiscreteHMCGibbs

Produced by `{command}` on {stamp}.
Machine: {machine_description()}; NumPyro {numpyro.__version__}, JAX {jax.__version__} (CPU).

NumPyro: {draws} draws after {draws} warm-up per chain on the Bernoulli model,
{ising_numpyro_draws} after {ising_numpyro_draws} on the Ising model, 2 chains run sequentially, timed
on a second run (the first compiles). The model has an extra standard normal `z` (the
kernel wraps NUTS for the continuous sites); a `DiscreteHMCGibbs` iteration updates the
discrete sites by Gibbs steps and `z` by NUTS. ALBP: {draws} M-H steps after {draws}
tuning steps (with k steps per draw, {draws} / k draws after {draws} / k); the compiled
loop runs the draw's 8 steps inside one numba function that calls the model's NUMBA-mode
log density and gradient (`compiled_loop=True`). BinaryGibbsMetropolis: {gibbs_draws} draws.
Ratios are against NumPyro. Log density evaluations per draw (for "ESS logp per 1k
evals"): N for a Gibbs sweep (NumPyro and PyMC; NumPyro's count assumes one sweep per
iteration), one per M-H step for ALBP.

{(chr(10) * 2).join(sections)}
""")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
