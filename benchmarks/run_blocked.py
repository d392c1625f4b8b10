"""The package's default against PyMC's default, ALBP's best and NumPyro, side by side on
three lattice models in one run, measured with the step ``register()`` picks, and its
bars.

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

Writes the section ``blocked`` of ``benchmarks/RESULTS.md``. Run with
``python -m benchmarks.run_blocked`` (``--quick``: few draws; ``--smoke``: the Ising model
alone, small, for the tests). The cost of register()'s step against the lattice size is
``run_scaling``'s.
"""

from __future__ import annotations

import re
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
    assigned_step,
    cell,
    cli,
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
    release_compiled_jax,
    run_discrete_hmc_gibbs,
    size_name,
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
#: correctness: agreement with the reference (in MCSE), site means' z RMS, r-hat
MAX_DEVIATION, MAX_SITE_RMS, MAX_RHAT = 4.0, 1.5, 1.05


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


BUDGETS = {
    "full": Budget(numpyro=500, pymc=100, gibbs=1000, mh=5000, reference=2500),
    "quick": Budget(numpyro=15, pymc=10, gibbs=100, mh=400, reference=200),
    "smoke": Budget(numpyro=5, pymc=4, gibbs=10, mh=40, reference=20, models=("ising",),
                    small=True),
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


def numpyro_run(case: Case, model: pm.Model, draws: int,
                start: dict) -> tuple[Measurement, np.ndarray, np.ndarray, str]:
    """DiscreteHMCGibbs on the NumPyro version of ``case``'s model (``draws`` sweeps after
    as many warm-up, every chain from ``start``), timed warm
    (``harness.run_discrete_hmc_gibbs``); the measurement, the draws, their log density
    (PyMC's) and how the time was taken."""
    sampler_model, n_values = numpyro_model(case.kind, case.params)

    def init(n_chains: int) -> dict:
        params = {"x": np.repeat(start["x"][None], n_chains, 0), "z": np.zeros(n_chains)}
        return {k: v[0] for k, v in params.items()} if n_chains == 1 else params

    run = run_discrete_hmc_gibbs(sampler_model, draws, draws, CHAINS, init=init)
    release_compiled_jax()
    measurement = numpyro_measurement(run, model, n_values, draws, label=NUMPYRO)
    x = run.samples["x"].astype(np.int64)
    print(f"    {NUMPYRO}: {run.note}", flush=True)
    return measurement, x, logp_trace(model, x, "x"), f"NumPyro: {run.note}"


def run_case(case: Case, budget: Budget) -> tuple[list[Row], dict]:
    """Every sampler on one model, checked against a long BlockedGibbs reference."""
    model = case.build()
    shape = model.initial_point()["x"].shape
    start = {"x": np.random.default_rng(0).integers(0, case.n_values, shape)}
    ref_start = {"x": np.random.default_rng(1).integers(0, case.n_values, shape)}
    runs = []  # (label, step name, measurement, x, logp)

    info = {"numpyro_density": None, "numpyro_time": "NumPyro is not installed: no NumPyro row"}
    if numpyro_available():
        print(f"  {case.title}: {NUMPYRO}", flush=True)
        info["numpyro_density"] = numpyro_density_mismatch(case, model, start)
        m, x, logp, info["numpyro_time"] = numpyro_run(case, model, budget.numpyro, start)
        runs.append((NUMPYRO, "DiscreteHMCGibbs(NUTS)", m, x, logp))

    def sample(label: str, make_step, draws: int, seed: int = 6, initvals=start,
               warmup: int | None = None):
        print(f"  {case.title}: {label}", flush=True)
        run = measure_run(model, label, make_step, draws=draws, tune=draws, chains=CHAINS,
                          seed=seed, initvals=initvals, warmup=warmup)
        runs.append((label, step_name(run.step), run.measurement, run.draws, run.logp))
        return run

    sample(PYMC_DEFAULT, lambda m: assigned_step(m, False, start), budget.pymc)
    ours = sample(PMD_DEFAULT, lambda m: assigned_step(m, True, start), budget.gibbs)
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


def format_rows(rows: list[Row]) -> str:
    by = {r.label: r for r in rows}
    numpyro, pymc = by.get(NUMPYRO), by.get(PYMC_DEFAULT)
    lines = []
    for r in rows:
        m, c = r.m, r.check
        reference = r.label == REFERENCE
        lines.append([r.label, r.step, f"{CHAINS} x {m.draws // CHAINS}", f"{m.seconds:.1f}",
                      f"{m.time_per_draw_ms:.3f}", f"{m.ejd:.1f}", f"{m.ess_logp:.0f}",
                      f"{m.ess_logp_per_s:.1f}", f"{m.ess_site_per_s:.1f}", _ratio(r, numpyro),
                      _ratio(r, pymc), f"{c.rhat:.3f}",
                      "ref" if reference else f"{c.deviation:.1f} ({c.deviation_at})",
                      "ref" if reference else cell(c.site_rms, ".2f"),
                      "ok" if c.ok else "FAIL"])
    return markdown_table(
        ["sampler", "step built", "chains x draws", "seconds", "ms/draw", "EJD", "ESS logp",
         "ESS/s logp", "median site ESS/s", "vs NumPyro (logp / site)",
         "vs PyMC default (logp / site)", "max r-hat", "max dev. / MCSE", "site z RMS",
         "checks"], lines)


def _mark(ok: bool) -> str:
    return "pass" if ok else "FAIL"


def case_bar(case: Case, rows: list[Row]) -> tuple[bool, str]:
    """The bar on ``case`` for the package's default: the speed ratio and the draws'
    correctness (no bar without the baseline's row: NumPyro not installed)."""
    by = {r.label: r for r in rows}
    ours, (baseline, factor, which) = by[PMD_DEFAULT], case.bar
    base = by.get(baseline)
    if base is None:
        return False, (f"**not measured**: {case.title}: {PMD_DEFAULT} against {baseline}, "
                       "which did not run")
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


def main(quick: bool = False, smoke: bool = False) -> None:
    """Measure and write the ``blocked`` section of RESULTS.md."""
    began = time.perf_counter()
    size = size_name(quick, smoke)
    budget = BUDGETS[size]
    sections, bars, problems = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for case in cases(budget.models, SMALL if budget.small else PARAMS):
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
    quick_note = (f" With `--{size}` the chains are far too short for the checks (or the "
                  "ratios) to mean anything.") if size != "full" else ""
    text = f"""## PyMC's default, register()'s step, ALBP's best and NumPyro

{provenance("run_blocked", size, minutes=minutes)}

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

### Bars

A speed bar passes only when the pymc-discrete default's draws also pass the checks
(the cost of register()'s step against the lattice size: `run_scaling`).{quick_note}

{chr(10).join(f"- {b}" for _, b in bars)}
"""
    if problems:
        text += "\nProblems seen in this run:\n\n" + "\n".join(f"- {p}" for p in problems) + "\n"
    print(text)
    write_section("blocked", text)


if __name__ == "__main__":
    cli(main)
