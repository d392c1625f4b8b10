"""Applied benchmark: real model families with discrete unknowns.

For each model of ``benchmarks/applied_models.py`` (a Gaussian mixture on iris, site
occupancy, capture-recapture with data augmentation, a change point, Bayesian variable
selection, a small spike-and-slab regression with a continuous spike, a Gaussian hidden
Markov model), five ways to sample it, each in its own ``try`` so that one failure is a
row of the table, not the end of the run:

1. **PyMC default**: ``pmd.unregister()``, then plain ``pm.sample()`` (PyMC's own Gibbs /
   Metropolis step for the discrete variables, NUTS for the rest);
2. **pymc-discrete default**: ``pmd.register()``, then plain ``pm.sample()``;
3. **pymc-discrete BlockedGibbs**: ``pm.sample(step=applied.best_steps(model))``, the
   rest assigned by PyMC (NUTS): data augmentation, the discrete block swept by exact
   conditional draws between NUTS steps on the continuous variables (where ``register()``
   sums such blocks out, the alternative to its choice); on the HMM, CollapsedNUTS (the
   chain summed out by the forward algorithm, the alternative to ``register()``'s
   ChainGibbs), on the N-mixture model, CountLBP (the alternative to summing out);
4. **marginalised NUTS**: the model with its discrete variables summed out,
   ``pm.sample(init="adapt_diag")`` (NUTS alone, started where the other runs start the
   continuous variables: see below), run with 4x the draws: it is also the
   **reference** of the agreement column;
5. **NumPyro DiscreteHMCGibbs** (Gibbs sweeps of the discrete sites and a NUTS step per
   iteration), where it expresses the model and NumPyro is installed (a row saying so
   where it is not).

Every variant runs once per seed (``--seeds``, default 1 2 3: the variants of one seed
one after the other, then the next seed). Every run: 4 chains one after the other
(``cores=1``), the seed's random seed, the same tune and draws (the reference: 4x the
draws), the discrete variables started from dispersed valid values (``applied.start``;
the same for every variant of a seed, different in every seed: :func:`start_seed`), the
continuous ones at the model's initial point (PyMC
does not jitter the start of a compound-step run; the NUTS-only reference is told not to
either). Timing follows DESIGN.md section 6: a short one-chain run of the same call comes
first (it loads the compiled functions), and the time is PyMC's ``sampling_time`` of the
second call (step construction and compilation excluded). NumPyro is timed warm too
(``harness.run_discrete_hmc_gibbs``: with a persistent compilation cache filled by a
first run, the fixed cost of its chains is measured on chains of one iteration and
subtracted).
"ESS/s" divides by the share of that time spent on the post-tuning draws
(``harness.split_time``), so that the reference's longer run is comparable.

Measured per run: the smallest bulk ESS over every element of the continuous parameters
and that per second; the largest r-hat over them and over the discrete summaries; the
posterior means of the discrete summaries (the marginal model's are Rao-Blackwellised:
the mean over its draws of ``E[summary | continuous parameters]``); the agreement with
the reference, ``max |mean - mean_ref| / sqrt(MCSE^2 + MCSE_ref^2)`` over every
continuous element and every summary (against the exact posterior means, MCSE_ref = 0,
where the model provides them: ``AppliedModel.exact_means``); the fraction of the
discrete step's proposals accepted, when it reports one; the smallest bulk ESS of the
headline discrete summaries (the switch point, the number of occupied sites, ...) and
that per second; whether the run converged (:func:`convergence_problem`: r-hat at most
1.01 over everything measured and within 4 MCSE of the reference).

Reported per model and variant over the seeds (DESIGN.md section 6): the median with the
spread (min-max) of times, ESS/s and ratios, the worst r-hat and deviation, and in how
many seeds the run converged. A ratio (against PyMC's default or the reference) counts
in a seed only where both runs converged: a seed whose baseline did not is "n/c", left
out of the median, and the cell says so (``harness.ratio_over_seeds``). A table of every
run, seed by seed, follows, and a summary over the models for ``register()`` opens the
section.

Run from the repository root: ``python -m benchmarks.run_applied`` (``--quick``: three
models, one seed, two chains of 100 draws; ``--smoke``: three models, one seed, two
chains of a few draws, for the tests; both write to ``benchmarks/out/``; ``--seeds 1 2 3
2024``; ``--models occupancy,change_point``: a subset; ``--draws``, ``--tune``,
``--ref-draws``, ``--no-numpyro``). Writes the section
``applied`` of ``benchmarks/RESULTS.md`` when every model ran over at least 3 seeds (or
with ``--write``; never with ``--no-write`` or, at full size, fewer than 3 seeds).
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import arviz as az
import numpy as np
import pymc as pm

import pymc_discrete as pmd
from benchmarks.applied_models import BUILDERS, AppliedModel
from benchmarks.harness import (
    SeedOutcome,
    cell,
    counted_ratios,
    deviation,
    log_messages,
    markdown_table,
    max_rhat,
    mean_mcse,
    numpyro_available,
    numpyro_versions,
    provenance,
    ratio_over_seeds,
    release_compiled_jax,
    results_path,
    run_discrete_hmc_gibbs,
    size_name,
    split_time,
    spread_over_seeds,
    write_section,
)

PYMC_DEFAULT = "PyMC default"
PMD_DEFAULT = "pymc-discrete default"
PMD_BEST = "pymc-discrete BlockedGibbs"
MARGINAL = "marginalised NUTS (reference)"
NUMPYRO = "NumPyro DiscreteHMCGibbs"

#: the bars of the package's default use
MAX_DEVIATION, MAX_RHAT, VS_PYMC, VS_MARGINAL = 4.0, 1.01, 2.0, 1.0 / 3.0


@dataclass
class Run:
    """The draws of one way of sampling one model, or why there are none."""

    variant: str
    steps: str = ""
    draws: int = 0
    tune: int = 0
    chains: int = 0
    seconds: float = float("nan")
    continuous: dict[str, np.ndarray] = field(default_factory=dict)
    summaries: dict[str, np.ndarray] = field(default_factory=dict)
    accept: float = float("nan")
    error: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class Row:
    """What one run achieved, against PyMC's default and the reference."""

    run: Run
    ess_min: float = float("nan")
    ess_min_at: str = ""
    ess_per_s: float = float("nan")
    rhat_continuous: float = float("nan")
    rhat_summaries: float = float("nan")
    means: dict[str, float] = field(default_factory=dict)
    deviation: float = float("nan")
    deviation_at: str = ""
    #: smallest bulk ESS over the headline discrete summaries that vary, where, per second
    ess_summary: float = float("nan")
    ess_summary_at: str = ""
    ess_summary_per_s: float = float("nan")
    #: None if the run converged (r-hat and agreement), else why not
    problem: str | None = None


