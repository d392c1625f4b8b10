"""``pm.sample()`` on the summed-out model, with the NUTS PyMC would pick for it.

While :func:`~pymc_discrete.register` is in effect, ``pm.sample`` is wrapped: when the
user passes no step, every discrete variable of the model sums out site by site (the
block :func:`~pymc_discrete.recommend` gives to :class:`~pymc_discrete.CollapsedNUTS`),
and the NUTS that would run on the model with them summed out is one of PyMC's external
samplers (nutpie, picked by PyMC's own rule when it is installed, or
``nuts_sampler="nutpie" | "numpyro" | "blackjax"``), the call samples
:func:`~pymc_discrete.marginalize`'s model with that sampler and adds exact draws of
the discrete variables (:func:`~pymc_discrete.recover_discrete`). Everywhere else the
call is PyMC's own, with the steps :class:`~pymc_discrete.pymc.choosing.auto_step.AutoStep`
assigns: where PyMC's Python NUTS would run either way, CollapsedNUTS samples the same
marginal.
"""

from __future__ import annotations

import functools
import logging

import numpy as np
from pymc.model import modelcontext
from pymc.sampling import mcmc
from pytensor.compile.mode import get_mode
from pytensor.link.jax.linker import JAXLinker
from pytensor.link.numba.linker import NumbaLinker

from pymc_discrete.pymc.choosing.auto_step import _cached_recommendation, _is_discrete
from pymc_discrete.pymc.summing.collapsed_nuts import CollapsedNUTS
from pymc_discrete.pymc.summing.collapsible import NotCollapsible
from pymc_discrete.pymc.summing.marginal_model import marginalize
from pymc_discrete.pymc.summing.recover import cached_summed_block, recover_discrete

__all__ = ["external_sampler", "summed_out_sample", "wrap_sample"]

_log = logging.getLogger("pymc.pymc_discrete")

EXTERNAL = ("nutpie", "numpyro", "blackjax")


def external_sampler(kwargs: dict) -> tuple[str | None, str]:
    """The external NUTS that ``pm.sample(**kwargs)`` would run on an all-continuous
    model (None: PyMC's own), and why, by PyMC's rule (``pymc.sampling.mcmc.sample``)."""
    chosen = kwargs.get("nuts_sampler")
    if chosen is not None:
        return (chosen if chosen in EXTERNAL else None), f"nuts_sampler={chosen!r} was given"
    compile_kwargs = kwargs.get("compile_kwargs") or {}
    initvals = kwargs.get("initvals")
    usable = (
        mcmc.NUTPIE_INSTALLED
        and kwargs.get("init", "auto") == "auto"
        and kwargs.get("return_inferencedata", True)
        and kwargs.get("trace") is None
        and kwargs.get("callback") is None
        and (initvals is None or isinstance(initvals, dict))
        and isinstance(get_mode(compile_kwargs.get("mode")).linker, NumbaLinker | JAXLinker)
    )
    if usable and mcmc._nutpie_meets_min_version():
        return "nutpie", "nutpie is installed (PyMC's choice for an all-continuous model)"
    return None, "PyMC would run its own NUTS on the summed-out model"


def _route(model, kwargs: dict) -> tuple[str | None, str]:
    """The external sampler to run on the summed-out model, or None and why not."""
    if kwargs.get("step") is not None:
        return None, "steps were given"
    discrete = [rv for rv in model.free_RVs if _is_discrete(rv)]
    if not discrete:
        return None, "the model has no discrete variables"
    sampler, why = external_sampler(kwargs)
    if sampler is None:
        return None, why
    point = model.initial_point()
    values = [model.rvs_to_values[rv] for rv in discrete]
    try:
        choice = _cached_recommendation(model, values, point, None)
    except Exception as err:  # structure not readable: PyMC's assignment decides
        return None, f"the structure could not be read ({err})"
    if choice.step is not CollapsedNUTS:
        return None, f"the discrete variables go to {choice.step.__name__}: {choice.reason}"
    try:
        cached_summed_block(model)
    except NotCollapsible as err:
        return None, str(err)
    return sampler, why


def summed_out_sample(model, sampler: str, why: str, args: tuple, kwargs: dict, sample):
    """``sample`` (PyMC's) on the summed-out model with ``sampler``, then the discrete
    draws recovered into every group of draws it returned."""
    block = cached_summed_block(model)
    summed = marginalize(model)
    kwargs = dict(kwargs)
    kwargs["nuts_sampler"] = sampler
    kwargs.pop("model", None)
    names = set(block.names)
    initvals = kwargs.get("initvals")
    if isinstance(initvals, dict):
        kwargs["initvals"] = {k: v for k, v in initvals.items()
                              if getattr(k, "name", k) not in names}
    var_names = kwargs.get("var_names")
    if var_names is not None:
        kwargs["var_names"] = [n for n in var_names if n not in names]
    if not kwargs.get("quiet", False):
        _log.info("pymc-discrete: %s summed out site by site; sampling the rest with %s (%s), "
                  "then drawing %s exactly from their conditional at every draw",
                  ", ".join(block.names), sampler, why, ", ".join(block.names))
    idata = sample(*args, model=summed, **kwargs)
    seed = kwargs.get("random_seed")
    sequence = np.random.SeedSequence(seed if isinstance(seed, int | np.integer) else None)
    for group, child in zip(("posterior", "warmup_posterior"), sequence.spawn(2)):
        if group in _groups(idata):
            recover_discrete(idata, model, group=group, random_seed=np.random.default_rng(child))
    return idata


def _groups(idata) -> list:
    return list(idata.children) if hasattr(idata, "children") else list(idata.groups())


def wrap_sample(sample):
    """PyMC's ``sample`` routed through the summed-out model where it applies (module
    docstring)."""

    @functools.wraps(sample)
    def routed(*args, **kwargs):
        model = modelcontext(kwargs.get("model"))
        sampler, why = _route(model, kwargs)
        if sampler is None:
            return sample(*args, **kwargs)
        return summed_out_sample(model, sampler, why, args, kwargs, sample)

    routed.__wrapped_by_pymc_discrete__ = True
    return routed
