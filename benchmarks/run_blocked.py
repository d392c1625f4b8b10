"""The package's default against PyMC's default, ALBP's best and NumPyro, side by side on
three lattice models in one script, measured with the step ``register()`` picks over
several seeds, and its bars.

Models: the paper's Ising 50x50 (C2), the 30x30 four-state Potts model and the FHMM
posterior (L = 200, K = 5, C2), built by ``pymc_discrete.example_models`` with the
parameters of ``benchmarks/run_numpyro.py`` (whose NumPyro versions of the models are
used too). On each, four ways to sample it:

1. **PyMC default**: ``pmd.unregister()`` and plain ``pm.sample()`` (BinaryGibbsMetropolis
   on the binary models, CategoricalGibbsMetropolis on the Potts model); slow, so few draws;
2. **pymc-discrete default**: ``pmd.register()`` and plain ``pm.sample()``: BlockedGibbs
   when few colours cover the block (the step built is named in the table; if it is not
   BlockedGibbs, an explicit ``pmd.BlockedGibbs`` row is added);
3. **ALBP's best** configuration on the model (the numba-compiled loop of 8 sqrt steps
   per draw on the Ising lattice, 4 Barker steps per draw on the Potts one, exact ratios
   on the FHMM), and ALBP's and PAS's defaults against the same steps at one step per
   draw in Python;
4. **NumPyro's DiscreteHMCGibbs** on ``run_numpyro``'s NumPyro version of the model,
   started where the PyMC runs start, its log density first checked against PyMC's (the
   same up to a constant), timed warm (``harness.run_discrete_hmc_gibbs``); left out
   where NumPyro is not installed.

The two defaults are built by PyMC's own assignment, ``assign_step_methods`` and
``instantiate_steppers`` over ``STEP_METHODS``, exactly what ``pm.sample()`` does without
a ``step``, so that the harness can time them warm; a one-draw plain ``pm.sample()`` of
each (register on and off) confirms from PyMC's log which step it assigns.

Every measured configuration runs once per seed (``--seeds``, default 1 2 3 for the full
run, one seed at ``--quick`` and ``--smoke``; the configurations of one seed one after the
other, then the next seed). A seed s sets the random start of its runs
(:func:`starts`), PyMC's ``random_seed`` (s; the reference s + 1000) and NumPyro's key
(s). Every run: 4 chains one after the other, timed warm (``harness.measure_run``: ESS of
the log density and median site ESS, per second of the post-tuning draws). Beside the
speed, every run is checked (DESIGN.md section 6) for

* r-hat: the largest rank-normalised split r-hat over the 4 chains of the log density
  and of the model's summaries (below), at most 1.01;
* agreement with a **reference**, a long BlockedGibbs run of the same seed from another
  random start (4 chains, ``reference`` draws each): the largest ``|mean - mean_ref| /
  sqrt(MCSE^2 + MCSE_ref^2)`` over the log density and the summaries, at most 4, and the
  root mean square of that z over up to 400 sites' means (near 1 when right), at most
  1.5. The reference is the package's own sampler: NumPyro's and PyMC's default rows,
  independent implementations, agreeing with it is what checks it.

A run **converged** in a seed when all three hold. Reported over the seeds (DESIGN.md
section 6): every time, ESS and ESS/s as the median (min-max) over the seeds; r-hat,
deviation and site z RMS the worst over the seeds; in how many seeds the run converged
(and why not in the others). A ratio (against NumPyro, PyMC's default, or a step's
default against the same step at one step per draw) is taken seed by seed, then the
median (min-max) over the seeds in which both runs converged
(``harness.ratio_over_seeds``): a seed whose baseline did not converge is no speed-up,
is left out, and the cell says how many seeds counted. The bars use those medians and
ask the package's default to converge in every seed. Single checks, not measurements
over seeds: the one-draw plain ``pm.sample()`` that confirms PyMC's step assignment
(register on and off) and the check of NumPyro's log density against PyMC's (at the
first seed's start), once per model.

Summaries: Ising, the magnetisation and the mean product of neighbouring spins; Potts,
the share of each state and of equal neighbours; FHMM, the share of ones in each of the
K chains and the share of switches between consecutive times.

Writes the section ``blocked`` of ``benchmarks/RESULTS.md`` (not with fewer than 3 seeds at
full size; the small sizes write to ``benchmarks/out/``). Run with ``python -m
benchmarks.run_blocked`` (``--quick``: few draws, one seed; ``--smoke``: the Ising model alone, small, one seed, for the tests;
``--seeds 1 2 3 4``: other seeds). The cost of register()'s step against the lattice
size is ``run_scaling``'s.

Duration of the full run (an estimate, not a measurement): the last single-seed full
run took 9 minutes on the 2-core VM, of which about 1 went to a lattice-size section that
is now ``run_scaling``'s; a seed of the three models costs about 8 minutes (NumPyro about
3 of them: its first run of one chain to fill the compilation cache and its per-chain
overhead are repeated in every seed), so the 3 seeds take about 25 minutes, under the
40-minute mark, with the draws as they were.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import arviz as az
import numpy as np
import pymc as pm

import pymc_discrete as pmd
from benchmarks.harness import (
    MAX_ESS_SITES,
    Measurement,
    NumPyroRun,
    SeedOutcome,
    assigned_step,
    cell,
    counted_ratios,
    deviation,
    log_messages,
    logp_trace,
    markdown_table,
    max_rhat,
    mean_mcse,
    measure_run,
    numpyro_available,
    numpyro_measurement,
    provenance,
    ratio_over_seeds,
    release_compiled_jax,
    results_path,
    run_discrete_hmc_gibbs,
    size_name,
    spread_over_seeds,
    step_name,
    write_section,
)
from benchmarks.run_numpyro import PARAMS, SMALL, numpyro_model, pymc_model
from pymc_discrete.adaptation.steps_per_draw import LARGE_BLOCK, MAX_STEPS_PER_DRAW

CHAINS = 4
NUMPYRO = "NumPyro DiscreteHMCGibbs"
PYMC_DEFAULT = "PyMC default"
PMD_DEFAULT = "pymc-discrete default"
REFERENCE = "reference"
#: convergence in a seed: agreement with the reference (in MCSE), site means' z RMS, r-hat
#: (at most 1.01, as everywhere: a run above it did not converge and counts in no ratio)
MAX_DEVIATION, MAX_SITE_RMS, MAX_RHAT = 4.0, 1.5, 1.01
#: fewer seeds than this: the script prints its tables but does not write RESULTS.md
#: (except at ``--smoke``)
MIN_SEEDS = 3


@dataclass(frozen=True)
class Budget:
    """Draws per chain of each sampler (tuning or warm-up: as many)."""

    numpyro: int
    pymc: int
    gibbs: int
    mh: int  # M-H steps of ALBP and PAS (k steps per draw: mh / k draws)
    reference: int
    models: tuple = ("ising", "potts", "fhmm")
    small: bool = False  # small models (the smoke test)
    seeds: tuple = (1, 2, 3)  # default seeds: every configuration runs once per seed


BUDGETS = {
    "full": Budget(numpyro=500, pymc=100, gibbs=1000, mh=5000, reference=2500),
    "quick": Budget(numpyro=15, pymc=10, gibbs=100, mh=400, reference=200, seeds=(1,)),
    "smoke": Budget(numpyro=5, pymc=4, gibbs=10, mh=40, reference=20, models=("ising",),
                    small=True, seeds=(1,)),
}


# --------------------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------------------


def _ising_summaries(x: np.ndarray) -> dict[str, np.ndarray]:
    s = 2.0 * x - 1.0
    pairs = np.concatenate([(s[..., :, 1:] * s[..., :, :-1]).reshape(*s.shape[:2], -1),
                            (s[..., 1:, :] * s[..., :-1, :]).reshape(*s.shape[:2], -1)], -1)
    return {"magnetisation": s.mean(axis=(2, 3)), "neighbour product": pairs.mean(-1)}


def _potts_summaries(x: np.ndarray, n_states: int) -> dict[str, np.ndarray]:
    out = {f"share of {k}": (x == k).mean(axis=(2, 3)) for k in range(n_states)}
    equal = np.concatenate([(x[..., :, 1:] == x[..., :, :-1]).reshape(*x.shape[:2], -1),
                            (x[..., 1:, :] == x[..., :-1, :]).reshape(*x.shape[:2], -1)], -1)
    out["equal neighbours"] = equal.mean(-1)
    return out


def _fhmm_summaries(x: np.ndarray) -> dict[str, np.ndarray]:  # x: (chain, draw, L, K)
    out = {f"ones in chain {k}": x[..., k].mean(-1) for k in range(x.shape[-1])}
    out["switches"] = (x[..., 1:, :] != x[..., :-1, :]).mean(axis=(2, 3))
    return out


@dataclass
class Case:
    """One model: how to build it, its summaries, ALBP's best runs and its bar."""

    kind: str  # the model of run_numpyro (PyMC's and NumPyro's)
    title: str
    n_values: int
    summaries: Callable[[np.ndarray], dict[str, np.ndarray]]
    best: list  # (label, make_step, M-H steps per draw)
    bar: tuple  # (baseline, factor, ("logp", "site") measured against it)
    mh_factor: int = 1  # times the budget's M-H steps (chains that mix slowly)
    params: dict | None = None  # the model's parameters (run_numpyro.PARAMS)

    def build(self) -> pm.Model:
        return pymc_model(self.kind, self.params)


