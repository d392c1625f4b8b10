"""The path auxiliary sampler (PAS, PAFS) and its adaptive path length.

1. Parity model (path auxiliary paper, section 5.2; p = 100, U in {1, 3, 5}): error
   ``||mean of the draws - 1/2||_2`` against the number of draws for PAS with its
   defaults, PAS (exact ratios, X fixed at 5 as the paper's PAS-X; X tuned for the jump
   per cost; X tuned toward acceptance 0.574), PAFS (X = 5), ALBP, LBP-1 (ALBP with R
   fixed at 1, the single-site informed sampler), ARWM and BinaryGibbsMetropolis; plot
   ``benchmarks/path_parity.png``.
2. Ising 50x50 (C2) and an FHMM posterior (L = 1000, K = 5): ESS/s and EJD of PAFS
   (gradient) and PAS (exact) next to ALBP and BinaryGibbsMetropolis.
3. Path length: EJD per second of PAFS on the Ising 50x50 for a sweep of fixed X, with
   the tuned X marked; plot ``benchmarks/path_length.png``.

Writes the sections ``path-parity``, ``path-compare`` and ``path-length`` of
``benchmarks/RESULTS.md``. Run with ``python -m benchmarks.run_path`` (``--quick``,
``--smoke``: smaller sizes; ``--parts=parity,compare,length``: some of the three).
"""

from __future__ import annotations

import sys
import time
import warnings
from dataclasses import dataclass

import numpy as np
import pymc as pm

import pymc_discrete as pmd
from benchmarks.harness import (
    format_table,
    markdown_table,
    measure,
    provenance,
    save_figure,
    size_name,
    subplots,
    write_section,
)
from pymc_discrete.example_models import fhmm_model, ising_model, parity_model

PARITY_SAMPLERS = {
    "PAS (defaults)": (lambda m: pmd.PAS([m["x"]]), True),
    "PAS (exact, X=5)": (
        lambda m: pmd.PAS([m["x"]], proposal="exact", path_length=5.0, adapt=False), False
    ),
    "PAS (exact, tuned X)": (lambda m: pmd.PAS([m["x"]], proposal="exact"), True),
    "PAS (exact, X tuned to 0.574)": (
        lambda m: pmd.PAS([m["x"]], proposal="exact", target_accept=0.574), True
    ),
    "PAFS (X=5)": (
        lambda m: pmd.PAS([m["x"]], proposal="gradient", path_length=5.0, adapt=False),
        False,
    ),
    "ALBP": (lambda m: pmd.ALBP([m["x"]]), True),
    "LBP-1": (lambda m: pmd.ALBP([m["x"]], adapt=False), True),
    "ARWM": (lambda m: pmd.ARWM([m["x"]]), True),
    "BinaryGibbsMetropolis": (lambda m: pm.BinaryGibbsMetropolis([m["x"]]), False),
}


def _running_error(draws: np.ndarray) -> np.ndarray:
    """``||running mean - 1/2||_2`` after every draw of one chain (draw, site)."""
    means = np.cumsum(draws, axis=0) / np.arange(1, draws.shape[0] + 1)[:, None]
    return np.sqrt(((means - 0.5) ** 2).sum(axis=1))


def parity(draws: int, tune: int, chains: int, p: int = 100,
           us: tuple[float, ...] = (1.0, 3.0, 5.0)) -> str:
    """Error of the mean estimate on the parity model; returns table lines and curves."""
    curves: dict[tuple[float, str], np.ndarray] = {}
    seconds: dict[tuple[float, str], float] = {}
    scales: dict[tuple[float, str], str] = {}
    for u in us:
        model = parity_model(p, u)
        for label, (make_step, tunes) in PARITY_SAMPLERS.items():
            print(f"  parity U={u:g}: {label}", flush=True)
            with model:
                start = time.perf_counter()
                idata = pm.sample(
                    step=make_step(model), draws=draws, tune=tune if tunes else 0,
                    chains=chains, cores=1, random_seed=3, progressbar=False,
                    compute_convergence_checks=False,
                )
                seconds[(u, label)] = time.perf_counter() - start
            stats = idata.sample_stats
            scales[(u, label)] = (f"{stats['scaling'].values[:, -1].mean():.1f}"
                                  if "scaling" in stats else "")
            x = idata.posterior["x"].values.astype(float)
            curves[(u, label)] = np.array([_running_error(x[c]) for c in range(chains)])
    lines = []
    for (u, label), errors in curves.items():
        final = errors[:, -1]
        lines.append([f"{u:g}", label, f"{final.mean():.3f} +- {final.std():.3f}",
                      f"{seconds[(u, label)]:.1f}", scales[(u, label)]])
    fig, axes = subplots(1, len(us), figsize=(14, 4), sharey=True, squeeze=False)
    axes = axes[0]
    steps = np.arange(1, draws + 1)
    for ax, u in zip(axes, us):
        for label in PARITY_SAMPLERS:
            errors = curves[(u, label)]
            mean, sd = errors.mean(axis=0), errors.std(axis=0)
            ax.plot(steps, mean, label=label)
            ax.fill_between(steps, np.maximum(mean - sd, 1e-3), mean + sd, alpha=0.2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"parity, p = {p}, U = {u:g}")
        ax.set_xlabel("draws after tuning")
    axes[0].set_ylabel("||mean estimate - 1/2||")
    axes[-1].legend()
    fig.tight_layout()
    save_figure(fig, "path_parity.png")
    return markdown_table(["U", "sampler", "error after all draws (mean +- sd over chains)",
                           "seconds (all chains)", "tuned scale"], lines)


