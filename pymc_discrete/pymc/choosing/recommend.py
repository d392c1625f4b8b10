"""The recommendation policy: which step suits a block of discrete sites, from the model's structure.

:func:`recommend` reads the block's structure (which sites share a term of the log
density, coloured so that sites of one colour share none) and picks

* :class:`~pymc_discrete.pymc.steps.paired.PairedFlip` when the block is one 0/1 indicator of
  at most :data:`PAIRED_MAX_SITES` sites whose site ``j`` acts on element ``j`` of a
  continuous variable through that variable's prior alone (the scale-mixture
  spike-and-slab, ``beta ~ Normal(0, switch(g, slab, spike))``) and the spike is
  narrower than :data:`SPIKE_CROSSED` times the slab: summed out, every element would
  have a spike-on-slab density that NUTS does not cross, and a Gibbs flip of a site
  would rarely be accepted (a wider spike is summed out as below);
* :class:`~pymc_discrete.pymc.summing.collapsed_nuts.CollapsedNUTS` when the block's sites share no
  term (one colour) and the model has continuous variables: the block is summed out of
  the density NUTS samples, exactly and site by site, and drawn afresh from its
  conditional every draw (mixture labels, occupancy and capture-recapture indicators, a
  change point: the continuous variables then mix as in the model written with the
  discrete ones summed out by hand);
* :class:`~pymc_discrete.pymc.steps.paired.PairedFlip` also when the block is one 0/1 indicator
  whose sites share terms and which switches a continuous variable's elements on and off
  (``g * beta`` in a spike-and-slab regression): each flip redraws the coefficients from
  a Gaussian fit of their conditional;
* :class:`~pymc_discrete.pymc.steps.joint.JointGibbs` when the block's sites share terms (more
  than one colour) and the block has at most
  :data:`~pymc_discrete.kernels.joint.JOINT_MAX_STATES` joint states, and either nothing
  outside the block changes its conditional or a joint draw costs at most
  :data:`JOINT_SWEEPS_PER_DRAW` sweeps of single-site conditionals (counted in states
  evaluated): every draw is an exact draw from the joint conditional, so no improbable
  state between two probable ones (explaining away in a small network) slows the chain;
* :class:`~pymc_discrete.pymc.steps.chain.ChainGibbs` when the block's sites form a chain (two
  colours, every term touching one site or two neighbours of an order of the sites, read
  off the graph: a hidden Markov chain however its transitions are written): every draw
  is an exact draw of the whole chain by forward filtering, backward sampling;
* :class:`~pymc_discrete.pymc.steps.gibbs.BlockedGibbs` when few colours cover the block: a
  sweep then draws every site from its exact conditional in a few batched evaluations
  (mixture labels, occupancy and capture-recapture indicators, lattices), or the block
  is small enough that a sweep is cheap whatever its couplings;
* :class:`~pymc_discrete.pymc.steps.albp.ALBP` when the couplings are dense (about as many
  colours as sites: a sweep would cost one evaluation per site), or when the structure
  cannot be read.

Latent counts (Poisson, NegativeBinomial, Geometric) go to :func:`recommend_counts`:
:class:`~pymc_discrete.pymc.summing.collapsed_nuts.CollapsedNUTS` sums them out over a checked window
when they share no term and the model has continuous variables and no finite discrete
ones, else :class:`~pymc_discrete.CountLBP` moves them.

The policy only reads and decides; :mod:`~pymc_discrete.pymc.choosing.auto_step` builds what it
chose when :func:`~pymc_discrete.register` lets PyMC assign the package's steps.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from pymc.model import modelcontext
from pymc.pytensorf import make_shared_replacements
from pymc.step_methods.compound import Competence
from pymc.util import get_value_vars_from_user_vars
from pytensor.graph.basic import Variable
from pytensor.graph.traversal import variable_depends_on

from pymc_discrete.kernels.joint import JOINT_MAX_STATES, count_joint_states
from pymc_discrete.pymc.model.counts import count_exact_ratios, is_count
from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.model.pairing import (
    scaled_coefficients,
    spike_to_slab,
    switched_coefficients,
)
from pymc_discrete.pymc.model.setup_progress import listed
from pymc_discrete.pymc.model.terms import block_terms
from pymc_discrete.pymc.model.validation import block_value_vars, check_discrete_block
from pymc_discrete.pymc.steps.albp import ALBP
from pymc_discrete.pymc.steps.chain import ChainGibbs, chain_layout
from pymc_discrete.pymc.steps.count_step import CountLBP
from pymc_discrete.pymc.steps.gibbs import BlockedGibbs
from pymc_discrete.pymc.steps.joint import JointGibbs
from pymc_discrete.pymc.steps.paired import PairedFlip
from pymc_discrete.pymc.summing.collapsed_nuts import CollapsedNUTS
from pymc_discrete.pymc.summing.collapsible import (
    NotCollapsible,
    collapsible,
    count_problem,
    possible_values,
)

__all__ = [
    "Recommendation",
    "recommend",
    "recommend_counts",
    "COLLAPSE_MAX_VALUES",
    "COLLAPSE_SMALL_SUM",
    "PAIRED_MAX_SITES",
    "SPIKE_CROSSED",
    "GIBBS_MAX_COLOURS",
    "GIBBS_MIN_SITES_PER_COLOUR",
    "JOINT_SWEEPS_PER_DRAW",
]

#: a one-colour block is summed out for NUTS (CollapsedNUTS) when its sites have at most
#: this many values: the sum evaluates the block's terms K times at every NUTS step, which
#: pays for indicators and mixture labels whatever their number (docs/choosing.md,
#: "Marginalising")
COLLAPSE_MAX_VALUES = 16
#: ... unless the whole sum is this small (terms x values): then its cost in a NUTS step
#: is below the Python overhead of the Gibbs step it replaces. Measured on the coal-mining
#: change point (111 switch years x 110 terms, 4 chains x 1000 after 1000, seeds 1-3):
#: summed out, 0.85x the ESS per second of PyMC's NUTS on the model summed out by hand,
#: set-up counted, against 0.60x for BlockedGibbs beside NUTS (docs/choosing.md)
COLLAPSE_SMALL_SUM = 2**15
#: a scale mixture's spike at least this wide, relative to its slab, is left to the
#: block's own step (summed out, NUTS crosses between spike and slab; a Gibbs flip of a
#: site is accepted with probability of the order of the ratio): measured on a
#: 4-indicator regression over seeds 1-3, PairedFlip mixed the indicators 10x better
#: than the alternatives at a ratio of 0.01, on a par at 0.03, and its coefficients 2-3x
#: worse at 0.1 (docs/choosing.md)
SPIKE_CROSSED = 0.05

#: PairedFlip is chosen for at most this many coefficients: a draw fits a Gaussian (a
#: Hessian and a Cholesky factorisation of this size) once per site
PAIRED_MAX_SITES = 200
#: a block coloured with at most this many colours is swept by BlockedGibbs whatever
#: its size (a sweep costs one batched evaluation per colour)
GIBBS_MAX_COLOURS = 32
#: ... and so is any block whose colours hold at least this many sites on average
GIBBS_MIN_SITES_PER_COLOUR = 8
#: a block whose conditional changes every draw (its terms read other variables) is
#: drawn jointly (JointGibbs) only while a draw evaluates at most this many BlockedGibbs
#: sweeps' worth of states: an exact joint draw is worth a few sweeps on a coupled block,
#: not hundreds
JOINT_SWEEPS_PER_DRAW = 4


def _terms_depend_on(model, value_vars, others) -> bool:
    """Whether the block's terms read any of the value variables ``others``."""
    others = list(others)
    return bool(others) and variable_depends_on(block_terms(model, value_vars)[0], others)


