"""Issue 20's bars, measured with the step ``register()`` picks: PyMC's default, the
package's default, ALBP's best and NumPyro, side by side on three models in one run.

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
   on the FHMM; PAS with the gradient proposal too on the FHMM, the package's best there
   before BlockedGibbs);
4. **NumPyro's DiscreteHMCGibbs** on ``run_numpyro``'s NumPyro version of the model,
   started where the PyMC runs start, its log density first checked against PyMC's (the
   same up to a constant). Timed as the applied benchmark times it: ``MCMC.run`` traces
   and compiles the kernel again for every chain, so the compiled programs are cached on
   disk, a first one-chain run fills the cache and the fixed cost that remains (the same
   chains of one iteration each) is subtracted (``run_numpyro.run_discrete_hmc_gibbs``
   times a second run, whose chains trace and compile again: on the FHMM that doubled
   NumPyro's time per iteration).

The two defaults are built by PyMC's own assignment, ``assign_step_methods`` and
``instantiate_steppers`` over ``STEP_METHODS``, exactly what ``pm.sample()`` does without
a ``step``, so that the harness can time them warm; a one-draw plain ``pm.sample()`` of
each (register on and off) confirms from PyMC's log which step it assigns.

Every run: 4 chains one after the other, a random start, timed warm
(``harness.measure_run``: ESS of the log density and median site ESS, per second of the
post-tuning draws). Beside the speed, every run is checked (DESIGN.md section 6) for

* r-hat: the largest rank-normalised split r-hat over the 4 chains of the log density
  and of the model's summaries (below), under 1.05;
* agreement with a **reference**, a long BlockedGibbs run from another random start
  (4 chains, ``reference`` draws each): the largest ``|mean - mean_ref| / sqrt(MCSE^2 +
  MCSE_ref^2)`` over the log density and the summaries, at most 4, and the root mean
  square of that z over up to 400 sites' means (near 1 when right), at most 1.5. The
  reference is the package's own sampler: NumPyro's and PyMC's default rows, independent
  implementations, agreeing with it is what checks it.

Summaries: Ising, the magnetisation and the mean product of neighbouring spins; Potts,
the share of each state and of equal neighbours; FHMM, the share of ones in each of the
K chains and the share of switches between consecutive times.

Then the cost per draw of register()'s choice on Ising lattices from 20x20 to 200x200
(2 chains, fewer draws at the big sizes) and the slope of log(ms per draw) against log N.

Writes the section ``blocked`` of ``benchmarks/RESULTS.md``. Run with
``python -m benchmarks.run_blocked`` (``--quick``: few draws, scaling up to 50x50).
"""

from __future__ import annotations

import datetime
import logging
import re
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import arviz as az
import numpy as np
import pymc as pm
from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers
from pymc.step_methods import STEP_METHODS
from pymc.step_methods.compound import CompoundStep

import pymc_discrete as pmd
from benchmarks.harness import (
    MAX_ESS_SITES,
    Measurement,
    _logp_trace,
    draws_measurement,
    machine_description,
    measure_run,
    write_section,
)
from benchmarks.run_applied import _jax_compilation_cache
from benchmarks.run_numpyro import FHMM, POTTS, numpyro_model
from pymc_discrete.adaptation.steps_per_draw import LARGE_BLOCK, MAX_STEPS_PER_DRAW
from pymc_discrete.example_models import fhmm_model, ising_model, potts_model

CHAINS = 4
NUMPYRO = "NumPyro DiscreteHMCGibbs"
PYMC_DEFAULT = "PyMC default"
PMD_DEFAULT = "pymc-discrete default"
REFERENCE = "reference"
#: correctness: agreement with the reference (in MCSE), site means' z RMS, r-hat
MAX_DEVIATION, MAX_SITE_RMS, MAX_RHAT = 4.0, 1.5, 1.05
#: "cost per draw linear in N": fitted slope of log(ms per draw) against log N at most this
MAX_SLOPE = 1.1


@dataclass(frozen=True)
class Budget:
    """Draws per chain of each sampler (tuning or warm-up: as many)."""

    numpyro: int
    pymc: int
    gibbs: int
    mh: int  # M-H steps of ALBP and PAS (k steps per draw: mh / k draws)
    reference: int
    scaling: tuple  # (lattice side, draws per chain)


