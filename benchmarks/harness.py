"""Run step methods side by side on one model and measure them the same way, and
everything else the benchmark scripts share.

Every sampler runs through ``pm.sample`` with ``cores=1`` (so wall time is CPU time of
one chain at a time) and is measured on its post-tuning draws:

* ``time/draw``: sampling time (tuning included) divided by the number of iterations;
* ``EJD``: expected jump distance, the mean number of sites that change between
  consecutive draws;
* ``ESS``: ArviZ bulk ESS of the log density of each draw, and the median over sites of
  the bulk ESS of each site (over at most 400 varying sites chosen at random:
  :func:`median_site_ess`); ``ESS/s`` divides by the time of the post-tuning draws;
* ``accept``: mean M-H acceptance probability after tuning (when the step reports it);
* ``ESS per 1k evals``: ESS of the log density per 1000 evaluations of the model's log
  density (with its gradient, for the gradient proposals): N per Gibbs sweep (N (K - 1)
  with PyMC's proportional categorical proposal), one per M-H step of ALBP, ARWM, PAFS
  and ``pm.BinaryMetropolis``, one per move of an exact PAS path. Steps that compute
  exact local ratios in batches of the model's terms have no comparable count ("-").

The rest, shared by every script:

* where the output goes (:func:`output_dir`): the folder named by the environment variable
  ``PYMC_DISCRETE_BENCH_OUT`` if set (the tests point it at a temporary folder), else
  ``benchmarks/`` for a full run and ``benchmarks/out/quick/`` or ``benchmarks/out/smoke/``
  (not committed) for the small sizes, so that only full-size numbers ever reach the
  committed RESULTS.md and plots;
* the run sizes: ``full`` (the reported numbers), ``quick`` (``--quick``: small sizes)
  and ``smoke`` (``--smoke``: the smallest that still runs every part of a script,
  for the tests) (:func:`size_name`, :func:`cli`);
* the "Produced by" lines of a section (:func:`provenance`) and markdown tables
  (:func:`markdown_table`, :func:`format_table`);
* checks of a run against a reference (:func:`mean_mcse`, :func:`max_rhat`,
  :func:`deviation`) and figures over seeds (:func:`ratio_over_seeds`);
* the step plain ``pm.sample()`` builds, with ``pmd.register()`` or without
  (:func:`assigned_step`, :func:`step_name`);
* NumPyro's ``DiscreteHMCGibbs``, timed the same way wherever it is compared
  (:func:`run_discrete_hmc_gibbs`), and skipped where NumPyro is not installed
  (:func:`numpyro_available`; ``make test`` does not install it).
"""

from __future__ import annotations

import datetime
import logging
import os
import platform
import sys
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import arviz as az
import numpy as np
import pymc as pm

__all__ = [
    "CONCURRENT_JOBS",
    "HEADER",
    "MAX_ESS_SITES",
    "OUTPUT",
    "SIZES",
    "MeasuredRun",
    "Measurement",
    "MixedMeasurement",
    "NumPyroRun",
    "SeedOutcome",
    "assigned_step",
    "cell",
    "cli",
    "counted_ratios",
    "deviation",
    "draws_measurement",
    "evaluations_per_draw",
    "format_mixed_table",
    "format_table",
    "jump_distance",
    "log_messages",
    "logp_trace",
    "machine_description",
    "markdown_table",
    "max_rhat",
    "mean_mcse",
    "measure",
    "measure_mixed",
    "measure_run",
    "median_site_ess",
    "mixed_measurement",
    "numpyro_available",
    "numpyro_measurement",
    "numpyro_versions",
    "output_dir",
    "provenance",
    "ratio_number",
    "ratio_over_seeds",
    "release_compiled_jax",
    "result_line",
    "run_fresh_process",
    "results_path",
    "rhat",
    "run_discrete_hmc_gibbs",
    "save_figure",
    "size_name",
    "smallest_ess",
    "split_time",
    "spread_over_seeds",
    "step_name",
    "subplots",
    "write_section",
]


# --------------------------------------------------------------------------------------
# where the output goes, run sizes, provenance
# --------------------------------------------------------------------------------------

#: environment variable naming the folder that RESULTS.md and the plots are written to
#: (default: ``benchmarks/``)
OUTPUT = "PYMC_DISCRETE_BENCH_OUT"
#: environment variable run_all.py sets to the number of benchmark processes running at once
CONCURRENT_JOBS = "PYMC_DISCRETE_BENCH_JOBS"
#: the run sizes every script's ``main`` knows: the reported one, ``quick`` and ``smoke``
SIZES = ("full", "quick", "smoke")

_HERE = Path(__file__).resolve().parent


#: the size of the run in this process, set by :func:`size_name` (every script asks it)
_run_size = "full"


def output_dir() -> Path:
    """The folder of RESULTS.md and the plots (created if missing).

    ``$PYMC_DISCRETE_BENCH_OUT`` if set; else ``benchmarks/`` for a full run and
    ``benchmarks/out/<size>/`` for a quick or smoke one: a short run's numbers never
    overwrite the committed full-size ones.
    """
    default = _HERE if _run_size == "full" else _HERE / "out" / _run_size
    folder = Path(os.environ.get(OUTPUT) or default)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def results_path() -> Path:
    """The results file, ``RESULTS.md`` in :func:`output_dir`."""
    return output_dir() / "RESULTS.md"


