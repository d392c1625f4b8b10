"""The same lattice written the ways users write it: does ``register()`` read the same
structure, and does its lead over PyMC's default, and over NumPyro's ``DiscreteGibbs``,
hold in every phrasing?

An Ising lattice (couplings 0.25 between neighbours, a field ``alpha ~ N(0, 0.1^2)``)
whose field is written as ``pt.sum(alpha * s)``, ``pt.dot(alpha, s)``, ``alpha @ s`` or
``pt.einsum``, and whose couplings are written as slices of the grid or as a gathered
edge list; a Potts lattice (K = 3, agreements of neighbours) written with slices and
``pt.eq``, an edge list, or one-hot rows ``pt.eye(K)[z]``. For each phrasing:
``pmd.register()`` and a plain ``pm.sample`` (2 chains one after the other, ``cores=1``),
the step it chose and the number of colours. Beside it, on each lattice, two baselines
(every sampler, and every phrasing, runs its seeds in a fresh Python process of its
own: what a run leaves in a process slowed the next one's sampling by up to a fifth):

* PyMC's default: the same plain ``pm.sample`` without ``register()``, on the first
  phrasing of each lattice;
* NumPyro's standalone ``numpyro.infer.DiscreteGibbs`` kernel on the same density written
  in NumPyro (:func:`numpyro_ising`, :func:`numpyro_potts`; checked against PyMC's log
  density at random states before anything is timed, :func:`density_check`). One MCMC
  iteration is one sweep that visits every site once in a fresh random order (a random
  permutation per sweep, the kernel's only order: not a systematic scan) and draws it
  from its exact conditional (the kernel's default proposal, ``random_walk=False,
  modified=False``), computed from the whole model's log density K - 1 times per site;
  the sweep is one JAX-compiled loop, at JAX's default precision (float32). 2 chains,
  one after the other, with as many warm-up iterations as PyMC's tuning draws.

Measured for every run: the median over sites of ArviZ's bulk ESS, and the bulk ESS of
the log density of each draw (PyMC's ``model.compile_logp()`` of the lattice's first
phrasing, evaluated after the run and not timed, for NumPyro's draws too), each divided
by the run's sampling time; the largest r-hat over sites. Each run's time is split in
two, set-up (compilation) and sampling (tuning or warm-up, and draws):

* ``pm.sample`` (ours and PyMC's default), from a freshly built model: sampling is the
  ``sampling_time`` PyMC measures around its loop over the tuning draws and draws of
  both chains; set-up is the rest of the call (building the steps: reading the
  structure, PyTensor's rewriting and compiling; the initial point; the conversion of
  the draws);
* NumPyro: each chain is one ``MCMC.run`` (``num_chains=1``: the kernel's
  initialisation, warm-up and draws) until its draws are ready; set-up is the time JAX
  spent tracing, lowering and compiling in it, sampling the rest (:func:`numpyro_runs`).
  A warm-up run of the same MCMC object comes first, unmeasured, but does not make the
  measured runs compile-free: ``MCMC.run`` compiles its sampling loop again at every
  call (about 0.3 s a chain here), so that time is measured by JAX's own monitoring
  events.

ESS per second is per second of sampling for both, compilation left out of both, the
package's tuning left in. The log density's ratio against NumPyro is also given per
second of the whole run (set-up included on both sides), where PyTensor's compilation
and the structure reading count against the package.

Ratios ``ours / PyMC's default`` (median site) and ``ours / NumPyro`` (median site and
log density) are the median (min-max) over the seeds in which both runs converged
(largest r-hat over sites at most :data:`RHAT_MAX`; a run that did not is marked and
never counted as a speed-up). Correctness beside the speed: the largest ``|mean_ours - mean_NumPyro| /
sqrt(MCSE_ours^2 + MCSE_NumPyro^2)`` over sites (and over the K - 1 free category
frequencies of a Potts site), the chains of every seed pooled; above :data:`Z_MAX` the
two disagree and the row says so.

Run with ``python -m benchmarks.run_phrasings [--quick | --smoke] [--large]``; writes
the section ``phrasings`` of ``benchmarks/RESULTS.md``. ``--large`` adds a 50 x 50
Ising lattice (2,500 sites; 24 x 24 with ``--quick``) in its two main phrasings (field as
a sum and as a dot product), with both baselines. It is a flag, not part of the full run,
because PyMC's default and NumPyro both evaluate the whole model once per site, so
their sweeps cost N^2: PyMC's default takes about 85 ms a sweep of the 50 x 50 Ising
lattice on the 2-core VM (the ``numpyro`` section of RESULTS.md), some 6 minutes a seed
at 2 x 2000 iterations, and NumPyro a few minutes a seed more: the flag adds roughly
25 minutes (an estimate, not a measurement) to a full run of about 12 without it.

NumPyro and JAX are benchmark-only dependencies (``pip install -e .[bench]``); without
them the NumPyro rows and ratios say "not installed" and the rest runs as before.
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt

import pymc_discrete as pmd
from benchmarks.harness import (
    SeedOutcome,
    assigned_step,
    cli,
    logp_trace,
    markdown_table,
    numpyro_available,
    numpyro_versions,
    provenance,
    ratio_over_seeds,
    release_compiled_jax,
    size_name,
    spread_over_seeds,
    step_name,
    write_section,
)

K = 3
COUPLING = 0.25
#: chains of every run, one after the other
CHAINS = 2
#: the largest r-hat over sites of a run that converged
RHAT_MAX = 1.01
#: the largest |difference of site means| / combined MCSE that counts as agreement
Z_MAX = 5.0
#: the log densities of PyMC and NumPyro may differ by a constant and by float32 rounding
DENSITY_TOLERANCE = 1e-2
#: JAX key of NumPyro's unmeasured first chain (the measured runs split the seeds' keys)
COMPILE_KEY = 0
NUMPYRO = "NumPyro DiscreteGibbs"
NOT_INSTALLED = "not installed"


def _edges(side: int) -> tuple[np.ndarray, np.ndarray]:
    grid = np.arange(side * side).reshape(side, side)
    return (np.r_[grid[1:].ravel(), grid[:, 1:].ravel()],
            np.r_[grid[:-1].ravel(), grid[:, :-1].ravel()])


def ising_fields(side: int) -> np.ndarray:
    """The field ``alpha`` of the Ising lattice, ``N(0, 0.1^2)`` per site (seed 0)."""
    return 0.1 * np.random.default_rng(0).normal(size=side * side)


def ising(side: int, field: str, couplings: str) -> pm.Model:
    """The Ising lattice with its field and couplings written as named.

    Parameters
    ----------
    side : int
        The lattice is ``side x side``, its sites ``x`` in {0, 1}, spins ``s = 2x - 1``.
    field : str
        "sum", "dot", "matmul" or "einsum".
    couplings : str
        "slices" (of the grid) or "edge list".
    """
    n = side * side
    alpha = ising_fields(side)
    src, dst = _edges(side)
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.5, shape=n)
        s = 2 * x - 1
        if couplings == "slices":
            grid = s.reshape((side, side))
            agree = (grid[1:] * grid[:-1]).sum() + (grid[:, 1:] * grid[:, :-1]).sum()
        else:
            agree = pt.sum(s[src] * s[dst])
        terms = {"sum": lambda: pt.sum(alpha * s), "dot": lambda: pt.dot(alpha, s),
                 "matmul": lambda: alpha @ s, "einsum": lambda: pt.einsum("i,i->", alpha, s)}
        pm.Potential("lattice", COUPLING * agree + terms[field]())
    return model


def potts(side: int, phrasing: str) -> pm.Model:
    """A Potts lattice of K labels whose agreements are written as named.

    Parameters
    ----------
    side : int
        The lattice is ``side x side``.
    phrasing : str
        "slices" (``pt.eq`` of slices), "edge list" (``pt.eq`` on gathered ends) or
        "one-hot" (products of rows of ``pt.eye(K)``).
    """
    n = side * side
    src, dst = _edges(side)
    with pm.Model() as model:
        z = pm.Categorical("x", np.ones(K) / K, shape=n)
        if phrasing == "slices":
            grid = z.reshape((side, side))
            agree = pt.sum(pt.eq(grid[1:], grid[:-1])) + pt.sum(pt.eq(grid[:, 1:], grid[:, :-1]))
        elif phrasing == "edge list":
            agree = pt.sum(pt.eq(z[src], z[dst]))
        else:
            one_hot = pt.eye(K)[z]
            agree = pt.sum(one_hot[src] * one_hot[dst])
        pm.Potential("lattice", 2 * COUPLING * agree)
    return model


def numpyro_ising(side: int) -> Callable[[], None]:
    """The Ising lattice of :func:`ising` as a NumPyro model: ``x ~ Bernoulli(0.5)`` per
    site, the couplings and the field as one ``numpyro.factor`` (the same ``alpha``)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    n = side * side
    alpha = jnp.asarray(ising_fields(side))

    def model() -> None:
        x = numpyro.sample("x", dist.Bernoulli(probs=jnp.full(n, 0.5)))
        s = 2.0 * x - 1.0
        grid = s.reshape(side, side)
        agree = jnp.sum(grid[1:] * grid[:-1]) + jnp.sum(grid[:, 1:] * grid[:, :-1])
        numpyro.factor("lattice", COUPLING * agree + jnp.sum(alpha * s))

    return model


