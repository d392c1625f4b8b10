"""The paper's lattice models and a Potts model: our steps against PyMC's Gibbs samplers
and NumPyro's ``DiscreteHMCGibbs`` (JAX, CPU).

Product Bernoulli (N = 800, C2), Ising 50x50 (C2), an FHMM posterior (L = 200, K = 5,
C2) and a 4-state Potts model (30x30): ESS per second and per log density evaluation of
ALBP (one and several M-H steps per PyMC draw), PAS, ARWM and PyMC's Gibbs samplers (on
the Potts model both proposals of ``CategoricalGibbsMetropolis``), and of NumPyro's
``DiscreteHMCGibbs`` (Gibbs updates of the discrete sites inside one JAX-compiled step;
the model gets a standard normal ``z`` because the kernel wraps an HMC kernel for the
continuous sites). Each NumPyro model is written in NumPyro by hand from the PyMC
model's parameters; ESS is ArviZ's bulk ESS of the PyMC model's log density at every
draw and the median over sites, exactly as for the PyMC samplers
(``benchmarks/harness.py``); NumPyro is timed warm (``harness.run_discrete_hmc_gibbs``).

NumPyro and JAX are benchmark-only dependencies (``pip install -e .[bench]``; ``make
bench`` installs them); without them the NumPyro rows are left out and the ratios are
against PyMC's Gibbs sampler. Writes the section ``numpyro`` of
``benchmarks/RESULTS.md``. Run with ``python -m benchmarks.run_numpyro`` (``--quick``,
``--smoke``: fewer draws, and for ``--smoke`` small models).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pymc as pm

import pymc_discrete as pmd
from benchmarks.harness import (
    cli,
    format_table,
    measure,
    numpyro_available,
    numpyro_measurement,
    numpyro_versions,
    provenance,
    release_compiled_jax,
    run_discrete_hmc_gibbs,
    size_name,
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
#: each model's parameters (the paper's sizes)
PARAMS = {"bernoulli": {"n": 800}, "ising": {"side": 50}, "fhmm": FHMM, "potts": POTTS}


def pymc_model(kind: str, params: dict) -> pm.Model:
    """The PyMC model ``kind`` ("bernoulli", "ising", "fhmm", "potts") with ``params``."""
    if kind == "bernoulli":
        return bernoulli_model(params["n"], "C2")
    if kind == "ising":
        return ising_model(params["side"], "C2")
    if kind == "fhmm":
        return fhmm_model(**params)
    return potts_model(**params)


def numpyro_model(kind: str, params: dict | None = None) -> tuple[Callable, int]:
    """The NumPyro version of :func:`pymc_model` and its number of values K."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    params = PARAMS[kind] if params is None else params
    if kind == "bernoulli":
        p = jnp.asarray(bernoulli_model(params["n"], "C2").p)

        def model():
            numpyro.sample("z", dist.Normal())
            numpyro.sample("x", dist.Bernoulli(probs=p))

        return model, 2
    if kind == "ising":
        side = params["side"]
        alpha = jnp.asarray(ising_fields(side, "C2"))
        lam = ISING_CONFIGS["C2"][2]

        def model():
            numpyro.sample("z", dist.Normal())
            x = numpyro.sample("x", dist.Bernoulli(probs=0.5 * jnp.ones((side, side))))
            s = 2.0 * x - 1.0
            numpyro.factor("energy", jnp.sum(alpha * s) + lam * (
                jnp.sum(s[:, 1:] * s[:, :-1]) + jnp.sum(s[1:] * s[:-1])))

        return model, 2
    if kind == "fhmm":
        source = fhmm_model(**params)
        w, b, y = (jnp.asarray(v) for v in (source.loadings, source.offset, source.observed))
        shape = (params["length"], params["chains"])
        scale = float(np.sqrt(params["sigma2"]))

        def model():
            numpyro.sample("z", dist.Normal())
            x = numpyro.sample("x", dist.Bernoulli(probs=0.5 * jnp.ones(shape)))
            same = x[1:] * x[:-1] + (1 - x[1:]) * (1 - x[:-1])
            prior = (jnp.sum(x[0] * np.log(0.1) + (1 - x[0]) * np.log(0.9))
                     + jnp.sum(same * np.log(0.8) + (1 - same) * np.log(0.2)))
            likelihood = jnp.sum(dist.Normal(x @ w + b, scale).log_prob(y))
            numpyro.factor("posterior", prior + likelihood)

        return model, 2
    side, k = params["side"], params["n_states"]
    fields = jnp.asarray(np.random.default_rng(params["seed"]).uniform(
        -params["field"], params["field"], (side, side, k)))

    def model():
        numpyro.sample("z", dist.Normal())
        x = numpyro.sample("x", dist.Categorical(probs=jnp.full((side, side, k), 1.0 / k)))
        one_hot = x[..., None] == jnp.arange(k)
        numpyro.factor("energy", jnp.sum(jnp.where(one_hot, fields, 0.0)) + params["coupling"] * (
            jnp.sum(x[:, 1:] == x[:, :-1]) + jnp.sum(x[1:] == x[:-1])))

    return model, k


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


