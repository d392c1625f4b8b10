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

The readers' densities at their data share one graph of the sums (a model written one
observed variable per site would otherwise build a copy of every site's sums per
reader). At another value than the data, a reader's density is built again from the
value where the sums read the data; where the data is folded into them (terms alike
across sites evaluated once, data stacked across variables) it raises
``NotImplementedError`` rather than return the density at the data.

When a site moves two observed variables, or a Potential reads the block, the block's
whole sum is one Potential instead (sampling and optimisation see the same density, but
PyMC then has no log-likelihood or predictive draws for that data), as it is for a
chain summed by the forward algorithm, which does not split by site.
"""

from __future__ import annotations

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
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.fg import Output
from pytensor.graph.replace import clone_replace, graph_replace
from pytensor.graph.traversal import ancestors, graph_inputs, variable_depends_on
from pytensor.tensor.basic import get_underlying_scalar_constant_value
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.type import TensorType

from pymc_discrete.pymc.model.creation_traces import untraced
from pymc_discrete.pymc.summing.summed_block import (
    SummedBlock,
    cached_summed_block,
    without_initial_values,
)

__all__ = ["marginalize"]


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


@untraced
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
    the data allow: ``COUNT_WIDTH_MARGIN`` (in
    :mod:`~pymc_discrete.pymc.summing.summed_block`) times the width their conditional
    needs at the initial point and at perturbed continuous values, or ``count_width``.
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
    with without_initial_values(model):
        fgraph, _ = fgraph_from_model(model)
    by_name = {out.name: out for out in fgraph.outputs}
    discrete = [by_name[name] for name in block.names]
    # the discrete variables become plain random variables: drawn from their prior where
    # a generative graph reads them, absent from the log density
    for var in discrete:
        fgraph.replace(var, var.owner.inputs[0], import_missing=True)
    raw = [var.owner.inputs[0] for var in discrete]
    # they leave the outputs, and so do the Deterministics and Potentials that read them
    # (recover_discrete adds the Deterministics back)
    dropped = frozenset(raw)  # one set for every test below, not one per output
    _remove_outputs(fgraph, [i for i, out in enumerate(fgraph.outputs) if out in dropped
                             or (out.owner is not None
                                 and not isinstance(out.owner.op, ModelObservedRV)
                                 and variable_depends_on(out, dropped))])
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

    sums = None if block.per_site is None else block.site_logsumexp()
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


def _remove_outputs(fgraph, indices: list[int]) -> None:
    """Remove the outputs at ``indices`` from ``fgraph`` in one pass. PyTensor's
    ``remove_output`` renumbers every later output at each call: removing one discrete
    variable a site, on a model written one variable per site, grew with the square of
    their number (0.17 s at 300 sites, measured)."""
    if not indices:
        return
    drop = set(indices)
    outputs = fgraph.outputs
    kept = [i for i in range(len(outputs)) if i not in drop]
    # the kept outputs' clients, read before anything is renumbered
    first = min(drop)
    clients = {i: fgraph.get_output_client(i) for i in kept if i > first}
    for i in sorted(drop):
        fgraph.remove_client(outputs[i], fgraph.get_output_client(i), remove_if_empty=True)
    for new, old in enumerate(kept):
        if new != old:
            out = outputs[old]
            entries = fgraph.clients[out]
            entries[entries.index(clients[old])] = (Output(new).make_node(out), 0)
    outputs[:] = [outputs[i] for i in kept]


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
    loose = block.loose + (unit_sums[uncarried].sum() if uncarried.size else 0.0)
    # the sums in the model's space, for the last parameters seen: every reader's log
    # density reads them at its own sites, so that a model written one observed variable
    # per site builds one graph of the sums, not one per reader
    in_space: dict = {}

    def model_sums(params: dict) -> tuple[Variable, Variable]:
        key = tuple((name, _graph_key(v)) for name, v in params.items())
        if in_space.get("key") != key:
            in_space["key"] = key
            in_space["sums"] = in_model_space(unit_sums, params), in_model_space(
                pt.as_tensor(loose, dtype="float64"), params)
        return in_space["sums"]

    for index, reader in enumerate(block.readers):
        out = by_name[reader]
        rv, data = out.owner.inputs[:2]
        dims = out.owner.op.dims
        elements, sites = block.carriers[reader]
        plain_data = plain.rvs_to_values[plain.named_vars[reader]]
        names = sorted({name for name in continuous
                        if variable_depends_on(rv, [continuous[name]])}
                       | reads)
        # data in shared variables (pm.Data) that the draws read goes in as parameters:
        # a CustomDist's generative graph may not read a shared variable implicitly
        data_params = [v for v in graph_inputs([rv]) if isinstance(v, SharedVariable)
                       and isinstance(v.type, TensorType)]
        params = [continuous[name] for name in names] + data_params
        first = index == 0

        def generate(*args, _rv=rv, _params=params):
            *dummies, _size = args
            return _unwrapped(_rv, dict(zip(_params, dummies)))

        def log_density(value, *args, _names=names, _elements=elements, _sites=sites,
                        _data=plain_data, _first=first, reader=reader):
            # the sums read the new model's data by name, not these parameters
            params = dict(zip(_names, args[:len(_names)]))
            if not _is_data(value, _data):  # the density at other values than the data
                if not variable_depends_on(unit_sums, [_data]):
                    raise NotImplementedError(
                        f"the summed-out density of {reader!r} is built with its observed "
                        "data folded in (terms alike across sites evaluated once, or the "
                        "data stacked with other variables'): it is defined at the "
                        "observed data only, not at another value")
                graph = _placed(unit_sums, units, _sites, _elements, value.size)
                if _first:  # the terms no site moves, and the sites no data reads
                    graph = pt.inc_subtensor(graph[0], loose)
                graph = in_model_space(clone_replace(graph, {_data: value}), params)
                return graph.reshape(value.shape)
            sums, extra = model_sums(params)
            graph = _placed(sums, units, _sites, _elements, _size(value))
            if _first and not _is_zero(extra):
                graph = pt.inc_subtensor(graph[0], extra)
            return graph.reshape(value.shape)

        summed_rv = CustomDist.dist(*params, dist=generate, logp=log_density,
                                    class_name=f"{reader}_summed_out", dtype=rv.type.dtype)
        fgraph.replace(out, model_observed_rv(summed_rv, data, reader, *dims),
                       import_missing=True)


def _size(value: Variable):
    """The number of elements of ``value``: a constant where its shape is static."""
    shape = value.type.shape
    return int(np.prod(shape, dtype=np.int64)) if None not in shape else value.size


def _is_zero(graph: Variable) -> bool:
    """Whether ``graph`` is the constant 0 (the terms no site moves, where there are
    none: nothing to add)."""
    try:
        return get_underlying_scalar_constant_value(graph) == 0
    except NotScalarConstantError:
        return False


def _is_data(value: Variable, data: Variable) -> bool:
    """Whether ``value`` is the observed ``data`` the sums read: the same graph of the
    same data (data in a shared variable: the sums read the new model's, replaced by
    name; PyMC casts observed data to the variable's dtype, in a node of each model's
    own). Only then may the readers share one graph of the sums; at any other value a
    reader's sums are built again from it."""
    return value is data or _graph_key(value) == _graph_key(data)


def _graph_key(var: Variable, memo: dict | None = None):
    """A key equal for variables that compute the same thing: a shared variable by its
    name, a constant by its values, another leaf itself, else the node's op, the keys of
    its inputs and the output's index. PyMC derives each observed variable's density
    with wrapper nodes of its own (``ValuedRV``, ``TransformedValue``, a cast of the
    data) around the same variables: equal graphs, not one object."""
    if isinstance(var, SharedVariable):
        return "shared", var.name
    if isinstance(var, Constant):
        data = np.asarray(var.data)
        return "constant", var.type, data.shape, data.tobytes()
    if var.owner is None:
        return var
    memo = {} if memo is None else memo
    if var not in memo:
        node = var.owner
        memo[var] = (node.op, tuple(_graph_key(i, memo) for i in node.inputs),
                     node.outputs.index(var))
    return memo[var]


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