def numpyro_potts(side: int) -> Callable[[], None]:
    """The Potts lattice of :func:`potts` as a NumPyro model: a uniform
    ``Categorical`` of K labels per site, the agreements as one ``numpyro.factor``."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    n = side * side

    def model() -> None:
        z = numpyro.sample("x", dist.Categorical(probs=jnp.full((n, K), 1.0 / K)))
        grid = z.reshape(side, side)
        agree = jnp.sum(grid[1:] == grid[:-1]) + jnp.sum(grid[:, 1:] == grid[:, :-1])
        numpyro.factor("lattice", 2 * COUPLING * agree)

    return model


@dataclass(frozen=True)
class Lattice:
    """A lattice model, its phrasings and its NumPyro version."""

    name: str
    #: values a site takes
    n_values: int
    #: (phrasing, side -> PyMC model); PyMC's default runs on the first
    phrasings: tuple[tuple[str, Callable[[int], pm.Model]], ...]
    #: side -> NumPyro model of the same density
    numpyro_model: Callable[[int], Callable[[], None]]
    #: how the NumPyro model is written, for the table
    numpyro_phrasing: str


ISING = Lattice("Ising", 2, (
    ("field as sum(alpha * s), couplings as slices", lambda side: ising(side, "sum", "slices")),
    ("field as dot(alpha, s)", lambda side: ising(side, "dot", "slices")),
    ("field as alpha @ s", lambda side: ising(side, "matmul", "slices")),
    ("field as einsum", lambda side: ising(side, "einsum", "slices")),
    ("couplings as an edge list, field as dot", lambda side: ising(side, "dot", "edge list")),
), numpyro_ising, "Bernoulli sites, slices of the grid in one numpyro.factor")
POTTS = Lattice("Potts, K = 3", K, (
    ("agreements as eq of slices", lambda side: potts(side, "slices")),
    ("agreements as eq on an edge list", lambda side: potts(side, "edge list")),
    ("agreements as one-hot products", lambda side: potts(side, "one-hot")),
), numpyro_potts, "Categorical sites, == of slices in one numpyro.factor")
#: the large lattice of ``--large``: the Ising model in its two main phrasings
LARGE_ISING = Lattice("Ising", 2, ISING.phrasings[:2], numpyro_ising, ISING.numpyro_phrasing)


#: the lattices by the name a fresh process looks them up with
LATTICES = {"ising": ISING, "potts": POTTS, "large ising": LARGE_ISING}


class Run(NamedTuple):
    """One sampler's run on one seed."""

    #: median over sites of the bulk ESS, per second of sampling (module docstring)
    site_ess_per_s: float
    #: bulk ESS of the log density, per second of sampling
    logp_ess_per_s: float
    #: largest r-hat over the sites that move
    rhat: float
    #: sampling: tuning (warm-up) and draws of every chain
    seconds: float
    #: the draws, (chain, draw, site), as int8
    draws: np.ndarray
    #: set-up: compilation and whatever else the run spent outside its sampling loop
    setup_seconds: float = 0.0

    def outcome(self, speed: str = "site") -> SeedOutcome:
        """The run as a ratio over seeds counts it (not converged: r-hat > RHAT_MAX).

        Parameters
        ----------
        speed : str
            "site" (median-site ESS per second of sampling), "logp" (the log density's
            ESS per second of sampling) or "logp, whole" (per second of set-up and
            sampling).
        """
        converged = self.rhat <= RHAT_MAX
        value = {"site": self.site_ess_per_s, "logp": self.logp_ess_per_s,
                 "logp, whole": self.logp_ess_per_s * self.seconds
                 / (self.seconds + self.setup_seconds)}[speed]
        return SeedOutcome(value, None if converged else f"r-hat {self.rhat:.3f}")


