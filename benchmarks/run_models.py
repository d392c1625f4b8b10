"""Per model: our steps against what a PyMC user would otherwise use, and NumPyro.

Three models the other scripts cover only in part:

1. **RBM over binarised scikit-learn digits** (64 visible units, 50 hidden, CD-1; the
   marginal of the visible units): ALBP (gradient, exact, compiled loop), ARWM, PAS,
   PyMC's default ``BinaryGibbsMetropolis`` and NumPyro's ``DiscreteHMCGibbs``, measured as
   in every other table (``harness.measure``: ESS of the log density and median site ESS,
   per second and per 1000 log density evaluations).
2. **Spike-and-slab regression** (the diabetes data of ``examples/spike_and_slab.py``: 55
   inclusion indicators next to 55 coefficients, an intercept and a noise scale) and
3. **the iris Gaussian mixture** (150 labels, K = 3, ``examples/iris_mixture.py``): the
   discrete step next to PyMC's NUTS for the continuous parameters, against PyMC's
   default discrete step (``BinaryGibbsMetropolis`` / ``CategoricalGibbsMetropolis``, also
   with NUTS) and NumPyro's ``DiscreteHMCGibbs`` (a Gibbs sweep of the discrete sites and
   a NUTS step per iteration). Measured by the smallest bulk ESS over the continuous
   parameters and the median ESS of the discrete sites (``harness.measure_mixed``).

NumPyro and JAX are benchmark-only dependencies (``make bench`` installs them; without
them the NumPyro rows are left out). Writes the section ``models`` of
``benchmarks/RESULTS.md``. Run with ``python -m benchmarks.run_models`` (``--quick``,
``--smoke``: fewer draws and samplers).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pymc as pm

import pymc_discrete as pmd
from benchmarks.harness import (
    MixedMeasurement,
    assigned_step,
    cli,
    format_mixed_table,
    format_table,
    measure,
    measure_mixed,
    mixed_measurement,
    numpyro_available,
    numpyro_measurement,
    numpyro_versions,
    provenance,
    release_compiled_jax,
    run_discrete_hmc_gibbs,
    size_name,
    write_section,
)
from pymc_discrete.example_models import binarised_digits, rbm_model, train_rbm

#: the continuous parameters measured on each mixed model (NumPyro uses the same names)
CONTINUOUS = {"spike": ["beta", "sigma", "alpha"],
              "mixture": ["w", "mu_first", "mu_rest", "sigma"]}


SHORT_NOTE = """
Short run (`--{size}`): no NumPyro rows, no compiled-loop row, and the mixed models'
tables have only `register()`'s step and PyMC's default step; `python -m
benchmarks.run_models` runs them all.
"""


def iris_data() -> tuple[np.ndarray, np.ndarray]:
    """Standardised iris measurements and the species."""
    from sklearn.datasets import load_iris

    iris = load_iris()
    return (iris.data - iris.data.mean(0)) / iris.data.std(0), iris.target


def numpyro_rbm(W: np.ndarray, b: np.ndarray, c: np.ndarray) -> Callable:
    """The RBM's visible marginal in NumPyro (plus the standard normal ``z`` that
    DiscreteHMCGibbs's NUTS needs)."""
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    W, b, c = (jnp.asarray(a) for a in (W, b, c))

    def model():
        numpyro.sample("z", dist.Normal())
        v = numpyro.sample("x", dist.Bernoulli(probs=0.5 * jnp.ones(W.shape[0])))
        numpyro.factor("rbm", v @ b + jnp.sum(jax.nn.softplus(c + v @ W)))

    return model


