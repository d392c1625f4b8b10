"""Time to the first draw: what ``pmd.register()`` adds to a plain ``pm.sample()`` before
it draws, cold (nothing compiled yet) and warm, beside PyMC's default steps.

Section ``setup`` of ``benchmarks/RESULTS.md``. Every number comes from a fresh Python
process (``python -c``, the result returned as JSON on stdout), so that what was imported
and compiled before is under control:

* **cold**: the process runs with ``PYTENSOR_FLAGS=base_compiledir=<fresh folder>`` and
  ``NUMBA_CACHE_DIR=<fresh folder>``: PyTensor's compilation caches (its C modules under
  ``compiledir``, and the numba-compiled graphs of its default NUMBA linker, which live in
  ``base_compiledir/numba``, not under ``compiledir``: ``compiledir=`` alone would leave
  them warm) and numba's disk cache of the package's ``@njit(cache=True)`` kernels (numba
  looks at ``NUMBA_CACHE_DIR`` before the ``__pycache__`` beside the module) all start
  empty: what a new user's first run pays. Python's bytecode (``.pyc``) and the operating
  system's file cache are not reset (an install writes the first; the second is the
  machine's);
* **new model**: a fresh ``base_compiledir`` (every PyTensor graph, the model's and
  the package's batched terms, compiled anew) with a ``NUMBA_CACHE_DIR`` that the same
  kind of measurement on another model (:data:`WARM_UP_MODEL`, an Ising 6x6 lattice)
  filled first: what a user pays for a model the machine has not seen, once the
  package's own kernels are compiled (numba compiles them once per machine and argument
  types, not per model);
* **warm**: the same process run again with the same two folders as cold, the second
  run measured.

Each kind of measurement has its own fresh folders (one model: ours, PyMC's and the
phases each start cold), and runs in its own process:

1. **ours**: ``pmd.register()`` and ``pm.sample(draws=1, tune=1, chains=1, cores=1,
   random_seed=1, progressbar=False, compute_convergence_checks=False)``, timed together:
   the time to the first draw with the package's steps;
2. **PyMC**: the same call without ``register()``: PyMC's default steps;
3. **phases**: ``pmd.recommend(<the discrete free variables>, model=model)`` timed, and
   the stages of the exact-ratio set-up it runs, as it reports them
   (``rec.exact_ratios.setup_report["seconds"]``): ``compile`` (splitting the log density
   into elementwise terms and compiling their batched evaluation), ``analyse`` (reading
   the possible dependencies of the terms off the graph), ``probe`` (evaluating the terms
   at probe states to find which sites each term depends on), ``colour`` (colouring the
   sites so that sites of one colour share no term); structure + colouring = analyse +
   probe + colour, and what the total holds outside the stages;
4. warm only, **sampling**: ``pm.sample(draws=D, tune=D, chains=1, cores=1, ...)`` with
   and without ``register()``: its ``sampling_time`` (the tuning draws and the draws,
   no set-up) and its wall time (set-up included), so that set-up reads beside sampling. These processes reuse the
   warm folders of 1 and 2.

The time to the first draw is also split at the start of ``pm.sample``'s draws loop
(its ``sampling_time``): PyTensor's default linker here is NUMBA, which compiles a
function's machine code at its first call, so that cold, much of the compilation falls
inside the first draws rather than in the building of the steps.

The imports (``import pymc``, then ``import pymc_discrete``) and the building of the model
(with the import of its builder's module) are not in the times above; the imports are
reported apart, and so is the whole process (interpreter start to exit). One run per
cell: a single measurement, not a median, so differences of a few tenths of a second
are within the noise.

The discrete free variables are those of integer dtype in ``model.free_RVs``. Models: the
coal-mining change point (one switch-point site over 111 years,
:func:`benchmarks.applied_models.change_point`), the gallery mixture with 500 labels, the
Ising lattice 50x50 (2,500 sites), the Potts lattice 30x30 (900 four-state sites) and the
Ising lattice 100x100 (10,000 sites) (:mod:`pymc_discrete.example_models`).

Run with ``python -m benchmarks.run_setup`` (``--quick``: the Ising 50x50 alone, 100
sampling draws; ``--smoke``: an Ising 6x6, warm only, with the machine's own caches: the
tests).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pymc as pm

import pymc_discrete as pmd

# The harness (which imports ArviZ: about a second) is imported by the parent's functions
# only, and each model's builder by the child that builds it (timed apart): a child
# process imports no more than its measurement needs.

#: the repository root: the child processes run there, so that ``benchmarks`` imports
ROOT = Path(__file__).resolve().parent.parent
#: the line of a child's stdout that carries its result
RESULT = "RUN_SETUP_RESULT "

#: what a child process runs: the timed imports, then :func:`child` (argv[1]: the spec)
CHILD = """\
import time
began = time.perf_counter()
import pymc
pymc_seconds = time.perf_counter() - began
began = time.perf_counter()
import pymc_discrete
ours_seconds = time.perf_counter() - began
from benchmarks.run_setup import child
child({"pymc": pymc_seconds, "pymc_discrete": ours_seconds})
"""


@dataclass(frozen=True)
class Case:
    """A model of the benchmark and where its builder lives."""

    title: str
    module: str  # imported by the child that builds the model (timed apart)
    builder: str
    kwargs: dict
    applied: bool = False  # the builder returns an AppliedModel: its ``.model``

    def build(self) -> tuple[pm.Model, float, float]:
        """The model, the seconds importing the builder's module took, and the seconds
        building the model took."""
        began = time.perf_counter()
        builder = getattr(importlib.import_module(self.module), self.builder)
        imported = time.perf_counter() - began
        began = time.perf_counter()
        model = builder(**self.kwargs)
        if self.applied:
            model = model.model
        return model, imported, time.perf_counter() - began


_EXAMPLES = "pymc_discrete.example_models"
#: name -> the model
MODELS: dict[str, Case] = {
    "coal": Case("Coal-mining change point (1 site, 111 values)", "benchmarks.applied_models",
                 "change_point", {}, applied=True),
    "mixture": Case("Gallery mixture (500 labels, 3 values)", _EXAMPLES, "gallery_mixture",
                    {"n": 500}),
    "ising50": Case("Ising 50x50 (2,500 sites)", _EXAMPLES, "ising_model", {"side": 50}),
    "potts30": Case("Potts 30x30 (900 sites, 4 values)", _EXAMPLES, "potts_model",
                    {"side": 30, "n_states": 4}),
    "ising100": Case("Ising 100x100 (10,000 sites)", _EXAMPLES, "ising_model", {"side": 100}),
    "ising6": Case("Ising 6x6 (36 sites)", _EXAMPLES, "ising_model", {"side": 6}),
}


#: the model whose run fills the numba cache of the "new model" measurements
WARM_UP_MODEL = "ising6"


def discrete_free_rvs(model: pm.Model) -> list:
    """The free variables of integer dtype (the discrete ones), in model order."""
    return [v for v in model.free_RVs if "int" in v.type.dtype]


# --------------------------------------------------------------------------------------
# the child process
# --------------------------------------------------------------------------------------


class _Messages(logging.Handler):
    """Keeps the messages of a logger."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


