"""The model's discrete variables read as one block that sums out, and its sums as graphs.

:func:`summed_block` reads which discrete variables sum out and how (sites that share no
term, a chain by the forward algorithm, latent counts over a window) and builds their
sums as graphs of the continuous variables in their own space, from a copy of the model
without value transforms; :mod:`~pymc_discrete.pymc.summing.marginal_model` turns them
into a model and :mod:`~pymc_discrete.pymc.summing.recover` draws the block back.
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt
from pymc.model.transform.conditioning import remove_value_transforms
from pymc.pytensorf import make_shared_replacements
from pymc.step_methods.compound import Competence
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.traversal import variable_depends_on

from pymc_discrete.pymc.model.counts import CountWindow, count_exact_ratios, is_count
from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.model.plain_initial_point import initial_point
from pymc_discrete.pymc.model.terms import piece_sizes, read_block_pieces
from pymc_discrete.pymc.model.validation import check_discrete_block
from pymc_discrete.pymc.steps.albp import ALBP
from pymc_discrete.pymc.steps.chain import chain_layout
from pymc_discrete.pymc.summing.chain_sum import chain_tables_graph, forward_log_normaliser
from pymc_discrete.pymc.summing.collapsible import (
    NotCollapsible,
    collapsible,
    count_window_or_problem,
    possible_values,
    site_of_term,
)
from pymc_discrete.pymc.summing.count_sum import grid_width
from pymc_discrete.pymc.summing.kind_scalars import placed_by_kind, weighted_total
from pymc_discrete.pymc.summing.marginal import (
    logsumexp_rows,
    masked_columns,
    site_sums,
    site_sums_graph,
)

__all__ = ["COUNT_WIDTH_MARGIN", "SummedBlock", "cached_summed_block", "summed_block",
           "without_initial_values"]


class SummedBlock(NamedTuple):
    """The model's discrete variables as one block summed out site by site.

    Attributes
    ----------
    names : tuple of str
        The block's variables, in block order.
    plain : pymc.Model
        The copy of the model without value transforms that the sums are read from.
    exact : ExactRatios
        The block's structure in ``plain``.
    possible : ndarray of bool, shape (N, K)
        The values every site is summed over.
    offsets : ndarray of int64, shape (N,)
        Smallest value of every site.
    per_site : Variable
        (N, K) graph of ``plain``'s continuous values and data: the terms site i moves, at
        value v (-inf where v is not possible or a parameter check fails).
    loose : Variable
        Scalar graph: the terms of the block's pieces that no site moves.
    readers : tuple of str
        The observed variables and Potentials whose density reads the block.
    carriers : dict or None
        Observed variable name -> (elements, sites): the elements of its data that
        carry the sums of those sites (None: the sum is one Potential).
    layout : ChainLayout or None
        For a chain summed by the forward algorithm: its order (``per_site`` is then
        None and ``tables`` holds its unary and pair tables in chain order).
    tables : tuple of Variable or None
        ``(unary (T, K), pair (T - 1, K, K))`` graphs of a chain, -inf where a check
        fails.
    count_window : CountWindow or None
        For latent counts: the values every count is summed over (``offsets`` is its
        lower end, ``possible`` all True over its width).
    per_kind : Variable or None
        (U, K) ``per_site`` at the first site of every kind of alike sites, which
        ``alike`` lists (:mod:`~pymc_discrete.pymc.summing.alike_sites`); None when no
        two sites are alike.
    alike : AlikeSites or None
    """

    names: tuple
    plain: object
    exact: ExactRatios
    possible: np.ndarray
    offsets: np.ndarray
    per_site: Variable
    loose: Variable
    readers: tuple
    carriers: dict | None
    layout: object = None
    tables: tuple | None = None
    count_window: object = None
    per_kind: Variable | None = None
    alike: object = None
    columns: tuple | None = None

    def total(self) -> Variable:
        """Scalar graph: the block summed out (the sum over every state of its terms)."""
        if self.layout is not None:
            return forward_log_normaliser(*self.tables)
        sums = logsumexp_rows(self._by_state())
        return weighted_total(sums, None if self.per_kind is None else self.alike.counts
                              ) + self.loose

    def site_logsumexp(self) -> Variable:
        """(N,) graph: every site's terms summed out."""
        sums = logsumexp_rows(self._by_state())
        return sums if self.per_kind is None else placed_by_kind(sums, self.alike.kind)

    def _by_state(self) -> Variable | tuple:
        """What is summed over the states: the columns where they were built apart, else
        the table by kind where there are kinds, else by site."""
        if self.columns is not None:
            return self.columns
        return self.per_site if self.per_kind is None else self.per_kind


def _is_finite_discrete(rv) -> bool:
    return ALBP.competence(rv) > Competence.INCOMPATIBLE


def _is_discrete(rv) -> bool:
    return rv.type.dtype.startswith(("int", "uint", "bool"))


