"""Reproduce the optimal-scaling paper's experiments (section 6, Appendix D).

1. Efficiency curves (Figures 1-3): EJD against the acceptance rate from a sweep of fixed
   R, for LBP-R (Barker weights, gradient ratios, without replacement) and RWM-R on the
   Bernoulli (N = 800), Ising (50 x 50) and FHMM (L = 1000, K = 5) targets, configurations
   C1-C3 (the FHMM twice: as the paper writes it, and as its released code evaluates it,
   with exact ratios as there: :data:`FHMM_CODE`), with the theoretical curves and the optima 0.574 and 0.234 marked. The curves
   ``EJD = c a (-2 Phi^-1(a/2))^(2/3)`` (LBP) and ``EJD = c a (Phi^-1(a/2))^2`` (RWM) are
   eq. (5)-(8) and (20) of the paper written in terms of the acceptance rate a (with
   ``R = l N^(2/3)`` resp. ``R = l``); the constant c, which carries lambda, is fitted to
   the points by least squares.
2. Scaling (Figure 5): the tuned R of ALBP and ARWM and the ratio of their EJD against N
   on log-log axes, with least-squares slopes (theory: 2/3 for ALBP's R and the ratio,
   0 for ARWM's R).
3. Table 1 (C2): RWM-1, ARWM, LBP-1 and ALBP through ``pm.sample``: EJD, ESS and time.
4. The FHMM's EJD against the paper's Table 11 on the density of its code, over several
   simulations.

The sweeps drive the step methods' kernels directly (``step.kernel``: the M-H step
``pm.sample`` runs, without PyMC around it), which keeps the many short runs cheap.
Writes the section ``paper`` of ``benchmarks/RESULTS.md`` and
``benchmarks/paper_efficiency.png``, ``benchmarks/paper_scaling.png``. Run with
``python -m benchmarks.run_paper`` (``--quick``: C2 only, smaller sweeps, no FHMM in
Table 1; ``--smoke``: tiny sweeps, for the tests).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
import pymc as pm
from scipy.stats import norm

import pymc_discrete as pmd
from benchmarks.harness import (
    cli,
    format_table,
    markdown_table,
    measure,
    provenance,
    save_figure,
    size_name,
    subplots,
    write_section,
)
from pymc_discrete.adaptation import ScaleAdapter
from pymc_discrete.example_models import bernoulli_model, fhmm_model, ising_model

FHMM_SIGMA2 = {"C1": 2.0, "C2": 1.0, "C3": 0.5}  # Appendix D.3
TARGET = {"LBP": 0.574, "RWM": 0.234}


#: the FHMM as the paper's released code evaluates it (``ha0ransun/LBP_Scale``,
#: ``lbp/model/fhmm.py``): chains along time, the prior's sign flipped and its change
#: probability given as a logit (``fhmm_model(prior="paper_code")``), and LBP driven by
#: exact single-flip ratios (that code's ``model.change``), as there
FHMM_CODE = "FHMM (paper's code)"
#: EJD of the paper's Table 11 (FHMM, C2, ALBP with Barker weights, and ARWM) by L
PAPER_FHMM_EJD = {"ALBP": {200: 85.70, 1000: 242.01, 4000: 585.02},
                  "ARWM": {200: 4.41, 1000: 4.32, 4000: 4.40}}
#: the paper's RWM-1 acceptance (= its EJD) on the FHMM, C2, L = 1000 (Table 11)
PAPER_FHMM_RWM1 = 0.79
#: simulations of the code's FHMM scanned for the one as flat as the paper's (its W is
#: PyTorch's draw and cannot be recovered); and those also compared at L = 1000
FHMM_SCAN_SEEDS = tuple(range(8))
FHMM_COMPARED_SEEDS = (0, 1, 2)


def build(kind: str, size: int, config: str, seed: int = 0) -> pm.Model:
    """The paper's target ``kind`` ("Bernoulli", "Ising", "FHMM" or :data:`FHMM_CODE`)
    of the given size; ``seed`` is the simulation's seed of :data:`FHMM_CODE`."""
    if kind == "Bernoulli":
        return bernoulli_model(size, config)
    if kind == "Ising":
        return ising_model(size, config)
    if kind == FHMM_CODE:
        return fhmm_model(size, 5, FHMM_SIGMA2[config], seed=seed, prior="paper_code")
    # the Markov dependence of the paper's eq. (185): across the K components of a step
    return fhmm_model(size, 5, FHMM_SIGMA2[config], markov_axis="components")