#: a line of the step hierarchy ``pm.sample`` logs: ``>NUTS: [early_rate, late_rate]``
_STEP_LINE = re.compile(r"^>*(\w+): \[(.*)\]$")


def sample_logged(model: pm.Model, draws: int) -> tuple[float, float, str]:
    """``pm.sample`` with ``draws`` draws after as many tuning draws, one chain, seed 1:
    its wall time, its ``sampling_time`` and the steps it assigned (read off the step
    hierarchy PyMC logs: "NUTS: [early_rate, late_rate]; BlockedGibbs: [switchpoint]")."""
    logger = logging.getLogger("pymc")
    handler = _Messages()
    logger.addHandler(handler)
    try:
        began = time.perf_counter()
        with model:
            idata = pm.sample(draws=draws, tune=draws, chains=1, cores=1, random_seed=1,
                              progressbar=False, compute_convergence_checks=False)
        wall = time.perf_counter() - began
    finally:
        logger.removeHandler(handler)
    lines = [line for message in handler.messages for line in message.splitlines()]
    steps = [m.group(0).lstrip(">") for m in map(_STEP_LINE.match, lines) if m]
    return wall, float(idata.sample_stats.attrs["sampling_time"]), "; ".join(steps) or "?"


def measure_child(spec: dict) -> dict:
    """One measurement (``spec["kind"]``: "ours", "pymc", "phases", "sample-ours" or
    "sample-pymc") on the model ``spec["model"]``, in this process.

    Parameters
    ----------
    spec : dict
        ``model`` (a key of :data:`MODELS`), ``kind``, and ``draws`` for the sampling
        kinds.

    Returns
    -------
    dict
        Seconds and what was chosen (module docstring).
    """
    model, imported, built = MODELS[spec["model"]].build()
    discrete = discrete_free_rvs(model)
    point = model.initial_point()
    out: dict = {"builder_import": imported, "build": built,
                 "sites": int(sum(point[model.rvs_to_values[v].name].size for v in discrete))}
    kind = spec["kind"]
    if kind in ("ours", "pymc", "sample-ours", "sample-pymc"):
        draws = spec.get("draws", 1)
        began = time.perf_counter()
        if kind.endswith("ours"):
            pmd.register()
        _, out["sampling"], out["steps"] = sample_logged(model, draws)
        out["wall"] = time.perf_counter() - began  # register() included
    elif kind == "phases":
        began = time.perf_counter()
        rec = pmd.recommend(discrete, model=model)
        out["recommend"] = time.perf_counter() - began
        out["step"] = rec.step.__name__
        out["colours"] = rec.n_colours
        exact = rec.exact_ratios
        out["seconds"] = None if exact is None else dict(exact.setup_report["seconds"])
    else:
        raise ValueError(f"unknown measurement {kind!r}")
    return out