def summed_block(model, count_width: int | None = None) -> SummedBlock:
    """Read the model's discrete variables as one block and its sum over them.

    Parameters
    ----------
    model : pymc.Model
    count_width : int, optional
        Latent counts only: the number of values every count is summed over (default:
        :data:`COUNT_WIDTH_MARGIN` times the window read at the initial point and at
        perturbed continuous values).

    Returns
    -------
    SummedBlock

    Raises
    ------
    NotCollapsible
        If the discrete variables cannot be summed out site by site (their sites share
        terms, the values a site can take depend on the continuous variables, a variable
        is a latent count, a continuous variable's prior reads them, ...), saying why.
    """
    with without_initial_values(model):
        plain = in_model_order(remove_value_transforms(model), model)
    discrete = [rv for rv in plain.free_RVs if _is_discrete(rv)]
    if not discrete:
        raise NotCollapsible("the model has no discrete variables to sum out")
    counts = [rv.name for rv in discrete if is_count(rv)]
    if counts and len(counts) < len(discrete):
        raise NotCollapsible(f"the model has latent counts ({', '.join(counts)}) beside "
                             "finite discrete variables: they are not summed out together")
    other = [rv.name for rv in discrete if not counts and not _is_finite_discrete(rv)]
    if other:
        raise NotCollapsible(f"{', '.join(other)} are neither finite discrete variables "
                             "nor latent counts")
    continuous = [rv for rv in plain.free_RVs if not _is_discrete(rv)]
    if not continuous:
        raise NotCollapsible("the model has no continuous variables: nothing would be left "
                             "to sample once the discrete ones are summed out")
    reading = [rv.name for rv in continuous if variable_depends_on(rv, discrete)]
    if reading:
        raise NotCollapsible(f"the prior of {', '.join(reading)} reads the discrete "
                             "variables (a spike-and-slab): summed out, its density would "
                             "be a mixture the summed-out model cannot state as a prior")
    # the structure and the possible values are read on the model itself (its probes
    # move the continuous variables in their transformed space, where any value is
    # in the support); the sums are built on the copy, whose terms are the same
    point = initial_point(model)
    original = [model.rvs_to_values[model.named_vars[rv.name]] for rv in discrete]
    block = [plain.rvs_to_values[rv] for rv in discrete]
    in_block = frozenset(discrete)  # one set for every reader, not one per reader
    readers = tuple(v.name for v in [*plain.observed_RVs, *plain.potentials]
                    if variable_depends_on(v, in_block))
    if counts:
        return _count_block(model, plain, original, block, readers, count_width)
    support = check_discrete_block(model, original, "pmd.marginalize", point)
    exact = ExactRatios(model, original, point,
                        make_shared_replacements(point, original, model),
                        n_categories=None if support.is_binary else support.n_values,
                        offsets=support.offsets)
    point = initial_point(plain)
    why = collapsible(exact)
    if why is not None:
        layout = chain_layout(exact) if exact.proven else None
        if layout is None:
            raise NotCollapsible(f"{', '.join(exact.var_names)} cannot be summed out site "
                                 f"by site ({why}), nor as a chain")
        unary, pair, held, _ = chain_tables_graph(plain, block, point, exact,
                                                  layout)
        observed = [name for name in readers if plain.named_vars[name] in plain.observed_RVs]
        # one observed variable and no Potential: it carries the chain's sum at its first
        # element (a chain's sum does not split by site)
        carriers = ({observed[0]: (np.zeros(1, np.int64), np.zeros(1, np.int64))}
                    if len(observed) == len(readers) == 1 else None)
        return SummedBlock(exact.var_names, plain, exact, None, support.offsets, None,
                           pt.constant(0.0), readers, carriers, layout,
                           (pt.switch(held, unary, -np.inf), pair))
    possible = possible_values(exact)
    k = exact.layout.max_values
    # state v puts every site at v where v is possible, else at a possible value: its
    # terms are then finite (no NaN gradient) and masked out of the sum
    fallback = np.argmax(possible, axis=1)
    index = np.where(possible.T, np.arange(k)[:, None], fallback[None, :])  # (K, N)
    sums = site_sums(plain, block, point, exact, index + support.offsets[None, :])

    def masked(table: Variable, mask: np.ndarray) -> Variable:
        # where every value is possible the mask is the checks alone (no (N, K) constant)
        return pt.switch(sums.held if mask.all() else pt.and_(sums.held, pt.as_tensor(mask)),
                         table, -np.inf)

    per_site = masked(sums.per_site(), possible)
    by_kind = sums.kind_mask(possible)
    per_kind = (masked(sums.per_kind, by_kind)
                if sums.alike is not None and by_kind is not None else None)
    # the columns the sums were built in, masked alike, where they are the table's
    columns = None
    if sums.columns is not None and (per_kind is not None or sums.alike is None):
        columns = tuple(masked_columns(sums.columns, by_kind if per_kind is not None
                                       else possible, sums.held))
    carriers = _carriers(plain, block, exact, point, readers)
    return SummedBlock(exact.var_names, plain, exact, possible, support.offsets, per_site,
                       sums.loose, readers, carriers, per_kind=per_kind,
                       alike=None if per_kind is None else sums.alike, columns=columns)


