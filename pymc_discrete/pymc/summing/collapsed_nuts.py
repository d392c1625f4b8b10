"""CollapsedNUTS: NUTS on the continuous variables with a block of discrete sites summed
out, then the block drawn exactly from its conditional.

When the sites of a block share no term of the log density (one colour of
:class:`~pymc_discrete.pymc.model.exact.ExactRatios`: mixture labels, occupancy or
capture-recapture indicators, a change point's switch), the joint density factorises
given the continuous variables theta:
``log p(theta, z) = rest(theta) + sum_i s_i(theta, z_i)``, so the block sums out exactly,
site by site:

``log p(theta) = rest(theta) + sum_i logsumexp_v s_i(theta, v)``.

``s_i(theta, v)`` for every site and value comes from one batched evaluation of the
block's terms at K states (state v: every site at value v). NUTS samples theta from this
marginal, which mixes as well as the model written with the discrete variables summed out
by hand (data augmentation couples the labels and the parameters, and the chain of theta
then moves only as far as the current labels allow). After each NUTS step the block is
drawn afresh from ``p(z | theta)``: the pair stays exact because theta's kernel leaves
``p(theta)`` invariant and z is then drawn from its conditional given the new theta (the
order matters: a z that NUTS saw would be stale).

Two things the sum relies on are checked rather than assumed. Which values of each site
are possible must not depend on theta: a value whose terms are -inf (an occupied site
with detections cannot be unoccupied) is left out of the sum by a fixed mask rather than
summed as exp(-inf), whose gradient is NaN; the mask is read at the initial point and at
perturbed continuous values, and every draw of the block checks it again. And the
model's parameter checks must hold at every value (they are part of the density).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.blocking import RaveledVars
from pymc.model import modelcontext
from pymc.pytensorf import make_shared_replacements
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence, CompoundStep
from pymc.step_methods.hmc import NUTS
from pymc.util import get_value_vars_from_user_vars
from pytensor.graph.replace import clone_replace

from pymc_discrete.kernels.gibbs import update_colour
from pymc_discrete.pymc.model.counts import count_exact_ratios, is_count
from pymc_discrete.pymc.model.creation_traces import untraced
from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.model.reproducible import compile_function
from pymc_discrete.pymc.model.validation import block_value_vars, check_discrete_block
from pymc_discrete.pymc.steps.albp import ALBP
from pymc_discrete.pymc.steps.chain import ChainGibbs, chain_layout
from pymc_discrete.pymc.steps.scalar_point import ScalarSitesMapping
from pymc_discrete.pymc.summing.chain_sum import chain_marginal_log_density
from pymc_discrete.pymc.summing.collapsible import (
    NotCollapsible,
    collapsible,
    count_window_or_problem,
    possible_values,
)
from pymc_discrete.pymc.summing.count_sum import CountDraw, CountSum
from pymc_discrete.pymc.summing.marginal import (
    marginal_log_density,
    marginal_logp_dlogp,
    site_sums,
)

__all__ = ["CollapsedNUTS", "ExactBlockDraw", "MarginalNUTS"]


class MarginalNUTS(NUTS):
    """NUTS on a density that does not read every other variable of the point: the part of
    :class:`CollapsedNUTS` that samples the continuous variables from the marginal.

    PyMC's array steps hand the whole point to the sampler when no other variable is an
    input of their density (they assume they then own every variable); the block summed
    out is such a variable here, so the point is cut to what the density reads: NUTS's
    own variables and the others it takes as shared inputs.

    Parameters
    ----------
    vars, model, logp_dlogp_func, initial_point, **kwargs
        As for :class:`pymc.NUTS`; ``logp_dlogp_func`` compiles the marginal
        (:func:`~pymc_discrete.pymc.summing.marginal.marginal_logp_dlogp`).
    """

    def step(self, point):
        own = {name: point[name] for name in (*self.var_names, *self.shared)}
        new, stats = super().step(own)
        return {**point, **new}, stats

    def astep(self, q0: RaveledVars):
        # the compiled density trusts its input (marginal_logp_dlogp): the integrator's
        # positions are computed from this one, so it alone is brought to the type
        dtype = self._logp_dlogp_func.dtype
        data = q0.data
        if data.dtype != dtype or data.ndim != 1 or not data.flags.c_contiguous:
            q0 = RaveledVars(np.ascontiguousarray(data, dtype=dtype).ravel(),
                             q0.point_map_info)
        return super().astep(q0)


# PyMC's log lists the parts of a compound step by class name (``type(step).__name__``)
# and the compound itself only as "CompoundStep": the parts carry the name of the step
# users asked for (the module and qualified name, which pickling uses, are unchanged)
MarginalNUTS.__name__ = "CollapsedNUTS (NUTS on the marginal)"


class ExactBlockDraw(ScalarSitesMapping, ArrayStepShared):
    """Every site of a one-colour block drawn afresh from its exact conditional given the
    other variables (one compiled evaluation of every site's terms at its K values),
    checking that the possible values are those the sum assumed: the part of
    :class:`CollapsedNUTS` that draws the block back.

    Parameters
    ----------
    vars : list of Variable
        The block's value variables.
    exact : ExactRatios
        The block's structure (one colour).
    possible : ndarray of bool, shape (N, K)
        The values the sum runs over
        (:func:`~pymc_discrete.pymc.summing.collapsible.possible_values`).
    offsets : ndarray of int64, shape (N,)
        Smallest value of every site.
    model, initial_point, compile_kwargs, blocked, rng
        As for PyMC's steps.

    Attributes
    ----------
    draws_in_tuning : bool
        Whether the block is drawn during tuning. A draw depends on the continuous
        values alone, not on the block's previous values, so where nothing else reads
        the block (no other step of the model) tuning needs no draw:
        :class:`CollapsedNUTS` then sets this to False, and the block keeps its initial
        values through the warm-up (every draw after tuning is drawn afresh).
    """

    name = "collapsed_draw"
    stats_dtypes_shapes = {"accept": (np.float64, []), "jump_distance": (np.int64, [])}

    def __init__(self, vars, *, exact: ExactRatios, possible: np.ndarray, offsets: np.ndarray,
                 model=None, initial_point: dict, compile_kwargs: dict | None = None,
                 blocked: bool = True, rng=None) -> None:
        model = modelcontext(model)
        super().__init__(vars, exact.shared, blocked, rng=rng)
        self._exact = exact
        self._possible = possible
        self._offsets = np.asarray(offsets, dtype=np.int64)
        ks, k = exact.layout.site_values, exact.layout.max_values
        self._has = np.arange(k)[None, :] < ks[:, None]
        # every site at each of its values (a site with fewer than K repeats its last)
        states = np.minimum(np.arange(k)[:, None], ks[None, :] - 1)
        sums = site_sums(model, vars, initial_point, exact, states + self._offsets[None, :])
        # alike sites have equal sums: the (kinds, K) table is compiled, and every site
        # reads its kind's row in NumPy (no gather in the compiled function)
        self._kind = None if sums.alike is None else sums.alike.kind
        by_kind = sums.per_site() if self._kind is None else sums.per_kind
        table = clone_replace(pt.switch(sums.held, by_kind, -np.inf), exact.shared)
        self._table = compile_function([], table, **(compile_kwargs or {}))
        self._table.trust_input = True
        self.draws_in_tuning = True
        # tuning only between a chain's set-up and PyMC's stop_tuning: a step called by
        # hand always draws
        self.tune = False

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        """A chain tunes for ``tune`` iterations (PyMC sets only the compound's flag)."""
        super().setup_chain(rng, tune, draws)
        self.tune = tune > 0

    def step(self, point):
        if self.tune and not self.draws_in_tuning:  # not even the point's mapping
            return point, [{"accept": 1.0, "jump_distance": 0}]
        return super().step(point)

    def astep(self, q0):
        x = np.asarray(q0.data, dtype=np.int64) - self._offsets
        table = self._table()
        if self._kind is not None:
            table = table[self._kind]
        finite = (table > -np.inf) & self._has  # NaN: impossible too
        if not np.array_equal(finite, self._possible):
            raise NotCollapsible(
                "CollapsedNUTS: at the current continuous values the possible values of "
                f"{', '.join(self._exact.var_names)} differ from those it summed over (or a "
                "parameter check fails at some value): their support depends on the "
                "continuous variables. Sample them with pmd.BlockedGibbs instead.")
        table = np.where(finite, table, -np.inf)
        drawn, n_changed, _ = update_colour(table, x, self.rng.random(x.size), 1.0)
        values = (drawn + self._offsets).astype(q0.data.dtype)
        return RaveledVars(values, q0.point_map_info), [
            {"accept": 1.0, "jump_distance": int(n_changed)}]


ExactBlockDraw.__name__ = "CollapsedNUTS (exact draw)"


class CollapsedNUTS(CompoundStep):
    """NUTS on the continuous variables with a block of conditionally independent discrete
    sites summed out, then the block drawn exactly from its conditional.

    For blocks whose sites share no term of the log density (mixture labels, occupancy
    and capture-recapture indicators, a change point): the block is summed out site by
    site, exactly, so NUTS samples the continuous variables as it would the model written
    with the discrete variables marginalised by hand, and every draw the block is then
    drawn afresh from its conditional given them (module docstring). The draws of the
    block are exact posterior draws, like the continuous ones.

    Parameters
    ----------
    vars : list of random variables, optional
        The discrete block (Bernoulli, Categorical and finite integer variables; default:
        all of the model's).
    continuous : list of random variables, optional
        The continuous variables NUTS samples (default: all of the model's continuous
        variables).
    model : pymc.Model, optional
    initial_point, compile_kwargs
        As for PyMC's steps (passed by ``pm.sample`` when it builds the step).
    exact_ratios : ExactRatios, optional
        The block's structure, already read (by :func:`~pymc_discrete.recommend`).
    **nuts_kwargs
        Passed to :class:`pymc.NUTS` (``target_accept``, ``max_treedepth``, ...).

    Raises
    ------
    NotCollapsible
        If the block's sites share a term, its structure could only be probed, a
        parameter check fails at some value, or the possible values of a site depend on
        the continuous variables (use :class:`~pymc_discrete.BlockedGibbs` then).

    Notes
    -----
    PyMC's log lists the step as a ``CompoundStep`` of two parts:
    ``CollapsedNUTS (NUTS on the marginal)`` on the continuous variables and
    ``CollapsedNUTS (exact draw)`` on the block.

    Sampler statistics: NUTS's (``diverging``, ``tree_depth``, ...) and the draw's
    (``accept``, always 1: an exact draw; ``jump_distance``: sites changed). The model's
    log density is not reported (PyMC keeps only the last step's, and the draw's is not
    the joint's).
    A NUTS gradient evaluates the block's terms at K states (K values per site): cheap
    for labels and indicators, K times the likelihood for a switch point with K years.

    Where the step samples every free variable of the model (no other step reads the
    block), the block of sites sharing no term is not drawn during tuning: NUTS samples
    the marginal, and each draw of the block depends on the continuous values alone.
    The block keeps its initial values in the warm-up draws
    (``discard_tuned_samples=False``) and is drawn afresh at every draw after tuning.

    Examples
    --------
    >>> import pymc as pm, pymc_discrete as pmd
    >>> with pm.Model():
    ...     p = pm.Beta("p", 1, 1)
    ...     z = pm.Bernoulli("z", p, shape=100)
    ...     idata = pm.sample(step=pmd.CollapsedNUTS([z]), chains=1,
    ...                       progressbar=False)  # doctest: +SKIP
    """

    @untraced
    def __init__(self, vars=None, continuous=None, *, model=None, initial_point=None,
                 compile_kwargs: dict | None = None, exact_ratios: ExactRatios | None = None,
                 **nuts_kwargs) -> None:
        model = modelcontext(model)
        if vars is None:  # the finite discrete variables, else the latent counts
            vars = ([rv for rv in model.free_RVs if _finite(rv)]
                    or [rv for rv in model.free_RVs if is_count(rv)] or None)
        block = block_value_vars(model, vars, "CollapsedNUTS", _competence)
        if initial_point is None:
            initial_point = model.initial_point()
        counts = [v.name for v in block if is_count(model.values_to_rvs[v])]
        if counts and len(counts) < len(block):
            raise NotCollapsible(
                f"CollapsedNUTS sums out either finite discrete variables or latent counts, "
                f"not both in one block: give the counts {counts} their own CollapsedNUTS")
        if continuous is None:
            continuous = list(model.continuous_value_vars)
        else:
            continuous = get_value_vars_from_user_vars(continuous, model)
        if not continuous:
            raise NotCollapsible("CollapsedNUTS needs continuous variables to sample with "
                                 "the block summed out; the model has none (use "
                                 "pmd.BlockedGibbs)")
        names = tuple(v.name for v in block)
        if exact_ratios is not None and exact_ratios.var_names != names:
            raise ValueError(f"exact_ratios were read for {exact_ratios.var_names}, not for "
                             f"{names}")
        #: the window the counts are summed over (None for a finite block)
        self.count_window = None
        if counts:
            exact = exact_ratios or count_exact_ratios(model, block, initial_point,
                                                       compile_kwargs)
            parts = self._count_parts(model, block, continuous, initial_point, exact,
                                      compile_kwargs, nuts_kwargs)
            super().__init__(parts)
            return
        support = check_discrete_block(model, block, "CollapsedNUTS", initial_point)
        exact = exact_ratios or ExactRatios(
            model, block, initial_point, make_shared_replacements(initial_point, block, model),
            compile_kwargs, n_categories=None if support.is_binary else support.n_values,
            offsets=support.offsets,
        )
        #: the chain order of a chain-structured block summed out by the forward
        #: algorithm (None for a block of independent sites)
        self.chain_layout = None
        why = collapsible(exact)
        layout = chain_layout(exact) if why is not None else None
        if layout is not None:
            self._chain_parts(model, block, continuous, initial_point, exact, layout,
                              compile_kwargs, nuts_kwargs)
            return
        if why is not None:
            raise NotCollapsible(f"CollapsedNUTS cannot sum out {', '.join(names)}: {why} "
                                 "(use pmd.BlockedGibbs)")
        possible = possible_values(exact)
        marginal = marginal_log_density(model, block, initial_point, exact, possible)
        nuts = self._marginal_nuts(model, marginal, continuous, initial_point, compile_kwargs,
                                   nuts_kwargs)
        draw = ExactBlockDraw(block, exact=exact, possible=possible, offsets=support.offsets,
                          model=model, initial_point=initial_point,
                          compile_kwargs=compile_kwargs)
        # no other step reads the block: tuning, which samples the marginal, needs no
        # draw of it
        draw.draws_in_tuning = not _owns_every_variable(model, block, continuous)
        #: the block's structure (shared with the draw step)
        self.exact_ratios = exact
        #: (N, K) which values of every site the sum runs over (None for counts)
        self.possible = possible
        super().__init__([nuts, draw])

    def _chain_parts(self, model, block, continuous, initial_point, exact, layout,
                     compile_kwargs, nuts_kwargs) -> None:
        """NUTS on the chain summed out by the forward algorithm, then ChainGibbs."""
        marginal = chain_marginal_log_density(model, block, initial_point, exact, layout)
        nuts = self._marginal_nuts(model, marginal, continuous, initial_point, compile_kwargs,
                                   nuts_kwargs)
        draw = ChainGibbs(block, model=model, initial_point=initial_point,
                          compile_kwargs=compile_kwargs, exact_ratios=exact)
        self.exact_ratios = exact
        self.possible = None
        self.chain_layout = layout
        super().__init__([nuts, draw])

    def _count_parts(self, model, block, continuous, initial_point, exact, compile_kwargs,
                     nuts_kwargs) -> list:
        """NUTS on the counts' sum over their window, and their exact draw."""
        window = count_window_or_problem(model, block, exact, initial_point)
        if isinstance(window, str):
            raise NotCollapsible(f"CollapsedNUTS cannot sum out the counts "
                                 f"{', '.join(exact.var_names)}: {window}")
        sums = CountSum(model, block, initial_point, exact, window, list(continuous),
                        compile_kwargs)
        logp_dlogp, _ = sums.functions(sums.start_width)
        nuts = MarginalNUTS(continuous, model=model, logp_dlogp_func=logp_dlogp,
                             initial_point=initial_point, **nuts_kwargs)
        draw = CountDraw(block, exact=exact, sums=sums, nuts=nuts)
        self.exact_ratios = exact
        self.possible = None
        self.count_window = window
        return [nuts, draw]

    @staticmethod
    def _marginal_nuts(model, marginal, continuous, initial_point, compile_kwargs,
                       nuts_kwargs) -> NUTS:
        """NUTS on ``marginal``, a density of the continuous variables (and of other
        variables it reads, held as shared inputs)."""
        logp_dlogp = marginal_logp_dlogp(model, marginal, continuous, initial_point,
                                         compile_kwargs)
        return MarginalNUTS(continuous, model=model, logp_dlogp_func=logp_dlogp,
                             initial_point=initial_point, **nuts_kwargs)


def _owns_every_variable(model, block, continuous) -> bool:
    """Whether the block and the continuous variables are every free variable of the
    model (no other step will read the block)."""
    return {v.name for v in (*block, *continuous)} == {v.name for v in model.value_vars}


def _finite(rv) -> bool:
    return ALBP.competence(rv) > Competence.INCOMPATIBLE


def _competence(rv, has_grad=False) -> Competence:
    """What CollapsedNUTS sums: finite discrete variables and latent counts."""
    return Competence.IDEAL if _finite(rv) or is_count(rv) else Competence.INCOMPATIBLE