# --------------------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------------------


def _elements(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every scalar element of (chain, draw, *shape) arrays as its own (chain, draw)
    array, named like ``w[0]`` or ``sigma[1,2]``."""
    out = {}
    for name, a in arrays.items():
        a = np.asarray(a, dtype=float)
        if a.ndim == 2:
            out[name] = a
            continue
        for idx in np.ndindex(*a.shape[2:]):
            out[f"{name}[{','.join(map(str, idx))}]"] = a[(slice(None), slice(None), *idx)]
    return out


def describe_steps(model: pm.Model, step) -> str:
    """Which step class PyMC uses for which variable, as ``pm.sample(step=step)`` would
    assign them (without building the automatically assigned ones)."""
    from pymc.sampling.mcmc import assign_step_methods
    from pymc.step_methods import STEP_METHODS

    provided, selected = assign_step_methods(model, step, methods=STEP_METHODS)

    def names(vars_) -> str:
        return ", ".join(model.values_to_rvs[v].name for v in vars_)

    parts = []
    for s in provided:
        mode = getattr(s, "proposal", None)
        parts.append(f"{type(s).__name__}{f' ({mode})' if mode else ''}: {names(s.vars)}")
    parts += [f"{cls.__name__}: {names(v)}" for cls, v in selected.items() if v]
    return "; ".join(parts)


def _sample_timed(model: pm.Model, make_step: Callable[[pm.Model], object] | None,
                  draws: int, tune: int, chains: int, seed: int,
                  initvals: list[dict] | None) -> tuple[object, float, str]:
    """A short one-chain run, then the measured run of the same ``pm.sample`` call.

    ``make_step`` (or None: PyMC assigns every step, plain ``pm.sample()``) builds the
    steps once; both runs use them, so the measured run loads nothing new. Returns the
    inference data, the measured run's sampling seconds (PyMC's ``sampling_time``: step
    construction excluded) and the step assignment.
    """
    warm = min(100, max(5, draws // 10))
    # NUTS alone (the marginal models): start at the model's initial point, as PyMC
    # starts the continuous variables of every compound-step run, rather than jittered
    # around it (on the mixture, jitter left 3 of 4 chains in local modes 27 to 50 log
    # units below the main one, which the discrete runs never visit)
    common = dict(cores=1, progressbar=False, compute_convergence_checks=False,
                  init="adapt_diag")
    # what register()'s AutoStep logs about the step it builds: "pymc_discrete chose X ..."
    with model, log_messages("pymc.pymc_discrete") as messages:
        step = make_step(model) if make_step is not None else None
        steps = describe_steps(model, step)
        pm.sample(step=step, draws=warm, tune=warm, chains=1, random_seed=seed + 1,
                  initvals=None if initvals is None else initvals[:1], **common)
        began = time.perf_counter()
        idata = pm.sample(step=step, draws=draws, tune=tune, chains=chains,
                          random_seed=seed, initvals=initvals, **common)
        wall = time.perf_counter() - began
    chosen = [m.split()[2].rstrip(":") for m in messages if m.startswith("pymc_discrete chose ")]
    if chosen:
        steps = steps.replace("AutoStep", f"AutoStep -> {chosen[-1]}")
    seconds = float(idata.sample_stats.attrs.get("sampling_time", wall))
    return idata, seconds, steps


def start_seed(seed: int, chains: int) -> int:
    """The seed of ``applied.start`` for the run of ``seed`` (1, 2, ...): chain c starts
    from the values drawn with seed ``chains * (seed - 1) + 1 + c``, so that no two seeds
    share a start (``applied.start(chains, s)`` seeds chain c with s + c)."""
    if seed < 1:
        raise ValueError(f"seeds are 1, 2, ...: got {seed}")
    return chains * (seed - 1) + 1


def run_pymc(variant: str, applied: AppliedModel, *, marginal: bool = False,
             make_step: Callable[[pm.Model], object] | None = None,
             before: Callable[[], None] | None = None, draws: int, tune: int,
             chains: int, seed: int) -> Run:
    """Sample ``applied.model`` (or its marginal) one way; a failure becomes ``error``.

    ``before`` runs first (``pmd.register`` / ``pmd.unregister``); registration is always
    undone afterwards, so one variant cannot leak into the next.
    """
    run = Run(variant, draws=draws, tune=tune, chains=chains)
    model = applied.marginal if marginal else applied.model
    initvals = None if marginal else applied.start(chains, start_seed(seed, chains))
    print(f"  {applied.name}: {variant}", flush=True)
    try:
        if before is not None:
            before()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", pmd.RelaxationWarning)
            warnings.simplefilter("always", pmd.TuningWarning)
            idata, run.seconds, run.steps = _sample_timed(
                model, make_step, draws, tune, chains, seed, initvals)
        run.notes = sorted({f"{w.category.__name__}: {str(w.message).splitlines()[0]}"
                            for w in caught if issubclass(w.category, (
                                pmd.RelaxationWarning, pmd.TuningWarning))})
    except Exception as exc:  # noqa: BLE001 -- reported in the table, not fatal
        run.error = _explain(exc)
        traceback.print_exc(file=sys.stderr)
        return run
    finally:
        pmd.unregister()
    posterior = {v: idata.posterior[v].values for v in idata.posterior.data_vars}
    run.continuous = {v: posterior[v] for v in applied.continuous}
    if marginal:
        run.summaries = applied.marginal_summaries(run.continuous)
    else:
        run.summaries = {k: fn(posterior) for k, fn in applied.summaries.items()}
    stats = idata.sample_stats
    # the fraction of accepted proposals: PyMC's Metropolis reports exp(log ratio) as
    # "accept" (above 1 for uphill moves), ALBP min(1, ratio); both report "accepted"
    for name in ("accepted", "accept"):
        if name in stats:
            run.accept = float(stats[name].mean())
            break
    print(f"    {run.steps}: {run.seconds:.1f} s", flush=True)
    return run


def _explain(exc: BaseException) -> str:
    """One line for the table: "unsupported" when a step refuses a variable (raised while
    building the steps), "failed" otherwise."""
    message = " ".join(str(exc).split())[:160]
    refused = isinstance(exc, (TypeError, ValueError, NotImplementedError)) and any(
        word in message.lower() for word in ("support", "bernoulli", "categorical",
                                              "not a", "cannot sample", "incompatible"))
    return f"{'unsupported' if refused else 'failed'}: {type(exc).__name__}: {message}"


def run_numpyro(applied: AppliedModel, *, draws: int, tune: int, chains: int,
                seed: int) -> Run:
    """``DiscreteHMCGibbs(NUTS(model))`` with ``chains`` sequential chains; JAX at its
    default precision (float32). The time excludes NumPyro's per-chain initialisation and
    compilation (compiled programs cached on disk; what is left, measured on the same
    chains of one iteration each, subtracted)."""
    run = Run(NUMPYRO, steps="Gibbs sweep (discrete) + NUTS", draws=draws, tune=tune,
              chains=chains)
    print(f"  {applied.name}: {NUMPYRO}", flush=True)
    if applied.numpyro_model is None:
        run.error = "not expressible in DiscreteHMCGibbs"
        return run
    if not numpyro_available():
        run.error = "unavailable: NumPyro is not installed (pip install -e .[bench])"
        return run

    def init(n_chains: int) -> dict:
        # the same valid discrete start as the PyMC runs (NumPyro's own draws z from the
        # prior, which has no density at an occupied site marked empty)
        starts = [applied.numpyro_start(s) if applied.numpyro_start else s
                  for s in applied.start(n_chains, start_seed(seed, chains))]
        params = {k: np.stack([s[k] for s in starts]) for k in starts[0]}
        return {k: v[0] for k, v in params.items()} if n_chains == 1 else params

    mismatch = numpyro_density_mismatch(applied, seed)
    if mismatch is not None:
        run.error = mismatch
        return run
    try:
        timed = run_discrete_hmc_gibbs(applied.numpyro_model(), draws, tune, chains,
                                       init=init, key=seed)
    except Exception as exc:  # noqa: BLE001
        run.error = _explain(exc)
        traceback.print_exc(file=sys.stderr)
        return run
    run.seconds = timed.seconds
    run.notes.append(timed.note)
    samples = timed.samples
    run.continuous = {v: samples[v] for v in applied.continuous}
    run.summaries = {k: fn(samples) for k, fn in applied.summaries.items()}
    print(f"    {run.seconds:.1f} s", flush=True)
    return run


def numpyro_density_mismatch(applied: AppliedModel, seed: int) -> str | None:
    """None if the NumPyro model has the PyMC model's log density (in float64, within
    1e-6: PyMC computes some constants in float32) at a point of the PyMC model near its
    initial point with the first chain's discrete start; else what differs. Run before
    every NumPyro measurement, so a table never compares two different models."""
    import jax
    from numpyro.infer.util import log_density

    model = applied.model
    names = applied.continuous + applied.discrete
    rng = np.random.default_rng(seed)
    start = applied.start(1, seed)[0]
    point = {k: (v + rng.normal(0.0, 0.5, np.shape(v)) if k not in start else v)
             for k, v in model.initial_point().items()}
    point.update(start)
    constrained = model.compile_fn(model.replace_rvs_by_values([model[v] for v in names]),
                                   inputs=model.value_vars, on_unused_input="ignore")
    params = dict(zip(names, constrained(point)))
    if applied.numpyro_start is not None:  # NumPyro's own discrete sites
        params = {k: v for k, v in params.items() if k not in applied.discrete}
        params.update(applied.numpyro_start(start))
    with jax.enable_x64(True):
        ours = float(jax.jit(lambda v: log_density(applied.numpyro_model(), (), {}, v)[0])(
            params))
    theirs = float(model.compile_logp(jacobian=False)(point))
    if np.isclose(ours, theirs, rtol=1e-9, atol=1e-6):
        return None
    return f"failed: NumPyro's log density {ours!r} differs from PyMC's {theirs!r}"


def best_variant(applied: AppliedModel) -> str:
    """The name of the third variant's row: ``applied.best_steps`` by its label."""
    return f"pymc-discrete {applied.best_label}"