#: latent counts are summed over this many times the values their window needs at the
#: initial point and the probes around it: the summed-out model's window is fixed, and
#: recover_discrete checks at every draw that the mass beyond it is negligible
COUNT_WIDTH_MARGIN = 2.0


def _count_block(model, plain, original: list, block: list, readers: tuple,
                 width: int | None) -> SummedBlock:
    """Latent counts that share no term, summed over a window of values (module
    docstring of :mod:`~pymc_discrete.pymc.summing.count_sum`)."""
    point = initial_point(model)
    exact = count_exact_ratios(model, original, point)
    window = count_window_or_problem(model, original, exact, point)
    if isinstance(window, str):
        raise NotCollapsible(f"the counts {', '.join(exact.var_names)} cannot be summed "
                             f"out: {window}")
    width = int(width) if width is not None else grid_width(
        int(np.ceil(COUNT_WIDTH_MARGIN * window.width)))
    window = CountWindow(window.lower, width, window.tail, window.start)
    values = np.arange(width, dtype=np.int64)[:, None] + window.lower[None, :]
    plain_point = initial_point(plain)
    per_site, loose, held = site_sums_graph(plain, block, plain_point, exact, values)
    per_site = pt.switch(held, per_site, -np.inf)
    carriers = _carriers(plain, block, exact, plain_point, readers)
    possible = np.ones((exact.n_sites, width), dtype=bool)
    return SummedBlock(exact.var_names, plain, exact, possible, window.lower, per_site,
                       loose, readers, carriers, count_window=window)


#: model -> (its named variables, its SummedBlock): the structure is read once
_BLOCKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cached_summed_block(model, count_width: int | None = None) -> SummedBlock:
    """:func:`summed_block`, read once per model and count width (again if a variable was
    added since); without a width, the block last read for the model."""
    key = (tuple(model.named_vars), count_width)
    cached = _BLOCKS.get(model)
    # no width asked: the block last read (the one the summed-out model was built on)
    if cached is not None and (cached[0] == key or (
            count_width is None and cached[0][0] == key[0])):
        return cached[1]
    block = summed_block(model, count_width)
    _BLOCKS[model] = (key, block)
    return block


def _carriers(plain, block, exact: ExactRatios, point: dict, readers: tuple) -> dict | None:
    """Which elements of which observed variable carry each site's sum (module
    docstring), or None when a site moves two observed variables or a Potential reads
    the block."""
    if any(plain.named_vars[name] in plain.potentials for name in readers):
        return None
    owner = site_of_term(exact)
    read = read_block_pieces(plain, block)
    sizes = piece_sizes(read.pieces, plain, point)
    # a stacked piece holds its members' terms one after the other
    source = [name for names in read.sources for name in names]
    sizes = [size // len(names) for size, names in zip(sizes, read.sources, strict=True)
             for _ in names]
    reading = set(readers)
    moved_by = {}  # site -> the observed variables it moves
    layout = {}
    start = 0
    for name, size in zip(source, sizes):
        own = owner[start:start + size]
        start += size
        if name not in reading:
            continue
        data_size = (int(np.size(point[name])) if name in point
                     else _data_size(plain.rvs_to_values[plain.named_vars[name]]))
        if name in layout or size != data_size:
            return None  # an observed variable in several pieces: no element layout
        layout[name] = own
        for site in np.unique(own[own >= 0]):
            moved_by.setdefault(int(site), set()).add(name)
    if any(len(names) > 1 for names in moved_by.values()):
        return None
    carriers = {}
    for name, own in layout.items():
        sites, elements = np.unique(own, return_index=True)
        keep = sites >= 0
        carriers[name] = (elements[keep], sites[keep])
    return carriers


def _data_size(data: Variable) -> int:
    """Number of elements of an observed variable's data (constant or shared: read, not
    compiled; one variable per site has hundreds)."""
    if isinstance(data, Constant):
        return int(np.size(data.data))
    if isinstance(data, SharedVariable):
        return int(np.size(data.get_value(borrow=True)))
    return int(np.size(data.eval()))


def in_model_order(copy, model):
    """``copy`` (a copy of ``model``) with its variables listed in the model's order.

    PyMC's copies list them in another order (``remove_value_transforms`` reverses the
    free variables), and the order of the variables is the order of the block's terms:
    the sums are built on the copy, their terms' sites read on the model. Written one
    variable per site, the stacked terms of the sites would otherwise be owned by other
    sites than they belong to."""
    rank = {name: i for i, name in enumerate(model.named_vars)}
    for listed in (copy.free_RVs, copy.observed_RVs, copy.potentials, copy.deterministics):
        listed.sort(key=lambda var: rank.get(var.name, len(rank)))
    return copy


@contextmanager
def without_initial_values(model):
    """The model with its initial values set aside (PyMC's fgraph conversion refuses a
    model that has any); they are put back afterwards."""
    saved = dict(model.rvs_to_initial_values)
    try:
        for rv in saved:
            model.rvs_to_initial_values[rv] = None
        yield model
    finally:
        model.rvs_to_initial_values.update(saved)
