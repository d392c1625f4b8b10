"""Whether ``pm.sample()`` after ``register()`` samples a summed-out model with nutpie when
no NUTS is named: by the length of the run, counted, not timed.

PyMC samples an all-continuous model with nutpie whenever it is installed. For a model
whose discrete variables sum out, the alternative is the package's own route through
PyMC's step loop: CollapsedNUTS (the same summed-out density under PyMC's NUTS), or a
block drawn beside PyMC's NUTS (BlockedGibbs for a change point's switch). nutpie's
draws are cheaper (its tree is compiled; PyMC's is interpreted, step by step), but it
compiles the model first, which costs more than PyMC's whole run of a small model:
measured by ``python -m benchmarks.run_summed`` (2026-11-28, the 2-CPU VM, where PyMC
takes one core and runs the chains in turn; 4 chains x 1000 after 1000, 8,000 iterations
on the core, seeds 1-3), nutpie's route set up in 4.0-6.9 s more than PyMC's and saved
0.2-0.55 ms an iteration: it pays back from 12,200 (the iris mixture), 15,000 (the
change point), 20,000 (capture-recapture) and 22,000 (occupancy) iterations a core, and
did not on 8,000. At 20,000 iterations a core (4 chains x 4000 after 1000, one core) the
two were even with set-up counted (0.93-1.27x), nutpie 3-13x ahead per second of
sampling. A chain summed out by the forward algorithm never paid back: its
gradient runs the forward algorithm at every leapfrog step, where ChainGibbs draws the
chain once an iteration and PyMC's NUTS then samples the rest given it (nutpie's draws
were slower per iteration: 7.9 s against 5.9 s on the 300-step HMM). Latent counts
summed over a window follow the sites' rule, measured at the threshold itself on the
N-mixture model (`--models nmixture --draws 4000 --tune 1000 --no-write`, 2026-11-29,
seeds 1-3, after the draws back became one compiled pass): nutpie's route against
CollapsedNUTS under PyMC's NUTS was even with set-up counted (241 against 262 effective
samples a second, 0.92-1.05x seed by seed) and ahead per second of sampling (330 against
288, 1.13-1.35x), though it draws fewer effective samples an iteration (5,068-5,678
against 6,734-7,592) and draws the 16,000 x 150 counts back in 1.8-2.1 s. Before that
change (2.4 s to draw them back; the same seeds, on another VM of the same kind)
CollapsedNUTS was ahead with set-up counted (319 against 263) and even per second of
sampling, and counts stayed in PyMC's loop at any length.

The choice must not depend on the machine's load (the same seed gives the same draws), so
the run's length is what is compared: nutpie runs where each core runs at least
:data:`NUTPIE_MIN_ITERATIONS` iterations (tuning and draws of the chains it runs in
turn), where the measured routes were even.
"""

from __future__ import annotations

import math

from pymc.sampling import mcmc

__all__ = ["NUTPIE_MIN_ITERATIONS", "iterations_per_core", "nutpie_pays_back"]

#: iterations a core runs (tuning and draws) from which nutpie's compilation pays back
#: (module docstring)
NUTPIE_MIN_ITERATIONS = 20_000


def iterations_per_core(args: tuple, kwargs: dict) -> int:
    """Iterations (tuning and draws) each core runs in ``pm.sample(*args, **kwargs)``, by
    PyMC's defaults for what is not given: ``draws=1000``, ``tune=1000``,
    ``cores=min(4, CPUs / 2)`` (PyMC counts half the CPUs, the rest taken for hardware
    threads), ``chains=max(2, cores)``; a core runs its chains in turn.

    Examples
    --------
    >>> iterations_per_core((), {"draws": 5000, "tune": 1000, "chains": 4, "cores": 2})
    12000
    >>> iterations_per_core((500,), {"chains": 1})
    1500
    """
    draws = args[0] if args else kwargs.get("draws", 1000)
    tune = kwargs.get("tune", 1000)
    cores = kwargs.get("cores")
    cores = min(4, mcmc._cpu_count()) if cores is None else int(cores)
    chains = kwargs.get("chains")
    chains = max(2, cores) if chains is None else int(chains)
    return math.ceil(chains / max(1, min(cores, chains))) * (int(draws) + int(tune))


def nutpie_pays_back(args: tuple, kwargs: dict, kind: str = "sites") -> tuple[bool, str]:
    """Whether nutpie samples the summed-out model of this run rather than the package's
    steps in PyMC's loop (module docstring), and why.

    Parameters
    ----------
    args, kwargs
        ``pm.sample``'s arguments.
    kind : {"sites", "chain", "counts"}
        How the block sums out: site by site, as a chain (by the forward algorithm), or
        as latent counts over a window (the sites' rule).

    Returns
    -------
    (bool, str)

    Examples
    --------
    >>> nutpie_pays_back((), {"draws": 1000, "chains": 4, "cores": 2})[0]
    False
    >>> runs, why = nutpie_pays_back((), {"draws": 9000, "chains": 4, "cores": 1})
    >>> runs, why.split(", and ")[1]
    (True, 'each core runs 40,000 iterations, enough to pay back its compilation (from 20,000)')
    """
    if kind == "chain":
        return False, ("nutpie is installed, but a chain summed out by the forward "
                       "algorithm samples slower than ChainGibbs beside PyMC's NUTS")
    iterations = iterations_per_core(args, kwargs)
    if iterations < NUTPIE_MIN_ITERATIONS:
        return False, (f"nutpie is installed, but each core runs {iterations:,} "
                       f"iterations, fewer than the {NUTPIE_MIN_ITERATIONS:,} from which "
                       "its compilation pays back")
    return True, ("nutpie is installed (PyMC's choice for an all-continuous model), and "
                  f"each core runs {iterations:,} iterations, enough to pay back its "
                  f"compilation (from {NUTPIE_MIN_ITERATIONS:,})")