def measured(x: np.ndarray, seconds: float, logp_model: pm.Model,
             setup_seconds: float = 0.0) -> Run:
    """Measure draws ``x`` (chain, draw, site) whose sampling took ``seconds``.

    Parameters
    ----------
    x : numpy.ndarray
        Integer draws, (chain, draw, site).
    seconds : float
        Sampling time of the run (tuning or warm-up included, compilation not).
    logp_model : pymc.Model
        The PyMC model whose log density is evaluated at every draw (not timed).
    setup_seconds : float
        The run's time outside sampling (compilation included).
    """
    flat = x.reshape(*x.shape[:2], -1).astype(np.int64)
    values = flat.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        ess = np.asarray(az.ess(values, method="bulk"))
        rhat = np.asarray(az.rhat(values))
    # a site that never varies has no ESS or r-hat: those sites are left out of both
    moving = np.isfinite(ess) & (values.std(axis=(0, 1)) > 0)
    logp_ess = float(np.asarray(az.ess(logp_trace(logp_model, flat, "x"), method="bulk")))
    if not moving.any():
        return Run(float("nan"), logp_ess / seconds, float("nan"), seconds,
                   flat.astype(np.int8), setup_seconds)
    return Run(float(np.median(ess[moving])) / seconds, logp_ess / seconds,
               float(np.nanmax(rhat[moving])), seconds, flat.astype(np.int8), setup_seconds)