def run_model(applied: AppliedModel, *, draws: int, tune: int, ref_draws: int,
              chains: int, seed: int, numpyro: bool) -> list[Run]:
    """Every variant on one model; the reference (marginalised NUTS) first."""
    common = dict(tune=tune, chains=chains, seed=seed)
    runs = [
        run_pymc(MARGINAL, applied, marginal=True, draws=ref_draws, **common),
        run_pymc(PYMC_DEFAULT, applied, before=pmd.unregister, draws=draws, **common),
        run_pymc(PMD_DEFAULT, applied, before=pmd.register, draws=draws, **common),
        run_pymc(best_variant(applied), applied, make_step=applied.best_steps, draws=draws,
                 **common),
    ]
    if numpyro:
        runs.append(run_numpyro(applied, draws=draws, **common))
    return runs


# --------------------------------------------------------------------------------------
# measuring
# --------------------------------------------------------------------------------------


def measure(run: Run, reference: Run | None,
            exact: dict[str, float] | None = None,
            headline: list[str] | None = None) -> Row:
    """ESS, r-hat, summary means and the agreement of one run with the ``exact``
    posterior means where given, else with the ``reference`` run; the smallest ESS of
    the ``headline`` summaries (default every summary) and whether the run converged
    (:func:`convergence_problem`)."""
    row = Row(run)
    if run.error is not None:
        row.problem = run.error.split(":", 1)[0]
        return row
    elements = _elements(run.continuous)
    ess = {k: float(np.asarray(az.ess(a, method="bulk"))) for k, a in elements.items()}
    row.ess_min_at = min(ess, key=ess.get)
    row.ess_min = ess[row.ess_min_at]
    _, post_tuning = split_time(run.seconds, run.chains, run.draws, run.tune)
    row.ess_per_s = row.ess_min / post_tuning
    row.rhat_continuous = max_rhat(elements)
    row.rhat_summaries = max_rhat(run.summaries)
    row.means = {k: float(a.mean()) for k, a in run.summaries.items()}
    ours = {**elements, **run.summaries}
    if exact is not None:
        row.deviation, row.deviation_at = deviation(
            ours, {k: (v, 0.0) for k, v in exact.items()})
    elif reference is not None and reference.error is None and reference is not run:
        theirs = {**_elements(reference.continuous), **reference.summaries}
        row.deviation, row.deviation_at = deviation(
            ours, {k: mean_mcse(a) for k, a in theirs.items()})
    summary_ess = {}
    for k in headline if headline is not None else list(run.summaries):
        a = run.summaries[k]
        if np.ptp(a) > 0:  # a summary constant in every draw has no ESS
            summary_ess[k] = float(np.asarray(az.ess(a, method="bulk")))
    if summary_ess:
        row.ess_summary_at = min(summary_ess, key=summary_ess.get)
        row.ess_summary = summary_ess[row.ess_summary_at]
        row.ess_summary_per_s = row.ess_summary / post_tuning
    row.problem = convergence_problem(row)
    return row