#: labels of the rows that measure the automatic steps per draw and compiled loop: each
#: step's default against the same step at one step per draw in Python
ONE_STEP = "1 step per draw in Python"
AUTO_PAIRS = [(f"{name} default", f"{name}, {ONE_STEP}") for name in ("ALBP", "PAS")]


def _defaults_and_one_step() -> list:
    """ALBP's and PAS's defaults (steps per draw and compiled loop chosen by the step)
    and the same steps at one step per draw in Python: what the automatic choices gain.
    The defaults get the budget of 8 steps per draw (the most they choose) on a large
    block, of one step on a smaller one (None: decided by the block's size)."""
    rows = []
    for (auto, one), cls in zip(AUTO_PAIRS, (pmd.ALBP, pmd.PAS)):
        rows.append((auto, lambda m, cls=cls: cls([m["x"]]), None))
        rows.append((one, lambda m, cls=cls: cls([m["x"]], steps_per_draw=1,
                                                  compiled_loop=False), 1))
    return rows


def cases(kinds: tuple, params: dict) -> list[Case]:
    """The models ``kinds`` with ``params`` (``run_numpyro.PARAMS``: the paper's sizes)."""
    ising, potts, fhmm = params["ising"]["side"], params["potts"], params["fhmm"]
    every = {
        "ising": Case("ising", f"Ising {ising}x{ising} (C2)", 2, _ising_summaries, [
            ("ALBP (sqrt, compiled loop, 8 steps per draw)",
             lambda m: pmd.ALBP([m["x"]], weight="sqrt", steps_per_draw=8,
                                compiled_loop=True), 8),
            *_defaults_and_one_step(),
        ], (PYMC_DEFAULT, 100.0, ("site",))),
        "potts": Case("potts", f"Potts {potts['side']}x{potts['side']}, K = "
                               f"{potts['n_states']}", potts["n_states"],
                      lambda x: _potts_summaries(x, potts["n_states"]), [
            ("ALBP (barker, 4 steps per draw)",
             lambda m: pmd.ALBP([m["x"]], steps_per_draw=4), 4),
            *_defaults_and_one_step(),
        ], (NUMPYRO, 10.0, ("logp", "site"))),
        "fhmm": Case("fhmm", f"FHMM, L = {fhmm['length']}, K = {fhmm['chains']} (C2)", 2,
                     _fhmm_summaries, [
            ("ALBP (exact, 1 step per draw in Python)",
             lambda m: pmd.ALBP([m["x"]], proposal="exact", steps_per_draw=1,
                                compiled_loop=False), 1),
            *_defaults_and_one_step(),
        ], (NUMPYRO, 3.0, ("logp", "site")), mh_factor=4),
    }
    for case in every.values():
        case.params = params[case.kind]
    return [every[k] for k in kinds]


