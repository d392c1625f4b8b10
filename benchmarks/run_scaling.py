"""Cost of a draw against the lattice size, and where a draw's time goes.

Two sections of ``benchmarks/RESULTS.md``, both on Ising lattices (C2):

* ``scaling``: from 20 x 20 to 200 x 200, the time per draw and ESS/s of ALBP through
  ``pm.sample``, next to ``pm.BinaryMetropolis`` (one log density evaluation per draw:
  the floor of any Metropolis-Hastings step in PyMC), the slope of log(time per draw)
  against log(N) (1 = linear), and how ALBP's draw splits between its owners (below);
  the same for the step ``pmd.register()`` builds there (BlockedGibbs), through
  ``pm.sample`` and alone (``step.astep`` called in a loop); plot
  ``benchmarks/scaling.png``;
* ``stages``: the step ``pmd.register()`` builds on the lattice (BlockedGibbs) and ALBP's
  compiled loop (``pmd.ALBP(weight="sqrt", steps_per_draw=8, compiled_loop=True)``, as in
  ``run_core`` and ``run_blocked``) at 2,500 and 40,000 sites: a draw split by owner, by
  the calls every draw makes (PyMC's ``ArrayStepShared.step``, the step's ``astep``, the
  trace's ``NDArray.record``, PyTensor's compiled functions) and the functions that take
  the most time.

Where the time goes is read off Python's profiler (``cProfile``) over ``pm.sample``;
nothing is wrapped or replaced. Each step is built once, warmed up by a discarded run,
sampled once unprofiled (one chain: the time per draw without the profiler), then once
more with its draws profiled: ``pm.sample``'s ``callback``, which PyMC calls after every
draw, starts the profiler after the first draw and stops it after the last, so that
what ``pm.sample`` does once per call is left out. Every function's own time goes to the owner of
the file it is defined in: **the kernel** (``pymc_discrete/kernels``, with the numba code
it calls: a call of a numba function is time of its Python caller), **the step**
(the rest of ``pymc_discrete``: the step's lifecycle around its kernel), **the model**
(PyTensor: the compiled log density and its gradient or batched terms) or **PyMC** (the
draw loop, the conversion of the point, the trace); the time of functions of no owner
(numpy, builtins, the standard library) goes to the owner of their callers, in
proportion to the time spent under each. The profiler adds a cost to every Python call,
so a profiled draw takes longer than an unprofiled one (both are given) and the Python
parts' shares are somewhat inflated.

Run with ``python -m benchmarks.run_scaling`` (``--quick``: up to 100 x 100, fewer draws;
``--smoke``: tiny lattices, for the tests).
"""

from __future__ import annotations

import cProfile
import pstats
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pymc as pm

import pymc_discrete as pmd
from benchmarks.harness import (
    assigned_step,
    cli,
    markdown_table,
    measure,
    measure_run,
    provenance,
    save_figure,
    size_name,
    step_name,
    subplots,
    write_section,
)
from pymc_discrete.example_models import ising_model

# --------------------------------------------------------------------------------------
# profiles of pm.sample, attributed to owners
# --------------------------------------------------------------------------------------

KERNEL, STEP, MODEL, PYMC = "ours: the kernel", "ours: the step", "the model (PyTensor)", "PyMC"
OWNERS = (KERNEL, STEP, MODEL, PYMC)


def _owner_folders() -> list[tuple[str, str]]:
    """(folder, owner), the most specific folder first."""
    import pytensor

    import pymc_discrete.kernels

    folders = [(pymc_discrete.kernels.__file__, KERNEL), (pmd.__file__, STEP),
               (pytensor.__file__, MODEL), (pm.__file__, PYMC)]
    return [(str(Path(f).parent) + "/", owner) for f, owner in folders]


#: a pstats key: (file, first line, function name)
Key = tuple[str, int, str]


@dataclass
class Profile:
    """A profile of the draws of one ``pm.sample`` call (``pstats``' table), the
    iterations it covers and their wall time under the profiler."""

    stats: dict
    iterations: int
    wall: float