def _joint_pays(exact, support, n_joint: int, model, value_vars) -> tuple[bool, str]:
    """Whether drawing the block from its joint conditional (:class:`JointGibbs`) costs
    little enough, and why: counted in states at which the block's terms are evaluated.

    Where nothing outside the block changes, the conditional is evaluated once per chain.
    Else a joint draw evaluates every joint state each draw, and a BlockedGibbs sweep
    ``K`` states per colour, or ``1 + K`` where x itself must be evaluated too
    (:attr:`~pymc_discrete.kernels.exact_tables.TermLayout.value_rows_only`): the joint
    draw is chosen while it costs at most :data:`JOINT_SWEEPS_PER_DRAW` sweeps."""
    block = set(value_vars)
    outside = [v for v in model.value_vars if v not in block]
    if not _terms_depend_on(model, value_vars, outside):
        return True, "nothing else in the model changes them, so they are evaluated once"
    with_x = 0 if exact.layout.value_rows_only else 1
    sweep = sum(with_x + int(support.n_values[sites].max()) for sites in exact.colour_sites())
    if n_joint <= JOINT_SWEEPS_PER_DRAW * sweep:
        return True, (f"{n_joint} states a draw, against {sweep} for a sweep of single-site "
                      "conditionals")
    return False, (f" (not drawn jointly: its {n_joint} joint states would cost "
                   f"{n_joint / sweep:.0f} sweeps a draw, as the other variables change every "
                   "draw)")


