"""Summed-out sampling: ``pmd.register()`` and a plain ``pm.sample()`` against NUTS on the
models summed out by hand, set-up and compilation counted.

After ``pmd.register()``, a plain ``pm.sample()`` (no step, ``init="auto"``, nutpie
installed) sums the discrete variables out (``pmd.marginalize``), samples what is left with
nutpie (PyMC's own rule for an all-continuous model) and adds exact draws of the discrete
variables (``pmd.recover_discrete``). This script measures what that costs a user against
running nutpie on a model summed out by hand. On the applied models of
``benchmarks/applied_models.py`` (site occupancy, capture-recapture, the Gaussian mixture
on iris, the change point, the Gaussian HMM of 300 steps and its overlapping, sticky
variant, and the N-mixture model), six variants:

* **A**, ``register() + pm.sample(nuts_sampler="nutpie")``: ``pmd.register()``, then
  ``pm.sample(draws, tune, chains=4, random_seed=seed, progressbar=False,
  nuts_sampler="nutpie")`` on ``applied.model`` (the discrete variables free); the run
  must take the summed-out route (the route's log message is read: a run that does not
  is a failed row). The measurements of 2026-11-27 were taken when nutpie being
  installed was enough to take the route (no ``nuts_sampler``): the same calls;
* **B**, nutpie on the hand-summed model: ``pm.sample(..., nuts_sampler="nutpie")`` on
  ``applied.marginal``;
* **F**, nutpie on the hand-summed model from its mode: ``pm.find_MAP(jitter=False)`` on
  ``applied.marginal`` (L-BFGS from the model's initial point), then ``pm.sample(...,
  nuts_sampler="nutpie", initvals=<the mode>, compile_kwargs={"jitter_rvs": set()})``, every
  chain started there unjittered: what a user who sums out by hand does where B's chains
  settle in different modes (on the iris mixture, in 18 of seeds 1-20), the start A's route
  takes; the optimisation is set-up;
* **C**, PyMC's NUTS on the hand-summed model: the same with ``nuts_sampler="pymc"``;
* **D**, ``register()``, PyMC's NUTS: ``pmd.register()``, then ``pm.sample(...,
  nuts_sampler="pymc")`` on ``applied.model``: PyMC's step loop with the steps
  ``register()`` assigns (CollapsedNUTS, ChainGibbs; the route before summing out), for
  reference;
* **E**, ``register() + pm.sample()``, as typed: ``pmd.register()``, then ``pm.sample(...)``
  with no ``nuts_sampler``: the route ``register()`` chooses for the run's length (at
  PyMC's default length, PyMC's loop with the steps of D; nutpie from 20,000 iterations a
  core where the block sums out site by site or as latent counts).

Every other argument is PyMC's default (``init="auto"``, ``cores``: PyMC's default,
min(4, CPUs / 2), unless ``--cores``; convergence checks on), so that each call is what a user
types. A model that ``pmd.marginalize`` cannot sum out (``pmd.NotCollapsible``, e.g. the
N-mixture model's latent counts; or any other error it raises) is a row "not supported:
<reason>" and is not run.

Every run is a fresh Python process (``python -m benchmarks.run_summed --child <json>``,
the result returned as one JSON line), so that set-up and compilation are counted as a new
user meets them in a new session; PyTensor's and numba's disk caches are warm (the
machine's own), filled by one unmeasured run of the same call (``--warm-draws`` tuning
and draws) in another fresh process before the first seed of every model and variant.
Measured in the child:

* **total**: the wall time of the ``pm.sample`` call: set-up (for A: summing out), the
  compilation, tuning and draws, PyMC's convergence checks and (A) the recovery of the
  discrete draws; ``register()``, the imports and the building of the model are outside;
* **sampling alone**: the ``sampling_time`` that PyMC (or its nutpie path, on the
  posterior group) records for the tuning and draws, plus, for A, the seconds spent in
  ``recover_discrete`` drawing the discrete variables: its time less the compilation of
  its conditional tables (``recover.compile_conditional_tables``), which is set-up (once
  a session, what a long run does not repeat). Both are timed with Python's monitoring events
  (``sys.monitoring``, PEP 669) on the function's code object alone: nothing is wrapped
  and nothing else is slowed. **set-up** is total less sampling alone.

From the draws (the child returns per-element statistics, not the draws): the smallest
bulk ESS (ArviZ) over every element of the continuous parameters, divided by the total and
by the sampling-alone seconds (ESS/s, tuning included in both times); the largest r-hat
over those elements; the number of divergences; and the agreement of every element's mean
with the reference's, ``|mean - mean_ref| / sqrt(MCSE^2 + MCSE_ref^2)`` (the largest over
the elements, ``harness.deviation``'s rule). The reference of a seed is variant C's run of
that seed where its r-hat is at most 1.01, else B's, else F's; C's own agreement is checked
against B, else F. A run **converged** when its r-hat is at most 1.01 and it is within 4 MCSE of the
reference ("no reference" when none of C, B and F settled: r-hat alone then). The headline
discrete summaries of the model (the number of occupied sites, the switch year, ...; A and
D from their discrete draws, B and C Rao-Blackwellised: ``applied.marginal_summaries``)
are compared the same way, shown but not part of convergence.

Reported per model over the seeds (median with the min-max spread): E/B ESS per second
with set-up and compilation counted (what ``register()`` + ``pm.sample()`` gives at this
length); the sampling alone of the route a long run takes (A where the block sums out site
by site or as latent counts, D for a chain) against B's; A/B and A/F counted and of
sampling alone, and D/C, for context; a
ratio counts only the seeds where both runs converged (``harness.ratio_over_seeds``: a
non-converged run is n/c, never a speed-up). Then, per model, every variant over the seeds
and every run seed by seed.

Run from the repository root: ``python -m benchmarks.run_summed`` (seeds 1 2 3, 4 chains x
1000 draws after 1000 tuning; ``--quick``: two models, one seed, 200 + 200; ``--smoke``:
occupancy alone, one seed, 2 chains of 50 + 50, no warm-up run, for the
tests;
``--models``, ``--seeds``, ``--draws``, ``--tune``, ``--chains``, ``--cores``). Writes the
section ``summed`` of ``benchmarks/RESULTS.md`` when run over at least 3 seeds (and at
``--smoke``, for the tests; never with ``--no-write``).
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import re
import subprocess
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm

import pymc_discrete as pmd
from benchmarks.applied_models import BUILDERS, AppliedModel
from benchmarks.harness import (
    SeedOutcome,
    cell,
    log_messages,
    markdown_table,
    mean_mcse,
    provenance,
    ratio_over_seeds,
    results_path,
    rhat,
    size_name,
    spread_over_seeds,
    write_section,
)
from benchmarks.run_applied import MAX_DEVIATION, MAX_RHAT

#: the variants, in the order they run within a seed (the reference C first)
A, B, C, D, E, F = "A", "B", "C", "D", "E", "F"
VARIANTS = {
    C: "PyMC NUTS on the hand-summed model",
    B: "nutpie on the hand-summed model",
    F: "nutpie on the hand-summed model from its mode",
    A: "register() + pm.sample(nuts_sampler=\"nutpie\")",
    D: "register(), PyMC's NUTS",
    E: "register() + pm.sample(), as typed",
}
#: the models of a full run (keys of ``benchmarks.applied_models.BUILDERS``)
MODELS = ("occupancy", "capture", "mixture", "changepoint", "hmm", "sticky_hmm", "nmixture")
QUICK_MODELS = ("occupancy", "changepoint")
#: the cheapest two, and the N-mixture model for its "not supported" row
SMOKE_MODELS = ("occupancy",)
#: fewer seeds than this: the tables are printed, RESULTS.md is not written
MIN_SEEDS = 3

#: the repository root: the child processes run there, so that ``benchmarks`` imports
ROOT = Path(__file__).resolve().parent.parent
#: the line of a child's stdout that carries its result
RESULT = "RUN_SUMMED_RESULT "


# --------------------------------------------------------------------------------------
# the child process: one pm.sample call, measured
# --------------------------------------------------------------------------------------


class CallTimer:
    """Seconds spent inside one Python function while the ``with`` block runs, from
    Python's monitoring events (``sys.monitoring``, PEP 669) set on that function's code
    object alone: the function is not wrapped or replaced, and no other code pays for the
    measurement."""

    def __init__(self, function) -> None:
        self.code = function.__code__
        self.seconds = 0.0
        self.calls = 0
        self.tool: int | None = None
        self.began: list[float] = []

    def started(self, code, offset) -> None:
        self.began.append(time.perf_counter())

    def returned(self, code, offset, value) -> None:
        if self.began:
            self.seconds += time.perf_counter() - self.began.pop()
            self.calls += 1

    def __enter__(self) -> CallTimer:
        monitoring = sys.monitoring
        for tool in (monitoring.PROFILER_ID, 3, 4):  # the first free tool id
            try:
                monitoring.use_tool_id(tool, "benchmarks.run_summed")
            except ValueError:
                continue
            self.tool = tool
            break
        else:
            raise RuntimeError("no free sys.monitoring tool id")
        events = monitoring.events
        monitoring.register_callback(self.tool, events.PY_START, self.started)
        monitoring.register_callback(self.tool, events.PY_RETURN, self.returned)
        monitoring.set_local_events(self.tool, self.code, events.PY_START | events.PY_RETURN)
        return self

    def __exit__(self, *exc) -> None:
        monitoring = sys.monitoring
        monitoring.set_local_events(self.tool, self.code, 0)
        for event in (monitoring.events.PY_START, monitoring.events.PY_RETURN):
            monitoring.register_callback(self.tool, event, None)
        monitoring.free_tool_id(self.tool)


def elements(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
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


def statistics(arrays: dict[str, np.ndarray]) -> dict[str, list[float]]:
    """Name -> [mean, MCSE of the mean, bulk ESS, r-hat] of (chain, draw) arrays (ESS
    NaN for an array constant in every draw)."""
    out = {}
    for name, a in arrays.items():
        mean, mcse = mean_mcse(a)
        ess = float(np.asarray(az.ess(a, method="bulk"))) if np.ptp(a) > 0 else float("nan")
        out[name] = [mean, mcse, ess, rhat(a)]
    return out


#: a line of the step hierarchy ``pm.sample`` logs: ``>CollapsedNUTS (exact draw): [z]``
STEP_LINE = re.compile(r"^>*([A-Za-z][^:\[\]]*): \[(.*)\]$")
#: the summed-out route's message: ``pymc-discrete: z summed out site by site; sampling
#: the rest with nutpie (...)``
ROUTE = re.compile(r"^pymc-discrete: (.+?) summed out (.+?); sampling the rest with (\w+)")


def route_of(messages: list[str]) -> tuple[str, bool]:
    """What a ``pm.sample`` call ran, from what it logged, and whether it was the
    summed-out route."""
    for message in messages:
        found = ROUTE.match(message)
        if found is not None:
            names, how, sampler = found.groups()
            return f"{names} summed out {how}, then {sampler}", True
    lines = [line for message in messages for line in message.splitlines()]
    steps = [f"{m.group(1)}: [{m.group(2)}]" for m in map(STEP_LINE.match, lines) if m]
    return "; ".join(steps), False


def sample_kwargs(spec: dict) -> dict:
    """The arguments of the ``pm.sample`` call of a run (module docstring)."""
    kwargs = dict(draws=spec["draws"], tune=spec["tune"], chains=spec["chains"],
                  random_seed=spec["seed"], progressbar=False)
    if spec.get("cores") is not None:
        kwargs["cores"] = spec["cores"]
    if spec["variant"] in (A, B, F):
        kwargs["nuts_sampler"] = "nutpie"
    elif spec["variant"] in (C, D):
        kwargs["nuts_sampler"] = "pymc"
    return kwargs


def measure_child(spec: dict) -> dict:
    """One run, in this process: build the model, time the ``pm.sample`` call, and
    return its times and the statistics of its draws.

    Parameters
    ----------
    spec : dict
        ``model`` (a key of ``BUILDERS``), ``variant`` (A, B, C, D or E), ``draws``,
        ``tune``, ``chains``, ``seed`` and ``cores`` (None: PyMC's default).

    Returns
    -------
    dict
        ``total``, ``sampling`` (PyMC's ``sampling_time``), ``recovery`` (seconds in
        ``recover_discrete``), ``recovery_compile`` (of it, compiling its tables) and
        ``recovery_calls``, ``route`` (what ran) and ``summed``
        (whether it was the summed-out route), ``divergences``, ``elements`` and
        ``summaries`` (name -> [mean, MCSE, bulk ESS, r-hat]), ``build`` (seconds
        building the model).
    """
    from pymc_discrete.pymc.summing import recover

    began = time.perf_counter()
    applied = BUILDERS[spec["model"]]()
    build = time.perf_counter() - began
    variant = spec["variant"]
    marginal = variant in (B, C, F)
    model = applied.marginal if marginal else applied.model
    if variant in (A, D, E):
        pmd.register()
    with (warnings.catch_warnings(), log_messages("pymc") as messages,
          CallTimer(recover.recover_discrete) as recovery,
          CallTimer(recover.compile_conditional_tables) as table_compile, model):
        warnings.simplefilter("ignore")
        began = time.perf_counter()
        kwargs = sample_kwargs(spec)
        if variant == F:
            mode = pm.find_MAP(jitter=False, progressbar=False)
            kwargs.update(initvals={rv.name: mode[rv.name] for rv in model.free_RVs},
                          compile_kwargs={"jitter_rvs": set()})
        idata = pm.sample(**kwargs)
        total = time.perf_counter() - began
    route, summed = route_of(messages)
    if variant == B:
        route = "nutpie"
    elif variant == F:
        route = "pm.find_MAP, then nutpie"
    stats = idata.sample_stats
    posterior = {v: idata.posterior[v].values for v in idata.posterior.data_vars}
    continuous = {v: posterior[v] for v in applied.continuous}
    if marginal:
        summaries = applied.marginal_summaries(continuous)
    else:
        summaries = {k: applied.summaries[k](posterior) for k in applied.headline}
    return {
        "total": total,
        # nutpie's path stamps it on the posterior, PyMC's own on every group
        "sampling": float(idata.posterior.attrs.get("sampling_time",
                                                    stats.attrs.get("sampling_time"))),
        "recovery": recovery.seconds,
        "recovery_compile": table_compile.seconds,
        "recovery_calls": recovery.calls,
        "route": route,
        "summed": summed,
        "divergences": int(np.asarray(stats["diverging"]).sum()) if "diverging" in stats
        else None,
        "elements": statistics(elements(continuous)),
        "summaries": statistics({k: summaries[k] for k in applied.headline}),
        "build": build,
    }


def child(argv: list[str]) -> None:
    """The body of a child process (``--child <json>``): run the measurement and print
    its result as one JSON line (``{"error": ...}`` if it failed)."""
    spec = json.loads(argv[argv.index("--child") + 1])
    logging.getLogger("pymc").setLevel(logging.ERROR)
    try:
        out = measure_child(spec)
    except Exception as exc:  # noqa: BLE001 -- reported in the table, not fatal
        traceback.print_exc(file=sys.stderr)
        out = {"error": f"failed: {type(exc).__name__}: {' '.join(str(exc).split())[:160]}"}
    print(RESULT + json.dumps(out), flush=True)


# --------------------------------------------------------------------------------------
# the parent
# --------------------------------------------------------------------------------------


def run_child(spec: dict) -> dict:
    """Run one measurement in a fresh Python process (:func:`child`); its result, with
    ``process`` (the whole process's seconds), or ``{"error": ...}``."""
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "benchmarks.run_summed", "--child",
                           json.dumps(spec)], cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
    if done.returncode != 0 or not lines:
        print(done.stderr[-3000:], file=sys.stderr, flush=True)
        last = (done.stderr.strip().splitlines() or ["no output"])[-1][:160]
        return {"error": f"failed: exit {done.returncode}: {last}", "process": seconds}
    out = json.loads(lines[-1][len(RESULT):])
    if "error" in out:
        print(done.stderr[-3000:], file=sys.stderr, flush=True)
    elif spec["variant"] == A and not out["summed"]:
        out["error"] = f"not summed out: pm.sample ran {out['route'] or '?'}"
    out["process"] = seconds
    return out


def not_supported(applied: AppliedModel) -> str | None:
    """None if ``pmd.marginalize`` sums the model's discrete variables out, else why not
    (``pmd.NotCollapsible``'s reason, or the error it raised)."""
    try:
        pmd.marginalize(applied.model)
    except pmd.NotCollapsible as err:
        return f"not supported: {err}"
    except Exception as err:  # noqa: BLE001 -- a failure of the package: reported
        return (f"not supported: pmd.marginalize raised {type(err).__name__}: "
                f"{' '.join(str(err).split())[:160]}")
    return None


@dataclass
class Row:
    """One run of one variant in one seed, measured."""

    variant: str
    seed: int
    result: dict
    ess_min: float = float("nan")
    ess_min_at: str = ""
    ess_per_s_total: float = float("nan")
    ess_per_s_sampling: float = float("nan")
    rhat_max: float = float("nan")
    deviation: float = float("nan")
    deviation_at: str = ""
    summary_deviation: float = float("nan")
    summary_deviation_at: str = ""
    reference: str = ""
    #: None if the run converged, else why not
    problem: str | None = None

    @property
    def error(self) -> str | None:
        return self.result.get("error")

    @property
    def total(self) -> float:
        return self.result.get("total", float("nan"))

    @property
    def sampling_alone(self) -> float:
        drawing = self.result.get("recovery", 0.0) - self.result.get("recovery_compile", 0.0)
        return self.result.get("sampling", float("nan")) + drawing

    @property
    def setup(self) -> float:
        return self.total - self.sampling_alone


def worst_deviation(ours: dict[str, list[float]], theirs: dict[str, list[float]]
                    ) -> tuple[float, str]:
    """Largest ``|mean - mean_ref| / sqrt(MCSE^2 + MCSE_ref^2)`` over the names of both
    (statistics as :func:`statistics` gives them), with ``harness.deviation``'s floor of
    1e-4 of the value on the scale; and where."""
    worst, at = float("nan"), ""
    for name in sorted(ours.keys() & theirs.keys()):
        m, se = ours[name][:2]
        m_ref, se_ref = theirs[name][:2]
        floor = 1e-4 * max(1.0, abs(m_ref))
        se_both = float(np.hypot(se, se_ref))
        z = abs(m - m_ref) / (max(se_both, floor) if np.isfinite(se_both) else floor)
        if not np.isfinite(worst) or z >= worst:
            worst, at = z, name
    return worst, at


def measure_seed(results: dict[str, dict], seed: int) -> list[Row]:
    """The rows of one seed's runs (variant -> the child's result), each checked against
    the seed's reference (module docstring)."""
    rows = {}
    for variant, result in results.items():
        row = Row(variant, seed, result)
        if row.error is None:
            stats = result["elements"]
            ess = {k: v[2] for k, v in stats.items() if np.isfinite(v[2])}
            if ess:
                row.ess_min_at = min(ess, key=ess.get)
                row.ess_min = ess[row.ess_min_at]
            row.ess_per_s_total = row.ess_min / row.total
            row.ess_per_s_sampling = row.ess_min / row.sampling_alone
            rhats = [v[3] for v in stats.values() if np.isfinite(v[3])]
            row.rhat_max = max(rhats) if rhats else float("nan")
        rows[variant] = row

    def settled(v: str) -> bool:
        r = rows.get(v)
        return r is not None and r.error is None and r.rhat_max <= MAX_RHAT

    for variant, row in rows.items():
        if row.error is not None:
            row.problem = row.error.split(":", 1)[0]
            continue
        ref = next((v for v in ((B, F) if variant == C else (C, B, F))
                    if v != variant and settled(v)), None)
        problems = []
        if not row.rhat_max <= MAX_RHAT:
            problems.append(f"r-hat {_rhat_text(row.rhat_max)}")
        if ref is not None:
            row.reference = ref
            theirs = rows[ref].result
            row.deviation, row.deviation_at = worst_deviation(row.result["elements"],
                                                              theirs["elements"])
            row.summary_deviation, row.summary_deviation_at = worst_deviation(
                row.result["summaries"], theirs["summaries"])
            if row.deviation > MAX_DEVIATION:
                problems.append(f"{row.deviation:.1f} MCSE off ({row.deviation_at})")
        row.problem = "; ".join(problems) or None
    return list(rows.values())


# --------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------


def _rhat_text(value: float) -> str:
    """r-hat to 3 decimals; "> 10" for the absurd values of a stuck chain."""
    return cell(value, ".3f") if not value > 10 else "> 10"


@dataclass
class ModelResult:
    """Every seed's rows of one model, or why it was not run."""

    applied: AppliedModel
    unsupported: str | None = None
    seeds: list[int] = field(default_factory=list)
    rows: list[list[Row]] = field(default_factory=list)
    #: the variants run (``--variants``), in the order of ``VARIANTS``
    variants: list[str] = field(default_factory=lambda: list(VARIANTS))

    def of(self, variant: str) -> list[Row]:
        """The rows of ``variant``, one per seed."""
        out = []
        for seed, rows in zip(self.seeds, self.rows):
            row = next((r for r in rows if r.variant == variant), None)
            out.append(row if row is not None
                       else Row(variant, seed, {"error": "not run"}, problem="not run"))
        return out


def _outcomes(rows: list[Row], attr: str) -> list[SeedOutcome]:
    return [SeedOutcome(getattr(r, attr), r.problem) for r in rows]


def _ratio(result: ModelResult, ours: str, base: str, attr: str) -> str:
    return ratio_over_seeds(_outcomes(result.of(ours), attr), _outcomes(result.of(base), attr))


def _converged(rows: list[Row]) -> str:
    """``3/3``, or ``2/3 (seed 2: r-hat 1.532)``."""
    why: dict[str, list[int]] = {}
    for r in rows:
        if r.problem is not None:
            why.setdefault(r.problem, []).append(r.seed)
    ok = len(rows) - sum(len(v) for v in why.values())
    text = f"{ok}/{len(rows)}"
    if why:
        text += " (" + "; ".join(f"seed{'s' if len(v) > 1 else ''} {', '.join(map(str, v))}: {p}"
                                 for p, v in why.items()) + ")"
    return text


def _unique(items) -> str:
    return " / ".join(dict.fromkeys(i for i in items if i))


def _ran(rows: list[Row]) -> str:
    return (_unique([r.result.get("route", "") for r in rows if r.error is None])
            or _unique([r.error for r in rows]))


def long_run_variant(result: ModelResult) -> str:
    """The variant whose sampling a long run of ``register()`` + ``pm.sample()`` gets
    (``nutpie_choice``'s documented rule): A where the block sums out site by site or as
    latent counts over a window, D (the steps beside PyMC's NUTS) for a chain, which
    stays in PyMC's loop at any length."""
    route = _ran(result.of(A))
    return A if ("site by site" in route or "over a window" in route) else D


def summary_table(results: list[ModelResult]) -> str:
    """One line a model: the ratios of ESS per second over the seeds."""
    header = ["model", "register() + pm.sample() ran (E)",
              "E/B: ESS/s, set-up and compilation counted",
              "long run's route / B: ESS/s, sampling alone",
              "A/B: ESS/s, counted", "A/B: ESS/s, sampling alone",
              "A/F: ESS/s, counted", "A/F: ESS/s, sampling alone",
              "D/C: ESS/s, counted", "D/C: ESS/s, sampling alone",
              "converged seeds A / B / F / C / D / E"]
    lines = []
    for result in results:
        title = result.applied.title
        if result.unsupported is not None:
            lines.append([title, result.unsupported, *["-"] * (len(header) - 2)])
            continue
        long_run = long_run_variant(result)
        cells = [_ratio(result, E, B, "ess_per_s_total"),
                 f"{long_run}: {_ratio(result, long_run, B, 'ess_per_s_sampling')}"]
        cells += [_ratio(result, x, y, attr) for x, y in ((A, B), (A, F), (D, C))
                  for attr in ("ess_per_s_total", "ess_per_s_sampling")]
        counts = " / ".join(f"{sum(r.problem is None for r in result.of(v))}/{len(result.seeds)}"
                            if v in result.variants else "-" for v in (A, B, F, C, D, E))
        lines.append([title, _ran(result.of(E)), *cells, counts])
    return markdown_table(header, lines)


def seeds_table(result: ModelResult) -> str:
    """Every variant of one model over its seeds: medians (min-max)."""
    header = ["variant", "ran", "converged (seeds)", "total s", "sampling alone s",
              "set-up s", "recovery s", "min ESS", "min ESS/s, total",
              "min ESS/s, sampling alone", "worst r-hat", "worst dev. / MCSE",
              "worst dev. / MCSE, discrete summaries", "divergences"]
    lines = []
    for variant in result.variants:
        label = VARIANTS[variant]
        rows = result.of(variant)
        done = [r for r in rows if r.error is None]
        converged = _converged(rows)
        name = f"{variant}: {label}"
        if not done:
            lines.append([name, _unique([r.error for r in rows]), converged,
                          *["-"] * (len(header) - 3)])
            continue

        def spread(attr: str, fmt: str = ".1f", rows=rows) -> str:
            return spread_over_seeds([getattr(r, attr) for r in rows], fmt)

        def worst(attr: str, at: str, done=done) -> str:
            found = [r for r in done if np.isfinite(getattr(r, attr))]
            if not found:
                return "-"
            r = max(found, key=lambda r: getattr(r, attr))
            return f"{cell(getattr(r, attr), '.1f')} ({getattr(r, at)}, vs {r.reference})"

        recovery = ([r.result["recovery"] for r in done] if variant == A else [])
        lines.append([
            name, _unique([r.result["route"] for r in done]), converged,
            spread("total"), spread("sampling_alone"), spread("setup"),
            spread_over_seeds(recovery, ".2f") if recovery else "-",
            spread("ess_min", ".0f"), spread("ess_per_s_total"), spread("ess_per_s_sampling"),
            _rhat_text(max((r.rhat_max for r in done), default=float("nan"))),
            worst("deviation", "deviation_at"),
            worst("summary_deviation", "summary_deviation_at"),
            spread_over_seeds([float(r.result["divergences"]) for r in done
                               if r.result.get("divergences") is not None], ".0f")])
    return markdown_table(header, lines)


def per_seed_table(result: ModelResult) -> str:
    """Every run of one model, seed by seed: what the medians are taken over."""
    header = ["variant", "seed", "total s", "sampling alone s", "recovery s",
              "min ESS (element)", "ESS/s, total", "ESS/s, sampling alone", "max r-hat",
              "dev. / MCSE", "dev. / MCSE, discrete summaries", "divergences",
              "process s", "converged"]
    lines = []
    for variant in result.variants:
        for r in result.of(variant):
            if r.error is not None:
                lines.append([variant, r.seed, r.error, *["-"] * (len(header) - 4), "no"])
                continue
            vs = f", vs {r.reference}" if r.reference else ""
            dev = (f"{cell(r.deviation, '.1f')} ({r.deviation_at}{vs})" if r.reference
                   else "no reference")
            sdev = (f"{cell(r.summary_deviation, '.1f')} ({r.summary_deviation_at}{vs})"
                    if r.reference else "-")
            lines.append([
                variant, r.seed, cell(r.total, ".1f"), cell(r.sampling_alone, ".1f"),
                cell(r.result["recovery"], ".2f") if variant == A else "-",
                f"{cell(r.ess_min, '.0f')} ({r.ess_min_at})", cell(r.ess_per_s_total, ".1f"),
                cell(r.ess_per_s_sampling, ".1f"), _rhat_text(r.rhat_max), dev, sdev,
                r.result.get("divergences", "-"), cell(r.result.get("process"), ".0f"),
                "yes" if r.problem is None else "no: " + r.problem])
    return markdown_table(header, lines)


def model_section(result: ModelResult) -> str:
    """Heading, source and the two tables of one model (or why it was not run)."""
    applied = result.applied
    text = f"### {applied.title}\n\nData: {applied.source}.\n\n"
    if result.unsupported is not None:
        return text + f"{result.unsupported[0].upper()}{result.unsupported[1:]}: not run.\n"
    seeds = ", ".join(map(str, result.seeds))
    return (text + f"Median over seeds {seeds} (min-max):\n\n{seeds_table(result)}\n\n"
            f"Every run, seed by seed:\n\n{per_seed_table(result)}\n")


METHOD = """Six ways to sample each model, each `pm.sample` call otherwise PyMC's
defaults (`init="auto"`, convergence checks on; {cores}), {chains} chains of {tune} tuning
iterations and {draws} draws, `random_seed` the seed ({n_seeds} seed(s): {seeds}):

* **A**, `pmd.register()`, then `pm.sample(draws, tune, chains, random_seed,
  progressbar=False, nuts_sampler="nutpie")` on the model with its discrete variables: summed out
  (`pmd.marginalize`), sampled with nutpie, the discrete draws recovered
  (`pmd.recover_discrete`);
* **B**, `pm.sample(..., nuts_sampler="nutpie")` on the model summed out by hand
  (`AppliedModel.marginal`);
* **F**, the same from the hand-summed model's mode: `pm.find_MAP(jitter=False)`, then
  `pm.sample(..., nuts_sampler="nutpie", initvals=<the mode>,
  compile_kwargs={{"jitter_rvs": set()}})`, every chain started there (where B's chains
  settle in different modes, what a user does by hand; the start of A's route); the
  optimisation counts as set-up;
* **C**, `pm.sample(..., nuts_sampler="pymc")` on the hand-summed model;
* **D**, `pmd.register()`, then `pm.sample(..., nuts_sampler="pymc")` on the model with
  its discrete variables: PyMC's step loop with the steps `register()` assigns (the route
  before summing out);
* **E**, `pmd.register()`, then `pm.sample(...)` with no `nuts_sampler`, as a user types
  it: the route `register()` chooses for this run's length (nutpie from 20,000 iterations
  a core where the block sums out site by site or as latent counts, PyMC's loop with the
  steps of D otherwise).

"Long run's route / B, sampling alone": what a run long enough for nutpie samples at,
per second of sampling, against nutpie on the hand-summed model: A where the block sums
out site by site or as latent counts, D for a chain (it stays in PyMC's loop at any length).

Every run is its own fresh Python process, with PyTensor's and numba's disk caches warm
(one unmeasured run of the same call, {warm} + {warm} draws, in another fresh process
before the first seed of each model and variant): set-up and compilation are counted as in
a user's new session. **Total**: the wall time of the `pm.sample` call (for A: summing
out, nutpie's compilation, sampling, PyMC's convergence checks and the recovery of the
discrete draws; not `register()`, the imports or the building of the model). **Sampling
alone**: the `sampling_time` PyMC records (tuning and draws), plus for A the seconds
`recover_discrete` spends drawing every site: its time (the "recovery s" column, timed by
`sys.monitoring` events on that function alone) less the compilation of its conditional
tables, which counts as set-up (once a session; a long run does not repeat it). **Set-up**
= total - sampling alone. "Process s": the whole child process (interpreter start, imports,
model, run, statistics).

"min ESS": the smallest ArviZ bulk ESS over every element of the continuous parameters
(which one in parentheses); ESS/s divides it by the total, or by the sampling-alone,
seconds (tuning included in both). "dev. / MCSE": the largest `|mean - mean_ref| /
sqrt(MCSE^2 + MCSE_ref^2)` over the continuous elements against the same seed's reference
(C where its r-hat is at most 1.01, else B, else F; C against B, else F); the discrete summaries'
column does the same for the headline summaries (A and D from their discrete draws, B and
C Rao-Blackwellised), shown but not part of convergence. A run **converged** when its
largest r-hat is at most {max_rhat} and it is within {max_dev:g} MCSE of the reference; a ratio
counts only the seeds where both its runs converged (n/c otherwise, and the cell says
how many seeds counted). Medians over the seeds with the min-max spread."""

SHORT_NOTE = """
Short run (`--{size}`): too few draws and seeds for the ratios, r-hat and the agreement
columns to mean much; a test of the script, not a result.
"""


def versions() -> str:
    """nutpie's and ArviZ's versions, for the machine line (PyMC, PyTensor and numba are
    on it already)."""
    import nutpie

    return f", nutpie {nutpie.__version__}, ArviZ {az.__version__}"


def _model_key(name: str) -> str:
    """``change_point``, ``change-point`` and ``changepoint`` all name ``changepoint``."""
    return name.strip().lower().replace("-", "_").replace("_", "")


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
                        help=f"models {','.join(QUICK_MODELS)}, seed 1, 200 + 200 draws")
    parser.add_argument("--smoke", action="store_true",
                        help=f"models {','.join(SMOKE_MODELS)}, seed 1, 2 chains of 50 + 50 "
                             "draws, RESULTS.md written: for the tests")
    parser.add_argument("--models", default=None,
                        help=f"comma-separated subset of {','.join(MODELS)} (or any key of "
                             "benchmarks.applied_models.BUILDERS)")
    parser.add_argument("--seeds", type=int, nargs="+", default=None,
                        help=f"default 1 2 3 (one at --quick, --smoke); fewer than {MIN_SEEDS}: "
                             "RESULTS.md is not written at full size")
    parser.add_argument("--draws", type=int, default=None)
    parser.add_argument("--tune", type=int, default=None)
    parser.add_argument("--chains", type=int, default=None)
    parser.add_argument("--cores", type=int, default=None,
                        help="pm.sample's cores (default: PyMC's, min(4, CPUs / 2))")
    parser.add_argument("--warm-draws", type=int, default=None,
                        help="tuning and draws of the unmeasured run that warms the caches")
    parser.add_argument("--variants", default=None,
                        help=f"comma-separated subset of {','.join(VARIANTS)} (default all; "
                             "with fewer, RESULTS.md is not written)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    chosen = set(args.variants.upper().split(",")) if args.variants else set(VARIANTS)
    if chosen - set(VARIANTS):
        parser.error(f"unknown variants {sorted(chosen - set(VARIANTS))}: choose from "
                     f"{','.join(VARIANTS)}")
    variants = [v for v in VARIANTS if v in chosen]
    size = size_name(args.quick, args.smoke)
    models = args.models.split(",") if args.models else list(
        SMOKE_MODELS if args.smoke else QUICK_MODELS if args.quick else MODELS)
    keys = {_model_key(k): k for k in BUILDERS}
    unknown = sorted(n for n in models if _model_key(n) not in keys)
    if unknown:
        parser.error(f"unknown models {unknown}: choose from {sorted(BUILDERS)}")
    names = list(dict.fromkeys(keys[_model_key(n)] for n in models))
    seeds = list(dict.fromkeys(args.seeds or ([1, 2, 3] if size == "full" else [1])))
    draws = args.draws or {"smoke": 50, "quick": 200, "full": 1000}[size]
    tune = args.tune or draws
    chains = args.chains or (2 if args.smoke else 4)
    warm = args.warm_draws or min(50, draws)
    # PyMC's default: min(4, half the CPUs multiprocessing counts), taking the other half
    # for hardware threads (pymc.sampling.parallel); 1 on a 2-CPU machine, where the
    # chains run one after the other
    n_cores = args.cores or min(4, max(1, multiprocessing.cpu_count() // 2))
    cores_text = (f"`cores={args.cores}`" if args.cores else
                  f"`cores` PyMC's default, min(4, CPUs / 2) = {n_cores}")

    logging.getLogger("pymc").setLevel(logging.ERROR)
    began = time.perf_counter()
    results = []
    for name in names:
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            applied = BUILDERS[name]()
            result = ModelResult(applied, not_supported(applied), variants=variants)
        results.append(result)
        if result.unsupported is not None:
            print(f"{name}: {result.unsupported}", flush=True)
            continue
        common = dict(model=name, chains=chains, cores=args.cores)
        # the smoke run (for the tests) checks the script, not the timing: no warm-up
        for variant in () if args.smoke else variants:
            out = run_child({**common, "variant": variant, "draws": warm, "tune": warm,
                             "seed": 0})
            print(f"{name}: caches warmed by an unmeasured run of {variant} ("
                  + out.get("error", f"process {out['process']:.0f} s") + ")", flush=True)
        for seed in seeds:
            runs = {}
            for variant in variants:
                out = run_child({**common, "variant": variant, "draws": draws, "tune": tune,
                                 "seed": seed})
                runs[variant] = out
                print(f"{name}, seed {seed}, {variant}: "
                      + (out["error"] if "error" in out else
                         f"total {out['total']:.1f} s, sampling {out['sampling']:.1f} s, "
                         f"recovery {out['recovery']:.2f} s ({out['route']}); "
                         f"process {out['process']:.0f} s"), flush=True)
            result.seeds.append(seed)
            result.rows.append(measure_seed(runs, seed))
        print(f"\n{model_section(result)}\n({name}: {time.perf_counter() - started:.0f} s)\n",
              flush=True)
    seconds = time.perf_counter() - began
    summary = summary_table(results)
    print(f"\nSummary (median over seeds {', '.join(map(str, seeds))}, min-max):\n\n"
          f"{summary}\n", flush=True)

    command = "python -m benchmarks.run_summed" + (" " + " ".join(argv) if argv else "")
    body = f"""## Summed-out sampling: `register()` and a plain `pm.sample()` against nutpie on the hand-summed models

{provenance("run_summed", size, minutes=seconds / 60, versions=versions(), command=command)}

{METHOD.format(cores=cores_text, chains=chains, tune=tune, draws=draws, n_seeds=len(seeds),
               seeds=", ".join(map(str, seeds)), warm=warm, max_rhat=MAX_RHAT,
               max_dev=MAX_DEVIATION)}
{SHORT_NOTE.format(size=size) if size != "full" else ""}
### Summary

Median over seeds {", ".join(map(str, seeds))} (min-max) of the ratios of the smallest
continuous ESS per second (A: `register()` + `pm.sample(nuts_sampler="nutpie")`, B: nutpie
on the hand-summed model, F: nutpie on it from its mode, C: PyMC's NUTS on it, D:
`register()` with PyMC's NUTS, E: `register()` + `pm.sample()` as typed); a seed counts
only where both runs converged.

{summary}

{(chr(10) * 2).join(model_section(r) for r in results)}"""
    if args.no_write:
        pass
    elif len(variants) < len(VARIANTS):
        print(f"variants {','.join(variants)} only: RESULTS.md not written")
    elif len(seeds) < MIN_SEEDS and size == "full":
        print(f"{len(seeds)} seed(s): fewer than {MIN_SEEDS}, RESULTS.md not written")
    else:
        write_section("summed", body)
        print(f"wrote the section 'summed' of {results_path()}")
    print(f"total {seconds:.0f} s")
    return body


if __name__ == "__main__":
    if "--child" in sys.argv:
        child(sys.argv[1:])
    else:
        main(sys.argv[1:])
