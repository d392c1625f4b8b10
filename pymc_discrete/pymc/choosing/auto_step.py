"""The registry device: the step :func:`~pymc_discrete.pymc.choosing.recommend.recommend` chooses,
as a step method class PyMC can assign.

:class:`AutoStep` is what :func:`~pymc_discrete.pymc.choosing.register.register` puts in PyMC's
list of step methods: PyMC builds it for the discrete variables it assigns (and, where the
block can be summed out or paired, for the continuous ones too), and it returns the
recommended step, built on the structure already read.
"""

from __future__ import annotations

import inspect
import logging
import weakref

from pymc.model import modelcontext
from pymc.step_methods.compound import BlockedStep, Competence, CompoundStep
from pymc.step_methods.hmc import NUTS
from pymc.step_methods.hmc.base_hmc import BaseHMC

from pymc_discrete.pymc.choosing.recommend import Recommendation, recommend, recommend_counts
from pymc_discrete.pymc.choosing.stacked_nuts import has_stacked_logp, stacked_nuts
from pymc_discrete.pymc.model.counts import is_count
from pymc_discrete.pymc.model.creation_traces import untraced
from pymc_discrete.pymc.model.setup_progress import listed
from pymc_discrete.pymc.model.validation import site_support_problem
from pymc_discrete.pymc.steps.albp import ALBP
from pymc_discrete.pymc.steps.count_step import CountLBP
from pymc_discrete.pymc.steps.gibbs import BlockedGibbs
from pymc_discrete.pymc.steps.paired import PairedFlip
from pymc_discrete.pymc.summing.collapsed_nuts import CollapsedNUTS
from pymc_discrete.pymc.summing.collapsible import NotCollapsible

__all__ = ["AutoStep"]

_log = logging.getLogger("pymc.pymc_discrete")

#: the parameters of PyMC's NUTS: ``pm.sample(nuts={...})`` (and ``target_accept=``) reach
#: AutoStep under NUTS's name, and go to the NUTS it builds, never to a discrete step
_NUTS_PARAMETERS = frozenset(
    name for cls in (NUTS, BaseHMC) for name in inspect.signature(cls.__init__).parameters
) - {"self", "vars", "model", "initial_point", "compile_kwargs", "kwargs", "pytensor_kwargs",
     "blocked", "rng"}

#: model -> ((names of the discrete variables AutoStep would be given, of the model's
#: variables), their recommendation): read once per model when PyMC asks AutoStep's competence for its
#: continuous variables, and reused when it builds the step
_RECOMMENDED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _is_discrete(var) -> bool:
    return ALBP.competence(var) != Competence.INCOMPATIBLE


#: model -> (the model's named variables, the counts' Recommendation or why their
#: structure could not be read): read once per model
_COUNT_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _count_plan(model) -> Recommendation | str:
    """The recommendation for the model's latent counts (cached per model), or why their
    structure could not be read (PyMC's own steps then take them)."""
    names = tuple(model.named_vars)
    cached = _COUNT_PLANS.get(model)
    if cached is not None and cached[0] == names:
        return cached[1]
    counts = [rv for rv in model.free_RVs if is_count(rv)]
    try:
        plan = recommend_counts(counts, model)
    except Exception as err:  # the graph could not be read: PyMC's steps take them
        plan = f"their structure could not be read ({err})"
    _COUNT_PLANS[model] = (names, plan)
    return plan


def _cached_recommendation(model, value_vars, initial_point, compile_kwargs) -> Recommendation:
    # the model's named variables too: a term added since would be missing from the
    # structure read before
    names = (tuple(v.name for v in value_vars), tuple(model.named_vars))
    cached = _RECOMMENDED.get(model)
    if cached is not None and cached[0] == names:
        return cached[1]
    choice = recommend(value_vars, model, initial_point, compile_kwargs)
    _RECOMMENDED[model] = (names, choice)
    return choice