def run_rhat(row: Row) -> float:
    """The larger of a run's r-hats (continuous elements, discrete summaries), NaN if
    neither is defined."""
    return _worst([row.rhat_continuous, row.rhat_summaries])


def _worst(values: list[float]) -> float:
    """The largest finite value, NaN if none."""
    finite = [v for v in values if np.isfinite(v)]
    return max(finite) if finite else float("nan")


def convergence_problem(row: Row) -> str | None:
    """None if the run converged: r-hat at most 1.01 over every continuous element and
    every discrete summary, and within 4 MCSE of the reference (or of the exact means);
    else why not, e.g. ``"r-hat 1.532"``. A failed run: its error's first word."""
    if row.run.error is not None:
        return row.run.error.split(":", 1)[0]
    problems = []
    rhat = run_rhat(row)
    if not np.isfinite(rhat):
        problems.append("r-hat undefined")
    elif rhat > MAX_RHAT:
        problems.append(f"r-hat {_rhat_cell(rhat)}")
    if row.deviation > MAX_DEVIATION:
        problems.append(f"{row.deviation:.1f} MCSE off ({row.deviation_at})")
    return "; ".join(problems) or None


# --------------------------------------------------------------------------------------
# reporting
# --------------------------------------------------------------------------------------


def _rhat_cell(value: float) -> str:
    """r-hat to 3 decimals; a chain stuck at its start gives absurd values: "> 10"."""
    return cell(value, ".3f") if not value > 10 else "> 10"


def measure_seed(applied: AppliedModel, runs: list[Run],
                 exact: dict[str, float] | None = None) -> list[Row]:
    """The rows of one seed's runs (the reference: the marginalised run)."""
    reference = next((r for r in runs if r.variant == MARGINAL), None)
    return [measure(r, reference, exact, applied.headline) for r in runs]


@dataclass
class ModelResult:
    """Every seed's rows of one model, the variants in the same order in every seed."""

    applied: AppliedModel
    seeds: list[int]
    #: one list of rows per seed
    rows: list[list[Row]]
    exact: dict[str, float] | None = None

    @property
    def variants(self) -> list[str]:
        out: list[str] = []
        for rows in self.rows:
            out += [r.run.variant for r in rows if r.run.variant not in out]
        return out

    def of(self, variant: str) -> list[Row]:
        """The rows of ``variant``, one per seed (an empty failed row where it is
        missing)."""
        out = []
        for rows in self.rows:
            row = next((r for r in rows if r.run.variant == variant), None)
            out.append(row if row is not None else Row(Run(variant, error="not run"),
                                                       problem="not run"))
        return out


