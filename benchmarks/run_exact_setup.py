"""Set-up time of ``proposal="exact"`` against the number of sites (issue: exact-ratio
set-up was quadratic).

``ExactRatios`` finds which elementwise terms of the log density each site changes. It
used to move every site on its own at each probe point and evaluate all M ~ N terms
each time: O(N M) per probe. It now reads the sites each term may depend on off the
graph and probes whole groups of sites at once: (groups + 1) batched evaluations per
probe. This script measures, on two sparse models from 10^3 to 10^5 sites,

* an Ising lattice (Bernoulli(0.5) prior, field and nearest-neighbour couplings as
  ``pm.Potential`` sums: :func:`pymc_discrete.example_models.ising_model`), and
* indicators in a Gaussian likelihood, one observation per site
  (``g_i ~ Bernoulli(w)``, ``y_i ~ N(mu g_i, 1)``, w and mu continuous),

the set-up stages of ``ExactRatios`` (compiling the batched terms, reading the
dependencies off the graph, probing, colouring), the whole ``pmd.ALBP(...,
proposal="exact")`` construction, and the same with the code before the change (git
revision ``BASELINE``, extracted to a temporary directory and run in a child process)
at the two smallest sizes. Every measurement runs in a fresh process, after a warm-up
process that fills PyTensor's compilation cache (first-time compilation is not what
changed, and would otherwise dominate). The slope of log(time) against log(N) is fitted
over the sizes of each model.

Writes the section ``exact_setup`` of ``benchmarks/RESULTS.md``. Run with
``python -m benchmarks.run_exact_setup`` (``--quick``: up to ~10^4 sites, baseline at
~10^3 only).
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

#: the revision before the grouped set-up (site-by-site probing)
BASELINE = "d51aff2"

#: lattice sides (N = side^2) and indicator counts
ISING_SIDES = (32, 100, 178, 316)
SIGNAL_SIZES = (1000, 10000, 31623, 100000)


def signal_model(n: int):
    """n indicators, each with one Gaussian observation of mean ``mu g_i``."""
    import pymc as pm

    rng = np.random.default_rng(0)
    data = rng.normal(np.where(rng.random(n) < 0.1, 3.0, 0.0), 1.0)
    with pm.Model() as model:
        w = pm.Beta("w", 1, 1)
        mu = pm.HalfNormal("mu", 5)
        g = pm.Bernoulli("g", w, shape=n)
        pm.Normal("y", mu=mu * g, sigma=1, observed=data)
    return model


def _child(model_name: str, size: int) -> dict:
    """Build ALBP(proposal="exact") once and report its set-up (in this process)."""
    import pymc_discrete as pmd
    from pymc_discrete.example_models import ising_model
    from pymc_discrete.pymc import exact as exact_module

    model = ising_model(size) if model_name == "ising" else signal_model(size)
    var = model["x"] if model_name == "ising" else model["g"]
    discover = {}
    if not hasattr(exact_module.ExactRatios, "setup_report"):  # the baseline: time _discover
        original = exact_module.ExactRatios._discover

        def timed(self, *args, **kwargs):
            start = time.perf_counter()
            try:
                return original(self, *args, **kwargs)
            finally:
                discover["seconds"] = time.perf_counter() - start

        exact_module.ExactRatios._discover = timed
    start = time.perf_counter()
    step = pmd.ALBP([var], model=model, proposal="exact")
    albp = time.perf_counter() - start
    exact = step._logp_and_ratios
    report = dict(getattr(exact, "setup_report", {}))
    seconds = report.pop("seconds", {"discover": discover.get("seconds", float("nan"))})
    return {"n": int(exact.n_sites), "terms": int(exact.n_terms),
            "colours": int(exact.structure.n_colours), "albp": albp, "seconds": seconds,
            **{k: v for k, v in report.items() if k in ("method", "groups", "rows")},
            "source": str(Path(pmd.__file__).parent)}


def _run_child(model_name: str, size: int, package_root: Path) -> dict:
    """Measure in a fresh process that imports ``pymc_discrete`` from ``package_root``
    (ROOT, or the baseline extracted by :func:`_baseline_tree`).

    The child runs this file by its path, not with ``-m``: then ``sys.path[0]`` is
    ``benchmarks/`` (no package there) and ``PYTHONPATH`` comes next, ahead of the
    installed (editable) package, so ``package_root`` decides which code is measured.
    With ``-m`` the current directory would come first and the working tree would
    shadow the baseline. The child's part of this module imports nothing from
    ``benchmarks`` for the same reason (the baseline directory holds only the package).
    """
    env = dict(os.environ, PYTHONPATH=str(package_root))
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", model_name, str(size)],
        check=True, capture_output=True, text=True, env=env,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    expected = (Path(package_root) / "pymc_discrete").resolve()
    if Path(result["source"]).resolve() != expected:
        raise RuntimeError(f"the child imported pymc_discrete from {result['source']}, "
                           f"not from {expected}")
    return result


def _baseline_tree() -> tempfile.TemporaryDirectory:
    """The package at BASELINE, extracted next to nothing else (the working tree is
    left alone)."""
    tmp = tempfile.TemporaryDirectory(prefix="pmd-baseline-")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", BASELINE, "pymc_discrete"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", tmp.name], input=archive, check=True)
    return tmp


def _slope(ns, times) -> float:
    return float(np.polyfit(np.log(ns), np.log(times), 1)[0])


def _fmt(x: float) -> str:
    return "-" if x is None or not np.isfinite(x) else (f"{x:.2f}" if x < 100 else f"{x:.0f}")


def measure(model_name: str, sizes, baseline_sizes, baseline_root: Path | None) -> tuple:
    rows, new, old = [], [], []
    for size in sizes:
        print(f"{model_name} {size}: warm-up", flush=True)
        _run_child(model_name, size, ROOT)  # fills the compilation cache
        r = _run_child(model_name, size, ROOT)
        s = r["seconds"]
        discovery = s["analyse"] + s["probe"] + s["colour"]
        new.append((r["n"], s["total"], discovery, r["albp"]))
        base = None
        if baseline_root is not None and size in baseline_sizes:
            print(f"{model_name} {size}: baseline", flush=True)
            base = _run_child(model_name, size, baseline_root)
            old.append((base["n"], base["seconds"]["discover"]))
        rows.append(
            f"| {r['n']} | {r['terms']} | {r['groups']} | {r['colours']} | {r['rows']} | "
            f"{_fmt(s['compile'])} | {_fmt(s['analyse'])} | {_fmt(s['probe'])} | "
            f"{_fmt(s['colour'])} | {_fmt(s['total'])} | {_fmt(r['albp'])} | "
            f"{_fmt(base['seconds']['discover']) if base else '-'} | "
            f"{_fmt(base['albp']) if base else '-'} |"
        )
        print(rows[-1], flush=True)
    return rows, new, old


def main(quick: bool = False) -> None:
    # imported here, not at the top: the child processes (this file run by its path, see
    # _run_child) cannot import the benchmarks package
    from benchmarks.harness import machine_description, write_section

    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = "python -m benchmarks.run_exact_setup" + (" --quick" if quick else "")
    ising_sides = ISING_SIDES[:2] if quick else ISING_SIDES
    signal_sizes = SIGNAL_SIZES[:2] if quick else SIGNAL_SIZES
    tree = _baseline_tree()
    baseline_root = Path(tree.name)
    header = ("| N | terms M | groups | colours | rows evaluated | compile s | analyse s | "
              "probe s | colour s | ExactRatios s | ALBP() s | before: discovery s | "
              "before: ALBP() s |\n" + "|---" * 13 + "|")
    sections, slopes = [], []
    for name, sizes, label in (
        ("ising", ising_sides, "Ising lattices (C2), 32x32 to 316x316"),
        ("signal", signal_sizes, "Indicators in a Gaussian likelihood (one observation a site)"),
    ):
        baseline_sizes = sizes[:1] if quick else sizes[:2]
        rows, new, old = measure(name, sizes, baseline_sizes, baseline_root)
        ns = [n for n, *_ in new]
        slope_total = _slope(ns, [t for _, t, _, _ in new])
        slope_disc = _slope(ns, [d for _, _, d, _ in new])
        slope_albp = _slope(ns, [a for *_, a in new])
        text = (f"### {label}\n\n{header}\n" + "\n".join(rows) + "\n\n"
                f"Log-log slope against N: ExactRatios set-up **{slope_total:.2f}**, its "
                f"discovery (analyse + probe + colour) **{slope_disc:.2f}**, the whole "
                f"`ALBP()` construction **{slope_albp:.2f}**.")
        if len(old) >= 2:
            text += (f" Before the change, the discovery's slope over "
                     f"N = {old[0][0]}..{old[-1][0]} was "
                     f"**{_slope([n for n, _ in old], [t for _, t in old]):.2f}**.")
        sections.append(text)
        slopes.append((name, slope_total, slope_disc, slope_albp))
    tree.cleanup()
    body = "\n\n".join(sections)
    text = f"""## Exact-ratio set-up against N (grouped discovery of the term structure)