class AutoStep(BlockedStep):
    """The step :func:`recommend` chooses, as a step method class PyMC can assign.

    ``AutoStep(vars, ...)`` returns a :class:`CollapsedNUTS`, :class:`PairedFlip` (alone
    or with NUTS in a ``CompoundStep``), :class:`JointGibbs`, :class:`BlockedGibbs` or
    :class:`ALBP` instance
    (never an ``AutoStep``), with ``choice_reason`` set to why,
    and logs the choice on the ``pymc.pymc_discrete`` logger (shown with PyMC's own
    messages).

    When the model's discrete variables can be summed out site by site (one colour, see
    :func:`recommend`), AutoStep also claims the continuous variables from PyMC (at NUTS's
    competence, ahead of it in the registry) and returns one :class:`CollapsedNUTS` for
    all of them; when they are one indicator that switches a continuous variable, it
    claims them too and returns :class:`PairedFlip` with NUTS on the other continuous
    variables (and on the coefficients, unless the density is quadratic in them). It is
    named as NUTS is, so that ``pm.sample(target_accept=...)`` and
    ``pm.sample(nuts={...})`` reach the NUTS it builds.

    Parameters
    ----------
    vars : list of value or random variables, optional
        The discrete block, and the continuous variables when PyMC gave them.
    model : pymc.Model, optional
    initial_point : dict, optional
    compile_kwargs : dict, optional
    **kwargs
        NUTS's parameters (what ``pm.sample`` passes under NUTS's name) go to the NUTS of
        a :class:`CollapsedNUTS` (or to a plain NUTS over the continuous variables) and are
        not meant for the discrete step; anything else (e.g. ``rng``, ``blocked``) goes to
        the discrete step.
    """

    name = "nuts"

    @untraced
    def __new__(cls, vars=None, model=None, initial_point=None, compile_kwargs=None,
                **kwargs):
        model = modelcontext(model)
        nuts_kwargs = {k: v for k, v in kwargs.items() if k in _NUTS_PARAMETERS}
        step_kwargs = {k: v for k, v in kwargs.items() if k not in _NUTS_PARAMETERS}
        if vars is None:
            discrete, continuous = None, []
        else:
            value_vars = [model.rvs_to_values.get(v, v) for v in vars]
            discrete = [v for v in value_vars if _is_discrete(model.values_to_rvs[v])]
            in_discrete = set(discrete)
            continuous = [v for v in value_vars if v not in in_discrete]
        counts = [] if vars is None else [v for v in value_vars
                                          if is_count(model.values_to_rvs[v])]
        if counts:  # not finite discrete variables: they were put with the continuous
            in_counts = set(counts)
            continuous = [v for v in continuous if v not in in_counts]
            return cls._count_steps(model, counts, discrete, continuous, initial_point,
                                    compile_kwargs, nuts_kwargs, step_kwargs)
        if discrete == []:  # only continuous variables: what PyMC would build for them
            return NUTS(continuous, model=model, initial_point=initial_point,
                        compile_kwargs=compile_kwargs, **nuts_kwargs)
        if discrete is None:
            choice = recommend(None, model, initial_point, compile_kwargs)
        else:
            choice = _cached_recommendation(model, discrete, initial_point, compile_kwargs)
        if choice.step is CollapsedNUTS and continuous and not step_kwargs:
            step = CollapsedNUTS(discrete, continuous, model=model, initial_point=initial_point,
                                 compile_kwargs=compile_kwargs,
                                 exact_ratios=choice.exact_ratios, **nuts_kwargs)
            step.choice_reason = choice.reason
            _log.info("pymc_discrete chose CollapsedNUTS for [%s] with NUTS for [%s]: %s.",
                      listed(step.exact_ratios.var_names),
                      listed(v.name for v in continuous), choice.reason)
            return step
        if choice.step is PairedFlip and continuous and not step_kwargs:
            return cls._paired_steps(choice, discrete, continuous, model, initial_point,
                                     compile_kwargs, nuts_kwargs)
        step = cls._discrete_step(choice, discrete, model, initial_point, compile_kwargs,
                                  step_kwargs)
        if not continuous:
            return step
        # claimed and not summed out: a model written one variable per site (its NUTS on
        # the stacked log density), or the block PyMC gave differs from the one read when
        # it asked the competence (the NUTS PyMC would build)
        nuts = stacked_nuts(model, continuous, discrete, initial_point, compile_kwargs,
                            nuts_kwargs)
        if nuts is None:
            nuts = NUTS(continuous, model=model, initial_point=initial_point,
                        compile_kwargs=compile_kwargs, **nuts_kwargs)
        return CompoundStep([step, nuts])

    @classmethod
    def _count_steps(cls, model, counts, discrete, continuous, initial_point, compile_kwargs,
                     nuts_kwargs, step_kwargs):
        """CollapsedNUTS for the counts and the continuous variables when the counts sum
        out (:func:`recommend_counts`), else CountLBP for the counts beside the steps
        the rest would get."""
        plan = _count_plan(model)
        names = listed(v.name for v in counts)
        readable = not isinstance(plan, str)
        exact = plan.exact_ratios if readable and \
            plan.exact_ratios.var_names == tuple(v.name for v in counts) else None
        why = None
        if readable and plan.step is CollapsedNUTS and not discrete and continuous \
                and not step_kwargs:
            try:
                step = CollapsedNUTS(counts, continuous, model=model,
                                     initial_point=initial_point,
                                     compile_kwargs=compile_kwargs, exact_ratios=exact,
                                     **nuts_kwargs)
            except NotCollapsible as err:  # read again at pm.sample's initial point
                why = str(err)
            else:
                step.choice_reason = plan.reason
                _log.info("pymc_discrete chose CollapsedNUTS for [%s] with NUTS for [%s]: %s "
                          "(window of %d values read at set-up).", names,
                          listed(v.name for v in continuous), plan.reason,
                          step.count_window.width)
                return step
        step = CountLBP(counts, model=model, initial_point=initial_point,
                        compile_kwargs=compile_kwargs, exact_ratios=exact, **step_kwargs)
        if why is None and readable and plan.step is CountLBP:
            step.choice_reason = plan.reason
        else:
            why = why or ("options were given for the discrete step" if step_kwargs else
                          "the continuous variables are sampled by another step")
            step.choice_reason = (f"the counts of {names} are not summed out ({why}): "
                                  "locally balanced moves of each count")
        _log.info("pymc_discrete chose CountLBP for [%s]: %s.", names, step.choice_reason)
        rest = [*discrete, *continuous]
        if not rest:
            return step
        others = cls.__new__(cls, rest, model=model, initial_point=initial_point,
                             compile_kwargs=compile_kwargs, **nuts_kwargs, **step_kwargs)
        return CompoundStep([step, others])

    @staticmethod
    def _paired_steps(choice, discrete, continuous, model, initial_point, compile_kwargs,
                      nuts_kwargs):
        flip = PairedFlip(discrete, choice.coefficients, model=model,
                          initial_point=initial_point, compile_kwargs=compile_kwargs)
        flip.choice_reason = choice.reason
        # a quadratic log density in the coefficients (one Newton step: the fit is exact)
        # makes PairedFlip's refresh an exact Gibbs draw of them; NUTS then samples only
        # the rest, else the coefficients too
        gaussian = flip.newton_steps == 1 and flip.refresh
        rest = [v for v in continuous if not (gaussian and v is choice.coefficients)]
        _log.info("pymc_discrete chose PairedFlip for [%s] with NUTS for [%s]: %s%s.",
                  listed(v.name for v in discrete), listed(v.name for v in rest),
                  choice.reason, "; its conditional is Gaussian, so the flips draw "
                  f"{choice.coefficients.name} exactly" if gaussian else "")
        if not rest:
            return flip
        nuts = NUTS(rest, model=model, initial_point=initial_point,
                    compile_kwargs=compile_kwargs, **nuts_kwargs)
        return CompoundStep([flip, nuts])

    @staticmethod
    def _discrete_step(choice, discrete, model, initial_point, compile_kwargs, kwargs):
        step_class = BlockedGibbs if choice.step is CollapsedNUTS else choice.step
        reason = choice.reason
        if step_class is PairedFlip and not kwargs:
            step = PairedFlip(discrete, choice.coefficients, model=model,
                              initial_point=initial_point, compile_kwargs=compile_kwargs)
            step.choice_reason = reason
            _log.info("pymc_discrete chose PairedFlip for [%s]: %s.",
                      listed(v.name for v in discrete), reason)
            return step
        if step_class is PairedFlip:  # options of the other steps: the block's sweep
            step_class = BlockedGibbs
            reason += "; options were given for the discrete step, so BlockedGibbs sweeps it"
        if step_class is not choice.step:
            reason += ("; the continuous variables are sampled by another step, so the block "
                       "is swept by BlockedGibbs instead")
        # blocked=False splits the block into one step per variable: the structure read
        # for the whole block is not theirs
        split = not kwargs.get("blocked", True)
        step = step_class(discrete, model=model, initial_point=initial_point,
                          compile_kwargs=compile_kwargs,
                          exact_ratios=None if split else choice.exact_ratios, **kwargs)
        step.choice_reason = reason
        names = listed(v.name for v in step.vars)
        if isinstance(step, ALBP):
            _log.info("pymc_discrete chose ALBP(proposal=%r) for [%s]: %s; %s.", step.proposal,
                      names, reason, step.proposal_reason)
        else:
            _log.info("pymc_discrete chose %s for [%s]: %s.", type(step).__name__, names,
                      reason)
        return step

    @classmethod
    def competence(cls, var, has_grad=False):
        """IDEAL for Bernoulli, Categorical and finite integer variables (as ALBP); for a
        continuous variable with a gradient, NUTS's own competence (PREFERRED, and AutoStep
        comes first) when the model's discrete variables can be summed out
        (:class:`CollapsedNUTS`) or paired with coefficients (:class:`PairedFlip`), else
        INCOMPATIBLE."""
        if _is_discrete(var):
            return ALBP.competence(var, has_grad)
        model = None
        try:
            model = modelcontext(None)
        except TypeError:  # no model on the context stack: leave the variable to PyMC
            pass
        if is_count(var) and model is not None and var in model.free_RVs:
            plan = _count_plan(model)
            if not isinstance(plan, str):
                return Competence.IDEAL
            _log.info("pymc_discrete leaves %s to PyMC's own steps: %s.", var.name, plan)
            return Competence.INCOMPATIBLE
        if str(var.dtype).startswith(("int", "uint", "bool")):
            # a discrete variable the package's steps would refuse: PyMC's own step takes
            # it, and the log says so beside the package's own choices
            _log.info("pymc_discrete leaves %s to PyMC's own steps: %s.", var.name,
                      site_support_problem(var) or "it is not a supported distribution")
            return Competence.INCOMPATIBLE
        if not has_grad or model is None or var not in model.free_RVs:
            return Competence.INCOMPATIBLE
        discrete = [model.rvs_to_values[v] for v in model.free_RVs if _is_discrete(v)]
        if not discrete:
            if any(is_count(v) for v in model.free_RVs):
                plan = _count_plan(model)
                if not isinstance(plan, str) and plan.step is CollapsedNUTS:
                    return Competence.PREFERRED
            return Competence.INCOMPATIBLE
        try:
            choice = _cached_recommendation(model, discrete, None, None)
        except Exception:  # the block is refused: its own step will say why
            return Competence.INCOMPATIBLE
        # summed out or paired, or a model written one variable per site (its NUTS then
        # runs on the stacked log density)
        claims = choice.step in (CollapsedNUTS, PairedFlip) or has_stacked_logp(model, discrete)
        return Competence.PREFERRED if claims else Competence.INCOMPATIBLE

    def step(self, point):  # pragma: no cover - never an instance
        raise NotImplementedError