def numpyro_spike_and_slab(Z: np.ndarray, y: np.ndarray) -> Callable:
    """``examples/spike_and_slab.py``'s model in NumPyro."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    Z, y = jnp.asarray(Z), jnp.asarray(y)
    p = Z.shape[1]

    def model():
        g = numpyro.sample("g", dist.Bernoulli(0.1).expand([p]))
        beta = numpyro.sample("beta", dist.Normal(0.0, 0.5).expand([p]))
        sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
        alpha = numpyro.sample("alpha", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(alpha + Z @ (g * beta), sigma), obs=y)

    return model


def numpyro_mixture(data: np.ndarray, k: int = 3) -> Callable:
    """``examples/iris_mixture.py``'s model in NumPyro: the ordered first coordinate of the
    means has PyMC's density (a Normal(0, 2) restricted to the ordered region)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.distributions import constraints

    data = jnp.asarray(data)
    n, d = data.shape

    def model():
        w = numpyro.sample("w", dist.Dirichlet(jnp.ones(k)))
        first = numpyro.sample("mu_first", dist.ImproperUniform(
            constraints.ordered_vector, (), (k,)))
        numpyro.factor("mu_first_prior", dist.Normal(0.0, 2.0).log_prob(first).sum())
        rest = numpyro.sample("mu_rest", dist.Normal(0.0, 2.0).expand([k, d - 1]))
        sigma = numpyro.sample("sigma", dist.HalfNormal(1.0).expand([k, d]))
        mu = jnp.concatenate([first[:, None], rest], axis=1)
        z = numpyro.sample("z", dist.Categorical(probs=w).expand([n]))
        numpyro.sample("y", dist.Normal(mu[z], sigma[z]).to_event(1), obs=data)

    return model


def numpyro_mixed(label: str, sampler_model: Callable, discrete: str, continuous: list[str],
                  n_values: int, draws: int, warmup: int) -> MixedMeasurement:
    """DiscreteHMCGibbs on a mixed model, measured like ``harness.measure_mixed``."""
    run = run_discrete_hmc_gibbs(sampler_model, draws, warmup, 2)
    release_compiled_jax()
    x = run.samples[discrete]
    n_sites = int(np.prod(x.shape[2:]))
    return mixed_measurement(
        label, x, {v: run.samples[v] for v in continuous}, run.seconds, warmup,
        accept=float("nan"), scale=float("nan"), nuts_steps=float(run.steps.mean()),
        discrete_evals=float(n_sites * (n_values - 1)),
    )