FULL = Budget(numpyro=500, pymc=100, gibbs=1000, mh=5000, reference=2500,
              scaling=((20, 1000), (50, 1000), (100, 1000), (141, 500), (200, 400)))
QUICK = Budget(numpyro=15, pymc=10, gibbs=100, mh=400, reference=200,
               scaling=((20, 100), (50, 100)))


# --------------------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------------------


def _ising_summaries(x: np.ndarray) -> dict[str, np.ndarray]:
    s = 2.0 * x - 1.0
    pairs = np.concatenate([(s[..., :, 1:] * s[..., :, :-1]).reshape(*s.shape[:2], -1),
                            (s[..., 1:, :] * s[..., :-1, :]).reshape(*s.shape[:2], -1)], -1)
    return {"magnetisation": s.mean(axis=(2, 3)), "neighbour product": pairs.mean(-1)}


def _potts_summaries(x: np.ndarray) -> dict[str, np.ndarray]:
    out = {f"share of {k}": (x == k).mean(axis=(2, 3)) for k in range(POTTS["n_states"])}
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

    kind: str  # the NumPyro model of run_numpyro
    title: str
    build: Callable[[], pm.Model]
    n_values: int
    summaries: Callable[[np.ndarray], dict[str, np.ndarray]]
    best: list  # (label, make_step, M-H steps per draw)
    bar: tuple  # (baseline, factor, ("logp", "site") measured against it)
    mh_factor: int = 1  # times the budget's M-H steps (chains that mix slowly)


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


def cases() -> list[Case]:
    return [
        Case("ising", "Ising 50x50 (C2)", lambda: ising_model(50, "C2"), 2, _ising_summaries, [
            ("ALBP (sqrt, compiled loop, 8 steps per draw)",
             lambda m: pmd.ALBP([m["x"]], weight="sqrt", steps_per_draw=8,
                                compiled_loop=True), 8),
            *_defaults_and_one_step(),
        ], (PYMC_DEFAULT, 100.0, ("site",))),
        Case("potts", "Potts 30x30, K = 4", lambda: potts_model(**POTTS), POTTS["n_states"],
             _potts_summaries, [
                 ("ALBP (barker, 4 steps per draw)",
                  lambda m: pmd.ALBP([m["x"]], steps_per_draw=4), 4),
                 *_defaults_and_one_step(),
             ], (NUMPYRO, 10.0, ("logp", "site"))),
        Case("fhmm", "FHMM, L = 200, K = 5 (C2)", lambda: fhmm_model(**FHMM), 2,
             _fhmm_summaries, [
                 ("ALBP (exact, 1 step per draw in Python)",
                  lambda m: pmd.ALBP([m["x"]], proposal="exact", steps_per_draw=1,
                                     compiled_loop=False), 1),
                 *_defaults_and_one_step(),
             ], (NUMPYRO, 3.0, ("logp", "site")), mh_factor=4),
    ]


def auto_gains(rows: list) -> str:
    """One line per step: its default's ESS/s against one step per draw in Python, with
    the steps per draw the default chose (the ``steps_per_draw`` stat)."""
    by = {r.label: r for r in rows}
    parts = []
    for auto, one in AUTO_PAIRS:
        if auto in by and one in by:
            a, b = by[auto].m, by[one].m
            parts.append(
                f"{auto} ({by[auto].step}) against {one}: {a.ess_logp_per_s / b.ess_logp_per_s:.1f}x "
                f"ESS/s of the log density, {a.ess_site_per_s / b.ess_site_per_s:.1f}x on the "
                f"median site (checks: {'ok' if by[auto].check.ok else 'FAIL'})")
    return "; ".join(parts)


# --------------------------------------------------------------------------------------
# the steps plain pm.sample() builds
# --------------------------------------------------------------------------------------


def _set_registered(on: bool) -> None:
    (pmd.register if on else pmd.unregister)()