def _outcomes(rows: list[Row], attr: str) -> list[SeedOutcome]:
    return [SeedOutcome(getattr(r, attr), r.problem) for r in rows]


def _converged_cell(rows: list[Row], seeds: list[int]) -> str:
    """``3/3``, or ``2/3 (seed 2: r-hat 1.532)``: the seeds where the run converged and
    why the others did not (seeds with the same reason grouped)."""
    why: dict[str, list[int]] = {}
    for seed, r in zip(seeds, rows):
        if r.problem is not None:
            why.setdefault(r.problem, []).append(seed)
    ok = len(seeds) - sum(len(v) for v in why.values())
    cell = f"{ok}/{len(seeds)}"
    if why:
        cell += " (" + "; ".join(f"seed{'s' if len(v) > 1 else ''} "
                                 f"{', '.join(map(str, v))}: {p}"
                                 for p, v in why.items()) + ")"
    return cell


def _summary_label(applied: AppliedModel) -> str:
    return ", ".join(applied.headline)


def _unique(items: list[str]) -> str:
    return " / ".join(dict.fromkeys(i for i in items if i))


def seeds_table(result: ModelResult) -> str:
    """One model's markdown table over its seeds: per variant the median over seeds with
    the spread (min-max), the ratios counted only where both runs converged
    (:func:`benchmarks.harness.ratio_over_seeds`), and the worst r-hat and deviation."""
    applied, seeds, exact = result.applied, result.seeds, result.exact is not None
    pymc, ref = result.of(PYMC_DEFAULT), result.of(MARGINAL)
    label = _summary_label(applied)
    header = ["variant", "steps", "converged (seeds)", "seconds", "min ESS/s (continuous)",
              f"min ESS/s ({label})", "vs PyMC default: min ESS/s (continuous)",
              f"vs PyMC default: ESS/s ({label})", "vs marginalised: min ESS/s (continuous)",
              "worst r-hat (continuous / summaries)",
              *(f"mean {h}" for h in applied.headline), "worst dev. / MCSE", "accept"]
    lines = []
    for variant in result.variants:
        rows = result.of(variant)
        done = [r for r in rows if r.run.error is None]
        converged = _converged_cell(rows, seeds)
        if not done:
            lines.append([variant, _unique([r.run.error for r in rows]), converged,
                          *["-"] * (len(header) - 3)])
            continue
        continuous, summary = _outcomes(rows, "ess_per_s"), _outcomes(rows, "ess_summary_per_s")
        vs_pymc = ("baseline" if variant == PYMC_DEFAULT
                   else ratio_over_seeds(continuous, _outcomes(pymc, "ess_per_s")))
        # the reference's summaries are Rao-Blackwellised: another estimator, no ratio
        vs_pymc_summary = ("baseline" if variant == PYMC_DEFAULT else "-" if variant == MARGINAL
                           else ratio_over_seeds(summary, _outcomes(pymc, "ess_summary_per_s")))
        vs_ref = ("reference" if variant == MARGINAL
                  else ratio_over_seeds(continuous, _outcomes(ref, "ess_per_s")))
        summary_cell = spread_over_seeds([r.ess_summary_per_s for r in rows])
        if variant == MARGINAL and summary_cell != "-":
            summary_cell += " (Rao-Blackwellised)"
        means = [spread_over_seeds([r.means.get(h, float("nan")) for r in done], ".2f")
                 for h in applied.headline]
        if variant == MARGINAL and not exact:
            dev = "ref"
        else:
            worst = max(done, key=lambda r: r.deviation if np.isfinite(r.deviation) else -1)
            dev = f"{cell(worst.deviation, '.1f')} ({worst.deviation_at})"
        accept = [r.run.accept for r in done if np.isfinite(r.run.accept)]
        lines.append([
            variant, _unique([r.run.steps for r in done]), converged,
            spread_over_seeds([r.run.seconds for r in rows]),
            spread_over_seeds([r.ess_per_s for r in rows]), summary_cell, vs_pymc,
            vs_pymc_summary, vs_ref,
            f"{_rhat_cell(_worst([r.rhat_continuous for r in done]))} / "
            f"{_rhat_cell(_worst([r.rhat_summaries for r in done]))}",
            *means, dev, cell(np.median(accept) if accept else None, ".2f")])
    return markdown_table(header, lines)


def per_seed_table(result: ModelResult) -> str:
    """Every run of one model, seed by seed: what the medians are taken over."""
    label = _summary_label(result.applied)
    header = ["variant", "seed", "seconds", "min ESS (continuous)", "min ESS/s",
              f"min ESS ({label})", f"ESS/s ({label})", "max r-hat (continuous / summaries)",
              "max dev. / MCSE", "converged"]
    lines = []
    for variant in result.variants:
        for seed, r in zip(result.seeds, result.of(variant)):
            if r.run.error is not None:
                lines.append([variant, seed, r.run.error, *["-"] * 6, "no"])
                continue
            dev = ("ref" if variant == MARGINAL and result.exact is None
                   else f"{cell(r.deviation, '.1f')} ({r.deviation_at})")
            lines.append([
                variant, seed, cell(r.run.seconds, ".1f"),
                f"{cell(r.ess_min, '.0f')} ({r.ess_min_at})", cell(r.ess_per_s, ".1f"),
                cell(r.ess_summary, ".0f"), cell(r.ess_summary_per_s, ".1f"),
                f"{_rhat_cell(r.rhat_continuous)} / {_rhat_cell(r.rhat_summaries)}", dev,
                "yes" if r.problem is None else "no: " + r.problem])
    return markdown_table(header, lines)