# --------------------------------------------------------------------------------------
# the steps plain pm.sample() builds
# --------------------------------------------------------------------------------------


def plain_sample_steps(model: pm.Model, registered: bool, start: dict) -> str:
    """The step(s) a plain one-draw ``pm.sample()`` assigns, as PyMC logs them."""
    was = pmd.is_registered()
    (pmd.register if registered else pmd.unregister)()
    try:
        with model, log_messages("pymc.sampling.mcmc") as lines:
            pm.sample(draws=1, tune=1, chains=1, cores=1, progressbar=False, random_seed=0,
                      compute_convergence_checks=False, initvals=start)
    finally:
        (pmd.register if was else pmd.unregister)()
    steps = [m.lstrip(">").split(":")[0] for m in lines if re.match(r">*\w+: \[", m)]
    return ", ".join(steps) or "?"


# --------------------------------------------------------------------------------------
# correctness beside speed
# --------------------------------------------------------------------------------------


@dataclass
class Check:
    """A run's chains and its agreement with the reference."""

    rhat: float
    deviation: float = float("nan")
    deviation_at: str = ""
    site_rms: float = float("nan")

    @property
    def ok(self) -> bool:
        """Whether the run converged: every check holds."""
        return not self.failures()

    @property
    def problem(self) -> str | None:
        """None if the run converged, else why not (as a ratio over seeds counts it)."""
        return self.failures() or None

    def failures(self) -> str:
        """Which checks failed, with the values ("" if none): r-hat above
        :data:`MAX_RHAT` and, beside the reference, disagreement with it."""
        out = [] if self.rhat <= MAX_RHAT else [f"r-hat {self.rhat:.3f}"]
        if np.isfinite(self.deviation):  # not the reference itself
            if self.deviation > MAX_DEVIATION:
                out.append(f"{self.deviation:.1f} MCSE from the reference ({self.deviation_at})")
            if not self.site_rms <= MAX_SITE_RMS:
                out.append(f"site z RMS {cell(self.site_rms, '.2f')}")
        return ", ".join(out)


@dataclass
class Reference:
    """What every run is checked against: summary means and MCSEs, sites' means."""

    summaries: dict[str, tuple[float, float]]
    sites: np.ndarray
    site_mean: np.ndarray
    site_se: np.ndarray
    site_sd: np.ndarray


def _all_summaries(case: Case, x: np.ndarray, logp: np.ndarray) -> dict[str, np.ndarray]:
    return {"log density": logp, **case.summaries(x)}