class DrawProfiler:
    """A ``pm.sample`` callback (PyMC calls it after every draw) that profiles the draws
    of one chain of ``total`` iterations: on after the first draw, off after the last."""

    def __init__(self, total: int) -> None:
        self.profiler = cProfile.Profile()
        self.total = total
        self.seen = 0
        self.began = self.ended = 0.0

    def __call__(self, trace, draw) -> None:
        self.seen += 1
        if self.seen == 1:
            self.began = time.perf_counter()
            self.profiler.enable()
        elif self.seen == self.total:
            self.profiler.disable()
            self.ended = time.perf_counter()

    def profile(self) -> Profile:
        self.profiler.disable()
        if self.seen != self.total:
            raise RuntimeError(f"the callback saw {self.seen} draws of {self.total}")
        return Profile(pstats.Stats(self.profiler).stats, self.total - 1,
                       self.ended - self.began)


def attribute(profile: Profile) -> dict[str, float]:
    """Seconds per iteration by owner (:data:`OWNERS`, and "other" for time whose callers
    have no owner either); they add up to the time the profiler recorded per iteration
    (a little less than the wall time: the loop of ``pm.sample`` that was running when
    the profiler started is not recorded, only what it calls)."""
    folders = _owner_folders()
    stats = profile.stats
    memo: dict[Key, dict[str, float]] = {}

    def owner_of_file(path: str) -> str | None:
        return next((owner for folder, owner in folders if path.startswith(folder)), None)

    def shares(key: Key) -> dict[str, float]:
        owner = owner_of_file(key[0])
        if owner is not None:
            return {owner: 1.0}
        if key in memo:
            return memo[key]
        memo[key] = {"other": 1.0}  # a cycle of unowned functions
        callers = stats[key][4] if key in stats else {}
        weights = {c: max(v[2], 0.0) for c, v in callers.items()}
        total = sum(weights.values())
        if total <= 0:
            return memo[key]
        out: dict[str, float] = {}
        for caller, w in weights.items():
            for owner, s in shares(caller).items():
                out[owner] = out.get(owner, 0.0) + s * w / total
        memo[key] = out
        return out

    totals = dict.fromkeys((*OWNERS, "other"), 0.0)
    for key, (_, _, tt, _, _) in stats.items():
        for owner, s in shares(key).items():
            totals[owner] += s * tt
    return {k: v / profile.iterations for k, v in totals.items()}


def _key(fn) -> Key:
    """The pstats key of a Python function or method."""
    code = getattr(fn, "__func__", fn).__code__
    return code.co_filename, code.co_firstlineno, code.co_name


def cumulative(profile: Profile, fn) -> tuple[float, float]:
    """Seconds per iteration spent in ``fn`` and below it, and its calls per iteration."""
    cc, nc, tt, ct, _ = profile.stats.get(_key(fn), (0, 0, 0.0, 0.0, {}))
    return ct / profile.iterations, nc / profile.iterations


def top_functions(profile: Profile, n: int) -> list[tuple[str, float]]:
    """The ``n`` functions with the largest own time: ("file:function", seconds per
    iteration), the file relative to its package."""
    ranked = sorted(profile.stats.items(), key=lambda item: -item[1][2])[:n]
    out = []
    for (path, line, name), (_, _, tt, _, _) in ranked:
        short = path.split("site-packages/")[-1]
        for marker in ("/pymc_discrete/", "/benchmarks/"):
            if marker in short:
                short = marker[1:] + short.split(marker, 1)[1]
        out.append((f"`{short}:{line}({name})`" if path != "~" else f"`{name}`",
                    tt / profile.iterations))
    return out


@dataclass
class Case:
    """Where the draws of one step on one lattice go."""

    label: str
    step: str
    step_type: type
    side: int
    iterations: int
    ms_per_draw: float  # unprofiled, tuning included
    profile: Profile

    @property
    def n(self) -> int:
        return self.side * self.side

    @property
    def profiled_ms(self) -> float:
        """Wall time per iteration under the profiler."""
        return 1e3 * self.profile.wall / self.profile.iterations