def bars_over_seeds(result: ModelResult) -> str:
    """The bars for the package's default use, over the seeds: agreement and
    r-hat in every seed; the speed bars on the median ratio over the seeds where both
    runs converged (not measurable where none did)."""
    ours = result.of(PMD_DEFAULT)
    done = [r for r in ours if r.run.error is None]
    if not done:
        return "Bars (pymc-discrete default): no run."
    n = len(ours)

    def mark(ok: bool) -> str:
        return "pass" if ok else "FAIL"

    agree = sum(r.deviation <= MAX_DEVIATION for r in done)
    settled = sum(run_rhat(r) <= MAX_RHAT for r in done)
    rhat = _worst([run_rhat(r) for r in done])
    against = "the exact posterior means" if result.exact is not None else "the reference"
    parts = [f"within {MAX_DEVIATION:g} MCSE of {against}: {mark(agree == n)} in "
             f"{agree}/{n} seeds (worst {_worst([r.deviation for r in done]):.1f})",
             f"r-hat <= {MAX_RHAT}: {mark(settled == n)} in {settled}/{n} seeds "
             f"(worst {_rhat_cell(rhat)})"]
    for base, bar, text in ((PYMC_DEFAULT, VS_PYMC, f"min ESS/s >= {VS_PYMC:g}x PyMC default"),
                            (MARGINAL, VS_MARGINAL, ">= 1/3 of marginalised NUTS")):
        mine, theirs = _outcomes(ours, "ess_per_s"), _outcomes(result.of(base), "ess_per_s")
        ratios = counted_ratios(mine, theirs)
        cell = ratio_over_seeds(mine, theirs)
        verdict = (f"{mark(float(np.median(ratios)) >= bar)} (median {cell})" if ratios
                   else f"not measurable ({cell})")
        parts.append(f"{text}: {verdict}")
    return (f"Bars (pymc-discrete default, seeds {', '.join(map(str, result.seeds))}): "
            + "; ".join(parts) + ".")


def model_section(result: ModelResult) -> str:
    """Heading, source, the table over seeds, the bars, the per-seed table and the runs'
    warnings of one model."""
    applied, exact = result.applied, result.exact
    ref = [r for r in result.of(MARGINAL) if r.run.error is None]
    ref_note = "" if not ref else (
        f"Reference's own convergence over the seeds: max r-hat "
        f"{spread_over_seeds([run_rhat(r) for r in ref], '.3f')}, "
        f"min ESS {spread_over_seeds([r.ess_min for r in ref], '.0f')} over "
        f"{ref[0].run.chains} x {ref[0].run.draws} draws.")
    text = (f"### {applied.title}\n\nData: {applied.source}.\n\n"
            f"Median over seeds {', '.join(map(str, result.seeds))} (min-max):\n\n"
            f"{seeds_table(result)}\n\n{bars_over_seeds(result)} {ref_note}\n")
    if exact is not None:
        text += ("\nThe agreement column compares every run, the marginalised one included, "
                 "with the exact posterior means (no Monte Carlo error: the model's "
                 "`exact_means`); exact "
                 + ", ".join(f"{k} {exact[k]:.3f}" for k in applied.headline) + ".\n")
    text += f"\nEvery run, seed by seed:\n\n{per_seed_table(result)}\n"
    notes: dict[tuple[str, str], list[int]] = {}
    for seed, rows in zip(result.seeds, result.rows):
        for r in rows:
            for note in r.run.notes:
                notes.setdefault((r.run.variant, note), []).append(seed)
    if notes:
        text += "\nNotes (warnings raised while sampling, NumPyro's timing):\n\n" + "\n".join(
            f"- {variant} (seed{'s' if len(v) > 1 else ''} {', '.join(map(str, v))}): {note}"
            for (variant, note), v in notes.items()) + "\n"
    return text


def _chose(steps: str) -> str:
    """What ``register()``'s automatic step chose, from the step description."""
    found = re.search(r"AutoStep -> (\w+)", steps)
    if found is None:
        return steps
    return found.group(1) + (" + NUTS" if "NUTS:" in steps.replace(found.group(0), "") else "")


def summary_table(results: list[ModelResult]) -> str:
    """One line a model: ``register()`` and a plain ``pm.sample()`` against PyMC's default
    and the summed-out model, NumPyro against PyMC's default; medians over the seeds
    (min-max), counted only where both runs converged."""
    header = ["model", "register() chose", "discrete summary",
              "vs PyMC default: min ESS/s (continuous)", "vs PyMC default: ESS/s (summary)",
              "vs marginalised NUTS: min ESS/s (continuous)",
              "NumPyro vs PyMC default: min ESS/s (continuous)",
              "converged seeds: register() / PyMC default / reference",
              "worst r-hat, register()", "worst dev. / MCSE, register()"]
    lines = []
    for result in results:
        ours, pymc, ref = (result.of(v) for v in (PMD_DEFAULT, PYMC_DEFAULT, MARGINAL))
        numpyro = result.of(NUMPYRO)
        done = [r for r in ours if r.run.error is None]
        chose = _unique([_chose(r.run.steps) for r in done]) or _unique(
            [r.run.error for r in ours])

        def ratio(a: list[Row], b: list[Row], attr: str = "ess_per_s") -> str:
            return ratio_over_seeds(_outcomes(a, attr), _outcomes(b, attr))

        def count(rows: list[Row]) -> str:
            return f"{sum(r.problem is None for r in rows)}/{len(rows)}"

        rhat = _worst([run_rhat(r) for r in done])
        worst = max(done, key=lambda r: r.deviation if np.isfinite(r.deviation) else -1,
                    default=None)
        dev = "-" if worst is None else f"{cell(worst.deviation, '.1f')} ({worst.deviation_at})"
        numpyro_cell = (ratio(numpyro, pymc) if any(r.run.error is None for r in numpyro)
                        else _unique([r.run.error for r in numpyro]))
        lines.append([result.applied.title, chose, _summary_label(result.applied),
                      ratio(ours, pymc), ratio(ours, pymc, "ess_summary_per_s"),
                      ratio(ours, ref), numpyro_cell,
                      f"{count(ours)} / {count(pymc)} / {count(ref)}", _rhat_cell(rhat), dev])
    return markdown_table(header, lines)


