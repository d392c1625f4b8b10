"""CollapsedNUTS: NUTS on the continuous variables with a block of discrete sites summed
out, then the block drawn exactly from its conditional.

When the sites of a block share no term of the log density (one colour of
:class:`~pymc_discrete.pymc.exact.ExactRatios`: mixture labels, occupancy or
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

import logging
from collections.abc import Sequence

import numpy as np
import pytensor.tensor as pt
from pymc.blocking import RaveledVars
from pymc.model import modelcontext
from pymc.model.core import ValueGradFunction
from pymc.pytensorf import compile as pm_compile
from pymc.pytensorf import make_shared_replacements
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence, CompoundStep
from pymc.step_methods.hmc import NUTS
from pymc.util import get_value_vars_from_user_vars
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.replace import clone_replace, vectorize_graph
from pytensor.graph.traversal import graph_inputs

from pymc_discrete.kernels.gibbs import update_colour
from pymc_discrete.pymc.albp import ALBP
from pymc_discrete.pymc.chain import ChainGibbs, chain_layout
from pymc_discrete.pymc.collapsed_chain import chain_marginal_log_density
from pymc_discrete.pymc.collapsed_counts import CountDraw, CountSum
from pymc_discrete.pymc.counts import count_start, is_count, read_count_window, site_sums
from pymc_discrete.pymc.exact import ExactRatios
from pymc_discrete.pymc.terms import (
    block_pieces,
    piece_sizes,
    states_as_constants,
    without_checks,
)
from pymc_discrete.pymc.validation import block_value_vars, check_discrete_block

__all__ = ["CollapsedNUTS", "NotCollapsible", "collapsible", "marginal_log_density",
           "possible_values"]

_log = logging.getLogger("pymc.pymc_discrete")

#: continuous values at which the possible values of every site are read (besides the
#: initial point): the support must be the same at all of them
SUPPORT_PROBES = 4


#: largest number of term evaluations (terms x values) a sum over the block may take: each
#: NUTS step evaluates them and their gradient
MAX_SUMMED_TERMS = 2**22

#: blocks with at most this many values a site have their terms built once per value
#: (cheaper to run); blocks with more, as one vectorised graph (cheaper to compile)
SEPARATE_STATES_MAX = 4


class NotCollapsible(ValueError):
    """The block cannot be summed out exactly site by site (the message says why)."""


def collapsible(exact: ExactRatios) -> str | None:
    """Why the block of ``exact`` cannot be summed out site by site, or None if it can.

    It can when its sites provably share no term (one colour, read off the graph): then
    the joint density factorises over the sites given everything else.
    """
    if exact.n_sites == 0:
        return "the block has no sites"
    if not exact.proven:
        return ("the block's structure was only probed, not read off the graph: a coupling "
                "the probes missed would make the sum wrong")
    if exact.structure.n_colours != 1:
        return (f"its sites share terms ({exact.structure.n_colours} colours): the sum over "
                "the block would not factorise over its sites")
    size = exact.n_terms * exact.layout.max_values
    if size > MAX_SUMMED_TERMS:
        return (f"the sum would evaluate {exact.n_terms} terms at {exact.layout.max_values} values "
                f"({size} in all, more than {MAX_SUMMED_TERMS}) at every NUTS step")
    return None


def _site_of_term(exact: ExactRatios) -> np.ndarray:
    """The site every term depends on (-1: none); one colour: at most one each."""
    s = exact.structure
    owner = np.full(exact.n_terms, -1, dtype=np.int64)
    owner[s.site_terms] = np.repeat(np.arange(exact.n_sites), np.diff(s.site_ptr))
    return owner


def possible_values(exact: ExactRatios, seed: int = 0) -> np.ndarray:
    """Which value of every site has a finite log density, the same at the initial point and
    at ``SUPPORT_PROBES`` perturbed values of the continuous variables.

    Returns
    -------
    ndarray of bool, shape (N, K)
        False also at values a site does not have (``v >= K_i``).

    Raises
    ------
    NotCollapsible
        If a parameter check of the model fails at some value of the block, or if the
        possible values differ between the probe points.
    """
    k = exact.layout.max_values
    ks = exact.layout.site_values
    has = np.arange(k)[None, :] < ks[:, None]
    states = np.minimum(np.arange(k)[:, None], ks[None, :] - 1)
    rng = np.random.default_rng(seed)
    saved = {s: s.get_value() for s in exact.shared.values()}
    seen = None
    try:
        for probe in range(1 + SUPPORT_PROBES):
            if probe:
                for s, value in saved.items():
                    if np.issubdtype(np.asarray(value).dtype, np.floating):
                        s.set_value(value + rng.normal(0.0, 1.0, np.shape(value)).astype(
                            np.asarray(value).dtype))
            terms = exact.batch_terms(states)
            if not exact.checks_held:
                raise NotCollapsible(
                    "a parameter check of the model fails at some value of the block")
            finite = (site_sums(terms, exact) > -np.inf) & has
            if seen is None:
                seen = finite
            elif not np.array_equal(seen, finite):
                i, v = np.argwhere(seen != finite)[0]
                raise NotCollapsible(
                    f"whether site {i} can take value {v} depends on the continuous variables")
    finally:
        for s, value in saved.items():
            s.set_value(value)
    if not seen.any(axis=1).all():
        raise NotCollapsible(f"site {int(np.flatnonzero(~seen.any(axis=1))[0])} has no "
                             "possible value")
    return seen


def _sum_by_site(batch: Variable, own: np.ndarray, n: int, k: int) -> Variable:
    """(K, N) sums of a batched piece's elements (K, size) by the site each belongs to
    (``own``; -1: none, left out)."""
    size = own.size
    sites = np.arange(n)
    if size % n == 0 and size:
        c = size // n
        if np.array_equal(own, np.repeat(sites, c)):  # c consecutive elements a site
            return batch.reshape((k, n, c)).sum(axis=2)
        if np.array_equal(own, np.tile(sites, c)):  # every site once in each of c runs
            return batch.reshape((k, c, n)).sum(axis=1)
    owned = np.flatnonzero(own >= 0)
    if not owned.size:
        return pt.zeros((k, n), dtype="float64")
    return pt.inc_subtensor(pt.zeros((n, k), dtype="float64")[own[owned]],
                            batch[:, owned].T).T


def site_sums_graph(model, value_vars: Sequence[Variable], point: dict, exact: ExactRatios,
                    values: np.ndarray) -> tuple[Variable, Variable, Variable]:
    """Every site's terms summed, at K given states of the block, as one graph.

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
        The block's value variables (their sites share no term: :func:`collapsible`).
    point : dict
        A point of the model (the block's shapes).
    exact : ExactRatios
        The block's structure.
    values : ndarray of int, shape (K, N)
        The block's values (offsets included) at each of the K states.

    Returns
    -------
    per_site : Variable
        (N, K) sum of site i's terms at state v (check-free).
    loose : Variable
        Scalar: the terms of the block's pieces that no site moves (the same at every
        state).
    held : Variable
        Boolean scalar: whether every parameter check of the pieces holds at every state.
    """
    pieces, _ = block_pieces(model, value_vars)
    k, n = values.shape
    # piece by piece: a piece whose elements follow the sites (one each, or a row or a
    # column each) sums by a reshape, with no scatter to differentiate through
    unchecked, helds = zip(*[without_checks(piece, list(value_vars)) for piece in pieces])
    if k <= SEPARATE_STATES_MAX:
        # one copy of the graph per state: where every site takes the same value v, the
        # block is a constant fill of v, which PyTensor's rewrites push out of the
        # elementwise terms (log(v * p) becomes a scalar log of p), cheaper than one graph
        # over a (K, N) constant
        rows = []
        for v in range(k):
            replace, lo = {}, 0
            for var in value_vars:
                shape = tuple(int(d) for d in np.shape(point[var.name]))
                size = int(np.prod(shape, dtype=np.int64))
                row = values[v, lo:lo + size].astype(var.type.dtype)
                replace[var] = (pt.full(shape, row[0], dtype=var.type.dtype)
                                if size and np.all(row == row[0])
                                else pt.constant(row.reshape(shape)))
                lo += size
            rows.append(clone_replace([*unchecked, *helds], replace))
        batched = [pt.stack([row[i] for row in rows]) for i in range(len(rows[0]))]
    else:
        # many values (a switch point over 111 years, a window of counts): one vectorised
        # graph, K copies would take minutes to compile
        batched = vectorize_graph([*unchecked, *helds],
                                  replace=states_as_constants(value_vars, point, values))
    owner = _site_of_term(exact)
    sizes = [int(size) for size in piece_sizes(pieces, model, point)]
    if sum(sizes) != owner.size:
        raise NotCollapsible(f"the block's terms number {sum(sizes)} in the graph and "
                             f"{owner.size} in its structure")
    per_site, loose_total, start = pt.zeros((k, n), dtype="float64"), pt.constant(0.0), 0
    for batch, size in zip(batched[:len(pieces)], sizes):
        own = owner[start:start + size]
        start += size
        per_site = per_site + _sum_by_site(batch, own, n, k)
        loose = np.flatnonzero(own < 0)  # elements no site moves: the same in every row
        if loose.size:
            loose_total = loose_total + batch[0, loose].sum()
    held = pt.all(pt.stack([pt.all(h) for h in batched[len(pieces):]]))
    return per_site.T, loose_total, held


def marginal_log_density(model, value_vars: Sequence[Variable], point: dict,
                         exact: ExactRatios, possible: np.ndarray) -> Variable:
    """The model's log density with the block summed out, site by site (module docstring).

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
        The block's value variables (their sites share no term: :func:`collapsible`).
    point : dict
        A point of the model (the block's shapes).
    exact : ExactRatios
        The block's structure.
    possible : ndarray of bool, shape (N, K)
        :func:`possible_values`.

    Returns
    -------
    Variable
        Scalar graph of the model's other value variables (the block is not an input).
    """
    _, rest = block_pieces(model, value_vars)
    k = exact.layout.max_values
    # state v puts every site at v where v is possible, else at a possible value: its
    # terms are then finite (no NaN gradient) and masked out of the sum below
    fallback = np.argmax(possible, axis=1)
    index = np.where(possible.T, np.arange(k)[:, None], fallback[None, :])  # (K, N)
    values = index + (0 if exact.offsets is None else exact.offsets[None, :])
    per_site, loose_total, held = site_sums_graph(model, value_vars, point, exact, values)
    return summed_out(rest + loose_total, pt.switch(possible, per_site, -np.inf), held)


def summed_out(rest: Variable, per_site: Variable, held: Variable) -> Variable:
    """``rest + sum_i logsumexp_v per_site[i, v]``, or -inf where a check failed."""
    top = pt.max(per_site, axis=1)
    sums = pt.log(pt.exp(per_site - top[:, None]).sum(axis=1)) + top
    return pt.switch(held, rest + sums.sum(), -np.inf)


def marginal_logp_dlogp(model, marginal: Variable, continuous: Sequence[Variable],
                        point: dict, compile_kwargs: dict | None = None) -> ValueGradFunction:
    """``marginal`` and its gradient in the continuous variables, compiled for NUTS (the
    other variables it reads become shared inputs, set from the point every step)."""
    inputs = {i for i in graph_inputs([marginal]) if not isinstance(i, Constant)}
    extra = {v: point[v.name] for v in model.value_vars
             if v in inputs and v not in continuous}
    logp_dlogp = ValueGradFunction([marginal], list(continuous), extra, model=model,
                                   initial_point=point, ravel_inputs=True,
                                   **(compile_kwargs or {}))
    logp_dlogp.trust_input = True
    return logp_dlogp


class _MarginalNUTS(NUTS):
    """NUTS on a density that does not read every other variable of the point.

    PyMC's array steps hand the whole point to the sampler when no other variable is an
    input of their density (they assume they then own every variable); the block summed
    out is such a variable here, so the point is cut to what the density reads: NUTS's
    own variables and the others it takes as shared inputs."""

    def step(self, point):
        own = {name: point[name] for name in (*self.var_names, *self.shared)}
        new, stats = super().step(own)
        return {**point, **new}, stats


# PyMC's log lists the parts of a compound step by class name (``type(step).__name__``)
# and the compound itself only as "CompoundStep": the parts carry the name of the step
# users asked for (the module and qualified name, which pickling uses, are unchanged)
_MarginalNUTS.__name__ = "CollapsedNUTS (NUTS on the marginal)"


class _ExactDraw(ArrayStepShared):
    """Every site of a one-colour block drawn afresh from its exact conditional given the
    other variables (one compiled evaluation of every site's terms at its K values),
    checking that the possible values are those the sum assumed."""

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
        per_site, _, held = site_sums_graph(model, vars, initial_point, exact,
                                            states + self._offsets[None, :])
        table = clone_replace(pt.switch(held, per_site, -np.inf), exact.shared)
        self._table = pm_compile([], table, **(compile_kwargs or {}))
        self._table.trust_input = True

    def astep(self, q0):
        x = np.asarray(q0.data, dtype=np.int64) - self._offsets
        table = self._table()
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


_ExactDraw.__name__ = "CollapsedNUTS (exact draw)"


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

    Examples
    --------
    >>> import pymc as pm, pymc_discrete as pmd
    >>> with pm.Model():
    ...     p = pm.Beta("p", 1, 1)
    ...     z = pm.Bernoulli("z", p, shape=100)
    ...     idata = pm.sample(step=pmd.CollapsedNUTS([z]), chains=1,
    ...                       progressbar=False)  # doctest: +SKIP
    """

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
        draw = _ExactDraw(block, exact=exact, possible=possible, offsets=support.offsets,
                          model=model, initial_point=initial_point,
                          compile_kwargs=compile_kwargs)
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
        nuts = _MarginalNUTS(continuous, model=model, logp_dlogp_func=logp_dlogp,
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
        return _MarginalNUTS(continuous, model=model, logp_dlogp_func=logp_dlogp,
                             initial_point=initial_point, **nuts_kwargs)


def _finite(rv) -> bool:
    return ALBP.competence(rv) > Competence.INCOMPATIBLE


def _competence(rv, has_grad=False) -> Competence:
    """What CollapsedNUTS sums: finite discrete variables and latent counts."""
    return Competence.IDEAL if _finite(rv) or is_count(rv) else Competence.INCOMPATIBLE


def count_window_or_problem(model, block, exact: ExactRatios, point: dict):
    """The window a block of counts is summed over, or why it cannot be summed out."""
    why = collapsible(exact)
    if why is not None:
        return why
    start = min(count_start(model.values_to_rvs[v]) for v in block)
    try:
        window = read_count_window(exact, point, start)
    except ValueError as err:
        return str(err)
    size = exact.n_terms * window.width
    if size > MAX_SUMMED_TERMS:
        return (f"the sum would evaluate {exact.n_terms} terms at {window.width} values "
                f"({size} in all, more than {MAX_SUMMED_TERMS}) at every NUTS step")
    return window


def count_problem(model, block, exact: ExactRatios, point: dict) -> str | None:
    """Why a block of counts cannot be summed out for NUTS, or None."""
    window = count_window_or_problem(model, block, exact, point)
    return window if isinstance(window, str) else None


def count_exact_ratios(model, block, initial_point: dict,
                       compile_kwargs: dict | None = None) -> ExactRatios:
    """The structure of a block of latent counts: which terms each count moves, read with
    every site at its initial value and one above (the values of every probe; the counts
    are evaluated beyond them, so no piece is read from a table of those two)."""
    x0 = np.concatenate([np.ravel(initial_point[v.name]) for v in block]).astype(np.int64)
    return ExactRatios(model, block, initial_point,
                       make_shared_replacements(initial_point, block, model), compile_kwargs,
                       n_categories=np.full(x0.size, 2, np.int64), offsets=x0,
                       within_values=False)