def profile_case(label: str, model: pm.Model, make_step, start: dict, tune: int, draws: int,
                 warmup: int) -> Case:
    """Build the step, warm it up, sample it once unprofiled and once with its draws
    profiled (:class:`DrawProfiler`); one chain, ``cores=1``, no progress bar."""
    common = dict(chains=1, cores=1, progressbar=False, compute_convergence_checks=False,
                  random_seed=3, initvals=start, quiet=True, tune=tune, draws=draws)
    with model:
        step = make_step(model)
        pm.sample(step=step, **{**common, "tune": warmup, "draws": warmup})
        idata = pm.sample(step=step, **common)
        profiler = DrawProfiler(tune + draws)
        pm.sample(step=step, callback=profiler, **common)
    ms = 1e3 * float(idata.sample_stats.attrs["sampling_time"]) / (tune + draws)
    case = Case(label, step_name(step), type(step),
                int(np.sqrt(model.initial_point()["x"].size)), tune + draws, ms,
                profiler.profile())
    print(f"    {label}: {ms:.3f} ms per draw, {case.profiled_ms:.3f} profiled", flush=True)
    return case


def _ms_share(seconds: float, whole: float) -> str:
    return f"{1e3 * seconds:.3f} ({100 * seconds / whole:.0f}%)" if whole > 0 else "-"


def owners_table(cases: list[Case]) -> str:
    """Per case: the draw unprofiled and profiled, and the profiled draw by owner."""
    rows = []
    for c in cases:
        parts = attribute(c.profile)
        whole = sum(parts.values())
        rows.append([c.label, c.step, f"{c.n:,}", c.iterations, f"{c.ms_per_draw:.3f}",
                     f"{c.profiled_ms:.3f}", *(_ms_share(parts[o], whole) for o in OWNERS),
                     _ms_share(parts["other"], whole)])
    header = ["configuration", "step built", "sites", "iterations", "ms/draw",
              "ms/draw profiled", *(f"{o}: ms (share)" for o in OWNERS), "other"]
    return markdown_table(header, rows)


def calls_table(cases: list[Case]) -> str:
    """Per case: the time per draw in and under the calls every draw makes."""
    from pymc.backends.ndarray import NDArray
    from pymc.step_methods.arraystep import ArrayStepShared
    from pytensor.compile import Function

    rows = []
    for c in cases:
        whole = sum(attribute(c.profile).values())
        calls = [("PyMC: `ArrayStepShared.step` (the point to arrays and back, and the "
                  "step)", ArrayStepShared.step),
                 (f"ours: `{c.step_type.__name__}.astep` (the step)", c.step_type.astep),
                 ("PyMC: `NDArray.record` (the trace)", NDArray.record),
                 ("PyTensor: `Function.__call__` (every compiled function)",
                  Function.__call__)]
        for label, fn in calls:
            seconds, n_calls = cumulative(c.profile, fn)
            rows.append([c.label, f"{c.n:,}", label, f"{n_calls:.2f}",
                         _ms_share(seconds, whole)])
    return markdown_table(["configuration", "sites", "call", "calls per draw",
                           "ms per draw in it (share of the profiled draw)"], rows)


def functions_table(case: Case, n: int = 10) -> str:
    """The ``n`` functions with the largest own time in ``case``'s draws."""
    whole = sum(attribute(case.profile).values())
    return markdown_table(["function", "own time: ms per draw (share)"],
                          [[name, _ms_share(seconds, whole)]
                           for name, seconds in top_functions(case.profile, n)])


def finding(c: Case) -> str:
    """One line: where the case's draw goes."""
    parts = attribute(c.profile)
    whole = sum(parts.values())
    ranked = sorted(OWNERS, key=lambda o: -parts[o])
    split = ", ".join(f"{o} {100 * parts[o] / whole:.0f}%" for o in ranked)
    name, seconds = top_functions(c.profile, 1)[0]
    return (f"- **{c.label}, {c.n:,} sites** ({c.step}): {c.ms_per_draw:.3f} ms per draw "
            f"({c.profiled_ms:.3f} profiled): {split}; the largest single function "
            f"{name}, {100 * seconds / whole:.0f}%.")