class KernelChain:
    """LBP-R or RWM-R on a model, driven through the kernel of ALBP or ARWM
    (``step.kernel``: one M-H step at a given scale, no PyMC around it)."""

    def __init__(self, model: pm.Model, sampler: str, seed: int,
                 start: np.ndarray | None = None, proposal: str = "gradient") -> None:
        with model:
            step = (pmd.ALBP([model["x"]], proposal=proposal) if sampler == "LBP"
                    else pmd.ARWM([model["x"]]))
        self.sampler = sampler
        self.kernel = step.kernel
        self.n_sites = int(model.initial_point()["x"].size)
        self.rng = np.random.default_rng(seed)
        x = self.rng.integers(0, 2, self.n_sites) if start is None else start.copy()
        self.state = self.kernel.init(np.asarray(x, dtype=np.int64).ravel())

    def step_once(self, scale: float):
        self.state, info = self.kernel.step(self.state, scale, self.rng)
        return info

    def run(self, scale: float, n_steps: int) -> tuple[float, float]:
        """Mean acceptance probability and EJD (sites changed per step) of ``n_steps``
        steps at a fixed scale."""
        accept = jumps = 0.0
        for _ in range(n_steps):
            before = self.state.x
            info = self.step_once(scale)
            accept += info.accept_prob
            jumps += np.count_nonzero(self.state.x != before)
        return accept / n_steps, jumps / n_steps

    def tune(self, n_steps: int) -> float:
        """Tune R toward the sampler's target with the steps' own tuner; the frozen R."""
        upper = max(1.0, self.n_sites / 2)
        tuner = ScaleAdapter(TARGET[self.sampler], 1.0, 1.0, upper)
        tuner.start(n_steps)
        for _ in range(n_steps):
            tuner.update(self.step_once(tuner.scale).accept_prob)
        return tuner.scale


def equilibrium_start(model: pm.Model, n_steps: int, seed: int,
                      proposal: str = "gradient") -> np.ndarray:
    """A point near the typical set: the end of a tuned LBP chain from a random start.

    Random-walk chains take far longer to get there, and while they are out of
    equilibrium their acceptance rate (and so their tuned R) is much too high; every
    chain of the sweeps starts from this point instead.
    """
    chain = KernelChain(model, "LBP", seed, proposal=proposal)
    chain.run(chain.tune(n_steps), n_steps)
    return chain.state.x


def theory_shape(sampler: str, a: np.ndarray) -> np.ndarray:
    """EJD per unit of the fitted constant, as a function of the acceptance rate."""
    q = -norm.ppf(a / 2.0)
    return a * (2.0 * q) ** (2.0 / 3.0) if sampler == "LBP" else a * q**2


#: the sizes of the efficiency curves' targets (the paper's)
CURVE_SIZES = {"Bernoulli": 800, "Ising": 50, "FHMM": 1000, FHMM_CODE: 1000}


def efficiency_curves(configs, scales, burn: int, steps: int, fhmm_seed: int = 0,
                      sizes: dict[str, int] = CURVE_SIZES):
    """Fixed-R sweeps: {(model, config, sampler): (R, acceptance, EJD) arrays}."""
    points = {}
    for kind, size in sizes.items():
        for config in configs:
            model = build(kind, size, config, seed=fhmm_seed)
            start = equilibrium_start(model, burn, seed=1, proposal=proposal_of(kind))
            for label, sampler in ((kind, "LBP"), (kind, "RWM")):
                print(f"  efficiency {label} {config} {sampler}", flush=True)
                chain = KernelChain(model, sampler, seed=1, start=start,
                                    proposal=proposal_of(label))
                rows = []
                for r in scales[sampler]:
                    a, ejd = chain.run(float(r), steps)
                    rows.append((r, a, ejd))
                points[(label, config, sampler)] = np.array(rows)
    return points


def proposal_of(kind: str) -> str:
    """ALBP's source of local ratios on the target ``kind``."""
    return "exact" if kind == FHMM_CODE else "gradient"


