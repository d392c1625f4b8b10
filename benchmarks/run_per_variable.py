"""Models written one scalar variable per site against the same models vectorised:
``pmd.register()`` and a plain ``pm.sample()`` on both, set-up counted.

The models (``benchmarks/per_variable_models.py``): a Gaussian hidden Markov chain of 1,000
steps (one ``pm.Categorical`` and one observed ``pm.Normal`` per step), an occupancy model
of 1,000 sites (one ``pm.Bernoulli`` and one observed row per site; again with the rows
given the model's dimension ``visit``, the user's remedy for PyMC's InferenceData of a
thousand observed rows) and a 30 x 30 Ising
lattice (one ``pm.Bernoulli`` per spin, one ``pm.Potential`` per edge), each also written
vectorised. Every run is a fresh Python process (``--child``), with the caches warm from an
unmeasured short run of the same phrasing before the first seed: ``pmd.register()``, then
``pm.sample(draws, tune, chains, cores=1, random_seed=seed, progressbar=False,
compute_convergence_checks=False)``. Measured:

* **set-up**: the wall time of ``pm.sample`` less the ``sampling_time`` PyMC records (its
  step assignment, the package's reading of the model, every compilation): the time to the
  first draw;
* **ESS/s**: the smallest bulk ESS (ArviZ) over the statistics of the model (the means and
  scale of the chain, the occupancy and detection probabilities, the lattice's
  magnetisation) over the whole ``pm.sample`` call, set-up included;
* **PyMC's InferenceData**: the seconds of PyMC's conversion of the draws to the
  InferenceData ``pm.sample`` returns (``pm.to_inference_data``, then the warning
  statistic dropped, as ``pm.sample`` does), timed in the same process on a repeat of the
  run with ``return_inferencedata=False``; part of the set-up above, and left out of both
  phrasings' times in a second ratio (xarray aligns every variable against the others,
  so a model with a variable per site pays for it);
* **r-hat**, and the agreement of every statistic's mean with the vectorised run of the
  same seed, ``|mean - mean_vec| / sqrt(MCSE^2 + MCSE_vec^2)``.

A run converged when its r-hat is at most 1.01 and it agrees within 4 MCSE. Reported per
model: the median over the seeds, with the spread, of the per-variable phrasing's ESS/s
against the vectorised one's (a seed where either did not converge counts as n/c), and of
the set-up of each. Beside them, PyMC's own cost on the per-variable phrasing at a quarter
of the sites (``model.compile_logp()`` and one evaluation, warm caches; PyMC's time grows
with the number of variables, so its time at the full size is at least this).

Run from the repository root: ``python -m benchmarks.run_per_variable`` (seeds 1 2 3, 2
chains x 500 draws after 500; ``--quick``: one seed, 100 sites, 200 + 200; ``--smoke``:
the chain of 12 steps alone, one seed, 2 chains of 30 + 30, no warm-up, for the tests).
Writes the section ``per_variable`` of ``benchmarks/RESULTS.md`` (at least 3 seeds; the
small sizes write to ``benchmarks/out/``).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time

import arviz as az
import numpy as np

from benchmarks.harness import (
    SeedOutcome,
    markdown_table,
    mean_mcse,
    provenance,
    ratio_over_seeds,
    result_line,
    rhat,
    run_fresh_process,
    size_name,
    spread_over_seeds,
    write_section,
)
from benchmarks.per_variable_models import KINDS, build, statistics

SIZES = {"hmm": 1000, "occupancy": 1000, "occupancy_visits": 1000, "ising": 30}
QUICK_SIZES = {"hmm": 100, "occupancy": 100, "occupancy_visits": 100, "ising": 10}
SMOKE_SIZES = {"hmm": 12, "occupancy": 12, "occupancy_visits": 12, "ising": 3}
MAX_RHAT, MAX_DEVIATION = 1.01, 4.0


def measure_child(spec: dict) -> dict:
    """One ``pm.sample`` call (or PyMC's compilation, ``spec["pymc_compile"]``) in this
    process, measured."""
    import pymc as pm

    import pymc_discrete as pmd

    kind, n, per_variable = spec["kind"], spec["n"], spec["per_variable"]
    model = build(kind, n, per_variable)
    if spec.get("pymc_compile"):
        start = time.perf_counter()
        logp = model.compile_logp()
        logp(model.initial_point())
        return {"seconds": time.perf_counter() - start}
    pmd.register()
    start = time.perf_counter()
    with model:
        idata = pm.sample(draws=spec["draws"], tune=spec["tune"], chains=spec["chains"],
                          cores=1, random_seed=spec["seed"], progressbar=False,
                          compute_convergence_checks=False)
    total = time.perf_counter() - start
    sampling = float(idata.sample_stats.attrs["sampling_time"])
    stats = statistics(kind, idata.posterior, n, per_variable)
    ess = min(_ess(a) for a in stats.values())
    return {"total": total, "setup": total - sampling, "ess": ess,
            "conversion": _pymcs_conversion(model, spec),
            "rhat": max(rhat(a) for a in stats.values()),
            "means": {k: list(mean_mcse(a)) for k, a in stats.items()}}


def _pymcs_conversion(model, spec: dict) -> float:
    """Seconds of PyMC's conversion of the draws to the InferenceData ``pm.sample``
    returns (``pm.to_inference_data``, then the warning statistic dropped), timed on a
    repeat of the run that returns PyMC's trace, after a full garbage collection."""
    import warnings

    import pymc as pm
    from pymc.util import drop_warning_stat

    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # return_inferencedata=False
        trace = pm.sample(draws=spec["draws"], tune=spec["tune"], chains=spec["chains"],
                          cores=1, random_seed=spec["seed"], progressbar=False,
                          compute_convergence_checks=False, return_inferencedata=False)
    # the full collection a registered pm.sample puts off falls after it: collected here,
    # not counted as the conversion's (it made the vectorised models' read 0.2 s, not 0.03)
    gc.collect()
    start = time.perf_counter()
    drop_warning_stat(pm.to_inference_data(trace, model=model, save_warmup=False))
    return time.perf_counter() - start


def _ess(a: np.ndarray) -> float:
    """Bulk ESS of a (chain, draw) array."""
    return float(az.ess(np.asarray(a, dtype=float)))


def run_child(spec: dict) -> dict:
    """``measure_child(spec)`` in a fresh Python process."""
    return run_fresh_process("benchmarks.run_per_variable", spec)


def _deviation(ours: dict, theirs: dict) -> float:
    return max(abs(m - m0) / np.hypot(s, s0) if np.hypot(s, s0) > 0 else 0.0
               for (m, s), (m0, s0) in ((ours[k], theirs[k]) for k in ours))


def _outcome(run: dict, reference: dict, conversion: bool = True) -> SeedOutcome:
    """The run's ESS per second of its ``pm.sample`` call (less PyMC's conversion to
    InferenceData where ``conversion`` is False), and why it did not converge."""
    if "error" in run:
        return SeedOutcome(float("nan"), "failed")
    deviation = _deviation(run["means"], reference["means"]) if "means" in reference else 0.0
    problem = None
    if run["rhat"] > MAX_RHAT:
        problem = f"r-hat {run['rhat']:.3f}"
    elif deviation > MAX_DEVIATION:
        problem = f"{deviation:.1f} MCSE off"
    seconds = run["total"] if conversion else run["total"] - run["conversion"]
    return SeedOutcome(run["ess"] / seconds, problem)


def main(argv: list[str] | None = None, quick: bool = False, smoke: bool = False) -> str:
    """Run the benchmark (module docstring); returns the section's markdown."""
    if argv is None:
        argv = ["--smoke"] if smoke else ["--quick"] if quick else []
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--models", default=None, help=",".join(KINDS))
    parser.add_argument("--seeds", type=int, nargs="+", default=None)
    parser.add_argument("--draws", type=int, default=None)
    parser.add_argument("--tune", type=int, default=None)
    parser.add_argument("--sites", type=int, default=None,
                        help="sites of the chain and the occupancy model (the lattice: the "
                             "nearest square), instead of 1,000")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    size = size_name(args.quick, args.smoke)
    kinds = args.models.split(",") if args.models else (
        ["hmm"] if args.smoke else list(KINDS))
    seeds = args.seeds or ([1] if args.smoke or args.quick else [1, 2, 3])
    draws = args.draws or {"smoke": 30, "quick": 200, "full": 500}[size]
    tune = args.tune or draws
    sizes = {"smoke": SMOKE_SIZES, "quick": QUICK_SIZES, "full": SIZES}[size]
    if args.sites:
        sizes = {"hmm": args.sites, "occupancy": args.sites, "occupancy_visits": args.sites,
                 "ising": int(round(np.sqrt(args.sites)))}
    rows = []
    for kind in kinds:
        n = sizes[kind]
        base = {"kind": kind, "n": n, "chains": 2}
        runs = {True: [], False: []}
        for per_variable in (False, True):
            if not args.smoke:  # the caches, warm
                run_child({**base, "per_variable": per_variable, "seed": 0, "draws": 20,
                           "tune": 20})
            for seed in seeds:
                run = run_child({**base, "per_variable": per_variable, "seed": seed,
                                 "draws": draws, "tune": tune})
                print(kind, "per-variable" if per_variable else "vectorised", seed,
                      {k: v for k, v in run.items() if k != "means"}, flush=True)
                runs[per_variable].append(run)
        quarter = max(2, n // 2) if kind == "ising" else max(2, n // 4)
        pymc = {}
        if not args.smoke:
            # the caches, warm: a small model of the same kind compiles the same ops
            run_child({"kind": kind, "n": 3 if kind == "ising" else 10,
                       "per_variable": True, "pymc_compile": True})
            pymc = run_child({"kind": kind, "n": quarter, "per_variable": True,
                              "pymc_compile": True})
        vec = [_outcome(r, {}) for r in runs[False]]
        per = [_outcome(r, ref) for r, ref in zip(runs[True], runs[False], strict=True)]
        vec_less = [_outcome(r, {}, conversion=False) for r in runs[False]]
        per_less = [_outcome(r, ref, conversion=False)
                    for r, ref in zip(runs[True], runs[False], strict=True)]
        sites = n * n if kind == "ising" else n
        quarter_sites = quarter * quarter if kind == "ising" else quarter
        rows.append([
            f"{kind}, {sites} sites", ratio_over_seeds(per, vec),
            spread_over_seeds([r.get("setup", np.nan) for r in runs[True]]),
            spread_over_seeds([r.get("setup", np.nan) for r in runs[False]]),
            spread_over_seeds([r.get("conversion", np.nan) for r in runs[True]]),
            spread_over_seeds([r.get("conversion", np.nan) for r in runs[False]]),
            ratio_over_seeds(per_less, vec_less),
            f"{pymc['seconds']:.0f} s at {quarter_sites} sites" if "seconds" in pymc else "-",
            spread_over_seeds([o.value for o in per], ".2g"),
            spread_over_seeds([o.value for o in vec], ".2g")])
    table = markdown_table(
        ["model", "per-variable / vectorised ESS/s (set-up counted)",
         "set-up per-variable (s)", "set-up vectorised (s)",
         "of the set-up, PyMC's InferenceData: per-variable (s)", "vectorised (s)",
         "ratio with PyMC's InferenceData left out of both",
         "PyMC: compile_logp of the per-variable model", "ESS/s per-variable",
         "ESS/s vectorised"], rows)
    minutes = (time.perf_counter() - started) / 60
    body = ("## Models written one variable per site\n\n"
            + provenance("run_per_variable", size, minutes=minutes,
                         command="python -m benchmarks.run_per_variable "
                         + " ".join(argv) if argv else None) + "\n\n"
            + f"{len(seeds)} seed(s), 2 chains x {draws} draws after {tune}, cores=1. "
            "Medians over the seeds with the spread.\n\n" + table + "\n")
    print(body)
    if len(seeds) >= 3 or size != "full":
        write_section("per_variable", body)
    return body


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        result = measure_child(json.loads(sys.argv[2]))
        print(result_line(result), flush=True)
    else:
        main(sys.argv[1:])
