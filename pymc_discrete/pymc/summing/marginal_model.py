"""The model with its discrete variables summed out, as a PyMC model of its own.

:func:`marginalize` returns a :class:`pymc.Model` over the continuous variables whose log
density is the exact sum over the discrete ones (the sum
:class:`~pymc_discrete.CollapsedNUTS` samples), so that every tool that takes a model
takes it: ``pm.sample`` (nutpie, NumPyro and BlackJAX too), ``pm.find_MAP``, ``pm.fit``,
``pm.compute_log_likelihood``, prior and posterior predictive.

How it is built. The block's terms are read from a copy of the model without value
transforms, where a continuous variable's value is the variable itself, so the per-site
sums are a graph of the continuous variables in their own space, which is what a
distribution's log density takes. Every observed variable whose density reads the block
becomes a :class:`pymc.CustomDist` of the same name, data and dimensions:

* its log density carries the sums of the sites it is read by: each site's
  ``logsumexp`` sits at the first element of the data the site moves (a pointwise
  log-likelihood is then by site), the rest of the element's terms being in that sum;
* its draws run the original generative graph (the discrete variables drawn from their
  prior given the continuous ones, then the data), so predictive draws are those of the
  original model with the discrete variables integrated out.

When a site moves two observed variables, or a Potential reads the block, the block's
whole sum is one Potential instead (sampling and optimisation see the same density, but
PyMC then has no log-likelihood or predictive draws for that data), as it is for a
chain summed by the forward algorithm, which does not split by site.
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt
from pymc.distributions import CustomDist
from pymc.model.fgraph import (
    ModelFreeRV,
    ModelObservedRV,
    ModelVar,
    fgraph_from_model,
    model_from_fgraph,
    model_observed_rv,
    model_potential,
)
from pymc.model.transform.conditioning import remove_value_transforms
from pymc.pytensorf import make_shared_replacements
from pymc.step_methods.compound import Competence
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Variable
from pytensor.graph.replace import clone_replace, graph_replace
from pytensor.graph.traversal import ancestors, graph_inputs, variable_depends_on

from pymc_discrete.pymc.model.counts import CountWindow, count_exact_ratios, is_count
from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.model.terms import piece_sizes, split_into_pieces
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
from pymc_discrete.pymc.summing.marginal import site_sums_graph

__all__ = ["SummedBlock", "cached_summed_block", "marginalize", "summed_block"]


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

    def total(self) -> Variable:
        """Scalar graph: the block summed out (the sum over every state of its terms)."""
        if self.layout is not None:
            return forward_log_normaliser(*self.tables)
        return _logsumexp_rows(self.per_site).sum() + self.loose


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
    with _without_initial_values(model):
        plain = remove_value_transforms(model)
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
    point = model.initial_point()
    original = [model.rvs_to_values[model.named_vars[rv.name]] for rv in discrete]
    block = [plain.rvs_to_values[rv] for rv in discrete]
    readers = tuple(v.name for v in [*plain.observed_RVs, *plain.potentials]
                    if variable_depends_on(v, discrete))
    if counts:
        return _count_block(model, plain, original, block, readers, count_width)
    support = check_discrete_block(model, original, "pmd.marginalize", point)
    exact = ExactRatios(model, original, point,
                        make_shared_replacements(point, original, model),
                        n_categories=None if support.is_binary else support.n_values,
                        offsets=support.offsets)
    point = plain.initial_point()
    why = collapsible(exact)
    if why is not None:
        layout = chain_layout(exact) if exact.proven else None
        if layout is None:
            raise NotCollapsible(f"{', '.join(exact.var_names)} cannot be summed out site "
                                 f"by site ({why}), nor as a chain")
        unary, pair, held, _ = chain_tables_graph(plain, block, plain.initial_point(), exact,
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
    per_site, loose, held = site_sums_graph(plain, block, point, exact,
                                            index + support.offsets[None, :])
    # where every value is possible the mask is the checks alone (no (N, K) constant)
    mask = held if possible.all() else pt.and_(held, pt.as_tensor(possible))
    per_site = pt.switch(mask, per_site, -np.inf)
    carriers = _carriers(plain, block, exact, point, readers)
    return SummedBlock(exact.var_names, plain, exact, possible, support.offsets, per_site,
                       loose, readers, carriers)


#: latent counts are summed over this many times the values their window needs at the
#: initial point and the probes around it: the summed-out model's window is fixed, and
#: recover_discrete checks at every draw that the mass beyond it is negligible
COUNT_WIDTH_MARGIN = 2.0


def _count_block(model, plain, original: list, block: list, readers: tuple,
                 width: int | None) -> SummedBlock:
    """Latent counts that share no term, summed over a window of values (module
    docstring of :mod:`~pymc_discrete.pymc.summing.count_sum`)."""
    point = model.initial_point()
    exact = count_exact_ratios(model, original, point)
    window = count_window_or_problem(model, original, exact, point)
    if isinstance(window, str):
        raise NotCollapsible(f"the counts {', '.join(exact.var_names)} cannot be summed "
                             f"out: {window}")
    width = int(width) if width is not None else grid_width(
        int(np.ceil(COUNT_WIDTH_MARGIN * window.width)))
    window = CountWindow(window.lower, width, window.tail, window.start)
    values = np.arange(width, dtype=np.int64)[:, None] + window.lower[None, :]
    plain_point = plain.initial_point()
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
    rvs = [*plain.free_RVs, *plain.observed_RVs, *plain.potentials]
    source, pieces = [], []
    for rv, term in zip(rvs, plain.logp(vars=rvs, sum=False)):
        if not variable_depends_on(term, block):
            continue
        for piece in split_into_pieces(term, block):
            if variable_depends_on(piece, block):
                source.append(rv.name)
                pieces.append(pt.cast(piece, "float64").ravel())
    sizes = piece_sizes(pieces, plain, point)
    moved_by = {}  # site -> the observed variables it moves
    layout = {}
    start = 0
    for name, size in zip(source, sizes):
        own = owner[start:start + size]
        start += size
        if name not in readers:
            continue
        data_size = int(np.size(point.get(name, plain.rvs_to_values[plain.named_vars[name]]
                                          .eval())))
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


def _logsumexp_rows(per_site: Variable) -> Variable:
    top = pt.max(per_site, axis=1)
    top = pt.switch(pt.isinf(top), 0.0, top)  # a row of -inf sums to -inf, not NaN
    return pt.log(pt.exp(per_site - top[:, None]).sum(axis=1)) + top


def _unwrapped(graph: Variable, keep: dict) -> Variable:
    """``graph`` with the model-variable wrappers of an fgraph taken out (a variable
    wrapper becomes the variable it wraps), except those in ``keep``, which are
    replaced by its values."""
    while True:
        wrapped = [v for v in ancestors([graph]) if v.owner is not None
                   and isinstance(v.owner.op, ModelVar) and v not in keep]
        if not wrapped:
            return clone_replace(graph, keep) if keep else graph
        graph = clone_replace(graph, {v: v.owner.inputs[0] for v in wrapped})


def marginalize(model, *, count_width: int | None = None) -> object:
    """The model with its discrete variables summed out: a :class:`pymc.Model` over the
    continuous variables whose log density is the exact sum over the discrete ones.

    The discrete variables must form a block whose sites share no term of the log
    density (mixture labels, occupancy and capture-recapture indicators, a change
    point's switch: the blocks :class:`~pymc_discrete.CollapsedNUTS` sums), with the
    values each site can take fixed. The returned model keeps the continuous variables
    (names, transforms, dimensions), the data, and the Deterministics that do not read
    the discrete variables; every observed variable that reads them becomes a
    :class:`pymc.CustomDist` whose log density is the sum and whose draws are those of
    the original model (module docstring). Draws of the discrete variables come back
    with :func:`~pymc_discrete.recover_discrete`.

    Latent counts (Poisson, NegativeBinomial, Geometric abundances of an N-mixture
    model) that share no term are summed over a fixed window of values from the lowest
    the data allow: :data:`COUNT_WIDTH_MARGIN` times the width their conditional needs
    at the initial point and at perturbed continuous values, or ``count_width``.
    :func:`~pymc_discrete.recover_discrete` checks at every draw that the conditional
    mass beyond the window is below 1e-8 of the mass in it, and raises where it is not.

    Parameters
    ----------
    model : pymc.Model
    count_width : int, optional
        Latent counts only: the number of values every count is summed over.

    Returns
    -------
    pymc.Model

    Raises
    ------
    NotCollapsible
        If the discrete variables cannot be summed out this way, saying why.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_discrete as pmd
    >>> with pm.Model() as mixture:
    ...     w = pm.Dirichlet("w", np.ones(2))
    ...     mu = pm.Normal("mu", [-1.0, 1.0], 1.0)
    ...     z = pm.Categorical("z", w, shape=3)
    ...     y = pm.Normal("y", mu[z], 1.0, observed=[-1.2, 0.3, 1.9])
    >>> summed = pmd.marginalize(mixture)
    >>> [rv.name for rv in summed.free_RVs]
    ['w', 'mu']
    """
    block = cached_summed_block(model, count_width)
    with _without_initial_values(model):
        fgraph, _ = fgraph_from_model(model)
    by_name = {out.name: out for out in fgraph.outputs}
    discrete = [by_name[name] for name in block.names]
    # the discrete variables become plain random variables: drawn from their prior where
    # a generative graph reads them, absent from the log density
    for var in discrete:
        fgraph.replace(var, var.owner.inputs[0], import_missing=True)
    for var in discrete:
        fgraph.remove_output(fgraph.outputs.index(var.owner.inputs[0]))
    raw = [var.owner.inputs[0] for var in discrete]
    # Deterministics and Potentials that read them go (recover_discrete adds the
    # Deterministics back)
    for out in list(fgraph.outputs):
        if (out.owner is not None and not isinstance(out.owner.op, ModelObservedRV)
                and variable_depends_on(out, raw)):
            fgraph.remove_output(fgraph.outputs.index(out))
    continuous = {out.name: out for out in fgraph.outputs
                  if out.owner is not None and isinstance(out.owner.op, ModelFreeRV)}
    plain = block.plain
    plain_values = {plain.rvs_to_values[rv]: rv.name for rv in plain.free_RVs
                    if rv.name in continuous}
    shared = {v.name: v for v in graph_inputs(fgraph.outputs)
              if isinstance(v, SharedVariable) and v.name}

    def in_model_space(graph: Variable, params: dict) -> Variable:
        """A graph of ``plain``'s values as a graph of ``params`` (name -> variable)
        and of the new model's data."""
        replace = {value: params[name] for value, name in plain_values.items()
                   if name in params}
        replace.update({v: shared[v.name] for v in graph_inputs([graph])
                        if isinstance(v, SharedVariable) and v.name in shared})
        return graph_replace(graph, replace, strict=False)

    sums = None if block.per_site is None else _logsumexp_rows(block.per_site)
    if block.carriers is None:
        total = in_model_space(block.total(), continuous)
        name = "__".join(block.names) + "_summed_out"
        fgraph.add_output(model_potential(total, name), import_missing=True)
        for reader in block.readers:
            out = by_name.get(reader)
            if out is not None and out in fgraph.outputs:
                fgraph.remove_output(fgraph.outputs.index(out))
    else:
        _replace_readers(fgraph, block, by_name, continuous, sums, in_model_space)
    summed = model_from_fgraph(fgraph, mutate_fgraph=True)
    for rv, value in model.rvs_to_initial_values.items():
        if value is not None and rv.name in summed.named_vars:
            summed.set_initval(summed[rv.name], value)
    return summed


@contextmanager
def _without_initial_values(model):
    """The model with its initial values set aside (PyMC's fgraph conversion refuses a
    model that has any); they are put back afterwards."""
    saved = dict(model.rvs_to_initial_values)
    try:
        for rv in saved:
            model.rvs_to_initial_values[rv] = None
        yield model
    finally:
        model.rvs_to_initial_values.update(saved)


def _replace_readers(fgraph, block: SummedBlock, by_name: dict, continuous: dict,
                     sums: Variable, in_model_space) -> None:
    """Every observed variable that reads the block becomes a CustomDist carrying the
    sums of its sites (module docstring)."""
    if block.layout is None:
        unit_sums, units = sums, block.exact.n_sites
    else:  # a chain: one sum, carried whole
        unit_sums, units = block.total()[None], 1
    carried = np.concatenate([sites for _, sites in block.carriers.values()]
                             ) if block.carriers else np.zeros(0, np.int64)
    uncarried = np.setdiff1d(np.arange(units), carried)
    plain = block.plain
    reads = {name for _, name in _plain_inputs(block.total(), plain)}
    for index, reader in enumerate(block.readers):
        out = by_name[reader]
        rv, data = out.owner.inputs[:2]
        dims = out.owner.op.dims
        elements, sites = block.carriers[reader]
        plain_data = plain.rvs_to_values[plain.named_vars[reader]]
        names = sorted({name for name in continuous
                        if variable_depends_on(rv, [continuous[name]])}
                       | reads)
        params = [continuous[name] for name in names]
        first = index == 0

        def generate(*args, _rv=rv, _params=params):
            *dummies, _size = args
            return _unwrapped(_rv, dict(zip(_params, dummies)))

        def log_density(value, *args, _names=names, _elements=elements, _sites=sites,
                        _data=plain_data, _first=first):
            graph = _placed(unit_sums, units, _sites, _elements, value.size)
            if _first:  # the terms no site moves, and the sites no data reads
                extra = block.loose + (unit_sums[uncarried].sum() if uncarried.size else 0.0)
                graph = pt.inc_subtensor(graph[0], extra)
            graph = clone_replace(graph, {_data: value})
            graph = in_model_space(graph, dict(zip(_names, args)))
            return graph.reshape(value.shape)

        summed_rv = CustomDist.dist(*params, dist=generate, logp=log_density,
                                    class_name=f"{reader}_summed_out", dtype=rv.type.dtype)
        fgraph.replace(out, model_observed_rv(summed_rv, data, reader, *dims),
                       import_missing=True)


def _placed(sums: Variable, units: int, sites: np.ndarray, elements: np.ndarray,
            size) -> Variable:
    """A vector of ``size`` zeros with ``sums[sites]`` added at ``elements``; by a strided
    slice where the sites are all ``units`` of them, in order, at evenly spaced elements
    (each point of a mixture, the first visit of each row of an occupancy model):
    cheaper to run and to differentiate than indexing."""
    steps = np.diff(elements)
    if (sites.size == units > 1 and np.array_equal(sites, np.arange(units))
            and np.all(steps == steps[0]) and steps[0] > 0):
        first, step = int(elements[0]), int(steps[0])
        stop = first + step * (units - 1) + 1
        return pt.set_subtensor(pt.zeros(size, dtype="float64")[first:stop:step], sums)
    return pt.inc_subtensor(pt.zeros(size, dtype="float64")[elements], sums[sites])


def _plain_inputs(graph: Variable, plain) -> list:
    values = {plain.rvs_to_values[rv]: rv.name for rv in plain.free_RVs}
    return [(v, values[v]) for v in graph_inputs([graph]) if v in values]