Produced by `{command}` on {stamp}.
Machine: {machine_description()}.

`pmd.ALBP([x], proposal="exact")` on sparse models. Columns: the number of elementwise
terms M; the groups of sites probed together (sites that share no term the graph says
they may depend on) and the colours of the final structure; the batched term
evaluations (rows) the discovery made; `ExactRatios`' stages in seconds (compiling the
batched terms, reading the possible dependencies off the graph, probing, colouring) and
its total; the whole `ALBP()` construction (it also checks the ratios against single
flips at up to 200 sites). "before" is git revision `{BASELINE}` (every site probed on
its own: N + 1 rows of M terms per probe point) at the smaller sizes: its discovery
(probing + colouring) and its `ALBP()`. Each number is from one fresh process after a
warm-up process (PyTensor's compilation cache is warm; a first-ever compilation of the
batched terms takes 5-60 s more, whatever the discovery).

{body}
"""
    write_section("exact_setup", text)
    print(text)


if __name__ == "__main__":
    if "--child" in sys.argv:  # started by _run_child, with PYTHONPATH naming the package
        i = sys.argv.index("--child")
        name, size = sys.argv[i + 1], int(sys.argv[i + 2])
        print(json.dumps(_child(name, size)))
    else:
        main(quick="--quick" in sys.argv)