class Recommendation(NamedTuple):
    """The step :func:`recommend` chose for a block, and why.

    Attributes
    ----------
    step : type
        :class:`CollapsedNUTS`, :class:`PairedFlip`, :class:`JointGibbs`,
        :class:`BlockedGibbs` or :class:`ALBP`.
    reason : str
        One sentence: what was measured and why it decides.
    n_sites : int
        Sites in the block.
    n_colours : int or None
        Colours of the block's structure (None when it could not be read).
    exact_ratios : ExactRatios or None
        The structure read, reused when the recommended step is built.
    coefficients : Variable or None
        For :class:`PairedFlip`: the value variable of the coefficients the block's
        indicator switches.

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
    coefficients: Variable | None = None


def _block(vars, model, initial_point):
    value_vars = block_value_vars(model, vars, "recommend", ALBP.competence)
    if initial_point is None:
        initial_point = model.initial_point()
    support = check_discrete_block(model, value_vars, "recommend", initial_point)
    return value_vars, initial_point, support


def recommend_counts(vars, model=None, initial_point=None,
                     compile_kwargs: dict | None = None) -> Recommendation:
    """Choose the step for a block of latent counts (Poisson, NegativeBinomial,
    Geometric): :class:`CollapsedNUTS` when the counts share no term, the model has
    continuous variables and no finite discrete ones, and the sum over their window costs
    at most :data:`~pymc_discrete.pymc.summing.collapsible.MAX_SUMMED_TERMS` evaluations a gradient;
    else :class:`~pymc_discrete.CountLBP`, with the reason.

    Raises
    ------
    ValueError
        If a variable of ``vars`` is not a latent count.
    Exception
        Whatever reading the counts' structure raised (the caller then leaves them to
        PyMC).

    Examples
    --------
    >>> import pymc as pm, pymc_discrete as pmd
    >>> with pm.Model():
    ...     p = pm.Beta("p", 1, 1)
    ...     n = pm.Poisson("n", 5.0, shape=3, initval=[4, 4, 4])
    ...     y = pm.Binomial("y", n=n, p=p, observed=[3, 2, 1])
    ...     choice = pmd.recommend([n])
    >>> choice.step.__name__, choice.n_colours
    ('CollapsedNUTS', 1)
    """
    model = modelcontext(model)
    value_vars = get_value_vars_from_user_vars(vars, model)
    not_counts = [v.name for v in value_vars if not is_count(model.values_to_rvs[v])]
    if not_counts:
        raise ValueError(f"recommend_counts takes latent counts only, not {not_counts}")
    if initial_point is None:
        initial_point = model.initial_point()
    names = listed(v.name for v in value_vars)
    exact = count_exact_ratios(model, value_vars, initial_point, compile_kwargs)
    n_sites, n_colours = exact.n_sites, exact.structure.n_colours
    if any(ALBP.competence(rv) > Competence.INCOMPATIBLE for rv in model.free_RVs):
        why = "the model has finite discrete variables too"
    elif not model.continuous_value_vars:
        why = "the model has no continuous variables to sum them out for"
    else:
        why = count_problem(model, value_vars, exact, initial_point)
    if why is None:
        return Recommendation(
            CollapsedNUTS, f"the {n_sites} counts of {names} share no term: they are summed "
            "out for NUTS over a window of values checked at every draw, then drawn "
            "exactly", n_sites, n_colours, exact, None)
    return Recommendation(
        CountLBP, f"the counts of {names} are not summed out ({why}): locally balanced "
        "moves of each count", n_sites, n_colours, exact, None)


def recommend(vars=None, model=None, initial_point=None,
              compile_kwargs: dict | None = None) -> Recommendation:
    """Choose the step for a block of Bernoulli and Categorical variables from the
    structure of the model's log density (module docstring).

    Parameters
    ----------
    vars : list of random variables, optional
        The block (default: every Bernoulli and Categorical free variable). A block of
        latent counts goes to :func:`recommend_counts`.
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
    ('CollapsedNUTS', 1)
    """
    model = modelcontext(model)
    if vars is not None:
        rvs = [model.values_to_rvs.get(v, v) for v in np.atleast_1d(vars)]
        if rvs and all(is_count(rv) for rv in rvs):
            return recommend_counts(rvs, model, initial_point, compile_kwargs)
    value_vars, initial_point, support = _block(vars, model, initial_point)
    names = listed(v.name for v in value_vars)
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
    why_not = ""
    k = int(support.n_values.max()) if n_sites else 0
    if c == 1 and k > COLLAPSE_MAX_VALUES and exact.n_terms * k > COLLAPSE_SMALL_SUM:
        why_not = (f" (it is not summed out: with {k} values a site, the sum would evaluate its "
                   f"{exact.n_terms} terms {k} times at every NUTS step, against "
                   f"{exact.layout.rows_per_conditional} times a draw here)")
    elif c == 1 and _terms_depend_on(model, value_vars, model.continuous_value_vars):
        scaled = (_paired(model, value_vars, initial_point, support, scaled_coefficients)
                  if n_sites <= PAIRED_MAX_SITES else None)
        wide_spike = ""
        if scaled is not None:
            beta, found = scaled
            ratio = spike_to_slab(model, value_vars[0], beta, initial_point)
            if ratio < SPIKE_CROSSED:
                reason = (f"{found}: its spike is {ratio:.2g} times as wide as its slab, "
                          f"narrower than {SPIKE_CROSSED:g}: each flip of a site redraws "
                          f"{beta.name} from a Gaussian fit of its conditional")
                return Recommendation(PairedFlip, reason, n_sites, c, exact, beta)
            wide_spike = (f" ({beta.name}'s scale mixture has a spike {ratio:.2g} times as "
                          f"wide as its slab, at least {SPIKE_CROSSED:g}: summed out, NUTS "
                          "crosses between them)")
        refused = collapsible(exact)
        if refused is None:
            try:
                possible_values(exact)
            except NotCollapsible as err:
                refused = str(err)
        if refused is None:
            block, how, their = (
                (f"{names} is one site: it is", "exactly", "its") if n_sites == 1 else
                (f"the {n_sites} sites of {names} share no term: they are",
                 "exactly, site by site", "their"))
            reason = (f"{block} summed out of the density NUTS samples ({how}) and drawn "
                      f"afresh from {their} conditional every draw{wide_spike}")
            return Recommendation(CollapsedNUTS, reason, n_sites, c, exact)
        why_not = f" (it is not summed out: {refused})"
    paired = None
    if 1 < c and n_sites <= PAIRED_MAX_SITES:
        paired = _paired(model, value_vars, initial_point, support, switched_coefficients)
    if paired is not None:
        beta, found = paired
        reason = (f"{found}: each flip of a site redraws {beta.name} from a Gaussian fit of "
                  f"its conditional (a site flipped alone, with {beta.name} where it is, is "
                  "nearly always refused)")
        return Recommendation(PairedFlip, reason, n_sites, c, exact, beta)
    n_joint = count_joint_states(support.n_values)
    if c > 1 and n_joint <= JOINT_MAX_STATES:
        pays, cost = _joint_pays(exact, support, n_joint, model, value_vars)
        if pays:
            reason = (
                f"the {n_sites} sites of {names} share terms ({c} colours) and have "
                f"{n_joint} joint states ({cost}): each draw evaluates them all in one "
                "batched evaluation and draws the block exactly from its joint conditional, "
                f"so no improbable state between probable ones slows the chain{why_not}"
            )
            return Recommendation(JointGibbs, reason, n_sites, c, exact)
        why_not += cost
    if c == 2 and chain_layout(exact) is not None:
        reason = (
            f"the {n_sites} sites of {names} form a chain (every term touches one site or "
            f"two neighbours, read off the graph): each draw evaluates the terms at "
            f"{2 * k * k} states in one batched evaluation and draws the whole chain exactly "
            "from its conditional (forward filtering, backward sampling), so a regime "
            f"boundary moves anywhere in one draw{why_not}"
        )
        return Recommendation(ChainGibbs, reason, n_sites, c, exact)
    if c <= GIBBS_MAX_COLOURS or c * GIBBS_MIN_SITES_PER_COLOUR <= n_sites:
        reason = (
            f"{c} colour{'s cover' if c > 1 else ' covers'} the {n_sites} sites of {names} (sites of "
            "one colour share no term): a sweep draws every site from its exact conditional "
            f"in {c} batched evaluation{'s' if c > 1 else ''}{why_not}"
        )
        return Recommendation(BlockedGibbs, reason, n_sites, c, exact)
    reason = (
        f"the couplings of {names} are dense ({c} colours for {n_sites} sites): a Gibbs sweep "
        "would cost about one evaluation per site, ALBP moves many sites per evaluation"
    )
    return Recommendation(ALBP, reason, n_sites, c, exact)


def _paired(model, value_vars, initial_point, support, probe):
    """``(coefficients, what was found)`` when the block is one 0/1 indicator that
    ``probe`` (:func:`switched_coefficients` or :func:`scaled_coefficients`) pairs with a
    continuous variable (else None)."""
    if len(value_vars) != 1 or not support.is_binary or np.any(support.offsets != 0):
        return None
    try:
        beta, found = probe(model, value_vars[0], initial_point)
    except Exception:  # a model the probe cannot evaluate: not paired
        return None
    return None if beta is None else (beta, found)

