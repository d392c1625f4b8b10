"""What the generated summed-out model costs against one summed out by hand: its log
density and gradient per evaluation, and its compilation.

On the applied models of ``benchmarks/applied_models.py`` that have a hand-written
marginal (``applied.marginal``), two variants: **ours**, ``pmd.marginalize(applied.model)``,
and **hand**, ``applied.marginal``. Each is measured in a fresh Python process (``--child``),
three processes a variant (the figures are the median over them, with the min-max), after
one unmeasured process of each variant has warmed PyTensor's and numba's disk caches; the
measured processes alternate between the variants, so that a change in the machine's
speed during the run falls on both sides.
In the child:

* **summing out**: the seconds of ``pmd.marginalize`` (ours only; the model's building is
  outside);
* **compile**: the seconds of ``model.logp_dlogp_function(ravel_inputs=True)`` (PyMC's
  compiled log density and gradient, PyMC's default mode: what PyMC's NUTS runs), and of
  ``nutpie.compile_pymc_model(model)`` when nutpie is installed;
* **per evaluation**: the log density and gradient at the model's initial point, called
  as PyMC's NUTS calls it (``ValueGradFunction.__call__`` on the raveled point), the
  median over 7 blocks of 2,000 calls, in microseconds.

Correctness beside speed: the two models' log densities (``model.compile_logp()``) are
compared at the initial point and at 4 points perturbed from it (seed 0); a hand-written
marginal may drop constant terms, so the check is that the difference is the same at every
point (to 1e-8, relative to the log density's size). Run from the repository root:
``python -m benchmarks.run_marginal_cost`` (``--quick``: occupancy and capture-recapture,
one process a variant; ``--smoke``: occupancy, one process a variant, no warm-up, 200 calls
a block; ``--models``).
Writes the section ``marginal_cost``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from benchmarks.harness import (
    markdown_table,
    provenance,
    result_line,
    run_fresh_process,
    size_name,
    write_section,
)

MODELS = ("occupancy", "capture", "mixture", "changepoint", "hmm", "sticky_hmm", "nmixture")
QUICK_MODELS = ("occupancy", "capture")
SMOKE_MODELS = ("occupancy",)


def _timed(function, *args) -> tuple[object, float]:
    began = time.perf_counter()
    out = function(*args)
    return out, time.perf_counter() - began


def measure_child(spec: dict) -> dict:
    """One variant of one model in this process (module docstring)."""
    import pymc_discrete as pmd
    from benchmarks.applied_models import BUILDERS

    applied = BUILDERS[spec["model"]]()
    out: dict = {}
    if spec["variant"] == "ours":
        model, out["summing"] = _timed(pmd.marginalize, applied.model)
    else:
        model = applied.marginal
    function, out["compile"] = _timed(lambda: model.logp_dlogp_function(ravel_inputs=True))
    function.set_extra_values({})
    start = model.initial_point()
    x = np.concatenate([np.ravel(start[v.name]) for v in model.continuous_value_vars])
    calls = spec["calls"]
    for _ in range(50):
        function(x)
    blocks = []
    for _ in range(7):
        began = time.perf_counter()
        for _ in range(calls):
            function(x)
        blocks.append((time.perf_counter() - began) / calls * 1e6)
    out["per_eval_us"] = float(np.median(blocks))
    try:
        import nutpie
    except ImportError:
        out["nutpie_compile"] = None
    else:
        _, out["nutpie_compile"] = _timed(nutpie.compile_pymc_model, model)
    logp = model.compile_logp()
    rng = np.random.default_rng(0)
    names = sorted(start)  # the same perturbation of the same variable in both models
    points = [start] + [{k: start[k] + rng.normal(0.0, 0.3, np.shape(start[k])) for k in names}
                        for _ in range(4)]
    out["logps"] = [float(logp(p)) for p in points]
    return out


def run_child(spec: dict) -> dict:
    """:func:`measure_child` in a fresh Python process."""
    return run_fresh_process("benchmarks.run_marginal_cost", spec)


def _median(values: list) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    med, lo, hi = np.median(values), min(values), max(values)
    return f"{med:.3g} ({lo:.3g}-{hi:.3g})" if len(values) > 1 else f"{med:.3g}"


def _same_density(ours: list[dict], hand: list[dict]) -> str:
    """Whether ours - hand is one constant over the points (every run's points alike)."""
    a, b = np.asarray(ours[0]["logps"]), np.asarray(hand[0]["logps"])
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return "no: a log density is not finite"
    gap = a - b
    spread = float(np.max(np.abs(gap - gap[0])))
    ok = spread <= 1e-8 * max(1.0, float(np.max(np.abs(a))))
    return (f"yes (differ by {gap[0]:.6g} at every point)" if ok
            else f"NO: differences spread by {spread:.3g}")


def main(argv: list[str] | None = None, quick: bool = False, smoke: bool = False) -> str:
    """Run the benchmark (module docstring); returns the section's markdown."""
    if argv is None:
        argv = ["--smoke"] if smoke else ["--quick"] if quick else []
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--models", default=None, help=",".join(MODELS))
    args = parser.parse_args(argv)
    began = time.perf_counter()
    size = size_name(args.quick, args.smoke)
    models = args.models.split(",") if args.models else list(
        {"smoke": SMOKE_MODELS, "quick": QUICK_MODELS, "full": MODELS}[size])
    repeats, calls = {"smoke": (1, 200), "quick": (1, 2000), "full": (3, 2000)}[size]
    rows = []
    for name in models:
        runs: dict[str, list[dict]] = {"ours": [], "hand": []}
        specs = {variant: {"model": name, "variant": variant, "calls": calls}
                 for variant in runs}
        if not args.smoke:
            for spec in specs.values():
                run_child(spec)  # the caches, warm
        # the variants alternate, so a change in the machine's speed during the run
        # (measured on this VM: 20% within minutes) falls on both sides of each ratio
        for _ in range(repeats):
            for variant, spec in specs.items():
                runs[variant].append(run_child(spec))
        for variant in runs:
            print(name, variant, runs[variant], flush=True)
        failed = [r["error"] for rs in runs.values() for r in rs if "error" in r]
        if failed:
            rows.append([name, f"failed: {failed[0]}"] + ["-"] * 6)
            continue
        ours, hand = runs["ours"], runs["hand"]
        ratio = [o["per_eval_us"] / h["per_eval_us"] for o, h in zip(ours, hand)]
        compile_ratio = [(o["compile"] + o["summing"]) / h["compile"] for o, h in zip(ours, hand)]
        rows.append([
            name,
            _median([r["per_eval_us"] for r in ours]), _median([r["per_eval_us"] for r in hand]),
            _median(ratio) + "x",
            _median([r["summing"] for r in ours]),
            f"{_median([r['compile'] for r in ours])} / {_median([r['compile'] for r in hand])}"
            f" ({_median(compile_ratio)}x with summing out)",
            f"{_median([r['nutpie_compile'] for r in ours])} / "
            f"{_median([r['nutpie_compile'] for r in hand])}",
            _same_density(ours, hand),
        ])
    table = markdown_table(
        ["model", "ours: logp + gradient, us", "hand: logp + gradient, us", "ours / hand",
         "summing out, s", "PyMC compile, s: ours / hand", "nutpie compile, s: ours / hand",
         "same density up to a constant"], rows)
    command = "python -m benchmarks.run_marginal_cost" + (" " + " ".join(argv) if argv else "")
    body = f"""## The generated summed-out model against one summed out by hand

{provenance("run_marginal_cost", size, minutes=(time.perf_counter() - began) / 60,
            command=command)}

`pmd.marginalize(model)` (ours) against the model summed out by hand (hand), each in
{repeats} fresh process(es) a variant after a warm-up process, alternating between the
variants; median (min-max) over them.
Per evaluation: the log density and gradient through PyMC's compiled function at the
initial point, the median of 7 blocks of {calls} calls. Compile: PyMC's
`logp_dlogp_function`; nutpie's `compile_pymc_model` beside it.

{table}
"""
    write_section("marginal_cost", body)
    print(body, flush=True)
    return body


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(result_line(measure_child(json.loads(sys.argv[2]))), flush=True)
    else:
        main(sys.argv[1:])