def subplots(*args, **kwargs):
    """``matplotlib.pyplot.subplots`` on the non-interactive Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kwargs)


def save_figure(fig, name: str, dpi: int = 100) -> Path:
    """Save ``fig`` as ``name`` in :func:`output_dir` and close it; returns the path."""
    import matplotlib.pyplot as plt

    path = output_dir() / name
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


#: how a child process marks the JSON line of its result (:func:`run_fresh_process`)
RESULT_MARK = "BENCHMARK_RESULT "


def result_line(result: dict) -> str:
    """The line a ``--child`` process prints for :func:`run_fresh_process` to read."""
    import json

    return RESULT_MARK + json.dumps(result)


def run_fresh_process(module: str, spec: dict) -> dict:
    """``python -m <module> --child <spec as JSON>`` in a fresh Python process, from the
    repository root; the dict the child printed with :func:`result_line`, or
    ``{"error": <the last line of its output>}``."""
    import json
    import subprocess

    done = subprocess.run([sys.executable, "-m", module, "--child", json.dumps(spec)],
                          cwd=_HERE.parent, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            return json.loads(line[len(RESULT_MARK):])
    return {"error": ((done.stderr or done.stdout).strip().splitlines() or ["failed"])[-1]}


def size_name(quick: bool = False, smoke: bool = False) -> str:
    """The run size of a script's ``main(quick, smoke)``: "smoke", "quick" or "full".

    It is also the size :func:`output_dir` writes for, from then on in this process.
    """
    global _run_size
    _run_size = "smoke" if smoke else "quick" if quick else "full"
    return _run_size


def cli(main: Callable[..., object]) -> None:
    """Run a script's ``main`` at the size its command line asks for (``--quick``,
    ``--smoke``; neither: the full size)."""
    args = sys.argv[1:]
    main(quick="--quick" in args, smoke="--smoke" in args)


def machine_description() -> str:
    """One line naming the machine the numbers came from."""
    import numba
    import pytensor

    # os.cpu_count() counts logical CPUs (PyMC's default cores is min(4, half of them))
    line = (f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.processor() or 'cpu'}; "
            f"Python {platform.python_version()}, PyMC {pm.__version__}, "
            f"PyTensor {pytensor.__version__}, numba {numba.__version__}")
    jobs = int(os.environ.get(CONCURRENT_JOBS, "1"))
    if jobs > 1:
        line += (f"; run next to {jobs - 1} other benchmark process(es) (one core each: "
                 "`run_all.py --jobs`)")
    return line


def provenance(script: str, size: str, *, minutes: float | None = None,
               versions: str = "", command: str | None = None) -> str:
    """The two lines that open a section: the command and date, and the machine.

    Parameters
    ----------
    script : str
        The script's module name, e.g. ``"run_core"``.
    size : str
        One of :data:`SIZES` (a flag in the command unless "full").
    minutes : float, optional
        How long the run took.
    versions : str
        Appended to the machine line (e.g. :func:`numpyro_versions`).
    command : str, optional
        The command, if not ``python -m benchmarks.<script> [--size]``.
    """
    if command is None:
        command = f"python -m benchmarks.{script}" + ("" if size == "full" else f" --{size}")
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    took = "" if minutes is None else f" (the run took {minutes:.1f} min)"
    return (f"Produced by `{command}` on {stamp}{took}.\n"
            f"Machine: {machine_description()}{versions}.")


# --------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------


def markdown_table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A markdown table: the header, then one line per row (cells turned into text).

    Raises
    ------
    ValueError
        If a row has another number of cells than the header.

    Examples
    --------
    >>> print(markdown_table(["a", "b"], [[1, "x"]]))
    | a | b |
    |---|---|
    | 1 | x |
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"a row of {len(row)} cells under {len(header)} columns: {row}")
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)


def cell(value: float | None, fmt: str = ".3g") -> str:
    """A number as a table cell; "-" when it is missing or not finite."""
    if value is None or not np.isfinite(value):
        return "-"
    return format(value, fmt)


# --------------------------------------------------------------------------------------
# measuring runs
# --------------------------------------------------------------------------------------


@dataclass
class Measurement:
    """What one sampler achieved on one model."""

    sampler: str
    draws: int
    seconds: float
    time_per_draw_ms: float
    ejd: float
    ess_logp: float
    ess_site_median: float
    ess_logp_per_s: float
    ess_site_per_s: float
    accept: float
    scale: float
    evals_per_draw: float = float("nan")

    @property
    def ess_logp_per_1k_evals(self) -> float:
        """ESS of the log density per 1000 log density evaluations (NaN if unknown)."""
        return 1e3 * self.ess_logp / (self.evals_per_draw * self.draws)


#: each model's compiled log density, compiled once: every measurement of it needs it
_LOGP: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def logp_trace(model: pm.Model, draws: np.ndarray, var: str) -> np.ndarray:
    """The model's log density at every draw (chain, draw, *shape) of its free variable
    ``var`` (the others at the model's initial point), shape (chain, draw)."""
    fn = _LOGP.get(model)
    if fn is None:
        fn = _LOGP[model] = model.compile_logp()
    name = model.rvs_to_values[model[var]].name
    point = model.initial_point()
    out = np.empty(draws.shape[:2])
    for c in range(draws.shape[0]):
        for d in range(draws.shape[1]):
            point[name] = draws[c, d]
            out[c, d] = fn(point)
    return out


def _proportional(step) -> bool:
    """Whether a ``pm.CategoricalGibbsMetropolis`` uses its proportional proposal."""
    return step.astep == step.astep_prop


def evaluations_per_draw(step, idata, n_sites: int) -> float:
    """Log density evaluations one draw of ``step`` costs (see the module docstring)."""
    import pymc_discrete as pmd

    if isinstance(step, pm.BinaryGibbsMetropolis):
        return float(n_sites)
    if isinstance(step, pm.CategoricalGibbsMetropolis):
        if _proportional(step):  # every other category of every site
            return float(sum(k - 1 for _, k in step.dimcats))
        return float(len(step.dimcats))
    if isinstance(step, pm.BinaryMetropolis | pm.Metropolis):
        return 1.0
    if isinstance(step, pmd.PAS) and step.proposal == "exact":
        return float(idata.sample_stats["n_proposed"].mean())
    if isinstance(step, pmd.ALBP | pmd.PAS | pmd.ARWM):
        if getattr(step, "proposal", "gradient") == "exact":
            return float("nan")
        return float(idata.sample_stats["steps_per_draw"].mean())  # steps_per_draw may be "auto"
    return float("nan")


#: the median site ESS is taken over at most this many sites (ArviZ's ESS costs about
#: 1 ms a site for 2000 draws: 10 s on a 100x100 lattice, more than the sampling)
MAX_ESS_SITES = 400


def median_site_ess(flat: np.ndarray) -> float:
    """Median bulk ESS over the sites that vary, ``flat`` of shape (chain, draw, site).

    With more than :data:`MAX_ESS_SITES` varying sites, over that many of them chosen at
    random (fixed seed): the median of 400 sites estimates the median of all within a
    few percent, well below the timing noise of the ESS/s ratios.
    """
    sites = np.flatnonzero(flat.std(axis=(0, 1)) > 0)
    if sites.size == 0:
        return float("nan")
    if sites.size > MAX_ESS_SITES:
        sites = np.sort(np.random.default_rng(0).choice(sites, MAX_ESS_SITES, replace=False))
    return float(np.median(np.asarray(az.ess(flat[..., sites], method="bulk"))))


def jump_distance(flat: np.ndarray) -> float:
    """Mean number of sites that change between consecutive draws, ``flat`` of shape
    (chain, draw, site) (a categorical site changing from 0 to 3 counts once)."""
    return float((np.diff(flat, axis=1) != 0).sum(axis=-1).mean())


def split_time(seconds: float, chains: int, draws: int, tune: int) -> tuple[float, float]:
    """Seconds per iteration (tuning included) and the share of ``seconds`` spent on the
    post-tuning draws of every chain."""
    per_draw = seconds / (chains * (draws + tune))
    return per_draw, per_draw * chains * draws


def _timed_sample(model: pm.Model, make_step: Callable, draws: int, tune: int, chains: int,
                  seed: int, initvals: dict | None, warmup: int | None):
    """Build the step, run a discarded one-chain warm-up (default: a tenth of ``draws``,
    between 5 and 100), then the timed run with ``cores=1``. Returns the step, the
    InferenceData, PyMC's sampling seconds and the wall times (build, warm-up, run)."""
    if warmup is None:
        warmup = min(100, max(5, draws // 10))
    common = dict(cores=1, progressbar=False, compute_convergence_checks=False,
                  initvals=initvals)
    began = time.perf_counter()
    with model:
        step = make_step(model)
        built = time.perf_counter()
        pm.sample(step=step, draws=warmup, tune=warmup, chains=1, random_seed=seed, **common)
        start = time.perf_counter()
        idata = pm.sample(step=step, draws=draws, tune=tune, chains=chains,
                          random_seed=seed, **common)
        wall = time.perf_counter() - start
    seconds = float(idata.sample_stats.attrs.get("sampling_time", wall))
    return step, idata, seconds, (built - began, start - built, wall)


def measure(
    model: pm.Model,
    label: str,
    make_step: Callable[[pm.Model], object],
    *,
    var: str = "x",
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    seed: int = 0,
    initvals: dict | None = None,
    warmup: int | None = None,
) -> Measurement:
    """Sample ``model`` with the step ``make_step(model)`` and measure it.

    Parameters
    ----------
    model : pymc.Model
        A model whose only free variable is the discrete ``var``.
    label : str
        Name of the sampler in the table.
    make_step : callable
        Builds the step method (called inside the model context).
    var : str
        The variable measured.
    draws, tune, chains, seed, initvals
        Passed to ``pm.sample`` (with ``cores=1``).
    warmup : int, optional
        Tuning and draws of a discarded one-chain run made first, so that no first-call
        cost (loading compiled functions, allocating traces) lands in the timing.
        Default: a tenth of ``draws``, between 5 and 100 (a slow sampler needs few).

    Returns
    -------
    Measurement
    """
    return measure_run(model, label, make_step, var=var, draws=draws, tune=tune,
                       chains=chains, seed=seed, initvals=initvals,
                       warmup=warmup).measurement


class MeasuredRun(NamedTuple):
    """A measurement and what it was taken on, for correctness checks beside the speed."""

    measurement: Measurement
    #: the step that drew them
    step: object
    #: the post-tuning draws of the measured variable, (chain, draw, *shape)
    draws: np.ndarray
    #: the model's log density at every one of them, (chain, draw)
    logp: np.ndarray


def measure_run(
    model: pm.Model,
    label: str,
    make_step: Callable[[pm.Model], object],
    *,
    var: str = "x",
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    seed: int = 0,
    initvals: dict | None = None,
    warmup: int | None = None,
) -> MeasuredRun:
    """:func:`measure`, also returning the step, the draws and their log density (same
    parameters)."""
    step, idata, seconds, times = _timed_sample(model, make_step, draws, tune, chains, seed,
                                                initvals, warmup)
    built, warmed, wall = times
    finished = time.perf_counter()
    x = idata.posterior[var].values  # (chain, draw, *shape)
    logp = logp_trace(model, x, var)
    stats = idata.sample_stats
    measurement = draws_measurement(
        label, x, logp, seconds, tune,
        accept=float(stats["accept"].mean()) if "accept" in stats else float("nan"),
        scale=float(stats["scaling"].values[:, -1].mean()) if "scaling" in stats
        else float("nan"),
        evals_per_draw=evaluations_per_draw(step, idata, int(np.prod(x.shape[2:]))),
    )
    print(f"    {label}: built in {built:.1f} s, warm-up {warmed:.1f} s, "
          f"sampled in {wall:.1f} s, measured in {time.perf_counter() - finished:.1f} s",
          flush=True)
    return MeasuredRun(measurement, step, x, logp)


def draws_measurement(label: str, x: np.ndarray, logp: np.ndarray, seconds: float, tune: int,
                      *, accept: float = float("nan"), scale: float = float("nan"),
                      evals_per_draw: float = float("nan")) -> Measurement:
    """Measure draws ``x`` (chain, draw, *shape) whose log densities are ``logp`` (chain,
    draw), sampled in ``seconds`` that also covered ``tune`` tuning iterations per chain
    (as :func:`measure` does; for samplers run outside ``pm.sample``)."""
    chains, draws = x.shape[:2]
    per_draw, sampling_seconds = split_time(seconds, chains, draws, tune)
    flat = x.reshape(chains, draws, -1).astype(float)
    ess_logp = float(az.ess(logp, method="bulk"))
    ess_site = median_site_ess(flat)
    return Measurement(
        sampler=label,
        draws=chains * draws,
        seconds=seconds,
        time_per_draw_ms=1e3 * per_draw,
        ejd=jump_distance(flat),
        ess_logp=ess_logp,
        ess_site_median=ess_site,
        ess_logp_per_s=ess_logp / sampling_seconds,
        ess_site_per_s=ess_site / sampling_seconds,
        accept=accept,
        scale=scale,
        evals_per_draw=evals_per_draw,
    )


@dataclass
class MixedMeasurement:
    """What one sampler (a discrete step next to NUTS) achieved on a mixed model."""

    sampler: str
    draws: int
    seconds: float
    time_per_draw_ms: float
    ejd: float
    accept: float
    scale: float
    ess_min: float
    ess_site_median: float
    ess_min_per_s: float
    ess_site_per_s: float
    nuts_steps_per_draw: float
    discrete_evals_per_draw: float

    @property
    def ess_min_per_1k_evals(self) -> float:
        """Smallest continuous ESS per 1000 log density (and gradient) evaluations: NUTS's
        leapfrog steps plus the discrete step's evaluations (NaN if the latter is unknown)."""
        evals = self.nuts_steps_per_draw + self.discrete_evals_per_draw
        return 1e3 * self.ess_min / (evals * self.draws)


def smallest_ess(arrays: dict[str, np.ndarray]) -> float:
    """Smallest bulk ESS over every element of the arrays, each (chain, draw, *shape)."""
    return min(float(np.min(np.asarray(az.ess(a, method="bulk")))) for a in arrays.values())


def mixed_measurement(label: str, discrete: np.ndarray, continuous: dict[str, np.ndarray],
                      seconds: float, tune: int, accept: float, scale: float,
                      nuts_steps: float, discrete_evals: float) -> MixedMeasurement:
    """Measure draws of a mixed model: ``discrete`` (chain, draw, *shape) and the
    ``continuous`` arrays (chain, draw, *shape); ``seconds`` covers ``tune`` tuning
    iterations and the draws of every chain."""
    chains, draws = discrete.shape[:2]
    per_draw, sampling_seconds = split_time(seconds, chains, draws, tune)
    flat = discrete.reshape(chains, draws, -1).astype(float)
    ess_min = smallest_ess(continuous)
    ess_site = median_site_ess(flat)
    return MixedMeasurement(
        sampler=label, draws=chains * draws, seconds=seconds,
        time_per_draw_ms=1e3 * per_draw,
        ejd=jump_distance(flat),
        accept=accept, scale=scale, ess_min=ess_min, ess_site_median=ess_site,
        ess_min_per_s=ess_min / sampling_seconds, ess_site_per_s=ess_site / sampling_seconds,
        nuts_steps_per_draw=nuts_steps, discrete_evals_per_draw=discrete_evals,
    )


def measure_mixed(
    model: pm.Model,
    label: str,
    make_step: Callable[[pm.Model], object],
    *,
    discrete: str,
    continuous: list[str],
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    seed: int = 0,
    initvals: dict | None = None,
    warmup: int | None = None,
) -> MixedMeasurement:
    """Sample a model whose discrete variable ``discrete`` gets the step
    ``make_step(model)`` and whose continuous variables get PyMC's NUTS; measure it.

    The continuous parameters are measured by their smallest bulk ESS (over every
    element of ``continuous``), the discrete variable by the median site ESS and the
    number of sites that change per draw; evaluations per draw are NUTS's leapfrog steps
    (``n_steps``) plus the discrete step's (:func:`evaluations_per_draw`). A discarded
    one-chain run of ``warmup`` tuning and draws comes first, as in :func:`measure`.
    """
    step, idata, seconds, (_, _, wall) = _timed_sample(model, make_step, draws, tune, chains,
                                                       seed, initvals, warmup)
    stats = idata.sample_stats
    x = idata.posterior[discrete].values
    n_sites = int(np.prod(x.shape[2:]))
    print(f"    {label}: sampled in {wall:.1f} s", flush=True)
    return mixed_measurement(
        label, x, {v: idata.posterior[v].values for v in continuous}, seconds, tune,
        accept=float(stats["accept"].mean()) if "accept" in stats else float("nan"),
        scale=float(stats["scaling"].values[:, -1].mean()) if "scaling" in stats
        else float("nan"),
        nuts_steps=float(stats["n_steps"].mean()),
        discrete_evals=evaluations_per_draw(step, idata, n_sites),
    )


def _measurement_table(rows: list, columns: list, ratios: list, baseline: str | None) -> str:
    """Rows as a markdown table: ``columns`` of (header, row -> cell text), then, when a
    row is named ``baseline``, ``ratios`` of (header, attribute): the row's value over the
    baseline's."""
    base = next((r for r in rows if r.sampler == baseline), None)
    header = [h for h, _ in columns]
    if base is not None:
        header += [f"{h} vs {baseline}" for h, _ in ratios]
    cells = []
    for r in rows:
        line = [fn(r) for _, fn in columns]
        if base is not None:
            line += [f"{getattr(r, name) / getattr(base, name):.1f}x" for _, name in ratios]
        cells.append(line)
    return markdown_table(header, cells)


#: the columns every table starts with
_COMMON_COLUMNS = [
    ("sampler", lambda r: r.sampler),
    ("draws", lambda r: f"{r.draws}"),
    ("seconds", lambda r: f"{r.seconds:.1f}"),
    ("ms/draw", lambda r: f"{r.time_per_draw_ms:.3f}"),
]


def _step_columns(ejd_header: str) -> list:
    """The common columns, then the moves: jump distance, acceptance and scale R."""
    return _COMMON_COLUMNS + [
        (ejd_header, lambda r: f"{r.ejd:.2f}"),
        ("accept", lambda r: f"{r.accept:.3f}"),
        ("R", lambda r: f"{r.scale:.1f}"),
    ]


def format_mixed_table(rows: list[MixedMeasurement], baseline: str | None = None) -> str:
    """A markdown table of mixed-model measurements, with ESS/s ratios against
    ``baseline``."""
    columns = _step_columns("discrete EJD") + [
        ("min ESS (continuous)", lambda r: f"{r.ess_min:.0f}"),
        ("min ESS/s", lambda r: f"{r.ess_min_per_s:.1f}"),
        ("median site ESS/s (discrete)", lambda r: f"{r.ess_site_per_s:.1f}"),
        ("NUTS steps per draw", lambda r: f"{r.nuts_steps_per_draw:.1f}"),
        ("discrete evals per draw", lambda r: cell(r.discrete_evals_per_draw)),
        ("min ESS per 1k evals", lambda r: cell(r.ess_min_per_1k_evals)),
    ]
    ratios = [("min ESS/s", "ess_min_per_s"), ("site ESS/s", "ess_site_per_s")]
    return _measurement_table(rows, columns, ratios, baseline)


def format_table(rows: list[Measurement], baseline: str | None = None) -> str:
    """A markdown table of measurements, with ESS/s ratios against ``baseline``."""
    columns = _step_columns("EJD") + [
        ("ESS logp", lambda r: f"{r.ess_logp:.0f}"),
        ("ESS/s logp", lambda r: f"{r.ess_logp_per_s:.1f}"),
        ("median site ESS/s", lambda r: f"{r.ess_site_per_s:.1f}"),
        ("ESS logp per 1k evals", lambda r: cell(r.ess_logp_per_1k_evals)),
    ]
    ratios = [("ESS/s logp", "ess_logp_per_s"), ("site ESS/s", "ess_site_per_s")]
    return _measurement_table(rows, columns, ratios, baseline)


# --------------------------------------------------------------------------------------
# checks of a run's draws (DESIGN.md section 6: a speed is quoted only for draws that
# converged and agree with a reference)
# --------------------------------------------------------------------------------------


def mean_mcse(a: np.ndarray) -> tuple[float, float]:
    """Posterior mean of a (chain, draw) array and its Monte Carlo standard error."""
    return float(a.mean()), float(np.asarray(az.mcse(a, method="mean")))


def rhat(a: np.ndarray) -> float:
    """Rank-normalised split r-hat of a (chain, draw) array; 1 for a constant one (every
    chain holds the same value: r-hat is undefined there)."""
    if np.ptp(a) == 0:
        return 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.asarray(az.rhat(a)))


def max_rhat(arrays: dict[str, np.ndarray]) -> float:
    """The largest finite :func:`rhat` over the arrays, NaN if there is none."""
    values = [v for v in (rhat(a) for a in arrays.values()) if np.isfinite(v)]
    return max(values) if values else float("nan")


def deviation(ours: dict[str, np.ndarray],
              theirs: dict[str, tuple[float, float]]) -> tuple[float, str]:
    """Largest ``|mean - mean_ref| / sqrt(MCSE^2 + MCSE_ref^2)`` over the keys of
    ``theirs`` (name -> (mean, MCSE); MCSE 0 for an exact mean), and where.

    A quantity (nearly) constant in the posterior, e.g. a cluster size of exactly 50 in
    every draw, has an MCSE of ~0, and a reference computed another way differs from it
    by the tiny probabilities a finite sample never realises: the scale is floored at
    1e-4 of the value.
    """
    worst, at = 0.0, ""
    for k, (m_ref, se_ref) in theirs.items():
        m, se = mean_mcse(ours[k])
        scale = max(float(np.hypot(se, se_ref)), 1e-4 * max(1.0, abs(m_ref)))
        z = abs(m - m_ref) / scale
        if z >= worst:
            worst, at = z, k
    return worst, at


# --------------------------------------------------------------------------------------
# the steps plain pm.sample() builds
# --------------------------------------------------------------------------------------


def assigned_step(model: pm.Model, registered: bool, start: dict):
    """The step(s) plain ``pm.sample()`` assigns on ``model``, with ``pmd.register()`` in
    effect or not, built at the model's initial point updated by ``start``: PyMC's own
    ``assign_step_methods`` and ``instantiate_steppers``, so that the step can be timed
    warm like any other. Registration is restored afterwards."""
    from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers
    from pymc.step_methods import STEP_METHODS

    import pymc_discrete as pmd

    was = pmd.is_registered()
    (pmd.register if registered else pmd.unregister)()
    try:
        provided, selected = assign_step_methods(model, None, methods=STEP_METHODS)
        return instantiate_steppers(model, provided, selected,
                                    initial_point={**model.initial_point(), **start})
    finally:
        (pmd.register if was else pmd.unregister)()


class _Messages(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def log_messages(name: str) -> Iterator[list[str]]:
    """The messages logged to the logger ``name`` (INFO and above) while the block runs,
    e.g. PyMC's step assignment (``"pymc.sampling.mcmc"``) or what ``register()``'s
    automatic step chose (``"pymc.pymc_discrete"``)."""
    logger = logging.getLogger(name)
    handler, level = _Messages(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def step_name(step) -> str:
    """The class of a step, with its proposal where it has a choice of them and its
    steps per draw when more than one (``" + "`` between the parts of a compound step)."""
    from pymc.step_methods.compound import CompoundStep

    import pymc_discrete as pmd

    if isinstance(step, CompoundStep):
        return " + ".join(step_name(s) for s in step.methods)
    name = type(step).__name__
    if isinstance(step, pm.CategoricalGibbsMetropolis):
        name += " (proportional)" if _proportional(step) else " (uniform)"
    elif isinstance(step, pmd.BlockedGibbs):
        name += f" ({step.n_colours} colours)"
    elif isinstance(step, pmd.ALBP | pmd.PAS):
        name += f" ({step.proposal}" + (", compiled loop)" if step.compiled_loop is True
                                         else ")")
    if isinstance(step, pmd.ALBP | pmd.PAS | pmd.BlockedGibbs) and step.draw_steps > 1:
        name += f", {step.draw_steps} steps per draw"
    return name


# --------------------------------------------------------------------------------------
# NumPyro's DiscreteHMCGibbs (a benchmark-only dependency: pip install -e .[bench])
# --------------------------------------------------------------------------------------


def numpyro_available() -> bool:
    """Whether NumPyro and JAX can be imported (``make test`` does not install them: the
    scripts then leave NumPyro's rows out and say so)."""
    try:
        import jax  # noqa: F401
        import numpyro  # noqa: F401
    except ImportError:
        return False
    return True


def numpyro_versions() -> str:
    """``"; NumPyro x, JAX y (CPU)"`` for a machine line, "" without NumPyro."""
    if not numpyro_available():
        return "; NumPyro not installed"
    import jax
    import numpyro

    return f"; NumPyro {numpyro.__version__}, JAX {jax.__version__} (CPU)"


def _jax_compilation_cache() -> None:
    """Keep JAX's compiled programs on disk (a temporary directory), every one of them:
    only caching changes, not the programs."""
    import tempfile

    import jax

    options = {"jax_compilation_cache_dir": str(Path(tempfile.gettempdir())
                                                / "pymc-discrete-jax-cache"),
               "jax_persistent_cache_min_compile_time_secs": 0.0,
               "jax_persistent_cache_min_entry_size_bytes": 0}
    for name, value in options.items():
        try:
            jax.config.update(name, value)
        except (AttributeError, KeyError, ValueError):  # an older JAX without the option
            pass


def release_compiled_jax() -> None:
    """Drop JAX's compiled executables: a long run of many NumPyro models otherwise
    exhausts the memory XLA's CPU compiler reserves for code ("LLVM ERROR: Unable to
    allocate section memory", which aborts the process)."""
    import gc

    jax = sys.modules.get("jax")
    if jax is not None:
        jax.clear_caches()
    gc.collect()


class NumPyroRun(NamedTuple):
    """A timed run of ``DiscreteHMCGibbs`` (:func:`run_discrete_hmc_gibbs`)."""

    #: every site's draws, (chain, draw, *shape)
    samples: dict[str, np.ndarray]
    #: the run's wall time less NumPyro's fixed per-chain cost (NaN when the difference
    #: is within the noise of that cost)
    seconds: float
    wall: float
    overhead: float
    #: NUTS leapfrog steps of every iteration, (chain, draw)
    steps: np.ndarray

    @property
    def note(self) -> str:
        """How the time was taken, for a section's notes."""
        text = (f"wall {self.wall:.1f} s, less {self.overhead:.1f} s of per-chain "
                "initialisation, tracing and loading of the compiled kernel (the same "
                "chains of one iteration each)")
        if not np.isfinite(self.seconds):
            text += "; sampling too short to separate from that fixed cost: no time"
        return text


def run_discrete_hmc_gibbs(sampler_model: Callable, draws: int, warmup: int, chains: int,
                           *, init: Callable[[int], dict] | None = None,
                           key: int = 0) -> NumPyroRun:
    """``DiscreteHMCGibbs(NUTS(sampler_model))``, ``chains`` chains one after the other,
    JAX at its default precision (float32), timed like PyMC's runs: warm.

    ``MCMC.run`` initialises, traces and compiles the kernel again for every chain
    (seconds each, whatever the number of iterations). A persistent compilation cache
    turns those compilations into loads once a first run (one chain of the measured
    length) has filled it; what remains of that fixed cost, the same chains of one
    iteration each (best of 3), is taken off the measured run's wall time.

    Parameters
    ----------
    sampler_model : callable
        The NumPyro model.
    draws, warmup, chains : int
        Per chain.
    init : callable, optional
        ``n_chains -> init_params`` (arrays with a leading chain axis when there is more
        than one chain); default: NumPyro's own initialisation.
    key : int
        Seed of the measured run (the others use the next ones).
    """
    import jax
    from numpyro.infer import MCMC, NUTS, DiscreteHMCGibbs

    extra = ("hmc_state.num_steps",)

    def timed(n_tune: int, n_draws: int, n_chains: int, seed: int) -> tuple[MCMC, float]:
        mcmc = MCMC(DiscreteHMCGibbs(NUTS(sampler_model)), num_warmup=n_tune,
                    num_samples=n_draws, num_chains=n_chains, chain_method="sequential",
                    progress_bar=False)
        began = time.perf_counter()
        mcmc.run(jax.random.PRNGKey(seed), init_params=None if init is None else init(n_chains),
                 extra_fields=extra)
        jax.block_until_ready(mcmc.get_samples())
        return mcmc, time.perf_counter() - began

    _jax_compilation_cache()
    timed(warmup, draws, 1, key + 1)
    overhead = min(timed(1, 1, chains, key + 2 + i)[1] for i in range(3))
    mcmc, wall = timed(warmup, draws, chains, key)
    seconds = wall - overhead
    if seconds <= 0.05 * wall:  # within the noise of the fixed cost: no timing
        seconds = float("nan")
    samples = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    steps = np.asarray(mcmc.get_extra_fields(group_by_chain=True)["hmc_state.num_steps"])
    return NumPyroRun(samples, seconds, wall, overhead, steps)


def numpyro_measurement(run: NumPyroRun, model: pm.Model, n_values: int, warmup: int,
                        var: str = "x", label: str = "NumPyro DiscreteHMCGibbs") -> Measurement:
    """A :class:`Measurement` of a NumPyro run's draws of ``var`` (``n_values`` values a
    site), measured like PyMC's: ``model`` is the PyMC version, for the log density of
    the draws. A Gibbs sweep costs N (K - 1) log density evaluations."""
    x = run.samples[var].astype(np.int64)
    n_sites = int(np.prod(x.shape[2:]))
    return draws_measurement(label, x, logp_trace(model, x, var), run.seconds, warmup,
                             evals_per_draw=float(n_sites * (n_values - 1)))


# --------------------------------------------------------------------------------------
# figures over several seeds (DESIGN.md section 6: a ratio is quoted with its spread, and
# never against a run that did not converge)
# --------------------------------------------------------------------------------------


class SeedOutcome(NamedTuple):
    """One seed's run of one sampler, as a ratio over seeds needs it."""

    #: the speed compared (e.g. ESS per second); NaN if the run failed or has no time
    value: float
    #: None if the run converged in that seed, else why not (e.g. "r-hat 1.53")
    problem: str | None = None


def ratio_number(x: float) -> str:
    """A ratio without its "x": 304, 21, 4.6, 1.0, 0.76, 0.0042."""
    if not np.isfinite(x):
        return "-"
    if x >= 9.95:
        return f"{x:.0f}"
    if x >= 0.995:
        return f"{x:.1f}"
    return f"{x:.2g}"


def spread_over_seeds(values: list[float], fmt: str = ".1f") -> str:
    """``median (min-max)`` of the finite ``values`` (one per seed), "-" if none; with
    one value, that value and "(1 seed)"."""
    finite = [v for v in values if np.isfinite(v)]
    if not finite:
        return "-"
    median = format(float(np.median(finite)), fmt)
    if len(finite) == 1:
        return f"{median} (1 seed)"
    return f"{median} ({format(min(finite), fmt)}-{format(max(finite), fmt)})"


def _ratio_counts(ours: list[SeedOutcome], base: list[SeedOutcome]
                  ) -> tuple[list[float], int, int, int]:
    """The ratios of the seeds where both runs converged and were measured; the numbers
    of seeds where the baseline, our run did not converge (a seed may count in both) and
    where either was not measured."""
    if len(ours) != len(base):
        raise ValueError(f"{len(ours)} seeds against {len(base)}")
    ratios, base_nc, ours_nc, missing = [], 0, 0, 0
    for o, b in zip(ours, base):
        if not (np.isfinite(o.value) and np.isfinite(b.value) and b.value > 0):
            missing += 1
        elif b.problem is not None or o.problem is not None:
            base_nc += b.problem is not None
            ours_nc += o.problem is not None
        else:
            ratios.append(o.value / b.value)
    return ratios, base_nc, ours_nc, missing


def counted_ratios(ours: list[SeedOutcome], base: list[SeedOutcome]) -> list[float]:
    """``ours / base`` in every seed where both runs converged and were measured (the
    ratios :func:`ratio_over_seeds` takes the median of)."""
    return _ratio_counts(ours, base)[0]


def ratio_over_seeds(ours: list[SeedOutcome], base: list[SeedOutcome]) -> str:
    """The ratio ``ours / base`` over seeds (the two lists in the same seed order), as
    a table cell: the median over the seeds where both runs converged and were measured,
    with the spread, e.g. ``21x (18-25)``.

    A seed in which the baseline did not converge gives no speed-up (nor does one in
    which our run did not): it is left out of the median and the cell says how many
    seeds counted and why the others did not, e.g. ``1.0x (0.8-1.3), 3/4 seeds;
    baseline did not converge in 1``; with no seed left, ``n/c, 0/3 seeds; ...``.
    """
    ratios, base_nc, ours_nc, missing = _ratio_counts(ours, base)
    if ratios:
        cell = f"{ratio_number(float(np.median(ratios)))}x"
        if len(ratios) > 1:
            cell += f" ({ratio_number(min(ratios))}-{ratio_number(max(ratios))})"
    else:
        cell = "n/c" if base_nc or ours_nc else "-"
    if len(ratios) == len(ours):
        return cell if len(ours) > 1 else f"{cell}, 1 seed"
    reasons = [f"baseline did not converge in {base_nc}" if base_nc else "",
               f"this run did not converge in {ours_nc}" if ours_nc else "",
               f"not measured in {missing}" if missing else ""]
    return f"{cell}, {len(ratios)}/{len(ours)} seeds; " + "; ".join(r for r in reasons if r)


HEADER = """# Benchmark results

Every section below is written by one script of `benchmarks/` (named in the section; run
from the repository root as a module, `python -m benchmarks.<script>`) and carries the
command and the machine that produced its numbers. `make bench` reruns them all.
"""


def write_section(name: str, body: str, path: Path | None = None) -> None:
    """Replace (or append) the section ``name`` of RESULTS.md, leaving the others alone.

    Parameters
    ----------
    name : str
        Section key (one per benchmark script).
    body : str
        Markdown of the section, starting with its heading.
    path : Path, optional
        The results file; default :func:`results_path`.
    """
    import fcntl

    path = results_path() if path is None else path
    begin, end = f"<!-- begin:{name} -->", f"<!-- end:{name} -->"
    with open(path.with_suffix(".lock"), "w") as lock:  # scripts may run side by side
        fcntl.flock(lock, fcntl.LOCK_EX)
        _replace_section(path, begin, end, body)


def _replace_section(path: Path, begin: str, end: str, body: str) -> None:
    text = path.read_text() if path.exists() else HEADER
    if not text.startswith("# Benchmark results\n\nEvery section"):
        text = HEADER  # an old single-report file: start the sectioned layout afresh
    block = f"{begin}\n{body.strip()}\n{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1]
        text = head + block + tail
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)