def rbm_section(draws: int, gibbs_draws: int, numpyro_draws: int, quick: bool) -> str:
    """The RBM table; ``quick``: without the compiled loop (its numba compilation, about
    15 s here, would dominate; run_core --quick has it); ``numpyro_draws`` 0: without
    NumPyro."""
    W, b, c = train_rbm(binarised_digits(), n_hidden=50)
    model = rbm_model(W, b, c)
    start = {"x": np.random.default_rng(0).integers(0, 2, W.shape[0])}
    runs = [
        ("ALBP (barker)", lambda m: pmd.ALBP([m["x"]]), draws, 1),
        ("ALBP (sqrt, compiled loop, 8 steps per draw)",
         lambda m: pmd.ALBP([m["x"]], weight="sqrt", steps_per_draw=8, compiled_loop=True),
         draws // 8, 8),
        ("ALBP (exact)", lambda m: pmd.ALBP([m["x"]], proposal="exact"), draws, 1),
        ("PAS (gradient)", lambda m: pmd.PAS([m["x"]]), draws, 1),
        ("ARWM", lambda m: pmd.ARWM([m["x"]]), draws, 1),
        ("BinaryGibbsMetropolis", lambda m: pm.BinaryGibbsMetropolis([m["x"]]),
         gibbs_draws, 1),
    ]
    if quick:
        runs = [run for run in runs if "compiled" not in run[0]]
    rows = []
    if numpyro_draws:
        print("  RBM: NumPyro", flush=True)
        run = run_discrete_hmc_gibbs(numpyro_rbm(W, b, c), numpyro_draws, numpyro_draws, 2)
        release_compiled_jax()
        rows.append(numpyro_measurement(run, model, 2, numpyro_draws))
    for label, make_step, n_draws, per_draw in runs:
        print(f"  RBM: {label}", flush=True)
        tune = draws // per_draw if per_draw > 1 else n_draws
        rows.append(measure(model, label, make_step, draws=n_draws, tune=tune, seed=8,
                            initvals=start))
    return format_table(rows, baseline="BinaryGibbsMetropolis")


def mixed_section(name: str, model: pm.Model, numpyro_model: Callable[[], Callable],
                  discrete: str, n_values: int, runs: list, baseline: str, numpyro_draws: int,
                  initvals: dict | None, quick: bool) -> str:
    """One mixed model's table (``numpyro_model()``: its NumPyro version); ``quick``: only
    the first and the last (baseline) of ``runs`` and no NumPyro run (``numpyro_draws``
    0 also skips it)."""
    if quick:
        runs, numpyro_draws = [runs[0], runs[-1]], 0
    continuous = CONTINUOUS[name]
    rows = []
    if numpyro_draws:
        print(f"  {name}: NumPyro", flush=True)
        rows.append(numpyro_mixed("NumPyro DiscreteHMCGibbs", numpyro_model(), discrete,
                                  continuous, n_values, numpyro_draws, numpyro_draws))
    for label, make_step, n_draws in runs:
        print(f"  {name}: {label}", flush=True)
        rows.append(measure_mixed(model, label, make_step, discrete=discrete,
                                  continuous=continuous, draws=n_draws, tune=n_draws,
                                  seed=8, initvals=initvals))
    return format_mixed_table(rows, baseline=baseline)


def mixed_runs(var: str, gibbs: type, draws: int, gibbs_draws: int, default: str,
               start: dict) -> list:
    """(label, step factory, draws) for the discrete variable ``var`` of a mixed model:
    the package's default use (what plain ``pm.sample()`` assigns after ``register()``,
    ``default`` here), our other steps, then PyMC's default Gibbs step ``gibbs`` (the
    baseline, last)."""
    return [
        (f"register(): {default}", lambda m: assigned_step(m, True, start), draws),
        ("ALBP (exact) + NUTS", lambda m: pmd.ALBP([m[var]], proposal="exact"), draws),
        ("ALBP (exact, 8 steps per draw) + NUTS",
         lambda m: pmd.ALBP([m[var]], proposal="exact", steps_per_draw=8), draws),
        ("ALBP (gradient) + NUTS", lambda m: pmd.ALBP([m[var]], proposal="gradient"), draws),
        ("PAS (gradient) + NUTS", lambda m: pmd.PAS([m[var]], proposal="gradient"), draws),
        ("ARWM + NUTS", lambda m: pmd.ARWM([m[var]]), draws),
        (f"{gibbs.__name__} + NUTS", lambda m: gibbs([m[var]]), gibbs_draws),
    ]


#: M-H steps of our steps (RBM), Gibbs sweeps, draws of the mixed models (our steps and
#: Gibbs), NumPyro's iterations (0: no NumPyro)
BUDGETS = {"full": (5000, 500, 1000, 500, 1000), "quick": (400, 40, 100, 50, 0),
           "smoke": (40, 4, 20, 10, 0)}


def main(quick: bool = False, smoke: bool = False) -> None:
    from examples.iris_mixture import mixture_model
    from examples.spike_and_slab import design, spike_and_slab_model

    size = size_name(quick, smoke)
    short = size != "full"
    draws, gibbs_draws, mixed_draws, gibbs_mixed, numpyro_draws = BUDGETS[size]
    if not numpyro_available():
        numpyro_draws = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        rbm = rbm_section(draws, gibbs_draws, numpyro_draws, short)
        Z, y, _ = design()
        # --smoke: not this model (a one-chain run of 5 + 5 draws of register()'s
        # PairedFlip + NUTS took 0.5-13 s here; mixed_section runs on the mixture)
        spike = "Not run by `--smoke`." if smoke else mixed_section(
            "spike", spike_and_slab_model(Z, y), lambda: numpyro_spike_and_slab(Z, y), "g", 2,
            mixed_runs("g", pm.BinaryGibbsMetropolis, mixed_draws, gibbs_mixed,
                       "PairedFlip + NUTS", {}),
            "BinaryGibbsMetropolis + NUTS", numpyro_draws, None, short)
        data, _ = iris_data()
        labels0 = {"z": np.random.default_rng(0).integers(0, 3, data.shape[0])}
        mixture = mixed_section(
            "mixture", mixture_model(data), lambda: numpyro_mixture(data), "z", 3,
            mixed_runs("z", pm.CategoricalGibbsMetropolis, mixed_draws, gibbs_mixed,
                       "CollapsedNUTS", labels0),
            "CategoricalGibbsMetropolis + NUTS", numpyro_draws, labels0, short)
    numpyro_note = ("" if numpyro_draws else
                    " No NumPyro rows in this run (NumPyro not installed, or a short run).")
    write_section("models", f"""## RBM, spike-and-slab and mixture: against PyMC's defaults and NumPyro

{provenance("run_models", size, versions=numpyro_versions())}

NumPyro's `DiscreteHMCGibbs` runs 2 chains one after the other, timed warm (its compiled
programs cached on disk by a first run; the fixed cost of its chains that remains, the
same chains of one iteration each, taken off), warm-up included in the time as PyMC's
tuning is; an iteration is a random-scan Gibbs sweep of the discrete sites (N (K - 1)
log density evaluations) and one NUTS step.{numpyro_note}

### RBM over binarised scikit-learn digits (64 visible, 50 hidden, CD-1)

`log p(v) = b . v + sum_j softplus(c_j + (v W)_j)`: every hidden unit couples all 64
visible units; gradient ratios are first-order. ALBP, PAS and ARWM: {draws} M-H steps
after {draws} tuning steps (the compiled loop: {draws // 8} draws of 8 steps);
BinaryGibbsMetropolis: {gibbs_draws} sweeps after {gibbs_draws}; NumPyro: {numpyro_draws}
iterations after as many (none in a quick run); 2 chains, random start. NumPyro's model adds a standard normal
`z` (its kernel needs a continuous site); its log density does not enter the ESS.

{rbm}

### Spike-and-slab regression (diabetes: 55 indicators, coefficients, intercept, scale)

`examples/spike_and_slab.py`: the 10 standardised predictors and their 45 pairwise
interactions, inclusion indicators `g ~ Bernoulli(0.1)`, `beta ~ N(0, 0.5)`; the Gaussian
likelihood is quadratic in `g`, so gradient ratios are first-order. Each row: the discrete
step for `g`, PyMC's NUTS for `beta`, `sigma`, `alpha` ({mixed_draws} draws after
{mixed_draws} tuning; Gibbs: {gibbs_mixed} after {gibbs_mixed}), from PyMC's initial point
(no predictor included). "min ESS" is the smallest bulk ESS over every element of `beta`,
`sigma`, `alpha`; evaluations per draw are NUTS's leapfrog steps plus the discrete step's
log density evaluations ("-": exact ratios evaluated in batches of the model's terms, or
a step that evaluates other functions). "8 steps per draw": 8 M-H steps of the
indicators per NUTS step. "register()": what `pmd.register()` and plain `pm.sample()`
run, PairedFlip on `g` and `beta` (the flips and swaps with fresh coefficients, see
`docs/algorithms.md`) with NUTS on `sigma` and `alpha`.

{spike}

### Iris Gaussian mixture (150 labels, K = 3)

`examples/iris_mixture.py`: standardised iris measurements, ordered means on the first
coordinate, HalfNormal scales, Dirichlet weights; labels `z` by the discrete step, the rest
by NUTS ({mixed_draws} draws after {mixed_draws} tuning; Gibbs: {gibbs_mixed} after
{gibbs_mixed}); PyMC runs start from the same random labels, NumPyro from its default
initialisation. "min ESS" is over every element of `w`, `mu_first`, `mu_rest`, `sigma`
(label switching is blocked by the ordering, so these are identified). "register()": what
`pmd.register()` and plain `pm.sample()` run, CollapsedNUTS (NUTS with the labels summed
out, then drawn exactly).

{mixture}
{SHORT_NOTE.format(size=size) if short else ""}""")


if __name__ == "__main__":
    cli(main)