def fit_constant(sampler: str, a: np.ndarray, ejd: np.ndarray) -> float:
    ok = (a > 0.01) & (a < 0.99)
    shape = theory_shape(sampler, a[ok])
    return float(shape @ ejd[ok] / (shape @ shape))


def plot_efficiency(points, configs) -> list[str]:
    kinds = ("Bernoulli", "Ising", "FHMM")
    fig, axes = subplots(2, 3, figsize=(15, 8))
    grid = np.linspace(0.005, 0.995, 400)
    lines = []
    for col, kind in enumerate(kinds):
        for row, sampler in enumerate(("LBP", "RWM")):
            ax = axes[row, col]
            shown = [(kind, "o", "-", "")]
            if kind == "FHMM" and (FHMM_CODE, configs[0], sampler) in points:
                shown.append((FHMM_CODE, "^", ":", ", paper's code"))
            for label, marker, style, suffix in shown:
                for config in configs:
                    r, a, ejd = points[(label, config, sampler)].T
                    c = fit_constant(sampler, a, ejd)
                    (dots,) = ax.plot(a, ejd, marker, ms=4,
                                      label=f"{config}{suffix} (sweep of R)")
                    ax.plot(grid, c * theory_shape(sampler, grid), style,
                            color=dots.get_color(), lw=1)
                    best = a[np.argmax(ejd)]
                    lines.append([label, config, f"{sampler}-R", f"{best:.3f}",
                                  TARGET[sampler], f"{c:.3g}"])
            ax.axvline(TARGET[sampler], color="k", ls="--", lw=1,
                       label=f"optimum {TARGET[sampler]}")
            ax.set_title(f"{kind}: {sampler}-R")
            ax.set_xlabel("acceptance rate")
            ax.set_ylabel("EJD")
            ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, "paper_efficiency.png", dpi=90)
    return markdown_table(["target", "config", "sampler", "acceptance at the best point",
                           "theory optimum", "fitted c"], lines)


def scaling(sizes, tune_steps: int, steps: int, fhmm_seed: int = 0):
    """Tuned R and EJD of ALBP and ARWM against N (configuration C2)."""
    out = []
    for kind, values in sizes.items():
        for size in values:
            model = build(kind, size, "C2", seed=fhmm_seed)
            row = {"kind": kind, "size": size}
            start = equilibrium_start(model, tune_steps, seed=2, proposal=proposal_of(kind))
            for sampler in ("LBP", "RWM"):
                print(f"  scaling {kind} {size} {sampler}", flush=True)
                chain = KernelChain(model, sampler, seed=2, start=start,
                                    proposal=proposal_of(kind))
                row["N"] = chain.n_sites
                row[f"R_{sampler}"] = chain.tune(tune_steps)
                row[f"a_{sampler}"], row[f"ejd_{sampler}"] = chain.run(row[f"R_{sampler}"], steps)
            out.append(row)
    return out


def plot_scaling(rows) -> tuple[str, str]:
    fig, axes = subplots(1, 2, figsize=(11, 4))
    lines, slopes = [], []
    for kind in dict.fromkeys(r["kind"] for r in rows):
        sel = [r for r in rows if r["kind"] == kind]
        n = np.array([r["N"] for r in sel], dtype=float)
        r_lbp = np.array([r["R_LBP"] for r in sel])
        r_rwm = np.array([r["R_RWM"] for r in sel])
        ratio = np.array([r["ejd_LBP"] / max(r["ejd_RWM"], 1e-12) for r in sel])
        s_r = np.polyfit(np.log(n), np.log(r_lbp), 1)[0]
        s_ratio = np.polyfit(np.log(n), np.log(ratio), 1)[0]
        s_rwm = np.polyfit(np.log(n), np.log(r_rwm), 1)[0]
        slopes.append((kind, s_r, s_rwm, s_ratio))
        axes[0].loglog(n, r_lbp, "o-", label=f"{kind} ALBP (slope {s_r:.2f})")
        axes[0].loglog(n, r_rwm, "s--", label=f"{kind} ARWM (slope {s_rwm:.2f})")
        axes[1].loglog(n, ratio, "o-", label=f"{kind} (slope {s_ratio:.2f})")
        for r, q in zip(sel, ratio):
            lines.append([kind, r["N"], f"{r['R_LBP']:.1f}", f"{r['R_RWM']:.2f}",
                          f"{r['ejd_LBP']:.2f}", f"{r['ejd_RWM']:.2f}", f"{q:.1f}"])
    for ax, title in zip(axes, ("tuned R", "EJD ratio ALBP / ARWM")):
        ax.set_xlabel("N (sites)")
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, "paper_scaling.png", dpi=90)
    table = markdown_table(["target", "N", "tuned R (ALBP)", "tuned R (ARWM)", "EJD ALBP",
                            "EJD ARWM", "ratio"], lines)
    slope_table = markdown_table(
        ["target", "slope of tuned R (ALBP)", "slope of tuned R (ARWM)",
         "slope of the EJD ratio"],
        [[k, f"{a:.2f}", f"{b:.2f}", f"{c:.2f}"] for k, a, b, c in slopes])
    return table, slope_table