def child(imports: dict) -> None:
    """The body of a child process (:data:`CHILD`): run the measurement ``sys.argv[1]``
    (JSON) names and print its result, with the import times, as one JSON line."""
    spec = json.loads(sys.argv[1])
    out = measure_child(spec)
    out["imports"] = imports
    print(RESULT + json.dumps(out), flush=True)


# --------------------------------------------------------------------------------------
# the parent
# --------------------------------------------------------------------------------------


def child_env(caches: Path | None) -> dict:
    """The environment of a child: this one, with PyTensor's and numba's caches in
    ``caches`` (``caches/pytensor`` as ``base_compiledir``, ``caches/numba`` as
    ``NUMBA_CACHE_DIR``) unless ``caches`` is None."""
    env = dict(os.environ)
    if caches is not None:
        flags = [f for f in env.get("PYTENSOR_FLAGS", "").split(",")
                 if f and not f.strip().startswith(("compiledir=", "base_compiledir="))]
        env["PYTENSOR_FLAGS"] = ",".join([*flags, f"base_compiledir={caches / 'pytensor'}"])
        env["NUMBA_CACHE_DIR"] = str(caches / "numba")
    return env


def run_child(spec: dict, caches: Path | None) -> dict:
    """Run one measurement in a fresh Python process (:data:`CHILD`) with its caches in
    ``caches`` (None: the machine's own); its result, with ``process`` (the whole
    process's wall time) and, with ``caches``, the number of files in each cache after
    the run.

    Raises
    ------
    RuntimeError
        If the process fails or prints no result.
    """
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], cwd=ROOT,
                          env=child_env(caches), capture_output=True, text=True)
    seconds = time.perf_counter() - began
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the measurement {spec} failed (exit {done.returncode}):\n"
                           f"{done.stderr[-3000:]}")
    out = json.loads(lines[-1][len(RESULT):])
    out["process"] = seconds
    if caches is not None:
        out["cache_files"] = {name: sum(len(files) for _, _, files in os.walk(caches / name))
                              for name in ("numba", "pytensor")}
    return out