# --------------------------------------------------------------------------------------
# the two sections
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Budget:
    """Lattice sides and run lengths of one run size."""

    sides: tuple  # scaling: ALBP and BinaryMetropolis
    draws: int  # scaling: draws and tuning draws per chain (2 chains)
    gibbs_draws: tuple  # scaling: the same of register()'s step, on each side
    profile_draws: int  # scaling: iterations of ALBP's profiled runs
    stages: tuple  # stages: (side, tune, draws, warm-up)


BUDGETS = {
    "full": Budget((20, 50, 100, 141, 200), 2000, (1000, 1000, 1000, 500, 400), 1000,
                   ((50, 300, 1000, 50), (200, 150, 500, 20))),
    "quick": Budget((20, 50, 100), 400, (100, 100, 100), 200,
                    ((10, 20, 40, 5), (20, 20, 40, 5))),
    "smoke": Budget((6, 8), 30, (10, 10), 20, ((6, 10, 10, 3),)),
}
#: "cost per draw linear in N": fitted slope of log(ms per draw) against log N at most this
MAX_SLOPE = 1.1
ALBP_STEPS = 8
REGISTERED = "register()"
LOOP = f"ALBP (sqrt, compiled loop, {ALBP_STEPS} steps per draw)"


def _start(side: int) -> dict:
    return {"x": np.random.default_rng(0).integers(0, 2, (side, side))}


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


def _slopes(n, t) -> tuple[float, float]:
    """Slopes of log t against log n: over every size and over the three largest."""
    def fit(a, b):
        return float(np.polyfit(np.log(a), np.log(b), 1)[0])

    n, t = np.asarray(n, dtype=float), np.asarray(t, dtype=float)
    return (fit(n, t) if len(n) >= 2 else float("nan"),
            fit(n[-3:], t[-3:]) if len(n) >= 3 else float("nan"))


def _said(pair: tuple[float, float]) -> str:
    return f"{pair[0]:.2f} over all sizes" + (
        f", {pair[1]:.2f} over the three largest" if np.isfinite(pair[1]) else "")


def registered_scaling(b: Budget) -> str:
    """Cost per draw of the step register() builds on each lattice, through ``pm.sample``
    and alone: the table, the slopes and whether the cost is linear in N."""
    rows, ns, sampled, alone_ms, notes = [], [], [], [], []
    for side, draws in zip(b.sides, b.gibbs_draws):
        model, start = ising_model(side, "C2"), _start(side)
        print(f"  Ising {side}x{side}: register()", flush=True)
        # the faster of two identical runs (the same draws): PyMC's recording of a draw
        # of 40,000 values varied by up to 1.3x from run to run on this VM
        run = min((measure_run(model, "register()", lambda m: assigned_step(m, True, start),
                               draws=draws, tune=draws, seed=1, initvals=start)
                   for _ in range(2)), key=lambda r: r.measurement.seconds)
        m, name = run.measurement, step_name(run.step)
        alone = step_ms(run.step, run.draws[0, -1], min(draws, 300))
        rows.append([f"{side}x{side}", side * side, name, f"2 x {m.draws // 2}",
                     f"{m.time_per_draw_ms:.3f}",
                     f"{1e6 * m.time_per_draw_ms / (side * side):.1f}", f"{alone:.3f}",
                     f"{1e6 * alone / (side * side):.1f}", f"{m.ess_logp_per_s:.1f}",
                     f"{m.ess_site_per_s:.1f}"])
        ns.append(side * side)
        sampled.append(m.time_per_draw_ms)
        alone_ms.append(alone)
        if not name.startswith("BlockedGibbs"):
            notes.append(f" register() did not build BlockedGibbs on {side}x{side}: {name}.")
    table = markdown_table(["lattice", "N", "step register() built", "chains x draws",
                            "ms/draw (pm.sample)", "us per draw per 1k sites",
                            "ms per step.astep alone", "us per 1k sites", "ESS/s logp",
                            "median site ESS/s"], rows)
    through, by_itself = _slopes(ns, sampled), _slopes(ns, alone_ms)
    linear = all(not np.isfinite(v) or v <= MAX_SLOPE for v in through)
    draws = ", ".join(f"{s}x{s}: {d}" for s, d in zip(b.sides, b.gibbs_draws))
    return f"""### The step register() builds: cost per draw against N

2 chains, draws per chain (after as many tuning): {draws}; ms/draw through `pm.sample`
includes tuning, as everywhere; the faster of two identical runs (at 40,000 sites the
time through `pm.sample` varied by up to 1.3x between identical runs, the step alone did
not). Beside it, the step's own cost: `step.astep` called in a loop on the run's last
draw, no `pm.sample` around it (best of 3 repeats of up to 300 calls). Slope of log(ms
per draw) against log(N), 1 = linear: through `pm.sample` {_said(through)}; the step
alone {_said(by_itself)} (a fixed per-draw overhead flattens the small sizes; what
`pm.sample` adds per draw, recording the draw and the stats, is the difference). Cost
per draw linear in N (every slope through `pm.sample` at most {MAX_SLOPE:g}):
**{"pass" if linear else "FAIL"}**.{"".join(notes)}

{table}"""