def table1(draws: int, tune: int, fhmm_seed: int = 0,
           targets=(("Bernoulli", 800), ("Ising", 50), (FHMM_CODE, 1000))) -> dict[str, str]:
    """RWM-1, ARWM, LBP-1, ALBP through pm.sample on the C2 ``targets`` (kind, size)."""
    tables = {}
    for kind, size in targets:
        proposal = proposal_of(kind)
        samplers = [
            ("RWM-1", lambda m: pmd.ARWM([m["x"]], adapt=False)),
            ("ARWM", lambda m: pmd.ARWM([m["x"]])),
            ("LBP-1", lambda m: pmd.ALBP([m["x"]], adapt=False, proposal=proposal)),
            ("ALBP", lambda m: pmd.ALBP([m["x"]], proposal=proposal)),
        ]
        model = build(kind, size, "C2", seed=fhmm_seed)
        shape = model.initial_point()["x"].shape
        start = {"x": np.random.default_rng(0).integers(0, 2, shape)}
        rows = []
        for label, make in samplers:
            print(f"  table 1 {kind}: {label}", flush=True)
            rows.append(measure(model, label, make, draws=draws, tune=tune, seed=4,
                                initvals=start, warmup=100))
        tables[kind] = format_table(rows, baseline="RWM-1")
    return tables


def rwm1_acceptance(model: pm.Model) -> float:
    """RWM-1's acceptance under the paper's protocol: 10000 steps from a random start,
    the mean over the last half. For one flip per step it is also RWM-1's EJD."""
    chain = KernelChain(model, "RWM", seed=3)
    chain.run(1.0, 5000)
    return chain.run(1.0, 5000)[0]


def flatness_scan(seeds) -> dict[int, float]:
    """RWM-1's acceptance on the code's FHMM (L = 1000, C2) simulated with each seed."""
    out = {}
    for seed in seeds:
        print(f"  FHMM (paper's code) flatness, seed {seed}", flush=True)
        out[seed] = rwm1_acceptance(build(FHMM_CODE, 1000, "C2", seed=seed))
    return out


def fhmm_against_paper(scaling_rows, flatness: dict[int, float], chosen: int, other_seeds,
                       tune_steps: int, steps: int) -> str:
    """The paper's FHMM EJD (Table 11, C2) next to ours on the density of its code: by L
    for the chosen simulation (from the scaling rows) and at L = 1000 for other seeds."""
    lines = []
    rows = [dict(r, seed=chosen) for r in scaling_rows if r["kind"] == FHMM_CODE]
    for seed in other_seeds:
        model = build(FHMM_CODE, 1000, "C2", seed=seed)
        start = equilibrium_start(model, tune_steps, seed=2, proposal="exact")
        row = {"size": 1000, "seed": seed}
        for sampler in ("LBP", "RWM"):
            print(f"  FHMM (paper's code) seed {seed} {sampler}", flush=True)
            chain = KernelChain(model, sampler, seed=2, start=start, proposal="exact")
            row[f"R_{sampler}"] = chain.tune(tune_steps)
            row[f"a_{sampler}"], row[f"ejd_{sampler}"] = chain.run(row[f"R_{sampler}"], steps)
        rows.append(row)
    for row in rows:
        if row["size"] == 1000:
            rwm1 = flatness[row["seed"]]
        else:
            rwm1 = rwm1_acceptance(build(FHMM_CODE, row["size"], "C2", seed=row["seed"]))
        lines.append([row["size"], row["seed"], f"{rwm1:.2f}", f"{row['R_LBP']:.1f}",
                      f"{row['ejd_LBP']:.1f}", f"{PAPER_FHMM_EJD['ALBP'][row['size']]:.1f}",
                      f"{row['ejd_RWM']:.2f}", f"{PAPER_FHMM_EJD['ARWM'][row['size']]:.2f}"])
    return markdown_table(["L", "seed", "RWM-1 acceptance (paper: 0.79)", "tuned R (ALBP)",
                           "EJD ALBP", "paper EJD ALBP", "EJD ARWM", "paper EJD ARWM"], lines)


