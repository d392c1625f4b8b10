"""``pm.sample()`` on the summed-out model, with nutpie or the external NUTS named.

While :func:`~pymc_discrete.register` is in effect, ``pm.sample`` is wrapped: when the
user passes no step, the model's discrete variables sum out exactly (sites that share no
term, a chain by the forward algorithm, latent counts over a window:
:func:`~pymc_discrete.marginalize`), and an external NUTS runs (named:
``nuts_sampler="nutpie" | "numpyro" | "blackjax"``; or nutpie by PyMC's own rule for an
all-continuous model, where the run is long enough to pay back its compilation:
:mod:`~pymc_discrete.pymc.choosing.nutpie_choice`), the call samples the summed-out model
with that sampler, its chains started at the mode reached from the initial point
(:mod:`~pymc_discrete.pymc.choosing.mode_start`), and adds exact draws of the discrete
variables (:func:`~pymc_discrete.recover_discrete`). Everywhere else the call is PyMC's
own, with the steps :class:`~pymc_discrete.pymc.choosing.auto_step.AutoStep` assigns.
"""

from __future__ import annotations

import functools
import logging

import numpy as np
from pymc.model import modelcontext
from pymc.sampling import mcmc
from pymc.stats.convergence import log_warnings, run_convergence_checks
from pytensor.compile.mode import get_mode
from pytensor.link.jax.linker import JAXLinker
from pytensor.link.numba.linker import NumbaLinker

from pymc_discrete.kernels.counts import MAX_COUNT
from pymc_discrete.pymc.choosing.gc_thresholds import fewer_full_collections
from pymc_discrete.pymc.choosing.initial_points import one_initial_point_function
from pymc_discrete.pymc.choosing.mode_start import mode_start
from pymc_discrete.pymc.choosing.nutpie_choice import nutpie_pays_back
from pymc_discrete.pymc.choosing.scalar_trace import with_recording_trace
from pymc_discrete.pymc.model.setup_progress import listed
from pymc_discrete.pymc.summing.chain_sum import register_jax
from pymc_discrete.pymc.summing.collapsible import NotCollapsible
from pymc_discrete.pymc.summing.count_sum import grid_width
from pymc_discrete.pymc.summing.marginal_model import marginalize
from pymc_discrete.pymc.summing.recover import CountWindowTooNarrow, recover_discrete
from pymc_discrete.pymc.summing.summed_block import cached_summed_block

__all__ = ["external_sampler", "summed_out_sample", "wrap_sample"]

_log = logging.getLogger("pymc.pymc_discrete")

EXTERNAL = ("nutpie", "numpyro", "blackjax")


def external_sampler(args: tuple, kwargs: dict) -> tuple[str | None, str]:
    """The external NUTS that ``pm.sample(*args, **kwargs)`` runs on a summed-out model
    (None: PyMC's loop), and why: the one named, else nutpie where PyMC's rule for an
    all-continuous model (``pymc.sampling.mcmc.sample``) picks it and the run is long
    enough to pay back its compilation
    (:func:`~pymc_discrete.pymc.choosing.nutpie_choice.nutpie_pays_back`)."""
    chosen = kwargs.get("nuts_sampler")
    if chosen is not None:
        return (chosen if chosen in EXTERNAL else None), f"nuts_sampler={chosen!r} was given"
    if not _nutpie_allowed(kwargs):
        return None, "PyMC would run its own NUTS on the summed-out model"
    runs, why = nutpie_pays_back(args, kwargs)
    if not runs:  # a short run stays in PyMC's loop, its structure unread
        return None, f"short run: {why}"
    # PyMC's version check imports nutpie (0.7 s): asked only where nutpie would run
    if not mcmc._nutpie_meets_min_version():
        return None, "PyMC would run its own NUTS on the summed-out model"
    return "nutpie", why


def _nutpie_allowed(kwargs: dict) -> bool:
    """PyMC's rule for nutpie on an all-continuous model, short of nutpie's version."""
    compile_kwargs = kwargs.get("compile_kwargs") or {}
    initvals = kwargs.get("initvals")
    return bool(
        mcmc.NUTPIE_INSTALLED
        and kwargs.get("init", "auto") == "auto"
        and kwargs.get("return_inferencedata", True)
        and kwargs.get("trace") is None
        and kwargs.get("callback") is None
        and (initvals is None or isinstance(initvals, dict))
        and isinstance(get_mode(compile_kwargs.get("mode")).linker, NumbaLinker | JAXLinker)
    )


#: the reasons for PyMC's loop that are logged: nutpie or a named sampler would have run
_LOGGED = ("not summed out", "nutpie is installed, but")


def _route(model, args: tuple, kwargs: dict) -> tuple[str | None, str]:
    """The external sampler to run on the summed-out model, or None and why not (logged
    where an external sampler would have run: the user sees why PyMC's loop runs)."""
    sampler, why = _external_route(model, args, kwargs)
    if sampler is None and why.startswith(_LOGGED) and not kwargs.get("quiet"):
        _log.info("pymc-discrete: %s", why)
    return sampler, why


def _external_route(model, args: tuple, kwargs: dict) -> tuple[str | None, str]:
    """The external sampler to run on the summed-out model, or None and why not."""
    if kwargs.get("step") is not None:
        return None, "steps were given"
    discrete = [rv for rv in model.free_RVs if rv.type.dtype.startswith(("int", "uint", "bool"))]
    if not discrete:
        return None, "the model has no discrete variables"
    sampler, why = external_sampler(args, kwargs)
    if sampler is None:
        return None, why
    named = kwargs.get("nuts_sampler") is not None
    try:
        block = cached_summed_block(model)
    except NotCollapsible as err:
        return None, f"not summed out for {sampler}: {err}"
    except Exception as err:  # structure not readable: PyMC's assignment decides
        return None, (f"not summed out for {sampler}: the structure could not be read "
                      f"({type(err).__name__}: {err})")
    if not named and block.layout is not None:
        return None, nutpie_pays_back(args, kwargs, "chain")[1]
    return sampler, why