def default_step(registered: bool, start: dict) -> Callable[[pm.Model], object]:
    """A ``make_step`` building what plain ``pm.sample()`` assigns, with ``register()``
    in effect or not (PyMC's own ``assign_step_methods`` and ``instantiate_steppers``)."""

    def make(model: pm.Model):
        was = pmd.is_registered()
        _set_registered(registered)
        try:
            provided, selected = assign_step_methods(model, None, methods=STEP_METHODS)
            return instantiate_steppers(model, provided, selected,
                                        initial_point={**model.initial_point(), **start})
        finally:
            _set_registered(was)

    return make


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def plain_sample_steps(model: pm.Model, registered: bool, start: dict) -> str:
    """The step(s) a plain one-draw ``pm.sample()`` assigns, as PyMC logs them."""
    logger = logging.getLogger("pymc.sampling.mcmc")
    handler, level, was = _Lines(), logger.level, pmd.is_registered()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    _set_registered(registered)
    try:
        with model:
            pm.sample(draws=1, tune=1, chains=1, cores=1, progressbar=False, random_seed=0,
                      compute_convergence_checks=False, initvals=start)
    finally:
        _set_registered(was)
        logger.removeHandler(handler)
        logger.setLevel(level)
    steps = [m.lstrip(">").split(":")[0] for m in handler.lines if re.match(r">*\w+: \[", m)]
    return ", ".join(steps) or "?"


def step_name(step) -> str:
    """The class of a step, with its proposal where it has a choice of them."""
    if isinstance(step, CompoundStep):
        return " + ".join(step_name(s) for s in step.methods)
    name = type(step).__name__
    if isinstance(step, pm.CategoricalGibbsMetropolis):
        name += " (proportional)" if step.astep == step.astep_prop else " (uniform)"
    elif isinstance(step, pmd.BlockedGibbs):
        name += f" ({step.n_colours} colours)"
    elif isinstance(step, pmd.ALBP | pmd.PAS):
        name += f" ({step.proposal}" + (", compiled loop)" if step.compiled_loop is True
                                         else ")")
    if isinstance(step, pmd.ALBP | pmd.PAS | pmd.BlockedGibbs) and \
            getattr(step, "_draw_steps", 1) > 1:
        name += f", {step._draw_steps} steps per draw"
    return name


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
        agrees = not np.isfinite(self.deviation) or (
            self.deviation <= MAX_DEVIATION and self.site_rms <= MAX_SITE_RMS)
        return bool(self.rhat < MAX_RHAT and agrees)

    def failures(self) -> str:
        """Which checks failed, with the values."""
        out = [f"r-hat {self.rhat:.3f}"] if not self.rhat < MAX_RHAT else []
        if np.isfinite(self.deviation) and self.deviation > MAX_DEVIATION:
            out.append(f"{self.deviation:.1f} MCSE from the reference ({self.deviation_at})")
        if np.isfinite(self.site_rms) and self.site_rms > MAX_SITE_RMS:
            out.append(f"site z RMS {self.site_rms:.2f}")
        return ", ".join(out)


@dataclass
class Reference:
    """What every run is checked against: summary means and MCSEs, sites' means."""

    summaries: dict[str, tuple[float, float]]
    sites: np.ndarray
    site_mean: np.ndarray
    site_se: np.ndarray
    site_sd: np.ndarray


def _rhat(a: np.ndarray) -> float:
    if np.ptp(a) == 0:
        return 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.asarray(az.rhat(a)))


def _mean_mcse(a: np.ndarray) -> tuple[float, float]:
    return float(a.mean()), float(np.asarray(az.mcse(a, method="mean")))


def _all_summaries(case: Case, x: np.ndarray, logp: np.ndarray) -> dict[str, np.ndarray]:
    return {"log density": logp, **case.summaries(x)}