@dataclass(frozen=True)
class Budget:
    """What one run size sweeps and samples."""

    configs: tuple
    scales: dict
    burn: int  # steps of the tuned ALBP run every chain of a sweep starts after
    steps: int  # steps per R of a sweep
    curve_sizes: dict
    sizes: dict  # the targets' sizes against N
    tune_steps: int
    scaling_steps: int
    draws: int  # Table 1: draws and tuning draws per chain
    table1: tuple  # its targets (kind, size)
    fhmm: bool  # the FHMM against the paper's Table 11, and the scan for its simulation


BUDGETS = {
    "full": Budget(("C1", "C2", "C3"),
                   {"LBP": np.unique(np.geomspace(1, 800, 16).round()),
                    "RWM": np.array([1, 2, 3, 4, 5, 6, 8, 10, 12, 16])},
                   5000, 1000, CURVE_SIZES,
                   {"Bernoulli": (100, 800, 6400), "Ising": (20, 50, 100),
                    "FHMM": (200, 1000, 4000), FHMM_CODE: (200, 1000, 4000)},
                   3000, 2000, 3000, (("Bernoulli", 800), ("Ising", 50), (FHMM_CODE, 1000)),
                   True),
    # quick: no FHMM in Table 1 (its exact-ratio steps take ~10 s each to compile)
    "quick": Budget(("C2",), {"LBP": np.unique(np.geomspace(1, 400, 9).round()),
                              "RWM": np.array([1, 2, 3, 4, 6, 8])},
                    300, 200, CURVE_SIZES, {"Bernoulli": (100, 800, 6400), "Ising": (20, 50)},
                    600, 300, 500, (("Bernoulli", 800), ("Ising", 50)), False),
    "smoke": Budget(("C2",), {"LBP": np.array([1.0, 4.0]), "RWM": np.array([1, 2])},
                    20, 10, {"Bernoulli": 50, "Ising": 6, "FHMM": 20, FHMM_CODE: 20},
                    {"Bernoulli": (20, 50), "Ising": (5, 6)}, 30, 10, 30,
                    (("Bernoulli", 50), ("Ising", 6)), False),
}


