"""The automatic choice of a step for a block of discrete sites, from the model's structure.

:func:`recommend` reads the block's structure (which sites share a term of the log
density, coloured so that sites of one colour share none) and picks

* :class:`~pymc_discrete.pymc.gibbs.BlockedGibbs` when few colours cover the block: a
  sweep then draws every site from its exact conditional in a few batched evaluations
  (mixture labels, occupancy and capture-recapture indicators, lattices), or the block
  is small enough that a sweep is cheap whatever its couplings;
* :class:`~pymc_discrete.pymc.albp.ALBP` when the couplings are dense (about as many
  colours as sites: a sweep would cost one evaluation per site), or when the structure
  cannot be read.

:class:`AutoStep` is what :func:`~pymc_discrete.pymc.register.register` puts in PyMC's
list of step methods: PyMC builds it for the discrete variables it assigns, and it
returns the recommended step, built on the structure already read.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from pymc.model import modelcontext
from pymc.pytensorf import make_shared_replacements
from pymc.step_methods.compound import BlockedStep

from pymc_discrete.pymc.albp import ALBP
from pymc_discrete.pymc.exact import ExactRatios
from pymc_discrete.pymc.gibbs import BlockedGibbs
from pymc_discrete.pymc.validation import block_value_vars, check_discrete_block

__all__ = [
    "Recommendation",
    "recommend",
    "AutoStep",
    "GIBBS_MAX_COLOURS",
    "GIBBS_MIN_SITES_PER_COLOUR",
]

_log = logging.getLogger("pymc.pymc_discrete")

#: a block coloured with at most this many colours is swept by BlockedGibbs whatever
#: its size (a sweep costs one batched evaluation per colour)
GIBBS_MAX_COLOURS = 32
#: ... and so is any block whose colours hold at least this many sites on average
GIBBS_MIN_SITES_PER_COLOUR = 8


class Recommendation(NamedTuple):
    """The step :func:`recommend` chose for a block, and why.

    Attributes
    ----------
    step : type
        :class:`BlockedGibbs` or :class:`ALBP`.
    reason : str
        One sentence: what was measured and why it decides.
    n_sites : int
        Sites in the block.
    n_colours : int or None
        Colours of the block's structure (None when it could not be read).
    exact_ratios : ExactRatios or None
        The structure read, reused when the recommended step is built.

    Examples
    --------
    >>> import pymc as pm, pymc_discrete as pmd
    >>> with pm.Model():
    ...     z = pm.Bernoulli("z", 0.3, shape=10)
    ...     choice = pmd.recommend([z])
    >>> choice.step.__name__, choice.n_sites, choice.n_colours
    ('BlockedGibbs', 10, 1)
    """

    step: type
    reason: str
    n_sites: int
    n_colours: int | None
    exact_ratios: ExactRatios | None


def _block(vars, model, initial_point):
    value_vars = block_value_vars(model, vars, "recommend", ALBP.competence)
    if initial_point is None:
        initial_point = model.initial_point()
    support = check_discrete_block(model, value_vars, "recommend", initial_point)
    return value_vars, initial_point, support


def recommend(vars=None, model=None, initial_point=None,
              compile_kwargs: dict | None = None) -> Recommendation:
    """Choose the step for a block of Bernoulli and Categorical variables from the
    structure of the model's log density (module docstring).

    Parameters
    ----------
    vars : list of random variables, optional
        The block (default: every Bernoulli and Categorical free variable).
    model : pymc.Model, optional
    initial_point : dict, optional
        Where to read the structure (default: the model's initial point).
    compile_kwargs : dict, optional

    Returns
    -------
    Recommendation

    Examples
    --------
    >>> import pymc as pm, pymc_discrete as pmd
    >>> with pm.Model():
    ...     p = pm.Beta("p", 1, 1)
    ...     z = pm.Bernoulli("z", p, shape=50)
    ...     choice = pmd.recommend([z])
    >>> choice.step.__name__, choice.n_colours
    ('BlockedGibbs', 1)
    """
    model = modelcontext(model)
    value_vars, initial_point, support = _block(vars, model, initial_point)
    names = ", ".join(v.name for v in value_vars)
    n_sites = int(support.n_values.size)
    n_categories = None if support.is_binary else support.n_values
    shared = make_shared_replacements(initial_point, value_vars, model)
    try:
        exact = ExactRatios(model, value_vars, initial_point, shared, compile_kwargs,
                            n_categories=n_categories, offsets=support.offsets)
    except Exception as err:  # any failure to read the structure: the gradient step
        return Recommendation(
            ALBP, f"the structure of {names} could not be read ({err}); ALBP needs none",
            n_sites, None, None,
        )
    c = exact.structure.n_colours
    if c <= GIBBS_MAX_COLOURS or c * GIBBS_MIN_SITES_PER_COLOUR <= n_sites:
        reason = (
            f"{c} colour{'s cover' if c > 1 else ' covers'} the {n_sites} sites of {names} (sites of "
            "one colour share no term): a sweep draws every site from its exact conditional "
            f"in {c} batched evaluation{'s' if c > 1 else ''}"
        )
        return Recommendation(BlockedGibbs, reason, n_sites, c, exact)
    reason = (
        f"the couplings of {names} are dense ({c} colours for {n_sites} sites): a Gibbs sweep "
        "would cost about one evaluation per site, ALBP moves many sites per evaluation"
    )
    return Recommendation(ALBP, reason, n_sites, c, exact)


class AutoStep(BlockedStep):
    """The step :func:`recommend` chooses, as a step method class PyMC can assign.

    ``AutoStep(vars, ...)`` returns a :class:`BlockedGibbs` or an :class:`ALBP` instance
    (never an ``AutoStep``), with ``choice_reason`` set to why, and logs the choice on
    the ``pymc.pymc_discrete`` logger (shown with PyMC's own messages).

    Parameters
    ----------
    vars : list of value or random variables, optional
    model : pymc.Model, optional
    initial_point : dict, optional
    compile_kwargs : dict, optional
    **kwargs
        Passed to the chosen step (e.g. ``rng``, ``blocked``).
    """

    name = "pymc_discrete"

    def __new__(cls, vars=None, model=None, initial_point=None, compile_kwargs=None,
                **kwargs):
        model = modelcontext(model)
        choice = recommend(vars, model, initial_point, compile_kwargs)
        # blocked=False splits the block into one step per variable: the structure read
        # for the whole block is not theirs
        split = not kwargs.get("blocked", True)
        step = choice.step(vars, model=model, initial_point=initial_point,
                           compile_kwargs=compile_kwargs,
                           exact_ratios=None if split else choice.exact_ratios, **kwargs)
        step.choice_reason = choice.reason
        names = ", ".join(v.name for v in step.vars)
        if isinstance(step, ALBP):
            _log.info("pymc_discrete chose ALBP(proposal=%r) for [%s]: %s; %s.", step.proposal,
                      names, choice.reason, step.proposal_reason)
        else:
            _log.info("pymc_discrete chose %s for [%s]: %s.", type(step).__name__, names,
                      choice.reason)
        return step

    @classmethod
    def competence(cls, var, has_grad=False):
        """IDEAL for Bernoulli and Categorical variables (as ALBP)."""
        return ALBP.competence(var, has_grad)

    def step(self, point):  # pragma: no cover - never an instance
        raise NotImplementedError