def _fhmm_runs(draws: int, gibbs_draws: int) -> list:
    return [
        ("ALBP (barker)", lambda m: pmd.ALBP([m["x"]]), draws, 1),
        ("ALBP (exact)", lambda m: pmd.ALBP([m["x"]], proposal="exact"), draws, 1),
        ("PAS (gradient)", lambda m: pmd.PAS([m["x"]]), draws, 1),
        ("BinaryGibbsMetropolis", lambda m: pm.BinaryGibbsMetropolis([m["x"]]),
         gibbs_draws, 1),
    ]


def _potts_runs(draws: int, gibbs_draws: int) -> list:
    return [
        ("ALBP (barker)", lambda m: pmd.ALBP([m["x"]]), draws, 1),
        ("ALBP (barker, 4 steps per draw)",
         lambda m: pmd.ALBP([m["x"]], steps_per_draw=4), draws // 4, 4),
        ("ALBP (exact)", lambda m: pmd.ALBP([m["x"]], proposal="exact"), draws, 1),
        ("PAS (gradient)", lambda m: pmd.PAS([m["x"]]), draws, 1),
        ("ARWM", lambda m: pmd.ARWM([m["x"]]), draws, 1),
        ("CategoricalGibbsMetropolis (uniform)",
         lambda m: pm.CategoricalGibbsMetropolis([m["x"]], proposal="uniform"),
         gibbs_draws, 1),
        ("CategoricalGibbsMetropolis (proportional)",
         lambda m: pm.CategoricalGibbsMetropolis([m["x"]], proposal="proportional"),
         gibbs_draws, 1),
    ]


POTTS_NOTE = """`log pi(z) = sum_i h[i, z_i] + 0.5 sum_<ij> [z_i == z_j]`, fields U(-0.5, 0.5), free
boundaries. ALBP (barker): one logp + gradient of the one-hot relaxation per step (the
Potts log density is linear in each site's one-hot vector, so the ratios are exact);
ALBP (exact): 2 colours x 4 values = 9 batched term evaluations. CategoricalGibbsMetropolis
sweeps every site per draw, with either proposal; its time per draw has varied by up to
40% between runs on this VM, and every ratio against it with it."""


@dataclass(frozen=True)
class Budget:
    draws: int  # M-H steps of our steps per chain (as many tuning steps)
    gibbs_draws: int  # PyMC's Gibbs sweeps
    numpyro_draws: int  # NumPyro's iterations on the Bernoulli target
    lattice_draws: int  # and on the others (sweeps of 1000-3600 moves: 10-40 ms)
    small: bool  # small models (the smoke test)


BUDGETS = {"full": Budget(5000, 200, 5000, 500, False),
           "quick": Budget(400, 10, 400, 15, False),
           "smoke": Budget(40, 3, 10, 5, True)}
SMALL = {"bernoulli": {"n": 50}, "ising": {"side": 6},
         "fhmm": dict(FHMM, length=20), "potts": dict(POTTS, side=6)}


def main(quick: bool = False, smoke: bool = False) -> None:
    size = size_name(quick, smoke)
    b = BUDGETS[size]
    params = SMALL if b.small else PARAMS
    with_numpyro = numpyro_available()
    cases = [  # kind, name, NumPyro draws, our samplers, note
        ("bernoulli", f"Product Bernoulli, N = {params['bernoulli']['n']} (C2)",
         b.numpyro_draws, _binary_runs(b.draws, b.gibbs_draws), ""),
        ("ising", f"Ising {params['ising']['side']}x{params['ising']['side']} (C2)",
         b.lattice_draws, _binary_runs(b.draws, b.gibbs_draws), ""),
        ("fhmm", f"FHMM, L = {params['fhmm']['length']}, K = 5 (C2)", b.lattice_draws,
         _fhmm_runs(b.draws, b.gibbs_draws), ""),
        ("potts", f"Potts {params['potts']['side']}x{params['potts']['side']}, K = 4",
         b.lattice_draws, _potts_runs(b.draws, b.gibbs_draws), POTTS_NOTE),
    ]
    sections = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for kind, name, numpyro_draws, runs, note in cases:
            model = pymc_model(kind, params[kind])
            n_values = params[kind].get("n_states", 2)
            shape = model.initial_point()["x"].shape
            start = {"x": np.random.default_rng(0).integers(0, n_values, shape)}
            rows = []
            if with_numpyro:
                print(f"  {name}: NumPyro", flush=True)
                run = run_discrete_hmc_gibbs(numpyro_model(kind, params[kind])[0],
                                             numpyro_draws, numpyro_draws, 2)
                rows.append(numpyro_measurement(run, model, n_values, numpyro_draws))
                release_compiled_jax()
            for label, make_step, n_draws, per_draw in runs:
                print(f"  {name}: {label}", flush=True)
                tune = b.draws // per_draw if per_draw > 1 else n_draws
                rows.append(measure(model, label, make_step, draws=n_draws, tune=tune, seed=6,
                                    initvals=start))
            baseline = "NumPyro DiscreteHMCGibbs" if with_numpyro else runs[-1][0]
            numpyro_line = (f"NumPyro: {numpyro_draws} draws after {numpyro_draws} warm-up "
                            "per chain." if with_numpyro else "")
            parts = [f"### {name}", note, numpyro_line, format_table(rows, baseline=baseline)]
            sections.append("\n\n".join(p for p in parts if p))
    against = ("Ratios are against NumPyro." if with_numpyro else
               "NumPyro is not installed: no NumPyro rows, and the ratios are against "
               "PyMC's Gibbs sampler (the last row).")
    write_section("numpyro", f"""## Against NumPyro's DiscreteHMCGibbs

{provenance("run_numpyro", size, versions=numpyro_versions())}

Each model is written in NumPyro with the PyMC model's parameters, plus a standard normal
`z` (the kernel wraps NUTS for the continuous sites); a `DiscreteHMCGibbs` iteration
updates every discrete site by a Gibbs step (a random scan) and `z` by NUTS. 2 chains run
one after the other; NumPyro's compiled programs are cached on disk by a first run, and
the fixed cost of its chains that remains (initialisation, tracing, loading: the same
chains of one iteration each) is taken off the measured run's time; warm-up iterations
are included in the time, as PyMC's tuning is. ALBP, PAS and ARWM: {b.draws} M-H steps
after {b.draws} tuning steps (with k steps per draw, {b.draws} / k draws after
{b.draws} / k), from the same uniformly random start; the compiled loop runs the draw's
8 steps inside one numba function that calls the model's NUMBA-mode log density and
gradient (`compiled_loop=True`). PyMC's Gibbs samplers: {b.gibbs_draws} draws after
{b.gibbs_draws}. {against} Log density evaluations per draw (for "ESS logp per 1k
evals"): N (K - 1) for a Gibbs sweep (NumPyro, PyMC's proportional proposal), N for PyMC's
uniform proposal, one per M-H step for ALBP, PAS and ARWM with the gradient proposal;
ALBP with exact ratios evaluates the model's terms in batches ("-").

{(chr(10) * 2).join(sections)}
""")


if __name__ == "__main__":
    cli(main)