METHOD = """Each model is sampled five ways: PyMC's default (`pmd.unregister()`, then plain
`pm.sample()`), the package's default use (`pmd.register()`, then plain `pm.sample()`:
CollapsedNUTS where the discrete block sums out site by site, the package's best option
there, and on the N-mixture model's latent counts; PairedFlip with NUTS where a 0/1
indicator switches coefficients; ChainGibbs, a forward-filtering backward-sampling draw
of the whole chain, with NUTS on the HMM), data augmentation with
`step=[pmd.BlockedGibbs([...])]` and NUTS for the rest (on the HMM `pmd.CollapsedNUTS`
instead, the chain summed out by the forward algorithm; on the N-mixture model
`pmd.CountLBP`, the counts moved by a locally balanced step), the model with its
discrete variables summed out by hand (NUTS alone; the **reference**, run with {ref_factor}x the draws) and NumPyro's `DiscreteHMCGibbs` (a
Gibbs sweep of the discrete sites and a NUTS step per iteration; float32, NumPyro's
default). Every variant runs once per seed ({n_seeds} seeds: {seeds}; the variants of one
seed one after the other, then the next seed), {chains} chains one after the other,
{tune} tuning iterations and {draws} draws per chain (reference {ref_draws}).
Discrete variables start from dispersed valid values, the same for every run of a seed
and different in every seed; continuous ones at the model's initial point, which is
where PyMC starts them next to a discrete step: the NUTS-only reference is therefore run
with `init="adapt_diag"` instead of the default jittered start (with jitter, 3 of 4
chains of the marginalised mixture stopped in local modes 27-50 log units below the main
one).

Seconds: PyMC's `sampling_time` of a second call (the first, short, loads the compiled
functions; step construction and compilation are excluded), tuning included. NumPyro
traces and compiles its kernel again for every chain: its compiled programs are cached
on disk, a first run fills the cache, and the fixed cost that remains (the same chains of
one iteration each; given in the notes) is subtracted from the measured run's wall time.
"min ESS" is the smallest bulk ESS over every element of the continuous parameters (which
one in parentheses); "min ESS/s" divides it by the share of the seconds spent on the
post-tuning draws. The discrete summaries' column does the same with the smallest bulk
ESS of the model's headline summaries (the switch point, the number of occupied sites,
...; a summary constant in every draw has none); the reference's summaries are
Rao-Blackwellised (`E[summary | continuous parameters]` at each draw), another
estimator, so it has no ratio on them. "max dev. / MCSE" is the largest
`|mean - mean_ref| / sqrt(MCSE^2 + MCSE_ref^2)` over every continuous element and every
discrete summary (which one in parentheses), against the same seed's reference. Where the
exact posterior means are known (both spike-and-slab regressions), the column compares
with them instead (MCSE_ref = 0), the reference's row included. "accept": the fraction of the
discrete step's proposals accepted (PyMC's Gibbs steps and NumPyro report none).

Every figure is over the seeds: the median with the spread (min-max); r-hat and the
deviation are the worst over the seeds. A run **converged** in a seed when its r-hat is at
most 1.01 over every continuous element and every discrete summary and it is within 4
MCSE of the reference (of the exact means). A ratio counts in a seed only when both of
its runs converged there: a seed in which the baseline did not is "n/c", never a
speed-up, and is left out of the median; the cell then says how many seeds counted and
why the others did not (e.g. "1.0x (0.8-1.3), 3/4 seeds; baseline did not converge in
1"); the "converged" column says in which seeds each run did not, and the per-seed table
shows every run. Failed or unsupported variants are rows with their reason. The bars,
checked under each table for the package's default use: within 4 MCSE of the
reference and r-hat at most 1.01 in every seed, and a median min ESS/s (over the seeds
counted) at least 2x PyMC's default and 1/3 of the reference's."""

SHORT_NOTE = """
Short run (`--{size}`): too few draws for r-hat and the agreement column to mean much; a
test of the script, not a result.
"""

#: fewer seeds than this: the script prints its tables but never writes RESULTS.md
MIN_SEEDS = 3


def _model_key(name: str) -> str:
    """``change_point``, ``change-point`` and ``changepoint`` all name ``changepoint``."""
    return name.strip().lower().replace("_", "").replace("-", "")


#: the models and seeds of ``--smoke`` (the cheapest three; the HMM, whose scan and
#: chain steps compile for some 30 s, is left out: tests/test_applied_models.py builds it)
SMOKE_MODELS, SMOKE_SEEDS = "change_point,occupancy,small_spike_and_slab", [1]
#: ``--quick``: three models of different kinds, one seed, two chains (a few minutes; its
#: section goes to ``benchmarks/out/quick/``, never to the committed results)
QUICK_MODELS, QUICK_SEEDS = "change_point,occupancy,mixture", [1]