def comparisons(draws: int, tune: int, exact_draws: int, gibbs_draws: int, side: int = 50,
                length: int = 1000) -> dict[str, str]:
    """ESS/s and EJD on the Ising lattice and the FHMM posterior."""
    tables = {}
    models = {
        f"Ising {side}x{side} (C2)": ising_model(side, "C2"),
        f"FHMM L={length}, K=5 (C2)": fhmm_model(length, 5, 1.0),
    }
    for name, model in models.items():
        shape = model.initial_point()["x"].shape
        start = {"x": np.random.default_rng(0).integers(0, 2, shape)}
        runs = [
            ("PAFS (gradient)", lambda m: pmd.PAS([m["x"]], proposal="gradient"), draws, tune),
            ("PAFS (gradient, 2 steps per draw)",
             lambda m: pmd.PAS([m["x"]], proposal="gradient", steps_per_draw=2), draws // 2,
             tune // 2),
            ("PAS (exact)", lambda m: pmd.PAS([m["x"]], proposal="exact"), exact_draws,
             exact_draws),
            ("ALBP (barker)", lambda m: pmd.ALBP([m["x"]]), draws, tune),
            ("BinaryGibbsMetropolis", lambda m: pm.BinaryGibbsMetropolis([m["x"]]),
             gibbs_draws, gibbs_draws // 2),
        ]
        rows = []
        for label, make_step, n_draws, n_tune in runs:
            print(f"  {name}: {label}", flush=True)
            rows.append(measure(model, label, make_step, draws=n_draws, tune=n_tune, seed=2,
                                initvals=start))
        tables[name] = format_table(rows, baseline="BinaryGibbsMetropolis")
    return tables


def path_length_sweep(draws: int, tune: int, lengths: tuple[float, ...], side: int = 50):
    """EJD per second of PAFS with fixed X against the tuned X on the Ising lattice."""
    model = ising_model(side, "C2")
    start = {"x": np.random.default_rng(0).integers(0, 2, (side, side))}
    fixed = []
    for x_len in lengths:
        print(f"  path length sweep: X = {x_len:g}", flush=True)
        r = measure(model, f"X={x_len:g}",
                    lambda m, x_len=x_len: pmd.PAS([m["x"]], proposal="gradient",
                                                   path_length=x_len, adapt=False),
                    draws=draws, tune=tune, seed=5, initvals=start)
        fixed.append((x_len, r))
    print("  path length sweep: tuned", flush=True)
    tuned = measure(model, "tuned", lambda m: pmd.PAS([m["x"]], proposal="gradient"),
                    draws=draws, tune=tune,
                    seed=5, initvals=start)
    lines = []
    for x_len, r in fixed + [(tuned.scale, tuned)]:
        name = f"{x_len:.1f} (tuned)" if r is tuned else f"{x_len:g}"
        lines.append([name, f"{r.accept:.3f}", f"{r.ejd:.1f}", f"{r.time_per_draw_ms:.3f}",
                      f"{r.ejd / r.time_per_draw_ms * 1e3:.0f}"])
    fig, ax = subplots(figsize=(6, 4))
    xs = [x for x, _ in fixed]
    ax.plot(xs, [r.ejd / r.time_per_draw_ms * 1e3 for _, r in fixed], "o-", label="fixed X")
    ax.axvline(tuned.scale, color="k", ls="--", label=f"tuned X = {tuned.scale:.0f}")
    ax.set_xscale("log")
    ax.set_xlabel("mean path length X")
    ax.set_ylabel("EJD per second")
    ax.set_title(f"PAFS on the Ising {side}x{side} (C2)")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, "path_length.png")
    best = max(fixed, key=lambda item: item[1].ejd / item[1].time_per_draw_ms)
    table = markdown_table(["X", "acceptance", "EJD", "ms/draw", "EJD per second"], lines)
    return table, tuned, best


PARTS = ("parity", "compare", "length")


@dataclass(frozen=True)
class Budget:
    """Draws per chain of one run size."""

    parity_draws: int
    parity_tune: int
    parity_chains: int
    parity_sites: int
    us: tuple  # the parity model's U
    draws: int  # PAFS and ALBP (as many tuning draws)
    exact_draws: int  # PAS with exact ratios
    gibbs_draws: int
    side: int  # the Ising lattice of the comparison and the sweep
    length: int  # the FHMM's
    sweep: tuple
    sweep_draws: int


BUDGETS = {
    "full": Budget(20000, 1000, 3, 100, (1.0, 3.0, 5.0), 10000, 200, 150, 50, 1000,
                   (1.5, 2, 4, 8, 16, 32, 64, 128, 256, 512), 1500),
    "quick": Budget(400, 150, 2, 100, (1.0, 3.0, 5.0), 300, 50, 10, 50, 1000, (1.5, 8, 64, 256), 300),
    "smoke": Budget(40, 20, 2, 12, (3.0,), 40, 10, 4, 8, 30, (1.5, 8), 30),
}


def main(quick: bool = False, smoke: bool = False, parts: tuple[str, ...] = PARTS) -> None:
    size = size_name(quick, smoke)
    b = BUDGETS[size]
    parity_draws, parity_tune, parity_chains = b.parity_draws, b.parity_tune, b.parity_chains
    draws, tune, exact_draws, gibbs_draws = b.draws, b.draws, b.exact_draws, b.gibbs_draws
    sweep, sweep_draws = b.sweep, b.sweep_draws
    head = provenance("run_path", size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        if "parity" in parts:
            print("Parity model ...", flush=True)
            parity_table = parity(parity_draws, parity_tune, parity_chains, b.parity_sites, b.us)
            write_section("path-parity", f"""## PAS: parity model (p = {b.parity_sites}), error of the mean estimate

{head}

`pi(x) ~ exp(-U (sum x mod 2))`, exact mean 1/2 at every site; {parity_chains} chains of
{parity_draws} draws (after {parity_tune} tuning draws for the adaptive samplers) from the
all-zeros state. LBP-1 is ALBP with R fixed at 1 (every single-site move changes the
parity, so it is accepted with probability about e^-U). BinaryGibbsMetropolis sweeps
all {b.parity_sites} sites per draw, so its draws cost {b.parity_sites} log density evaluations. PAS (exact,
X=5) is the paper's PAS-5. PAS tunes X for the expected jump per unit of cost (longer
against shorter paths of the same X); tuning X toward an acceptance rate of 0.574 fails
here: odd paths change the parity and are rejected, so the acceptance *rises* with X
(from e^-U at X = 1 toward 1/2) and the tuner drives X to its lower bound 1.5, close to
the single-site sampler; the step warns (`TuningWarning`) and the row "PAS (exact, X
tuned to 0.574)" shows the cost. PAFS linearises at x, where flipping a site back looks
e^U better than any other move, so its even paths mostly return to x; PAS's default
`proposal="auto"` sees it in a trial (jump per second at X = 4) and uses exact ratios
along the path, here from the relaxation's gradient, whose single-site ratios are exact
for this multilinear model.

{parity_table}

![parity](path_parity.png)
""")
        if "compare" in parts:
            print("Ising and FHMM ...", flush=True)
            tables = comparisons(draws, tune, exact_draws, gibbs_draws, b.side, b.length)
            comparison_text = "\n\n".join(f"### {name}\n\n{table}"
                                           for name, table in tables.items())
            write_section("path-compare", f"""## PAS: ESS per second against PyMC's Gibbs sampler

{head}

PAFS and ALBP: {draws} draws after {tune} tuning; PAS (exact ratios at every point of
the path, one batched evaluation of the model's terms per move): {exact_draws} after
{exact_draws}; BinaryGibbsMetropolis: {gibbs_draws} after {gibbs_draws // 2}; 2 chains,
same random start. `R` is the tuned scale: R for ALBP, the mean path length X for PAS.
"2 steps per draw" runs two M-H steps per PyMC draw (`steps_per_draw=2`, half the draws
and tuning draws, so the same number of M-H steps): it spreads PyMC's per-draw overhead
(about 0.1 ms here, a third of a PAFS draw) over two steps.

{comparison_text}
""")
        if "length" in parts:
            print("Path length sweep ...", flush=True)
            sweep_table, tuned, best = path_length_sweep(sweep_draws, sweep_draws, sweep, b.side)
            write_section("path-length", f"""## PAS: tuned path length against the best fixed one (Ising {b.side}x{b.side}, PAFS)

{head}

{sweep_draws} draws after {sweep_draws} tuning per chain (tuning only moves X in the
"tuned" row, as PAS does by default: for the expected jump per unit of cost). The tuned
X is {tuned.scale:.1f}; the fixed X with the largest EJD per second is {best[0]:g}.

{sweep_table}

![path length](path_length.png)
""")


if __name__ == "__main__":
    chosen = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--parts=")), None)
    main(quick="--quick" in sys.argv, smoke="--smoke" in sys.argv,
         parts=tuple(chosen.split(",")) if chosen else PARTS)