def scaling_section(b: Budget, size: str) -> str:
    rows = []
    for side in b.sides:
        model, start = ising_model(side, "C2"), _start(side)
        print(f"  Ising {side}x{side}: ALBP", flush=True)
        albp = measure(model, "ALBP", lambda m: pmd.ALBP([m["x"]]), draws=b.draws,
                       tune=b.draws, seed=1, initvals=start, warmup=min(100, b.draws))
        print(f"  Ising {side}x{side}: BinaryMetropolis", flush=True)
        metro = measure(model, "BinaryMetropolis", lambda m: pm.BinaryMetropolis([m["x"]]),
                        draws=b.draws, tune=b.draws, seed=1, initvals=start,
                        warmup=min(100, b.draws))
        half = b.profile_draws // 2
        case = profile_case("ALBP", model, lambda m: pmd.ALBP([m["x"]]), start, half,
                            b.profile_draws - half, min(20, half))
        rows.append((side, albp, metro, case))
    n = np.array([s * s for s, *_ in rows], dtype=float)
    t_albp = np.array([r[1].time_per_draw_ms for r in rows])
    t_metro = np.array([r[2].time_per_draw_ms for r in rows])
    slope = np.polyfit(np.log(n), np.log(t_albp), 1)[0]
    slope_big = np.polyfit(np.log(n[-3:]), np.log(t_albp[-3:]), 1)[0]
    lines = []
    for side, albp, metro, case in rows:
        parts = attribute(case.profile)
        whole = sum(parts.values())
        lines.append([f"{side}x{side}", side * side, f"{albp.time_per_draw_ms:.3f}",
                      f"{metro.time_per_draw_ms:.3f}",
                      f"{albp.time_per_draw_ms / metro.time_per_draw_ms:.2f}",
                      f"{albp.scale:.0f}", f"{albp.ess_logp_per_s:.1f}",
                      f"{albp.ess_site_per_s:.1f}", f"{albp.ess_logp_per_1k_evals:.3g}",
                      *(f"{100 * parts[o] / whole:.0f}%" for o in OWNERS)])
    table = markdown_table(
        ["lattice", "N", "ALBP ms/draw", "BinaryMetropolis ms/draw", "ratio", "tuned R",
         "ALBP ESS/s (logp)", "ALBP ESS/s (median site)", "ALBP ESS logp per 1k evals",
         *(f"ALBP's draw: {o}" for o in OWNERS)], lines)
    fig, ax = subplots(figsize=(6, 4))
    ax.loglog(n, t_albp, "o-", label=f"ALBP (slope {slope:.2f})")
    ax.loglog(n, t_metro, "s--", label="BinaryMetropolis (1 logp per draw)")
    ax.set_xlabel("N (sites)")
    ax.set_ylabel("ms per draw")
    ax.set_title("Ising (C2): time per draw")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, "scaling.png", dpi=90)
    registered = registered_scaling(b)
    return f"""## Scaling: ALBP's and register()'s cost against the lattice size, and where a draw's time goes

{provenance("run_scaling", size)}

Ising C2, {b.draws} draws after {b.draws} tuning, 2 chains, through `pm.sample`. Slope of
log(ALBP time per draw) against log(N): {slope:.2f} over all sizes, {slope_big:.2f} over the
three largest (a fixed per-draw overhead flattens the small sizes; 1 = linear). The last
four columns split ALBP's draw by owner, from a profile of one chain of
{b.profile_draws} iterations (`python -m benchmarks.run_scaling` says how: cProfile over
`pm.sample`, the time of every function given to the package it belongs to): the
kernel (weights, ordered draw without replacement, acceptance), the step around it,
the model's compiled log density and gradient (PyTensor), and PyMC's draw loop, point
conversion and trace.

{table}

![scaling](scaling.png)

{registered}
"""