def pymc_run(model: pm.Model, draws: int, tune: int, seed: int, logp_model: pm.Model) -> Run:
    """A plain ``pm.sample`` of ``model`` (with whatever ``register()`` state is in effect):
    sampling is PyMC's own ``sampling_time``, set-up the rest of the call.

    Parameters
    ----------
    model : pymc.Model
        A freshly built model (nothing compiled yet).
    draws, tune, seed : int
        Per chain; :data:`CHAINS` chains, ``cores=1``.
    logp_model : pymc.Model
        See :func:`measured`.
    """
    with model:
        tick = time.perf_counter()
        idata = pm.sample(draws, tune=tune, chains=CHAINS, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
        whole = time.perf_counter() - tick
    sampling = float(idata.posterior.attrs["sampling_time"])
    return measured(idata.posterior["x"].values, sampling, logp_model, whole - sampling)


def density_check(model: pm.Model, numpyro_model: Callable[[], None], n_values: int,
                  states: int = 5) -> str:
    """Check that the NumPyro model has PyMC's log density up to a constant, at random
    states and the all-zero one; the check as a sentence.

    Parameters
    ----------
    model : pymc.Model
        The PyMC model (its only free variable ``x``).
    numpyro_model : callable
        The NumPyro model of the same lattice.
    n_values : int
        Values a site takes.
    states : int
        Random states checked (uniform, seed 0), besides the all-zero one.

    Raises
    ------
    RuntimeError
        If PyMC's log density minus NumPyro's varies by more than
        :data:`DENSITY_TOLERANCE` over the states.
    """
    import jax.numpy as jnp
    from numpyro.infer.util import log_density

    logp = model.compile_logp()
    name = model.rvs_to_values[model["x"]].name
    n = int(np.prod(model.initial_point()[name].shape))
    rng = np.random.default_rng(0)
    points = [np.zeros(n, dtype=np.int64)] + [rng.integers(0, n_values, n) for _ in range(states)]
    ours = np.array([float(logp({name: x})) for x in points])
    theirs = np.array([float(log_density(numpyro_model, (), {}, {"x": jnp.asarray(x)})[0])
                       for x in points])
    gap = ours - theirs
    spread = float(np.ptp(gap))
    text = (f"PyMC's log density minus NumPyro's at {len(points)} states (all zero, "
            f"{states} uniformly random): {gap.mean():+.2e}, spread {spread:.1e} "
            f"(log densities {ours.min():.1f} to {ours.max():.1f})")
    if not spread <= DENSITY_TOLERANCE:
        raise RuntimeError(f"the NumPyro model is not PyMC's density: {text}")
    return text


#: JAX's monitoring events of tracing, lowering and compiling a jitted function
COMPILE_EVENTS = frozenset({"/jax/core/compile/jaxpr_trace_duration",
                            "/jax/core/compile/jaxpr_to_mlir_module_duration",
                            "/jax/core/compile/backend_compile_duration"})


def covered_seconds(spans: list[tuple[float, float]]) -> float:
    """Length of the union of the intervals ``spans`` (nested or overlapping ones, e.g. a
    jitted function traced inside another's tracing, counted once).

    Parameters
    ----------
    spans : list of (float, float)
        (start, end) of each interval.

    Examples
    --------
    >>> covered_seconds([(0.0, 2.0), (1.0, 1.5), (3.0, 4.0)])
    3.0
    """
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


class NumPyroRuns(NamedTuple):
    """NumPyro's measured runs, one per seed, and what was left out of their time."""

    runs: list[Run]
    #: wall time of the unmeasured first run (one chain)
    first_seconds: float
    #: JAX's tracing, lowering and compiling within each measured run (subtracted)
    compile_seconds: list[float]


def numpyro_runs(numpyro_model: Callable[[], None], draws: int, tune: int,
                 seeds: tuple[int, ...], logp_model: pm.Model) -> NumPyroRuns:
    """``MCMC(DiscreteGibbs(numpyro_model))``: one unmeasured chain first, then per seed
    :data:`CHAINS` chains one after the other, timed less JAX's compilation.

    ``MCMC.run`` traces, lowers and compiles its sampling loop again at every call, for
    every chain, whatever ran before (NumPyro's ``fori_collect`` wraps the loop body in a
    new jitted function each time, and that function is a static argument of the loop's
    jit). A first run therefore only takes one-time costs out (JAX's start, the
    primitives of the kernel's initialisation); the time JAX spends tracing, lowering
    and compiling within a measured chain, the union of the time spans of its monitoring
    events :data:`COMPILE_EVENTS`, is subtracted from the chain's wall time. Each chain
    is its own ``MCMC.run`` (``num_chains=1``), blocked until its draws are ready, so
    that no chain runs while the next one compiles.

    Parameters
    ----------
    numpyro_model : callable
        The NumPyro model; its only latent site is ``x``.
    draws, tune : int
        Per chain.
    seeds : tuple of int
        JAX keys of the measured runs (split into one key per chain).
    logp_model : pymc.Model
        See :func:`measured`.
    """
    import jax
    from numpyro.infer import MCMC, DiscreteGibbs

    mcmc = MCMC(DiscreteGibbs(numpyro_model), num_warmup=tune, num_samples=draws,
                num_chains=1, progress_bar=False)

    def chain(key: jax.Array) -> tuple[np.ndarray, float, float]:
        """One chain's draws (draw, site), wall seconds and compiling seconds."""
        spans: list[tuple[float, float]] = []

        def listener(event: str, start: float, end: float, **kwargs: str | int) -> None:
            if event in COMPILE_EVENTS:
                spans.append((start, end))

        jax.monitoring.register_event_time_span_listener(listener)
        try:
            tick = time.perf_counter()
            mcmc.run(key)
            x = jax.block_until_ready(mcmc.get_samples()["x"])
            wall = time.perf_counter() - tick
        finally:
            jax.monitoring.unregister_event_time_span_listener(listener)
        return np.asarray(x), wall, covered_seconds(spans)

    first_seconds = chain(jax.random.PRNGKey(COMPILE_KEY))[1]
    runs, compiling = [], []
    for seed in seeds:
        chains = [chain(key) for key in jax.random.split(jax.random.PRNGKey(seed), CHAINS)]
        wall = sum(c[1] for c in chains)
        compiled = sum(c[2] for c in chains)
        seconds = wall - compiled if wall > compiled else float("nan")
        runs.append(measured(np.stack([c[0] for c in chains]), seconds, logp_model,
                             compiled))
        compiling.append(compiled)
        print(f"    {NUMPYRO}, seed {seed}: {wall:.1f} s, of which {compiled:.1f} s JAX "
              "compiling", flush=True)
    release_compiled_jax()
    return NumPyroRuns(runs, first_seconds, compiling)


def _pymc_runs(lattice: str, phrasing: int, side: int, draws: int, tune: int,
               seeds: tuple[int, ...], registered: bool) -> list[Run]:
    """:func:`pymc_run` of one phrasing of ``LATTICES[lattice]`` over the seeds, with or
    without ``register()`` (run in a process of its own, :func:`in_fresh_process`)."""
    phrasings = LATTICES[lattice].phrasings
    logp_model = phrasings[0][1](side)
    build = phrasings[phrasing][1]
    if registered:
        pmd.register()
    return [pymc_run(build(side), draws, tune, seed, logp_model) for seed in seeds]


def _numpyro_runs(lattice: str, side: int, draws: int, tune: int,
                  seeds: tuple[int, ...]) -> NumPyroRuns:
    """:func:`numpyro_runs` of ``LATTICES[lattice]`` (in a process of its own)."""
    model = LATTICES[lattice]
    return numpyro_runs(model.numpyro_model(side), draws, tune, seeds,
                        model.phrasings[0][1](side))


def in_fresh_process(function: Callable, *args: object) -> object:
    """``function(*args)`` in a new Python process, which exits after it.

    Every sampler runs in a process of its own: what an earlier run left in a process
    (PyMC's and PyTensor's caches, JAX's threads and compiled code, the allocator's
    state) slowed a later run's sampling by up to a fifth when they shared one.
    """
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(function, *args).result()


def means_gap(ours: list[Run], theirs: list[Run], n_values: int) -> float:
    """Largest ``|mean - mean_ref| / sqrt(MCSE^2 + MCSE_ref^2)`` over the site
    frequencies ``P(x_i = k)``, k = 1 .. n_values - 1, the chains of every seed pooled
    (the scale floored at 1e-4: a frequency that never varies in either has MCSE 0).

    Parameters
    ----------
    ours, theirs : list of Run
        The runs of two samplers (any number of seeds each).
    n_values : int
        Values a site takes.
    """
    def frequencies(runs: list[Run]) -> tuple[np.ndarray, np.ndarray]:
        x = np.concatenate([r.draws for r in runs], axis=0)
        ind = np.concatenate([x == k for k in range(1, n_values)], axis=-1).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            se = np.nan_to_num(np.asarray(az.mcse(ind, method="mean")))
        return ind.mean(axis=(0, 1)), se

    (m, se), (m_ref, se_ref) = frequencies(ours), frequencies(theirs)
    return float(np.max(np.abs(m - m_ref) / np.fmax(np.hypot(se, se_ref), 1e-4)))


def _rhat_cell(runs: list[Run]) -> str:
    worst = max(r.rhat for r in runs)
    return f"{worst:.3f}" + (" (not converged)" if worst > RHAT_MAX else "")


def _speed_cells(runs: list[Run]) -> list[str]:
    return [spread_over_seeds([r.setup_seconds for r in runs], ".2f"),
            spread_over_seeds([r.seconds for r in runs], ".2f"),
            spread_over_seeds([r.site_ess_per_s for r in runs]),
            spread_over_seeds([r.logp_ess_per_s for r in runs]), _rhat_cell(runs)]


def _ratio(ours: list[Run], base: list[Run], speed: str) -> str:
    return ratio_over_seeds([r.outcome(speed) for r in ours], [r.outcome(speed) for r in base])


class LatticeResult(NamedTuple):
    """The table rows of one lattice and the notes it leaves for the section text."""

    rows: list[list]
    notes: list[str]


def lattice_rows(key: str, side: int, draws: int, tune: int,
                 seeds: tuple[int, ...], with_numpyro: bool) -> LatticeResult:
    """PyMC's default, NumPyro's ``DiscreteGibbs`` and one row per phrasing with
    ``register()``.

    Parameters
    ----------
    key : str
        The model, a key of :data:`LATTICES`.
    side : int
        Lattice side.
    draws, tune : int
        Per chain, for every sampler.
    seeds : tuple of int
        One run per seed and sampler.
    with_numpyro : bool
        Whether NumPyro is importable (else its cells say "not installed").
    """
    lattice = LATTICES[key]
    name = f"{lattice.name}, {side} x {side}"
    first_phrasing, first = lattice.phrasings[0]
    logp_model = first(side)  # the log density every run's draws are measured with
    if with_numpyro:  # before anything is timed: a wrong NumPyro model stops the run
        check = density_check(logp_model, lattice.numpyro_model(side), lattice.n_values)
        print(f"  {name}: {check}", flush=True)
    default_step = step_name(assigned_step(first(side), registered=False, start={}))
    print(f"  {name}: PyMC's default ({default_step})", flush=True)
    baseline = in_fresh_process(_pymc_runs, key, 0, side, draws, tune, seeds, False)
    rows = [[name, first_phrasing, f"PyMC's default: {default_step}", "-",
             *_speed_cells(baseline), "-", "-", "-", "-", "-"]]
    notes = []
    numpyro: list[Run] | None = None
    if with_numpyro:
        print(f"  {name}: {NUMPYRO}", flush=True)
        result = in_fresh_process(_numpyro_runs, key, side, draws, tune, seeds)
        numpyro = result.runs
        notes.append(f"{name}: {check}. NumPyro's unmeasured first chain took "
                     f"{result.first_seconds:.1f} s; a measured run ({CHAINS} chains) "
                     f"{spread_over_seeds([r.seconds for r in numpyro], '.2f')} s once "
                     f"{spread_over_seeds(result.compile_seconds, '.2f')} s of JAX's tracing, "
                     "lowering and compiling are taken off.")
        rows.append([name, lattice.numpyro_phrasing, NUMPYRO, "-", *_speed_cells(numpyro),
                     "-", "-", "-", "-", "-"])
    else:
        rows.append([name, lattice.numpyro_phrasing, NUMPYRO, "-", *[NOT_INSTALLED] * 5,
                     "-", "-", "-", "-", "-"])
    for index, (phrasing, build) in enumerate(lattice.phrasings):
        model = build(side)
        choice = pmd.recommend([model["x"]], model=model)
        colours = choice.n_colours if choice.n_colours is not None else "-"
        print(f"  {name}: {phrasing}: register() ({choice.step.__name__})", flush=True)
        ours = in_fresh_process(_pymc_runs, key, index, side, draws, tune, seeds, True)
        against_pymc = _ratio(ours, baseline, "site")
        if numpyro is None:
            against_numpyro, means = [NOT_INSTALLED] * 3, "-"
        else:
            against_numpyro = [_ratio(ours, numpyro, speed)
                               for speed in ("site", "logp", "logp, whole")]
            z = means_gap(ours, numpyro, lattice.n_values)
            means = f"{z:.1f}" + (" (disagree)" if not z <= Z_MAX else "")
        rows.append([name, phrasing, f"register(): {choice.step.__name__}", colours,
                     *_speed_cells(ours), against_pymc, *against_numpyro, means])
    return LatticeResult(rows, notes)


class Budget(NamedTuple):
    """A run size."""

    side: int
    #: the side of ``--large``'s Ising lattice
    large_side: int
    #: draws per chain, after as many tuning (warm-up) draws
    draws: int
    seeds: tuple[int, ...]


BUDGETS = {"full": Budget(30, 50, 1000, (1, 2, 3)), "quick": Budget(16, 24, 500, (1,)),
           "smoke": Budget(4, 5, 20, (1,))}


def main(quick: bool = False, smoke: bool = False, large: bool = False) -> None:
    """Measure and write the section.

    Parameters
    ----------
    quick, smoke : bool
        Smaller lattices, fewer draws (see :data:`BUDGETS`).
    large : bool
        Also the Ising lattice of side ``large_side`` in its two main phrasings.
    """
    size = size_name(quick, smoke)
    b = BUDGETS[size]
    with_numpyro = numpyro_available()
    cases = [("ising", b.side), ("potts", b.side)] + (
        [("large ising", b.large_side)] if large else [])
    table, notes = [], []
    for lattice, side in cases:
        result = lattice_rows(lattice, side, b.draws, b.draws, b.seeds, with_numpyro)
        table += result.rows
        notes += result.notes
    command = ("python -m benchmarks.run_phrasings" + ("" if size == "full" else f" --{size}")
               + (" --large" if large else ""))
    lattices = f"{b.side} x {b.side} lattices" + (
        f" and a {b.large_side} x {b.large_side} Ising lattice (`--large`)" if large else
        f" (`--large` adds a {b.large_side} x {b.large_side} Ising lattice)")
    numpyro_text = (
        "NumPyro's rows: the same density written in NumPyro (checked below) and sampled "
        "by the standalone `numpyro.infer.DiscreteGibbs` kernel with its defaults: every "
        "iteration a sweep over all sites in a fresh random order (random permutation "
        "scan, not systematic), each site drawn from its exact conditional, computed from "
        "the whole model's log density K - 1 times per site; the sweep is one JAX-compiled "
        "loop (JAX's default float32). "
        f"{CHAINS} chains one after the other, {b.draws} draws after {b.draws} warm-up "
        "iterations each, each chain one `MCMC.run` timed until its draws are ready "
        "(initialisation, warm-up and draws); set-up is the time JAX reports spending on "
        "tracing, lowering and compiling in it (`MCMC.run` compiles its sampling loop "
        "again at every call, even after an unmeasured first run of the same MCMC object, "
        "which comes first all the same), sampling the rest."
        if with_numpyro else
        "NumPyro is not installed (`pip install -e .[bench]`): its rows and ratios say "
        "\"not installed\".")
    body = "\n".join([
        "## Phrasings: the same lattice written several ways",
        "",
        provenance("run_phrasings", size, versions=numpyro_versions(), command=command),
        "",
        f"{lattices}, {CHAINS} chains x {b.draws} draws after {b.draws}, seeds "
        f"{', '.join(map(str, b.seeds))}. `register()` and plain `pm.sample()` (`cores=1`) "
        "on every phrasing, against PyMC's default (the same call without `register()`) on "
        "the first phrasing of each lattice and against NumPyro. Median (min-max) over "
        "seeds of the median-site bulk ESS per second and of the bulk ESS of the log "
        "density per second (PyMC's log density of the first phrasing at every draw, "
        "NumPyro's draws included, computed after the run), per second of sampling: for "
        "`pm.sample` PyMC's `sampling_time` (tuning and draws of both chains), set-up the "
        "rest of the call (building the steps, PyTensor's compiling, the conversion of the "
        "draws), both in seconds in their own columns; the largest r-hat over sites and "
        "seeds. Compilation is left out of both ours and NumPyro's ESS per second, the "
        "package's tuning left in; \"log density, whole run\" is the log density's ratio "
        "per second of set-up and sampling on both sides. The ratios are "
        "median (min-max) over the seeds in which both runs "
        f"converged (largest r-hat over sites at most {RHAT_MAX}; a run that did not is "
        "marked \"not converged\" and counts as no speed-up). \"site means vs NumPyro\": "
        "the largest |difference| / combined MCSE of the site frequencies P(x_i = k), "
        "k >= 1, between ours and NumPyro's draws, every seed's chains pooled "
        f"(\"disagree\" above {Z_MAX:g}).",
        "",
        numpyro_text,
        *(["", *(f"* {n}" for n in notes)] if notes else []),
        "",
        markdown_table(["lattice", "phrasing", "sampler", "colours", "set-up s", "sampling s",
                        "median-site ESS/s", "ESS/s of the log density", "r-hat (max)",
                        "ours / PyMC's default (median site)",
                        "ours / NumPyro: median site", "ours / NumPyro: log density",
                        "ours / NumPyro: log density, whole run",
                        "site means vs NumPyro (max z)"], table),
    ])
    print(body)
    write_section("phrasings", body)


if __name__ == "__main__":
    cli(partial(main, large="--large" in sys.argv[1:]))