def _site_means(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Means and MCSEs of the sites of ``flat`` (chain, draw, site)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.asarray(az.mcse(flat, method="mean"), dtype=float)
    return flat.mean(axis=(0, 1)), se


def make_reference(case: Case, x: np.ndarray, logp: np.ndarray) -> Reference:
    summaries = {k: mean_mcse(a) for k, a in _all_summaries(case, x, logp).items()}
    flat = x.reshape(*x.shape[:2], -1).astype(float)
    sites = np.flatnonzero(flat.std(axis=(0, 1)) > 0)
    if sites.size > MAX_ESS_SITES:
        sites = np.sort(np.random.default_rng(1).choice(sites, MAX_ESS_SITES, replace=False))
    mean, se = _site_means(flat[..., sites])
    return Reference(summaries, sites, mean, se, flat[..., sites].std(axis=(0, 1)))


def check(case: Case, x: np.ndarray, logp: np.ndarray, ref: Reference | None) -> Check:
    """r-hat of the run, and its agreement with ``ref`` (none: the reference itself)."""
    ours = _all_summaries(case, x, logp)
    result = Check(rhat=max_rhat(ours))
    if ref is None:
        return result
    worst, at = deviation(ours, ref.summaries)
    flat = x.reshape(*x.shape[:2], -1)[..., ref.sites].astype(float)
    mean, se = _site_means(flat)
    # a site constant in a short run has no MCSE: take that of independent draws
    floor = ref.site_sd / np.sqrt(flat.shape[0] * flat.shape[1])
    se = np.where(np.isfinite(se) & (se > 0), se, floor)
    z = (mean - ref.site_mean) / np.hypot(se, ref.site_se)
    result.deviation, result.deviation_at = worst, at
    result.site_rms = float(np.sqrt(np.mean(z ** 2)))
    return result


# --------------------------------------------------------------------------------------
# measuring
# --------------------------------------------------------------------------------------


@dataclass
class Row:
    """One configuration's run in one seed."""

    label: str
    step: str
    m: Measurement
    check: Check

    @property
    def problem(self) -> str | None:
        """None if the run converged in its seed, else why not."""
        return self.check.problem


def starts(seed: int, n_values: int, shape: tuple) -> tuple[dict, dict]:
    """The random starts of seed ``seed``: that of every run and that of the reference,
    different in every seed and from each other."""
    return ({"x": np.random.default_rng(2 * seed).integers(0, n_values, shape)},
            {"x": np.random.default_rng(2 * seed + 1).integers(0, n_values, shape)})


def numpyro_density_mismatch(case: Case, model: pm.Model, start: dict) -> str | None:
    """None if the NumPyro model's log density differs from the PyMC model's by the same
    constant at the start and at another random point (within float32 rounding), else
    what differs."""
    import jax
    from numpyro.infer.util import log_density

    sampler_model, n_values = numpyro_model(case.kind, case.params)
    other = np.random.default_rng(2).integers(0, n_values, start["x"].shape)
    pymc_logp = model.compile_logp()
    with jax.enable_x64(True):
        theirs = [float(log_density(sampler_model, (), {}, {"x": x, "z": 0.0})[0])
                  for x in (start["x"], other)]
    ours = [float(pymc_logp({**model.initial_point(), "x": x})) for x in (start["x"], other)]
    if np.isclose(theirs[0] - theirs[1], ours[0] - ours[1], rtol=1e-5, atol=1e-2):
        return None
    return (f"NumPyro's log density changes by {theirs[0] - theirs[1]!r} between two points, "
            f"PyMC's by {ours[0] - ours[1]!r}")


def numpyro_run(case: Case, model: pm.Model, draws: int, start: dict,
                seed: int) -> tuple[Measurement, np.ndarray, np.ndarray, NumPyroRun]:
    """DiscreteHMCGibbs on the NumPyro version of ``case``'s model (``draws`` sweeps after
    as many warm-up, every chain from ``start``, JAX key ``seed``), timed warm
    (``harness.run_discrete_hmc_gibbs``); the measurement, the draws, their log density
    (PyMC's) and the run (how the time was taken)."""
    sampler_model, n_values = numpyro_model(case.kind, case.params)

    def init(n_chains: int) -> dict:
        params = {"x": np.repeat(start["x"][None], n_chains, 0), "z": np.zeros(n_chains)}
        return {k: v[0] for k, v in params.items()} if n_chains == 1 else params

    run = run_discrete_hmc_gibbs(sampler_model, draws, draws, CHAINS, init=init, key=seed)
    release_compiled_jax()
    measurement = numpyro_measurement(run, model, n_values, draws, label=NUMPYRO)
    x = run.samples["x"].astype(np.int64)
    print(f"    {NUMPYRO}: {run.note}", flush=True)
    return measurement, x, logp_trace(model, x, "x"), run


@dataclass
class SeedRun:
    """Every configuration's run on one model in one seed."""

    seed: int
    rows: list[Row]
    #: the step register() built, and why
    built: str
    reason: str
    #: NumPyro's run (None without NumPyro)
    numpyro: NumPyroRun | None = None


def run_seed(case: Case, model: pm.Model, budget: Budget, seed: int) -> SeedRun:
    """Every configuration on one model in one seed, checked against a long BlockedGibbs
    reference of the same seed (from another start)."""
    shape = model.initial_point()["x"].shape
    start, ref_start = starts(seed, case.n_values, shape)
    runs = []  # (label, step name, measurement, x, logp)
    numpyro = None
    if numpyro_available():
        print(f"  {case.title}, seed {seed}: {NUMPYRO}", flush=True)
        m, x, logp, numpyro = numpyro_run(case, model, budget.numpyro, start, seed)
        runs.append((NUMPYRO, "DiscreteHMCGibbs(NUTS)", m, x, logp))

    def sample(label: str, make_step, draws: int, random_seed: int = seed, initvals=start,
               warmup: int | None = None):
        print(f"  {case.title}, seed {seed}: {label}", flush=True)
        run = measure_run(model, label, make_step, draws=draws, tune=draws, chains=CHAINS,
                          seed=random_seed, initvals=initvals, warmup=warmup)
        runs.append((label, step_name(run.step), run.measurement, run.draws, run.logp))
        return run

    sample(PYMC_DEFAULT, lambda m: assigned_step(m, False, start), budget.pymc)
    ours = sample(PMD_DEFAULT, lambda m: assigned_step(m, True, start), budget.gibbs)
    ref_step = ours.step
    if not isinstance(ours.step, pmd.BlockedGibbs):
        ref_step = sample("BlockedGibbs", lambda m: pmd.BlockedGibbs([m["x"]]),
                          budget.gibbs).step
    for label, make_step, per_draw in case.best:
        if per_draw is None:  # a default: 8 steps per draw at most, on large blocks only
            per_draw = MAX_STEPS_PER_DRAW if start["x"].size >= LARGE_BLOCK else 1
        sample(label, make_step, budget.mh * case.mh_factor // per_draw)
    ref = sample(REFERENCE, lambda m: ref_step, budget.reference, random_seed=seed + 1000,
                 initvals=ref_start, warmup=5)
    runs.pop()
    reference = make_reference(case, ref.draws, ref.logp)
    rows = [Row(label, step, m, check(case, x, logp, reference))
            for label, step, m, x, logp in runs]
    rows.append(Row(REFERENCE, step_name(ref.step), ref.measurement,
                    check(case, ref.draws, ref.logp, None)))
    return SeedRun(seed, rows, step_name(ours.step),
                   getattr(ours.step, "choice_reason", "(no reason recorded)"), numpyro)


@dataclass
class CaseResult:
    """Every seed's runs on one model, and the checks made once per model."""

    case: Case
    seeds: list[int]
    runs: list[SeedRun]
    #: the steps a one-draw plain pm.sample() assigns with register() and without it
    plain_registered: str = "?"
    plain_default: str = "?"
    #: None if NumPyro's log density matches PyMC's (or NumPyro is not installed)
    numpyro_density: str | None = None

    @property
    def labels(self) -> list[str]:
        """Every configuration, in the order of the runs."""
        out: list[str] = []
        for run in self.runs:
            out += [r.label for r in run.rows if r.label not in out]
        return out

    def of(self, label: str) -> list[Row | None]:
        """The rows of ``label``, one per seed (None where it did not run)."""
        return [next((r for r in run.rows if r.label == label), None) for run in self.runs]

    def outcomes(self, label: str, attr: str) -> list[SeedOutcome]:
        """The measurement ``attr`` of ``label`` in every seed, as a ratio over seeds
        counts it."""
        return [SeedOutcome(float("nan"), "not run") if r is None
                else SeedOutcome(getattr(r.m, attr), r.problem) for r in self.of(label)]


def run_case(case: Case, budget: Budget, seeds: list[int]) -> CaseResult:
    """Every configuration on one model, once per seed; then the single checks: NumPyro's
    log density against PyMC's and the steps a plain ``pm.sample()`` assigns (at the
    first seed's start)."""
    model = case.build()
    first = starts(seeds[0], case.n_values, model.initial_point()["x"].shape)[0]
    result = CaseResult(case, seeds, [])
    if numpyro_available():
        result.numpyro_density = numpyro_density_mismatch(case, model, first)
    for seed in seeds:
        began = time.perf_counter()
        run = run_seed(case, model, budget, seed)
        result.runs.append(run)
        print(f"\n{case.title}, seed {seed} ({time.perf_counter() - began:.0f} s):\n\n"
              f"{seed_table(run.rows)}\n", flush=True)
    print(f"  {case.title}: plain pm.sample() with and without register()", flush=True)
    result.plain_registered = plain_sample_steps(model, True, first)
    result.plain_default = plain_sample_steps(model, False, first)
    print(f"    plain pm.sample(): {result.plain_default} without register(), "
          f"{result.plain_registered} with it", flush=True)
    return result


# --------------------------------------------------------------------------------------
# reporting
# --------------------------------------------------------------------------------------

#: the two speeds compared: attribute of a Measurement, and how the text names it
SPEEDS = {"logp": ("ess_logp_per_s", "ESS/s of the log density"),
          "site": ("ess_site_per_s", "median site ESS/s")}


def _worst(values: list[float]) -> float:
    """The largest finite value, NaN if none."""
    finite = [v for v in values if np.isfinite(v)]
    return max(finite) if finite else float("nan")


def _unique(items: list[str]) -> str:
    """The distinct items, in order, joined by " / " (a choice that differs by seed)."""
    return " / ".join(dict.fromkeys(i for i in items if i))


def _mark(ok: bool) -> str:
    return "pass" if ok else "FAIL"


def seed_table(rows: list[Row]) -> str:
    """One seed's runs on one model (printed as the run goes, not written)."""
    lines = [[r.label, r.step, cell(r.m.seconds, ".1f"), cell(r.m.ess_logp_per_s, ".1f"),
              cell(r.m.ess_site_per_s, ".1f"), cell(r.check.rhat, ".3f"),
              cell(r.check.deviation, ".1f"), cell(r.check.site_rms, ".2f"),
              "yes" if r.problem is None else f"no: {r.problem}"] for r in rows]
    return markdown_table(["sampler", "step built", "seconds", "ESS/s logp",
                           "median site ESS/s", "max r-hat", "max dev. / MCSE",
                           "site z RMS", "converged"], lines)


def _converged_cell(rows: list[Row | None], seeds: list[int]) -> str:
    """``3/3``, or ``2/3 (seed 2: r-hat 1.032)``: the seeds where the run converged and
    why it did not in the others (seeds with the same reason grouped)."""
    why: dict[str, list[int]] = {}
    for seed, r in zip(seeds, rows):
        problem = "not run" if r is None else r.problem
        if problem is not None:
            why.setdefault(problem, []).append(seed)
    text = f"{len(seeds) - sum(len(v) for v in why.values())}/{len(seeds)}"
    if why:
        text += " (" + "; ".join(f"seed{'s' if len(v) > 1 else ''} {', '.join(map(str, v))}: "
                                 f"{p}" for p, v in why.items()) + ")"
    return text


def _spread(result: CaseResult, label: str, attr: str, fmt: str = ".1f") -> str:
    """Median (min-max) over the seeds of the measurement ``attr`` of ``label``."""
    return spread_over_seeds([getattr(r.m, attr) for r in result.of(label) if r is not None],
                             fmt)


def _ratio_cell(result: CaseResult, label: str, base: str, attr: str) -> str:
    if label == base:
        return "baseline"
    if base not in result.labels:
        return "-"
    return ratio_over_seeds(result.outcomes(label, attr), result.outcomes(base, attr))


def format_rows(result: CaseResult) -> str:
    """The model's table: per configuration the median (min-max) over the seeds, the
    ratios per seed then over the seeds where both runs converged, the worst checks."""
    lines = []
    for label in result.labels:
        rows = result.of(label)
        done = [r for r in rows if r is not None]
        reference = label == REFERENCE
        if reference:
            dev, rms = "ref", "ref"
        else:
            worst = max(done, key=lambda r: r.check.deviation
                        if np.isfinite(r.check.deviation) else -1)
            dev = f"{cell(worst.check.deviation, '.1f')} ({worst.check.deviation_at})"
            rms = cell(_worst([r.check.site_rms for r in done]), ".2f")
        lines.append([
            label, _unique([r.step for r in done]), f"{CHAINS} x {done[0].m.draws // CHAINS}",
            _spread(result, label, "seconds"), _spread(result, label, "time_per_draw_ms", ".3f"),
            _spread(result, label, "ejd"), _spread(result, label, "ess_logp", ".0f"),
            _spread(result, label, "ess_logp_per_s"), _spread(result, label, "ess_site_per_s"),
            *(_ratio_cell(result, label, base, SPEEDS[w][0])
              for base in (NUMPYRO, PYMC_DEFAULT) for w in ("logp", "site")),
            cell(_worst([r.check.rhat for r in done]), ".3f"), dev, rms,
            _converged_cell(rows, result.seeds)])
    return markdown_table(
        ["sampler", "step built", "chains x draws", "seconds", "ms/draw", "EJD", "ESS logp",
         "ESS/s logp", "median site ESS/s", "vs NumPyro: ESS/s logp", "vs NumPyro: site ESS/s",
         "vs PyMC default: ESS/s logp", "vs PyMC default: site ESS/s", "max r-hat",
         "max dev. / MCSE", "site z RMS (max)", "converged (seeds)"], lines)


def auto_gains(result: CaseResult) -> str:
    """One line per step: its default's ESS/s against one step per draw in Python, per
    seed then the median (min-max) over the seeds where both converged, with the steps
    per draw the default chose (the ``steps_per_draw`` stat; per seed where it differs)."""
    parts = []
    n = len(result.seeds)
    for auto, one in AUTO_PAIRS:
        if auto not in result.labels or one not in result.labels:
            continue
        steps = _unique([r.step for r in result.of(auto) if r is not None])
        converged = [sum(r is not None and r.problem is None for r in result.of(label))
                     for label in (auto, one)]
        logp, site = (ratio_over_seeds(result.outcomes(auto, SPEEDS[w][0]),
                                       result.outcomes(one, SPEEDS[w][0]))
                      for w in ("logp", "site"))
        parts.append(f"{auto} ({steps}) against {one}: ESS/s of the log density {logp}; "
                     f"median site ESS/s {site} (converged in {converged[0]}/{n} and "
                     f"{converged[1]}/{n} seeds)")
    return "; ".join(parts)


def case_bar(result: CaseResult) -> tuple[bool, str]:
    """The bar on the model for the package's default: the median speed ratio over the
    seeds where both runs converged, and the default's draws converged in every seed
    (no bar without the baseline's row: NumPyro not installed)."""
    case = result.case
    baseline, factor, which = case.bar
    if baseline not in result.labels:
        return False, (f"**not measured**: {case.title}: {PMD_DEFAULT} against {baseline}, "
                       "which did not run")
    ours = result.of(PMD_DEFAULT)
    done = [r for r in ours if r is not None]
    n = len(ours)
    parts, ok, measurable = [], True, True
    for w in which:
        attr, what = SPEEDS[w]
        mine, theirs = result.outcomes(PMD_DEFAULT, attr), result.outcomes(baseline, attr)
        ratios = counted_ratios(mine, theirs)
        values = (f"{what} {_spread(result, PMD_DEFAULT, attr)} vs "
                  f"{_spread(result, baseline, attr)}: {ratio_over_seeds(mine, theirs)}")
        if ratios:
            passed = float(np.median(ratios)) >= factor
            ok &= passed
            parts.append(f"{values} ({_mark(passed)}; {len(ratios)}/{n} seeds counted)")
        else:
            measurable = ok = False
            parts.append(f"{values} (not measurable: no seed in which both converged)")
    converged = sum(r.problem is None for r in done)
    ok &= converged == n
    parts.append(
        f"draws converged and agree in {converged}/{n} seeds (worst: r-hat "
        f"{_worst([r.check.rhat for r in done]):.3f}, "
        f"{_worst([r.check.deviation for r in done]):.1f} MCSE from the reference, site z "
        f"RMS {_worst([r.check.site_rms for r in done]):.2f})")
    base_step = (f" ({_unique([r.step for r in result.of(baseline) if r is not None])})"
                 if baseline == PYMC_DEFAULT else "")
    wanted = " and ".join(SPEEDS[w][1] for w in which)
    head = _mark(ok) if measurable else "not measurable"
    text = (f"**{head}**: {case.title}: {PMD_DEFAULT} ({_unique([r.step for r in done])}) at "
            f"least {factor:g}x {baseline}{base_step} on {wanted} (median over the seeds "
            "where both converged): " + "; ".join(parts) + ".")
    return ok, text


def numpyro_note(result: CaseResult) -> str:
    """How NumPyro's time was taken, over the seeds."""
    runs = [(r.seed, r.numpyro) for r in result.runs if r.numpyro is not None]
    if not runs:
        return "NumPyro is not installed: no NumPyro row"
    text = (f"NumPyro: wall {spread_over_seeds([r.wall for _, r in runs])} s, less "
            f"{spread_over_seeds([r.overhead for _, r in runs])} s of per-chain "
            "initialisation, tracing and loading of the compiled kernel (the same chains of "
            "one iteration each; median (min-max) over the seeds)")
    untimed = [s for s, r in runs if not np.isfinite(r.seconds)]
    if untimed:
        text += (f"; in seed(s) {', '.join(map(str, untimed))} sampling too short to separate "
                 "from that fixed cost: no time")
    return text


def case_section(result: CaseResult, bar: str) -> str:
    """The model's heading, what was built, its table over the seeds and its bar."""
    case, density = result.case, result.numpyro_density
    built = _unique([r.built for r in result.runs])
    reasons = _unique([r.reason for r in result.runs])
    differs = " (it differs between seeds)" if " / " in built else ""
    return (
        f"### {case.title}\n\n"
        f"`register()` built **{built}**{differs}: {reasons}. Plain `pm.sample()` assigns "
        f"{result.plain_registered} with `register()` and {result.plain_default} without it "
        f"(PyMC's log; one one-draw run, not repeated per seed). {numpyro_note(result)}; its "
        "log density "
        + ("matches PyMC's (up to a constant; checked once, at the first seed's start)"
           if density is None else f"does NOT match PyMC's: {density}")
        + f".\n\nMedian (min-max) over seeds {', '.join(map(str, result.seeds))}:\n\n"
        f"{format_rows(result)}\n\n{bar}\n\nAutomatic steps per draw and compiled loop "
        f"(median (min-max) over the seeds where both runs converged): "
        f"{auto_gains(result)}.")


def case_problems(result: CaseResult) -> list[str]:
    """What went wrong on the model: runs that did not converge (by seed), a step other
    than BlockedGibbs built or assigned by register(), NumPyro's density."""
    title, out, failed = result.case.title, [], []
    for label in result.labels:
        seeds = [f"seed {s}: {'not run' if r is None else r.problem}"
                 for s, r in zip(result.seeds, result.of(label))
                 if r is None or r.problem is not None]
        if seeds:
            failed.append(f"{label} ({'; '.join(seeds)})")
    if failed:
        out.append(f"{title}: did not converge: {'; '.join(failed)}")
    for run in result.runs:
        if not run.built.startswith("BlockedGibbs"):
            out.append(f"{title}, seed {run.seed}: register() built {run.built}")
    if not result.plain_registered.startswith("BlockedGibbs"):
        out.append(f"{title}: plain pm.sample() with register() assigned "
                   f"{result.plain_registered}")
    if result.numpyro_density is not None:
        out.append(f"{title}: {result.numpyro_density}")
    return out


def main(quick: bool = False, smoke: bool = False, seeds: list[int] | None = None) -> None:
    """Measure and write the ``blocked`` section of RESULTS.md.

    Parameters
    ----------
    quick, smoke : bool
        Fewer draws (``smoke``: the Ising model alone, small); see :data:`BUDGETS`.
    seeds : list of int, optional
        Every configuration runs once per seed; default the run size's (1 2 3; ``smoke``:
        1). With fewer than :data:`MIN_SEEDS`, RESULTS.md is not written (except at
        ``smoke``).
    """
    began = time.perf_counter()
    size = size_name(quick, smoke)
    budget = BUDGETS[size]
    seeds = list(dict.fromkeys(budget.seeds if seeds is None else seeds))
    sections, bars, problems = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for case in cases(budget.models, SMALL if budget.small else PARAMS):
            result = run_case(case, budget, seeds)
            ok, bar = case_bar(result)
            bars.append((ok, bar))
            problems += case_problems(result)
            sections.append(case_section(result, bar))
    draws_note = (
        f"Draws per chain (as many tuning or warm-up iterations before them): NumPyro "
        f"{budget.numpyro} sweeps; PyMC's default {budget.pymc}; pymc-discrete's default "
        f"{budget.gibbs}; ALBP and PAS {budget.mh} M-H steps (k steps per draw: "
        f"{budget.mh} / k draws, 4 times as many on the FHMM, whose chains mix slowly; "
        f"the defaults, which choose k after tuning, as if k were {MAX_STEPS_PER_DRAW} on "
        f"blocks of {LARGE_BLOCK} sites or more, else 1, with as many tuning draws of one "
        f"step); the reference "
        f"{budget.reference}. \"ALBP default\" and \"PAS default\" are `pmd.ALBP()` and "
        f"`pmd.PAS()` with every option left alone (the steps per draw and the compiled "
        f"loop chosen by the step; the step column says what they chose on the last "
        f"chain, joined by \" / \" where the seeds differ); beside each, the same step at "
        f"one step per draw in Python.")
    minutes = (time.perf_counter() - began) / 60
    quick_note = (f" With `--{size}` the chains are far too short for the checks (or the "
                  "ratios) to mean anything.") if size != "full" else ""
    seeds_text = ", ".join(map(str, seeds))
    command = ("python -m benchmarks.run_blocked" + ("" if size == "full" else f" --{size}")
               + ("" if seeds == list(budget.seeds) else f" --seeds {' '.join(map(str, seeds))}"))
    text = f"""## PyMC's default, register()'s step, ALBP's best and NumPyro

{provenance("run_blocked", size, minutes=minutes, command=command)}

On each model: **PyMC default** (`pmd.unregister()`, plain `pm.sample()`), **pymc-discrete
default** (`pmd.register()`, plain `pm.sample()`; the step built is named), ALBP's best
configuration (and PAS on the FHMM) and NumPyro's `DiscreteHMCGibbs` (JAX's compiled
programs cached on disk by a first run; the per-chain tracing and loading that remains,
measured on the same chains of one iteration, is subtracted, as in the applied
benchmark). The two defaults are built by PyMC's own step assignment
(`assign_step_methods`, `instantiate_steppers`), what `pm.sample()` does without a
`step`, so that they are timed warm like the others; a one-draw plain `pm.sample()`
confirms the assignment from PyMC's log (once per model, not per seed). Every
configuration runs once per seed (seed{'s' if len(seeds) > 1 else ''} {seeds_text}; a seed
sets the random starts, PyMC's random seed and NumPyro's key), {CHAINS} chains one after
the other, random start, timed warm (`harness.measure_run`), ESS/s over
the post-tuning draws.
{draws_note}

Every time, ESS and ESS/s is the median (min-max) over the seeds; max r-hat, max dev. /
MCSE and site z RMS are the worst over the seeds. Ratios are ESS/s of the log density and
of the median site against NumPyro and against PyMC's default, taken seed by seed, then
the median (min-max) over the seeds in which both runs converged: a seed in which either
did not is no speed-up and is left out, and the cell then says how many seeds counted and
why the others did not (`harness.ratio_over_seeds`; a cell without a count counted every
seed); "converged (seeds)" says in how many seeds each run converged.

A run **converged** in a seed when all the checks hold: max r-hat over the {CHAINS} chains
of the log density and the model's summaries at most {MAX_RHAT}; agreement with the
**reference**, a long run of BlockedGibbs ({CHAINS} x {budget.reference} draws from
another random start, in every seed): the largest |mean - mean_ref| / sqrt(MCSE^2 +
MCSE_ref^2) over the log density and the summaries at most {MAX_DEVIATION:g} ("max dev. /
MCSE", where), and the root mean square of that z over up to {MAX_ESS_SITES} sites' means
at most {MAX_SITE_RMS} ("site z RMS", about 1 when right). The reference is the package's
own sampler; NumPyro and PyMC's default, independent implementations, agreeing with it is
what checks it. Summaries: Ising, the magnetisation and the mean product of neighbouring
spins; Potts, the share of each state and of equal neighbours; FHMM, the share of ones in
each chain and of switches between consecutive times.

{(chr(10) * 2).join(sections)}

### Bars

A speed bar is on the median ratio over the seeds in which both runs converged, and passes
only when the pymc-discrete default's draws also converged in every seed (the cost of
register()'s step against the lattice size: `run_scaling`).{quick_note}

{chr(10).join(f"- {b}" for _, b in bars)}
"""
    if problems:
        text += "\nProblems seen in this run:\n\n" + "\n".join(f"- {p}" for p in problems) + "\n"
    print(text)
    if len(seeds) < MIN_SEEDS and size == "full":
        print(f"{len(seeds)} seed(s): fewer than {MIN_SEEDS}, {results_path()} not written")
    else:
        write_section("blocked", text)


def parse_args(argv: list[str]) -> dict:
    """``main``'s arguments from the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few draws, one seed")
    parser.add_argument("--smoke", action="store_true",
                        help="the Ising model alone, small, one seed: for the tests")
    parser.add_argument("--seeds", type=int, nargs="+", default=None,
                        help=f"seeds 1, 2, ... (default 1 2 3; --smoke: 1); every figure is "
                             f"the median over them; fewer than {MIN_SEEDS}: RESULTS.md is "
                             "not written (except at --smoke)")
    args = parser.parse_args(argv)
    if args.seeds is not None and min(args.seeds) < 1:
        parser.error(f"seeds are 1, 2, ...: got {args.seeds}")
    return {"quick": args.quick, "smoke": args.smoke, "seeds": args.seeds}


if __name__ == "__main__":
    main(**parse_args(sys.argv[1:]))