@dataclass
class ModelResult:
    """Every measurement of one model: kind -> {"cold": result, "new model": result,
    "warm": result} (only ``warm`` where no cold runs were made), and the sampling
    runs."""

    name: str
    runs: dict
    sampling: dict  # "ours" / "pymc" -> result


def measure_model(name: str, cold: bool, draws: int) -> ModelResult:
    """Run the measurements of one model: for each of ours, PyMC's and the phases, a cold
    and a warm run in fresh cache folders (with ``cold=False``: one run with the
    machine's own caches; and with ``cold``, a "new model" run: module docstring), then
    the two sampling runs (``draws`` draws after as many
    tuning draws) in the warm folders of ours and PyMC's."""
    runs: dict = {}
    sampling: dict = {}
    with tempfile.TemporaryDirectory(prefix="pymc_discrete_setup_") as tmp:
        for kind in ("ours", "pymc", "phases"):
            caches = Path(tmp) / kind if cold else None
            runs[kind] = {}
            if cold:
                # the package's kernels compiled on another model, every graph anew
                seen = Path(tmp) / f"{kind}-new-model"
                print(f"  {name}: {kind}, new model (after {WARM_UP_MODEL})", flush=True)
                run_child({"model": WARM_UP_MODEL, "kind": kind}, seen)
                shutil.rmtree(seen / "pytensor", ignore_errors=True)
                runs[kind]["new model"] = run_child({"model": name, "kind": kind}, seen)
            for temperature in ("cold", "warm") if cold else ("warm",):
                print(f"  {name}: {kind}, {temperature}", flush=True)
                runs[kind][temperature] = run_child({"model": name, "kind": kind}, caches)
            if kind != "phases":
                print(f"  {name}: sampling, {kind}, {draws} draws", flush=True)
                sampling[kind] = run_child({"model": name, "kind": f"sample-{kind}",
                                            "draws": draws}, caches)
    return ModelResult(name, runs, sampling)


# --------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------


def _get(r: ModelResult, kind: str, temperature: str, key: str) -> float | None:
    return r.runs[kind].get(temperature, {}).get(key)


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def first_draw_table(results: list[ModelResult]) -> str:
    """Time to the first draw, ours and PyMC's, cold and warm."""
    from benchmarks.harness import cell, markdown_table

    rows = []
    for r in results:
        row = [MODELS[r.name].title, r.runs["ours"]["warm"]["steps"],
               r.runs["pymc"]["warm"]["steps"]]
        for temperature in ("cold", "new model", "warm"):
            ours = _get(r, "ours", temperature, "wall")
            pymc = _get(r, "pymc", temperature, "wall")
            row += [cell(ours, ".2f"), cell(pymc, ".2f"), cell(_diff(ours, pymc), "+.2f")]
        rows.append(row)
    return markdown_table(["model", "register() assigns", "PyMC's default assigns",
                           "cold: ours s", "cold: PyMC s", "cold: ours - PyMC s",
                           "new model: ours s", "new model: PyMC s",
                           "new model: ours - PyMC s", "warm: ours s", "warm: PyMC s", "warm: ours - PyMC s"], rows)