def main(quick: bool = False, smoke: bool = False) -> None:
    size = size_name(quick, smoke)
    b = BUDGETS[size]
    configs, scales, burn, steps = b.configs, b.scales, b.burn, b.steps
    tune_steps, scaling_steps, draws = b.tune_steps, b.scaling_steps, b.draws
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        # the code's FHMM: the simulation whose posterior is as flat as the paper's
        flatness = flatness_scan(FHMM_SCAN_SEEDS) if b.fhmm else {}
        fhmm_seed = (min(flatness, key=lambda k: abs(flatness[k] - PAPER_FHMM_RWM1))
                     if flatness else 0)
        print("Efficiency curves ...", flush=True)
        points = efficiency_curves(configs, scales, burn, steps, fhmm_seed, b.curve_sizes)
        efficiency_table = plot_efficiency(points, configs)
        print("Scaling ...", flush=True)
        scaling_rows = scaling(b.sizes, tune_steps, scaling_steps, fhmm_seed)
        scaling_table, slope_table = plot_scaling(scaling_rows)
        others = [k for k in FHMM_COMPARED_SEEDS if k != fhmm_seed]
        fhmm_table = (fhmm_against_paper(scaling_rows, flatness, fhmm_seed, others,
                                         tune_steps, scaling_steps) if b.fhmm else "")
        print("Table 1 ...", flush=True)
        tables = table1(draws, draws, fhmm_seed, targets=b.table1)
    minutes = (time.perf_counter() - start) / 60
    fmt_flatness = (", ".join(f"{v:.2f}" for v in flatness.values())
                    or f"not scanned (--{size})")
    table_text = "\n\n".join(f"#### {kind} (C2)\n\n{t}" for kind, t in tables.items())
    tune = draws
    write_section("paper", f"""## The optimal-scaling paper reproduced (section 6, Appendix D)

{provenance("run_paper", size, minutes=minutes)}

Two FHMMs. **"FHMM"** is the model as the paper writes it (eq. (185)): the Markov chain
runs over the K = 5 components within each time step, so the posterior is a product over
time of independent 5-site blocks (`fhmm_model(..., markov_axis="components")`), sampled
by ALBP with gradient ratios. **"{FHMM_CODE}"** is what the paper's released code
(`ha0ransun/LBP_Scale`, `lbp/model/fhmm.py` and `lbp/sampling/adaptive_sampler.py`)
actually samples: chains along time, the prior's log-probabilities with the opposite sign
and the change probability passed as a logit (`logits = 1 - 0.8`), so each transition
favours staying by 0.2 nats instead of log 4 (`fhmm_model(..., prior="paper_code")`); and
its LBP uses exact single-flip ratios (`model.change`), so here `proposal="exact"`.

With gradient ratios the FHMM's tuned R stays at 3-4 whatever N: flipping site (l, k)
changes the Gaussian log-likelihood by a term the linearisation misses, h = -w_k^2 /
sigma^2 in the second derivative; with Barker weights a flipped site whose linearised
ratio is near 1 multiplies the M-H ratio by 1 / cosh(h / 2) (0.89 at h = -1), so the
acceptance falls geometrically in R and the tuner stops at R = O(1).

On the code's density the magnitudes hang on the simulated W (five standard normal
loadings, drawn by PyTorch's generator in the paper: not recoverable). RWM-1's acceptance
measures how flat a simulated posterior is, and the paper reports it (0.79 at L = 1000,
C2); over seeds {list(flatness)} ours is {fmt_flatness}. Every "{FHMM_CODE}" row below
uses the seed nearest the paper's, **seed {fhmm_seed}**, fixed before any ALBP run; the
last table also shows seeds {list(FHMM_COMPARED_SEEDS)} (and so how far the paper's
numbers move with W).

### Efficiency curves (Figures 1-3)

Fixed-R sweeps of LBP-R (Barker weights, sites without replacement) and
RWM-R, {steps} steps per R, every chain started at the end of a tuned ALBP run of
2 x {burn} steps (near the typical set; a random-walk chain out of equilibrium accepts far
too often); R in {scales['LBP'].astype(int).tolist()} (LBP) and {scales['RWM'].tolist()} (RWM). The
FHMM panels show both FHMMs: eq. (185) with gradient ratios (circles) and the
paper's code with exact ratios (triangles, dotted fits).
Lines: the paper's asymptotic efficiency as a function of the acceptance rate, with one
fitted constant per curve; dashed: the optima 0.574 and 0.234. "Acceptance at the best
point" is the acceptance of the sweep point with the largest EJD (the sweep is coarse,
so it brackets the optimum rather than hits it).

{efficiency_table}

![efficiency curves](paper_efficiency.png)

### Optimal scale and efficiency ratio against N (Figure 5, C2)

R tuned by the steps' own tuner ({tune_steps} steps toward 0.574 / 0.234, from the end
of a tuned ALBP run), then EJD over {scaling_steps} steps at the frozen R. Theory: ALBP's R and the EJD ratio grow as
N^(2/3), ARWM's R stays O(1).

{slope_table}

{scaling_table}

![scaling](paper_scaling.png)

### FHMM: the paper's Table 11 (EJD, C2) next to ours, on the density of its code

ALBP (Barker weights, exact ratios) and ARWM as in the scaling table; seed {fhmm_seed} at
every L (rows from the scaling table; one W at every L, as in the paper's code), other
seeds at L = 1000 (other simulations of W, b, x and y). RWM-1's acceptance follows the
paper's protocol (10000 steps from a random start, the last half). {"" if b.fhmm else f"Not run by --{size}."}

{fhmm_table}

### Table 1 (C2), through `pm.sample`

{draws} draws after {tune} tuning, 2 chains; RWM-1 and LBP-1 are ARWM and ALBP with the
scale fixed at 1. ESS is ArviZ's bulk ESS of the log density (and the median over sites).

{table_text}
""")


if __name__ == "__main__":
    cli(main)