def stages_section(b: Budget, size: str, began: float) -> str:
    cases = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for label, make in (
                (REGISTERED, lambda start: lambda m: assigned_step(m, True, start)),
                (LOOP, lambda start: lambda m: pmd.ALBP([m["x"]], weight="sqrt",
                                                        steps_per_draw=ALBP_STEPS,
                                                        compiled_loop=True))):
            for side, tune, draws, warmup in b.stages:
                print(f"  Ising {side}x{side}: {label}", flush=True)
                start = _start(side)
                cases.append(profile_case(label, ising_model(side, "C2"), make(start), start,
                                          tune, draws, warmup))
    minutes = (time.perf_counter() - began) / 60
    sites = " and ".join(f"{side * side:,}" for side, *_ in b.stages)
    lengths = ", ".join(f"{s}x{s}: {t} tuning + {d} draws (warm-up run {w} + {w})"
                        for s, t, d, w in b.stages)
    functions = "\n\n".join(f"#### {c.label}, {c.n:,} sites\n\n{functions_table(c)}"
                            for c in cases)
    return f"""## Stages: where a draw's time goes (Ising C2, {sites} sites)

{provenance("run_scaling", size, minutes=minutes)}

Ising C2 through `pm.sample(chains=1, cores=1, progressbar=False)` with a random start,
for the step `register()` builds and ALBP's compiled loop (`pmd.ALBP(weight="sqrt",
steps_per_draw={ALBP_STEPS}, compiled_loop=True)`). Runs: {lengths}; times are per
iteration, tuning included. Each step ran once unprofiled ("ms/draw") and once more
under cProfile, started after the first draw and stopped after the last by
`pm.sample`'s `callback` ("profiled": that run's wall time per draw; the shares are of
the time the profiler recorded). Every function's own time goes to its owner: ours (the
kernel in `pymc_discrete/kernels`, with the numba code it calls; the step, the rest of
`pymc_discrete`), the model (PyTensor's compiled functions) or PyMC; numpy, builtins and
the standard library count for the owner of their callers ("other": time whose callers
have no owner). The profiler adds a cost to every Python call, so the shares of the
Python parts are inflated next to the numba and compiled code.

### Whose time

{owners_table(cases)}

### The calls every draw makes

Time in and under each call (so the step's `astep` is inside `ArrayStepShared.step`, and
PyTensor's compiled functions may run inside either or inside the trace).

{calls_table(cases)}

### The functions that take the most time

Own time (not counting the functions they call; numba code counts for its caller).

{functions}

### Findings

{chr(10).join(finding(c) for c in cases)}
"""


def main(quick: bool = False, smoke: bool = False) -> None:
    began = time.perf_counter()
    size = size_name(quick, smoke)
    b = BUDGETS[size]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        scaling = scaling_section(b, size)
    write_section("scaling", scaling)
    print(scaling)
    stages = stages_section(b, size, time.perf_counter())
    write_section("stages", stages)
    print(stages)
    print(f"run_scaling took {(time.perf_counter() - began) / 60:.1f} min")


if __name__ == "__main__":
    cli(main)