def phases_table(results: list[ModelResult], temperatures: tuple[str, ...]) -> str:
    """``pmd.recommend`` and the stages of the exact-ratio set-up it reports."""
    from benchmarks.harness import cell, markdown_table

    rows = []
    for r in results:
        for temperature in temperatures:
            run = r.runs["phases"].get(temperature)
            if run is None:
                continue
            s = run["seconds"] or {}
            stages = [s.get(k) for k in ("compile", "analyse", "probe", "colour")]
            structure = (None if any(v is None for v in stages[1:])
                         else sum(stages[1:]))
            step = run["step"] + ("" if run["seconds"] is not None
                                  else " (no exact ratios: no stages)")
            other = (None if s.get("total") is None or any(v is None for v in stages)
                     else s["total"] - sum(stages))
            rows.append([MODELS[r.name].title, temperature, cell(run["recommend"], ".2f"),
                         *(cell(v, ".2f") for v in stages), cell(structure, ".2f"),
                         cell(other, ".2f"), cell(s.get("total"), ".2f"), step,
                         run["colours"] if run["colours"] is not None else "-"])
    return markdown_table(["model", "caches", "recommend() s", "compile s", "analyse s",
                           "probe s", "colour s", "structure + colouring s",
                           "outside the stages s", "set-up total s", "step chosen",
                           "colours"], rows)


def split_table(results: list[ModelResult], temperatures: tuple[str, ...]) -> str:
    """The time to the first draw split at the start of ``pm.sample``'s draws loop."""
    from benchmarks.harness import cell, markdown_table

    rows = []
    for r in results:
        for temperature in temperatures:
            row = [MODELS[r.name].title, temperature]
            for kind in ("ours", "pymc"):
                run = r.runs[kind][temperature]
                row += [cell(run["wall"] - run["sampling"], ".2f"), cell(run["sampling"], ".2f")]
            rows.append(row)
    return markdown_table(["model", "caches", "ours: before the draws s",
                           "ours: 1+1 draws s", "PyMC: before the draws s",
                           "PyMC: 1+1 draws s"], rows)


def sampling_table(results: list[ModelResult], draws: int) -> str:
    """Warm sampling runs beside the warm time to the first draw."""
    from benchmarks.harness import cell, markdown_table

    rows = []
    for r in results:
        ours, pymc = r.sampling["ours"], r.sampling["pymc"]
        rows.append([MODELS[r.name].title, cell(_get(r, "ours", "warm", "wall"), ".2f"),
                     cell(ours["sampling"], ".2f"), cell(ours["wall"], ".2f"),
                     cell(_get(r, "pymc", "warm", "wall"), ".2f"),
                     cell(pymc["sampling"], ".2f"), cell(pymc["wall"], ".2f")])
    return markdown_table(["model", "ours: first draw s", f"ours: {draws}+{draws} sampling s",
                           "ours: wall s", "PyMC: first draw s",
                           f"PyMC: {draws}+{draws} sampling s", "PyMC: wall s"], rows)


def process_table(results: list[ModelResult], temperatures: tuple[str, ...]) -> str:
    """Imports, whole processes, and what the cold runs left in the caches."""
    from benchmarks.harness import cell, markdown_table

    rows = []
    for r in results:
        for temperature in temperatures:
            ours, pymc = r.runs["ours"][temperature], r.runs["pymc"][temperature]
            files = ours.get("cache_files")
            rows.append([MODELS[r.name].title, temperature,
                         cell(ours["imports"]["pymc"], ".2f"),
                         cell(ours["imports"]["pymc_discrete"], ".2f"),
                         cell(ours["builder_import"] + ours["build"], ".2f"),
                         cell(ours["process"], ".1f"),
                         cell(pymc["process"], ".1f"),
                         "-" if files is None else f"{files['numba']} / {files['pytensor']}"])
    return markdown_table(["model", "caches", "import pymc s", "import pymc_discrete s",
                           "build model s", "process, ours s", "process, PyMC s",
                           "cache files after ours (numba / PyTensor)"], rows)


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Budget:
    """Models and draws of one run size."""

    models: tuple[str, ...]
    draws: int  # draws and tuning draws of the sampling runs
    cold: bool  # cold and warm runs in fresh caches (else warm only, the machine's caches)


BUDGETS = {
    "full": Budget(("coal", "mixture", "ising50", "potts30", "ising100"), 1000, True),
    "quick": Budget(("ising50",), 100, True),
    "smoke": Budget(("ising6",), 20, False),
}