def summed_out_sample(model, sampler: str, why: str, args: tuple, kwargs: dict, sample):
    """``sample`` (PyMC's) on the summed-out model with ``sampler``, then the discrete
    draws recovered into every group of draws it returned. Latent counts whose
    conditional ran past the window summed over at some draw are summed again over
    twice as many values, and sampled again (logged)."""
    kwargs = dict(kwargs)
    kwargs["nuts_sampler"] = sampler
    kwargs.pop("model", None)
    block = cached_summed_block(model)
    names = set(block.names)
    initvals = kwargs.get("initvals")
    if isinstance(initvals, dict):
        initvals = {k: v for k, v in initvals.items() if getattr(k, "name", k) not in names}
        kwargs["initvals"] = initvals
    # chains start at the mode reached from the initial point, unless the user placed them
    find_mode = not initvals
    var_names = kwargs.get("var_names")
    if var_names is not None:
        kwargs["var_names"] = [n for n in var_names if n not in names]
    quiet = kwargs.get("quiet", False)
    if not quiet:
        how = ("as a chain, by the forward algorithm" if block.layout is not None
               else "over a window of values" if block.count_window is not None
               else "site by site")
        _log.info("pymc-discrete: %s summed out %s; sampling the rest with %s (%s), then "
                  "drawing %s exactly from their conditional at every draw",
                  listed(block.names), how, sampler, why, listed(block.names))
    if sampler in ("numpyro", "blackjax") and block.layout is not None:
        register_jax()  # the chain's forward algorithm, for PyTensor's JAX backend
    width = None
    while True:
        summed = marginalize(model, count_width=width)
        run = kwargs
        start = mode_start(summed) if find_mode else None
        if start is not None or not find_mode:
            # chains start together, not jittered (on the iris mixture, nutpie's jittered
            # starts left chains in minor modes in 3 of 3 seeds), at the mode reached from
            # the initial point (from the initial point itself, they did too) or where the
            # user placed them; without a mode, as PyMC starts them
            run = _unjittered(kwargs, sampler)
            if find_mode:
                run["initvals"] = start
        idata = sample(*args, model=summed, **run)
        try:
            _recover(idata, model, kwargs.get("random_seed"))
            break
        except CountWindowTooNarrow as err:
            width = grid_width(2 * err.width)
            if width > MAX_COUNT:
                raise
            _log.warning("pymc-discrete: %s. Sampling again, summed over %d values.",
                         str(err).split(". Sum over")[0], width)
    if sampler == "nutpie" and kwargs.get("compute_convergence_checks", True):
        # PyMC checks r-hat, ESS and divergences after its own NUTS and the JAX samplers,
        # not after nutpie: a run whose chains disagree is reported as PyMC reports it
        warnings = run_convergence_checks(idata, summed)
        if not quiet:
            log_warnings(warnings)
    # PyMC's own runs keep the sampling time on sample_stats; its nutpie path on the
    # posterior: both places, as after PyMC's NUTS
    groups = _groups(idata)
    if "posterior" in groups and "sample_stats" in groups:
        for key in ("sampling_time", "tuning_steps"):
            value = idata["posterior"].attrs.get(key)
            if value is not None:
                idata["sample_stats"].attrs.setdefault(key, value)
    return idata


def _unjittered(kwargs: dict, sampler: str) -> dict:
    """``pm.sample``'s arguments with the external sampler's jitter of the start off."""
    kwargs = dict(kwargs)
    if sampler == "nutpie":
        kwargs["compile_kwargs"] = {"jitter_rvs": set(), **(kwargs.get("compile_kwargs") or {})}
    else:
        kwargs["nuts"] = {"jitter": False, **(kwargs.get("nuts") or {})}
    return kwargs


def _recover(idata, model, seed) -> None:
    """The discrete draws of the posterior and of the warm-up (where kept), from a seed
    derived from ``pm.sample``'s (an int or one per chain; None: unseeded, as PyMC)."""
    if isinstance(seed, int | np.integer):
        entropy = int(seed)
    elif isinstance(seed, list | tuple) and all(isinstance(x, int | np.integer) for x in seed):
        entropy = [int(x) for x in seed]
    else:
        entropy = None
    posterior, warmup = np.random.SeedSequence(entropy).spawn(2)
    recover_discrete(idata, model, random_seed=np.random.default_rng(posterior))
    if "warmup_posterior" in _groups(idata):
        # tuning wanders: its draws are recovered whatever the window's tail there
        recover_discrete(idata, model, group="warmup_posterior", check_window=False,
                         random_seed=np.random.default_rng(warmup))


def _groups(idata) -> list:
    return list(idata.children) if hasattr(idata, "children") else list(idata.groups())


def wrap_sample(sample):
    """PyMC's ``sample`` routed through the summed-out model where it applies (module
    docstring)."""

    @functools.wraps(sample)
    def routed(*args, **kwargs):
        model = modelcontext(kwargs.get("model"))
        with one_initial_point_function(model), fewer_full_collections():
            sampler, why = _route(model, args, kwargs)
            if sampler is None:
                return sample(*args, **with_recording_trace(model, kwargs))
            return summed_out_sample(model, sampler, why, args, kwargs, sample)

    routed.__wrapped_by_pymc_discrete__ = True
    return routed