def main(argv: list[str] | None = None, quick: bool = False, smoke: bool = False) -> str:
    """Run the benchmark (see the module docstring); returns the section's markdown.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments; default ``["--smoke"]``, ``["--quick"]`` or none, from
        ``smoke`` and ``quick`` (the ``main(quick=..., smoke=...)`` convention of
        ``benchmarks/run_all.py``).
    quick, smoke : bool
        Used only when ``argv`` is None.
    """
    if argv is None:
        argv = ["--smoke"] if smoke else ["--quick"] if quick else []
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"models {QUICK_MODELS}, seeds {QUICK_SEEDS}, 2 chains of 100 "
                             "draws after 100")
    parser.add_argument("--smoke", action="store_true",
                        help=f"models {SMOKE_MODELS}, seeds {SMOKE_SEEDS}, 2 chains of a few "
                             "draws, RESULTS.md written: for the tests")
    parser.add_argument("--models", default=",".join(BUILDERS),
                        help=f"comma-separated subset of {','.join(BUILDERS)}")
    parser.add_argument("--draws", type=int, default=None)
    parser.add_argument("--tune", type=int, default=None)
    parser.add_argument("--ref-draws", type=int, default=None,
                        help="draws of the marginalised reference (default 4x --draws)")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3],
                        help=f"seeds 1, 2, ... (default 1 2 3); every figure is the median "
                             f"over them; fewer than {MIN_SEEDS}: RESULTS.md is not written")
    parser.add_argument("--no-numpyro", action="store_true")
    parser.add_argument("--write", action="store_true",
                        help="write RESULTS.md even for a subset of the models")
    parser.add_argument("--no-write", action="store_true",
                        help="print only, even when every model ran")
    args = parser.parse_args(argv)
    size = size_name(args.quick, args.smoke)
    if args.smoke:
        args.models, args.seeds, args.chains, args.write = (SMOKE_MODELS, SMOKE_SEEDS,
                                                             min(args.chains, 2), True)
    elif args.quick:
        args.models, args.seeds, args.chains, args.write = (QUICK_MODELS, QUICK_SEEDS,
                                                             min(args.chains, 2), True)
    keys = {_model_key(k): k for k in BUILDERS}
    wanted = [n for n in args.models.split(",") if n.strip()]
    unknown = sorted(n for n in wanted if _model_key(n) not in keys)
    if unknown:
        parser.error(f"unknown models {unknown}: choose from {sorted(BUILDERS)}")
    names = list(dict.fromkeys(keys[_model_key(n)] for n in wanted))
    seeds = list(dict.fromkeys(args.seeds))
    if min(seeds) < 1:
        parser.error(f"seeds are 1, 2, ...: got {seeds}")
    draws = args.draws or (20 if args.smoke else 100 if args.quick else 1000)
    tune = args.tune or (20 if args.smoke else 100 if args.quick else 1000)
    ref_draws = args.ref_draws or 4 * draws

    logging.getLogger("pymc").setLevel(logging.ERROR)
    began = time.perf_counter()
    results, sections = [], []
    for name in names:
        started = time.perf_counter()
        applied = BUILDERS[name]()
        exact = applied.exact_means() if applied.exact_means is not None else None
        result = ModelResult(applied, [], [], exact)
        for seed in seeds:
            seed_began = time.perf_counter()
            print(f"{name}, seed {seed}", flush=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                warnings.simplefilter("ignore", RuntimeWarning)
                runs = run_model(applied, draws=draws, tune=tune, ref_draws=ref_draws,
                                 chains=args.chains, seed=seed,
                                 numpyro=not args.no_numpyro)
                rows = measure_seed(applied, runs, exact)
            result.seeds.append(seed)
            result.rows.append(rows)
            release_compiled_jax()
            print(f"\n{name}, seed {seed} ({time.perf_counter() - seed_began:.0f} s):\n\n"
                  f"{per_seed_table(ModelResult(applied, [seed], [rows], exact))}\n",
                  flush=True)
        section = model_section(result)
        print(f"\n{section}\n({name}: {time.perf_counter() - started:.0f} s for "
              f"{len(seeds)} seeds)\n", flush=True)
        results.append(result)
        sections.append(section)
    seconds = time.perf_counter() - began
    summary = summary_table(results)
    print(f"\nSummary, register() and a plain pm.sample() (median over seeds "
          f"{', '.join(map(str, seeds))}, min-max):\n\n{summary}\n", flush=True)

    command = "python -m benchmarks.run_applied" + (" " + " ".join(argv) if argv else "")
    body = f"""## Applied models: mixture, occupancy, capture-recapture, change point, selection, HMM

{provenance("run_applied", size, minutes=seconds / 60, versions=numpyro_versions(),
            command=command)}

{METHOD.format(ref_factor=round(ref_draws / draws, 1), chains=args.chains,
               n_seeds=len(seeds), seeds=", ".join(map(str, seeds)), tune=tune,
               draws=draws, ref_draws=ref_draws)}
{SHORT_NOTE.format(size=size) if size != "full" else ""}
### Summary: `register()` and a plain `pm.sample()`

Median over seeds {", ".join(map(str, seeds))} (min-max) of the ratios of ESS per second;
a seed counts only where both runs converged.

{summary}

{(chr(10) * 2).join(sections)}"""
    if len(seeds) < MIN_SEEDS and size == "full":
        print(f"{len(seeds)} seed(s): fewer than {MIN_SEEDS}, RESULTS.md not written")
    elif (set(names) == set(BUILDERS) or args.write) and not args.no_write:
        write_section("applied", body)
        print(f"wrote the section 'applied' of {results_path()}")
    print(f"total {seconds:.0f} s")
    return body


if __name__ == "__main__":
    main(sys.argv[1:])