def main(quick: bool = False, smoke: bool = False) -> None:
    """Measure the models of the run size and write the section ``setup``."""
    from benchmarks.harness import provenance, size_name, write_section

    size = size_name(quick, smoke)
    b = BUDGETS[size]
    began = time.perf_counter()
    results = []
    for name in b.models:
        print(f"{name} ...", flush=True)
        results.append(measure_model(name, b.cold, b.draws))
    temperatures = ("cold", "new model", "warm") if b.cold else ("warm",)
    caches = ("cold and warm, each kind of measurement in its own fresh cache folders"
              if b.cold else
              "warm only, with the machine's own caches (no cold runs at this size)")
    text = f"""## Time to the first draw: set-up, cold and warm

{provenance("run_setup", size, minutes=(time.perf_counter() - began) / 60)}

Every number is from its own fresh Python process, one run per cell ({caches}).
**Cold**: `PYTENSOR_FLAGS=base_compiledir=<fresh folder>` and
`NUMBA_CACHE_DIR=<fresh folder>`, so PyTensor's C and numba caches and numba's cache of
the package's kernels start empty (a new user's first run); **new model**: a fresh
`base_compiledir` with a `NUMBA_CACHE_DIR` that the same measurement on an Ising 6x6
lattice filled first, so that every PyTensor graph (the model's, the package's batched
terms) is compiled anew while the package's own numba kernels, compiled once per
machine, are loaded (a model the machine has not seen before); **warm**: the cold
process again with the same folders. The times exclude the imports and the building of the model
(last table). **Ours**: `pmd.register()` and `pm.sample(draws=1, tune=1, chains=1,
cores=1)`; **PyMC**: the same call without `register()`. The difference is what the
package's set-up costs beyond PyMC's.

### Time to the first draw

{first_draw_table(results)}

Split at the start of the draws: "before the draws" is `register()` and `pm.sample`'s
set-up (the steps built: our recommendation and structure, PyTensor's rewriting and
compiling of the functions); "1+1 draws" is `pm.sample`'s own `sampling_time` for the
tuning draw and the draw. PyTensor's default linker here is NUMBA, which compiles a
function's machine code at its first call: cold, that is inside the draws.

{split_table(results, temperatures)}

### Where our set-up goes: `pmd.recommend()` and the exact-ratio stages

`pmd.recommend(<discrete free variables>, model=model)` in its own process; the stages
are those `rec.exact_ratios.setup_report["seconds"]` reports: compile (the elementwise
terms and their batched evaluation), analyse (the possible dependencies read off the
graph), probe (the terms evaluated at probe states), colour (sites of one colour share
no term); structure + colouring = analyse + probe + colour; "outside the stages" is the
rest of the set-up total (a one-site block skips the stages, analyse, probe and colour
reported as 0, and builds its one-colour structure there). recommend() also checks the
discrete block and, for a one-colour block, whether it can be summed out.

{phases_table(results, temperatures)}

### Set-up beside sampling (warm)

One chain of {b.draws} draws after {b.draws} tuning draws, with `register()` and without:
`sampling_time` (tuning draws and draws) and the wall time of `pm.sample` (set-up
included), beside
the warm time to the first draw above.

{sampling_table(results, b.draws)}

### Imports and whole processes

The imports and the model's building (with the import of its builder's module: for the
change point `benchmarks.applied_models`, which imports the benchmarks' harness and
ArviZ), not in the times above; the whole process from
the interpreter's start to its exit; and the files the run with `register()` left in its
numba cache folder (`NUMBA_CACHE_DIR`: the package's kernels, `kernels_*` and
`samcmc_*`) and in PyTensor's (`base_compiledir`: its C modules and numba-compiled
graphs).

{process_table(results, temperatures)}
"""
    write_section("setup", text)
    print(text)


if __name__ == "__main__":
    from benchmarks.harness import cli

    cli(main)