def _site_means(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Means and MCSEs of the sites of ``flat`` (chain, draw, site)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.asarray(az.mcse(flat, method="mean"), dtype=float)
    return flat.mean(axis=(0, 1)), se


def make_reference(case: Case, x: np.ndarray, logp: np.ndarray) -> Reference:
    summaries = {k: _mean_mcse(a) for k, a in _all_summaries(case, x, logp).items()}
    flat = x.reshape(*x.shape[:2], -1).astype(float)
    sites = np.flatnonzero(flat.std(axis=(0, 1)) > 0)
    if sites.size > MAX_ESS_SITES:
        sites = np.sort(np.random.default_rng(1).choice(sites, MAX_ESS_SITES, replace=False))
    mean, se = _site_means(flat[..., sites])
    return Reference(summaries, sites, mean, se, flat[..., sites].std(axis=(0, 1)))


def check(case: Case, x: np.ndarray, logp: np.ndarray, ref: Reference | None) -> Check:
    """r-hat of the run, and its agreement with ``ref`` (none: the reference itself)."""
    ours = _all_summaries(case, x, logp)
    result = Check(rhat=max(_rhat(a) for a in ours.values()))
    if ref is None:
        return result
    worst, at = 0.0, ""
    for k, a in ours.items():
        (m, se), (m_ref, se_ref) = _mean_mcse(a), ref.summaries[k]
        scale = max(float(np.hypot(se, se_ref)), 1e-4 * max(1.0, abs(m_ref)))
        z = abs(m - m_ref) / scale
        if z >= worst:
            worst, at = z, k
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
    label: str
    step: str
    m: Measurement
    check: Check


def numpyro_density_mismatch(case: Case, model: pm.Model, start: dict) -> str | None:
    """None if the NumPyro model's log density differs from the PyMC model's by the same
    constant at the start and at another random point (within float32 rounding), else
    what differs."""
    import jax
    from numpyro.infer.util import log_density

    sampler_model, n_values = numpyro_model(case.kind)
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


def numpyro_run(case: Case, model: pm.Model, draws: int,
                start: dict) -> tuple[Measurement, np.ndarray, np.ndarray, str]:
    """DiscreteHMCGibbs on the NumPyro version of ``case``'s model (``draws`` sweeps after
    as many warm-up, every chain from ``start``), timed as the applied benchmark times it:
    ``MCMC.run`` traces and compiles the kernel again for every chain (seconds each,
    whatever the number of iterations), so compiled programs are cached on disk, a first
    run of one chain fills the cache, and what remains of that fixed cost (the same chains
    of one iteration each, best of 3) is taken off the measured run's wall time. Measured
    as ``run_numpyro.numpyro_measure`` measures, keeping the draws."""
    import jax
    from numpyro.infer import MCMC, NUTS, DiscreteHMCGibbs

    sampler_model, n_values = numpyro_model(case.kind)

    def timed(n_tune: int, n_draws: int, n_chains: int, key: int) -> tuple[MCMC, float]:
        init = {"x": np.repeat(start["x"][None], n_chains, 0), "z": np.zeros(n_chains)}
        if n_chains == 1:
            init = {k: v[0] for k, v in init.items()}
        mcmc = MCMC(DiscreteHMCGibbs(NUTS(sampler_model)), num_warmup=n_tune,
                    num_samples=n_draws, num_chains=n_chains, chain_method="sequential",
                    progress_bar=False)
        began = time.perf_counter()
        mcmc.run(jax.random.PRNGKey(key), init_params=init)
        jax.block_until_ready(mcmc.get_samples())
        return mcmc, time.perf_counter() - began

    _jax_compilation_cache()
    timed(draws, draws, 1, 1)
    overhead = min(timed(1, 1, CHAINS, 2 + i)[1] for i in range(3))
    mcmc, wall = timed(draws, draws, CHAINS, 0)
    seconds = wall - overhead
    x = np.asarray(mcmc.get_samples(group_by_chain=True)["x"]).astype(np.int64)
    logp = _logp_trace(model, x, model.rvs_to_values[model["x"]].name)
    n_sites = int(np.prod(x.shape[2:]))
    measurement = draws_measurement(NUMPYRO, x, logp, seconds, draws,
                                    evals_per_draw=float(n_sites * (n_values - 1)))
    note = (f"NumPyro: wall {wall:.1f} s, less {overhead:.1f} s of per-chain initialisation, "
            "tracing and loading of the compiled kernel (the same chains of one iteration)")
    print(f"    {NUMPYRO}: {note}", flush=True)
    return measurement, x, logp, note


def run_case(case: Case, budget: Budget) -> tuple[list[Row], dict]:
    """Every sampler on one model, checked against a long BlockedGibbs reference."""
    model = case.build()
    shape = model.initial_point()["x"].shape
    start = {"x": np.random.default_rng(0).integers(0, case.n_values, shape)}
    ref_start = {"x": np.random.default_rng(1).integers(0, case.n_values, shape)}
    runs = []  # (label, step name, measurement, x, logp)

    print(f"  {case.title}: {NUMPYRO}", flush=True)
    info = {"numpyro_density": numpyro_density_mismatch(case, model, start)}
    m, x, logp, info["numpyro_time"] = numpyro_run(case, model, budget.numpyro, start)
    runs.append((NUMPYRO, "DiscreteHMCGibbs(NUTS)", m, x, logp))

    def sample(label: str, make_step, draws: int, seed: int = 6, initvals=start,
               warmup: int | None = None):
        print(f"  {case.title}: {label}", flush=True)
        run = measure_run(model, label, make_step, draws=draws, tune=draws, chains=CHAINS,
                          seed=seed, initvals=initvals, warmup=warmup)
        runs.append((label, step_name(run.step), run.measurement, run.draws, run.logp))
        return run

    sample(PYMC_DEFAULT, default_step(False, start), budget.pymc)
    ours = sample(PMD_DEFAULT, default_step(True, start), budget.gibbs)
    info["built"] = step_name(ours.step)
    info["reason"] = getattr(ours.step, "choice_reason", "(no reason recorded)")
    ref_step = ours.step
    if not isinstance(ours.step, pmd.BlockedGibbs):
        ref_step = sample("BlockedGibbs", lambda m: pmd.BlockedGibbs([m["x"]]),
                          budget.gibbs).step
    for label, make_step, per_draw in case.best:
        if per_draw is None:  # a default: 8 steps per draw at most, on large blocks only
            per_draw = MAX_STEPS_PER_DRAW if start["x"].size >= LARGE_BLOCK else 1
        sample(label, make_step, budget.mh * case.mh_factor // per_draw)
    print(f"  {case.title}: plain pm.sample() with and without register()", flush=True)
    info["plain_registered"] = plain_sample_steps(model, True, start)
    info["plain_default"] = plain_sample_steps(model, False, start)
    print(f"    plain pm.sample(): {info['plain_default']} without register(), "
          f"{info['plain_registered']} with it", flush=True)
    ref = sample(REFERENCE, lambda m: ref_step, budget.reference, seed=99,
                 initvals=ref_start, warmup=5)
    runs.pop()
    reference = make_reference(case, ref.draws, ref.logp)
    rows = [Row(label, step, m, check(case, x, logp, reference))
            for label, step, m, x, logp in runs]
    rows.append(Row(REFERENCE, step_name(ref.step), ref.measurement,
                    check(case, ref.draws, ref.logp, None)))
    return rows, info


# --------------------------------------------------------------------------------------
# reporting
# --------------------------------------------------------------------------------------


def _ratio(row: Row, base: Row | None) -> str:
    if base is None:
        return "-"
    return (f"{row.m.ess_logp_per_s / base.m.ess_logp_per_s:.1f}x / "
            f"{row.m.ess_site_per_s / base.m.ess_site_per_s:.1f}x")


def _cell(value: float, fmt: str) -> str:
    return "-" if not np.isfinite(value) else format(value, fmt)


def format_rows(rows: list[Row]) -> str:
    by = {r.label: r for r in rows}
    numpyro, pymc = by.get(NUMPYRO), by.get(PYMC_DEFAULT)
    head = ("| sampler | step built | chains x draws | seconds | ms/draw | EJD | ESS logp "
            "| ESS/s logp | median site ESS/s | vs NumPyro (logp / site) "
            "| vs PyMC default (logp / site) | max r-hat | max dev. / MCSE | site z RMS "
            "| checks |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        m, c = r.m, r.check
        reference = r.label == REFERENCE
        deviation = "ref" if reference else f"{c.deviation:.1f} ({c.deviation_at})"
        lines.append(
            f"| {r.label} | {r.step} | {CHAINS} x {m.draws // CHAINS} | {m.seconds:.1f} "
            f"| {m.time_per_draw_ms:.3f} | {m.ejd:.1f} | {m.ess_logp:.0f} "
            f"| {m.ess_logp_per_s:.1f} | {m.ess_site_per_s:.1f} | {_ratio(r, numpyro)} "
            f"| {_ratio(r, pymc)} | {c.rhat:.3f} | {deviation} "
            f"| {'ref' if reference else _cell(c.site_rms, '.2f')} "
            f"| {'ok' if c.ok else 'FAIL'} |")
    return "\n".join(lines)


def _mark(ok: bool) -> str:
    return "pass" if ok else "FAIL"


def case_bar(case: Case, rows: list[Row]) -> tuple[bool, str]:
    """Issue 20's bar on ``case`` for the package's default: the speed ratio and the
    draws' correctness."""
    by = {r.label: r for r in rows}
    ours, (baseline, factor, which) = by[PMD_DEFAULT], case.bar
    base = by[baseline]
    attrs = {"logp": ("ess_logp_per_s", "ESS/s of the log density"),
             "site": ("ess_site_per_s", "median site ESS/s")}
    parts, ok = [], ours.check.ok
    for w in which:
        attr, what = attrs[w]
        ratio = getattr(ours.m, attr) / getattr(base.m, attr)
        ok &= ratio >= factor
        parts.append(f"{what} {getattr(ours.m, attr):.1f} vs {getattr(base.m, attr):.1f}: "
                     f"{ratio:.1f}x ({_mark(ratio >= factor)})")
    c = ours.check
    parts.append(f"draws {'agree' if c.ok else 'DO NOT agree'} (r-hat {c.rhat:.3f}, "
                 f"{c.deviation:.1f} MCSE from the reference, site z RMS {c.site_rms:.2f})")
    base_step = f" ({base.step})" if baseline == PYMC_DEFAULT else ""
    wanted = " and ".join(attrs[w][1] for w in which)
    text = (f"**{_mark(ok)}**: {case.title}: {PMD_DEFAULT} ({ours.step}) at least "
            f"{factor:g}x {baseline}{base_step} on {wanted}: " + "; ".join(parts) + ".")
    return ok, text


def step_ms(step, x: np.ndarray, n: int) -> float:
    """Milliseconds per call of ``step.astep`` alone (no ``pm.sample`` around it), from
    the draw ``x``: best of 3 repeats of ``n`` calls, after ``n // 5`` discarded ones."""
    from pymc.blocking import DictToArrayBijection

    (name,) = [v.name for v in step.vars]
    point = DictToArrayBijection.map({name: x})
    for _ in range(max(1, n // 5)):
        point, _ = step.astep(point)
    best = float("inf")
    for _ in range(3):
        began = time.perf_counter()
        for _ in range(n):
            point, _ = step.astep(point)
        best = min(best, (time.perf_counter() - began) / n)
    return 1e3 * best


def _slopes(n: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    """Slopes of log t against log n: over every size and over the three largest."""
    def fit(a, b):
        return float(np.polyfit(np.log(a), np.log(b), 1)[0])

    return (fit(n, t) if len(n) >= 2 else float("nan"),
            fit(n[-3:], t[-3:]) if len(n) >= 3 else float("nan"))


def scaling(budget: Budget) -> tuple[str, dict, list[str]]:
    """Cost per draw of register()'s choice on Ising lattices, through ``pm.sample`` and
    of the step alone: the table, the slopes ({"sample": (all, three largest), "step":
    ...}) and notes."""
    results = []
    for side, draws in budget.scaling:
        model = ising_model(side, "C2")
        start = {"x": np.random.default_rng(0).integers(0, 2, (side, side))}
        print(f"  scaling, Ising {side}x{side}: register()", flush=True)
        # the faster of two identical runs (the same draws): PyMC's recording of a draw
        # of 40,000 values varied by up to 1.3x from run to run on this VM
        runs = [min((measure_run(model, "register()", default_step(True, start),
                                 draws=draws, tune=draws, seed=1, initvals=start)
                     for _ in range(2)), key=lambda run: run.measurement.seconds)]
        if not isinstance(runs[0].step, pmd.BlockedGibbs):
            print(f"  scaling, Ising {side}x{side}: BlockedGibbs", flush=True)
            runs.append(measure_run(model, "BlockedGibbs",
                                    lambda m: pmd.BlockedGibbs([m["x"]]), draws=draws,
                                    tune=draws, seed=1, initvals=start))
        for run in runs:
            alone = step_ms(run.step, run.draws[0, -1], min(draws, 300))
            results.append((side, step_name(run.step), run.measurement, alone))
    gibbs = [(s, m, a) for s, name, m, a in results if name.startswith("BlockedGibbs")]
    n = np.array([s * s for s, _, _ in gibbs], dtype=float)
    slopes = {"sample": _slopes(n, np.array([m.time_per_draw_ms for _, m, _ in gibbs])),
              "step": _slopes(n, np.array([a for _, _, a in gibbs]))}
    lines = ["| lattice | N | step register() built | chains x draws | ms/draw (pm.sample) "
             "| us per draw per 1k sites | ms per step.astep alone | us per 1k sites "
             "| ESS/s logp | median site ESS/s |", "|" + "---|" * 10]
    notes = []
    for side, name, m, alone in results:
        lines.append(f"| {side}x{side} | {side * side} | {name} | 2 x {m.draws // 2} "
                     f"| {m.time_per_draw_ms:.3f} "
                     f"| {1e6 * m.time_per_draw_ms / (side * side):.1f} "
                     f"| {alone:.3f} | {1e6 * alone / (side * side):.1f} "
                     f"| {m.ess_logp_per_s:.1f} | {m.ess_site_per_s:.1f} |")
        if not name.startswith("BlockedGibbs"):
            notes.append(f"register() did not build BlockedGibbs on {side}x{side}: {name}")
    return "\n".join(lines), slopes, notes


def main(quick: bool = False) -> None:
    """Measure and write the ``blocked`` section of RESULTS.md."""
    began = time.perf_counter()
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = "python -m benchmarks.run_blocked" + (" --quick" if quick else "")
    budget = QUICK if quick else FULL
    sections, bars, problems = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for case in cases():
            rows, info = run_case(case, budget)
            ok, bar = case_bar(case, rows)
            bars.append((ok, bar))
            failed = [f"{r.label} ({r.check.failures()})" for r in rows if not r.check.ok]
            if failed:
                problems.append(f"{case.title}: checks failed: {'; '.join(failed)}")
            if not info["built"].startswith("BlockedGibbs"):
                problems.append(f"{case.title}: register() built {info['built']}")
            if not info["plain_registered"].startswith("BlockedGibbs"):
                problems.append(f"{case.title}: plain pm.sample() with register() assigned "
                                f"{info['plain_registered']}")
            density = info["numpyro_density"]
            if density is not None:
                problems.append(f"{case.title}: {density}")
            sections.append(
                f"### {case.title}\n\n"
                f"`register()` built **{info['built']}**: {info['reason']}. Plain "
                f"`pm.sample()` assigns {info['plain_registered']} with `register()` and "
                f"{info['plain_default']} without it (PyMC's log). "
                f"{info['numpyro_time']}; its log density "
                + ("matches PyMC's (up to a constant)" if density is None
                   else f"does NOT match PyMC's: {density}")
                + f".\n\n{format_rows(rows)}\n\n{bar}\n\nAutomatic steps per draw and "
                f"compiled loop: {auto_gains(rows)}."
            )
        print("  scaling", flush=True)
        table, slopes, notes = scaling(budget)
    problems += notes
    slope, slope_big = slopes["sample"]
    linear = slope <= MAX_SLOPE and (not np.isfinite(slope_big) or slope_big <= MAX_SLOPE)
    sizes = f"{budget.scaling[0][0]}x{budget.scaling[0][0]} to " \
            f"{budget.scaling[-1][0]}x{budget.scaling[-1][0]}"
    def said(pair: tuple[float, float]) -> str:
        return f"{pair[0]:.2f} over all sizes" + (
            f", {pair[1]:.2f} over the three largest" if np.isfinite(pair[1]) else "")

    scaling_bar = (f"**{_mark(linear)}**: cost per draw of register()'s choice (through "
                   f"`pm.sample`) linear in N from {sizes} (fitted slope of log ms/draw "
                   f"against log N at most {MAX_SLOPE:g}): {said(slopes['sample'])}; the "
                   f"step alone: {said(slopes['step'])}.")
    bars.append((linear, scaling_bar))
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
        f"chain); beside each, the same step at one step per draw in Python.")
    minutes = (time.perf_counter() - began) / 60
    quick_note = (" With `--quick` the chains are far too short for the checks (or the "
                  "ratios) to mean anything: a smoke test only.") if quick else ""
    scaling_draws = ", ".join(f"{s}x{s}: {d}" for s, d in budget.scaling)
    text = f"""## Issue 20's bars: PyMC's default, register()'s step, ALBP's best and NumPyro

Produced by `{command}` on {stamp} (the run took {minutes:.0f} min).
Machine: {machine_description()}.

On each model: **PyMC default** (`pmd.unregister()`, plain `pm.sample()`), **pymc-discrete
default** (`pmd.register()`, plain `pm.sample()`; the step built is named), ALBP's best
configuration (and PAS on the FHMM) and NumPyro's `DiscreteHMCGibbs` (JAX's compiled
programs cached on disk by a first run; the per-chain tracing and loading that remains,
measured on the same chains of one iteration, is subtracted, as in the applied
benchmark). The two defaults are built by PyMC's own step assignment
(`assign_step_methods`, `instantiate_steppers`), what `pm.sample()` does without a
`step`, so that they are timed warm like the others; a one-draw plain `pm.sample()`
confirms the assignment from PyMC's log. {CHAINS} chains one after the other, random
start, timed warm (`harness.measure_run`), ESS/s over the post-tuning draws.
{draws_note} Ratios are ESS/s of the log density / of the median site against NumPyro and
against PyMC's default, in one run (identical runs differ by up to 1.3x on this machine).

Checks beside the speed ("checks" ok when all hold): max r-hat over the {CHAINS} chains of
the log density and the model's summaries below {MAX_RHAT}; agreement with the
**reference**, a long run of BlockedGibbs ({CHAINS} x {budget.reference} draws from
another random start): the largest |mean - mean_ref| / sqrt(MCSE^2 + MCSE_ref^2) over the
log density and the summaries at most {MAX_DEVIATION:g} ("max dev. / MCSE", where), and
the root mean square of that z over up to {MAX_ESS_SITES} sites' means at most
{MAX_SITE_RMS} ("site z RMS", about 1 when right). The reference is the package's own
sampler; NumPyro and PyMC's default, independent implementations, agreeing with it is
what checks it. Summaries: Ising, the magnetisation and the mean product of neighbouring
spins; Potts, the share of each state and of equal neighbours; FHMM, the share of ones in
each chain and of switches between consecutive times.

{(chr(10) * 2).join(sections)}

### Cost per draw against the lattice size (Ising C2)

register()'s choice on each lattice, 2 chains, draws per chain (after as many tuning):
{scaling_draws}; ms/draw through `pm.sample` includes tuning, as everywhere; the faster of
two identical runs (at 40,000 sites the time through `pm.sample` varied by up to 1.3x between
identical runs, the step alone did not). Beside it, the
step's own cost: `step.astep` called in a loop on the run's last draw, no `pm.sample`
around it (best of 3 repeats of up to 300 calls). Slope of log(ms per draw) against
log(N), 1 = linear: through `pm.sample` {said(slopes['sample'])}; the step alone
{said(slopes['step'])} (a fixed per-draw overhead flattens the small sizes; what
`pm.sample` adds per draw, recording the draw and the stats, is the difference).

{table}

### Issue 20's bars

A speed bar passes only when the pymc-discrete default's draws also pass the checks.{quick_note}

{chr(10).join(f"- {b}" for _, b in bars)}
"""
    if problems:
        text += "\nProblems seen in this run:\n\n" + "\n".join(f"- {p}" for p in problems) + "\n"
    print(text)
    write_section("blocked", text)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
