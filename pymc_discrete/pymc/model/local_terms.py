"""Every variable's log density, built from its own small graph: linear in the number of
variables.

PyMC's ``model.logp(vars=..., sum=False)`` derives every variable's term inside one graph
of the whole model, and replaces the random variables in each node's inputs by their
values by cloning the inputs' whole ancestry. A model written one variable per site, in
a loop, chains its variables (``z_t`` reads ``z_{t-1}``, which reads ``z_{t-2}`` ...): each
clone then walks back to the first site and the whole costs time that grows with the
square of the number of variables (3.5 s at 100 variables, 31 s at 300, measured on a
hidden Markov chain), whichever variables are asked for.

:func:`local_model_terms` builds the same terms from each variable's own graph, copied
only back to the model variables it reads (its parents). Variables whose graphs are the
same up to their leaves (one ``pm.Categorical`` per site, each reading the previous one)
share one derivation: PyMC's own ``transformed_conditional_logp`` derives the term once,
with the parents, the value and every leaf that differs between them as inputs, and each
variable's term is that graph with its own leaves put in. As PyMC does, the parents'
values (a value variable, or its back-transformation for a transformed continuous
variable) go in after the derivation. A Potential is its graph with the same
replacement. The terms have the ops and the values of ``model.logp``'s.
"""

from __future__ import annotations

from typing import NamedTuple

from pymc.logprob.basic import transformed_conditional_logp
from pytensor.graph.basic import Apply, Variable
from pytensor.graph.traversal import graph_inputs

from pymc_discrete.pymc.model.graph_shape import graph_shape, same_leaves

__all__ = ["LocalTerms", "TermGroup", "copy_replacing", "local_model_terms",
           "local_term_groups"]


def _local_copy(var: Variable, parents: set, value_of, keep_types: bool = False) -> Variable:
    """``var``'s graph copied back to the variables in ``parents`` (other than ``var``
    itself), each replaced by ``value_of(parent)``; nodes that read no parent are shared
    with the original graph, not copied."""
    return _local_copies([var], parents, value_of, keep_types)[0]


def _local_copies(outputs: list[Variable], parents: set, value_of,
                  keep_types: bool = False, replace_outputs: bool = False) -> list[Variable]:
    """:func:`_local_copy` of several outputs, their shared nodes copied once (and an
    output in ``parents`` replaced too where ``replace_outputs``)."""
    memo: dict[Variable, Variable] = {}
    tops = set() if replace_outputs else set(outputs)
    stack = [(var, False) for var in reversed(outputs)]
    while stack:
        v, expanded = stack.pop()
        if v in memo:
            continue
        if v not in tops and v in parents:
            memo[v] = value_of(v)
            continue
        node = v.owner
        if node is None:
            memo[v] = value_of(v) if v in parents else v
            continue
        if not expanded:
            stack.append((v, True))
            stack.extend((i, False) for i in node.inputs if i not in memo)
            continue
        inputs = [memo[i] for i in node.inputs]
        if all(new is old for new, old in zip(inputs, node.inputs, strict=True)):
            for out in node.outputs:
                memo[out] = out
        else:
            clone = _cloned(node, inputs, keep_types)
            for out, new in zip(node.outputs, clone.outputs, strict=True):
                memo[out] = new
    return [memo[var] for var in outputs]


def _cloned(node: Apply, inputs: list[Variable], keep_types: bool = False) -> Apply:
    """``node`` applied to ``inputs``: where they have the types of its own inputs (a
    variable's leaves put in its kind's shared derivation), a new ``Apply`` with fresh
    outputs of the same types, without PyTensor's copy of the node and its outputs
    (most of the time of building a loop's terms); else PyTensor's clone. An op whose
    output type may depend on its inputs' values (an ``Alloc``) is cloned by PyTensor
    unless ``keep_types``."""
    if (not keep_types and getattr(node.op, "_output_type_depends_on_input_value", True)) or any(
            new.type != old.type for new, old in zip(inputs, node.inputs, strict=True)):
        return node.clone_with_new_inputs(inputs, strict=False)
    # make_variable: a new variable without the stack trace PyTensor records for each
    return Apply(node.op, inputs, [out.type.make_variable(out.name) for out in node.outputs])


def _member_leaf(leaf: Variable, parents: set, value_of) -> Variable:
    """What a member's leaf is in its term: a parent's value, or the leaf itself."""
    return value_of(leaf) if leaf in parents else leaf


def _shape(var: Variable, parents: set) -> tuple[list[Variable], tuple] | None:
    """The leaves of ``var``'s own graph (back to its parents and roots) and its
    signature (:func:`~pymc_discrete.pymc.model.graph_shape.graph_shape`)."""
    return graph_shape(var, parents.__contains__, lambda leaf, k: ("leaf", k, leaf.type))


def copy_replacing(outputs: Variable | list[Variable], replace: dict,
                   keep_types: bool = False) -> Variable | list[Variable]:
    """``outputs``' graph (one variable or a list) with the variables of ``replace``
    replaced, copying only the nodes that read them; a node whose new inputs have its
    inputs' types is rebuilt without PyTensor's ``make_node``.

    ``keep_types``: every node keeps its output types, also where an op's type could
    depend on its inputs' values. Valid where ``outputs``' types were inferred from
    inputs of the replacements' types and no values (a template's placeholders, value
    variables): without it, a shape read from an input stacked from a thousand variables
    is inferred again, in time that grows with their number, by every node that reads
    it."""
    one = isinstance(outputs, Variable)
    outputs = [outputs] if one else list(outputs)
    copies = _local_copies(outputs, set(replace), replace.__getitem__, keep_types,
                           replace_outputs=True) if replace else outputs
    return copies[0] if one else copies


class TermGroup(NamedTuple):
    """Variables whose terms share one derivation (module docstring).

    Attributes
    ----------
    template : Variable
        The shared term, a graph of :attr:`inputs` (and of what every member shares).
    inputs : list of Variable
        The template's own inputs: the leaves that differ between the members, the
        parents' values, and the members' value variable where there are several.
    members : list of int
        The members' positions among the variables.
    leaves : list of list of Variable
        For every member, what each of :attr:`inputs` is for it (a parent's value, its
        own leaf, its value variable).
    """

    template: Variable
    inputs: list[Variable]
    members: list[int]
    leaves: list[list[Variable]]


class LocalTerms:
    """Every variable's elementwise log density, as ``model.logp(vars=variables,
    sum=False)`` gives it, by the groups of variables that share a derivation.

    A member's own term is built from its group's template when it is first asked for:
    a model written one variable per site stacks most of its terms from the templates
    (:func:`~pymc_discrete.pymc.model.stacking.stack_groups`) and never needs them one
    by one.

    Parameters
    ----------
    groups : list of TermGroup
    n_terms : int
        Number of variables.
    """

    def __init__(self, groups: list[TermGroup], n_terms: int) -> None:
        self.groups = groups
        self._built: list[Variable | None] = [None] * n_terms
        self._where: list[tuple[int, int]] = [(-1, -1)] * n_terms
        for g, group in enumerate(groups):
            for j, m in enumerate(group.members):
                self._where[m] = (g, j)

    @classmethod
    def given(cls, terms: list[Variable]) -> LocalTerms:
        """Terms already built (PyMC's own), each in a group of its own."""
        local = cls([TermGroup(term, [], [i], [[]]) for i, term in enumerate(terms)],
                    len(terms))
        local._built = list(terms)
        return local

    def __len__(self) -> int:
        return len(self._built)

    def term(self, i: int) -> Variable:
        """The term of variable ``i``."""
        built = self._built[i]
        if built is None:
            g, j = self._where[i]
            group = self.groups[g]
            built = copy_replacing(group.template,
                                   dict(zip(group.inputs, group.leaves[j], strict=True)))
            self._built[i] = built
        return built

    @property
    def terms(self) -> list[Variable]:
        """Every variable's term, in order."""
        return [self.term(i) for i in range(len(self))]


def local_model_terms(model, variables: list[Variable]) -> list[Variable]:
    """The elementwise log density of every variable, as ``model.logp(vars=variables,
    sum=False)`` gives it, built from each variable's own graph (module docstring).

    Parameters
    ----------
    model : pymc.Model
    variables : list of Variable
        Free and observed random variables and Potentials of the model.

    Returns
    -------
    list of Variable
        One term per variable, graphs of the model's value variables.

    Raises
    ------
    NotImplementedError
        Where two variables are outputs of one node (data with missing values): their
        terms are derived together, by ``model.logp``.
    """
    return local_term_groups(model, variables).terms


def local_term_groups(model, variables: list[Variable]) -> LocalTerms:
    """:func:`local_model_terms` by the groups that share a derivation, the terms
    built when asked for (:class:`LocalTerms`); the same parameters and errors."""
    parents = set(model.basic_RVs)
    joint = [var.name for var in variables if var in parents and sum(
        out in parents for out in var.owner.outputs) > 1]
    if joint:
        raise NotImplementedError(f"{joint} are outputs of one node, valued together")
    values: dict[Variable, Variable] = {}

    def value_of(rv: Variable) -> Variable:
        if rv not in values:
            if model.rvs_to_transforms.get(rv) is None:
                values[rv] = model.rvs_to_values[rv]
            else:  # the back-transformed value, as PyMC writes it
                (values[rv],) = model.replace_rvs_by_values([rv])
        return values[rv]

    kinds: dict[tuple, list[int]] = {}
    shapes: dict[int, list[Variable]] = {}
    for i, var in enumerate(variables):
        found = _shape(var, parents)
        if found is None:
            kinds[("alone", i)] = [i]
            shapes[i] = []
            continue
        shapes[i] = found[0]
        if var not in parents:  # a Potential: its graph of the values
            kinds.setdefault(("potential", found[1]), []).append(i)
            continue
        transform = model.rvs_to_transforms.get(var)
        kinds.setdefault((found[1], id(transform), model.rvs_to_values[var].type),
                         []).append(i)
    groups = []
    for members in kinds.values():
        first = variables[members[0]]
        columns = list(zip(*(shapes[m] for m in members), strict=True))
        # the leaves that become inputs of the derivation: parents, and leaves that
        # differ between the members
        inputs = {leaf: leaf.type() for leaf, column in zip(shapes[members[0]], columns)
                  if leaf in parents or not same_leaves(list(column))}
        local = _local_copy(first, set(inputs) | parents,
                            lambda v: inputs[v] if v in inputs else inputs.setdefault(v, v.type()))
        # every input's leaf for every member, by its position among the first's leaves
        # (a variable read alone has its parents as inputs, met while copying)
        position = {leaf: k for k, leaf in enumerate(shapes[members[0]])}
        placeholders = list(inputs.values())
        leaves = [[_member_leaf(shapes[m][position[leaf]] if leaf in position else leaf,
                                parents, value_of) for leaf in inputs] for m in members]
        if first not in parents:  # a Potential is its graph
            template = local
        else:
            value = model.rvs_to_values[first]
            if len(members) > 1:  # the value an input too
                value = value.type()
                placeholders.append(value)
                for m, own in zip(members, leaves, strict=True):
                    own.append(model.rvs_to_values[variables[m]])
            (template,) = transformed_conditional_logp(
                [local], rvs_to_values={local: value},
                rvs_to_transforms={local: model.rvs_to_transforms.get(first)})
        # the inputs the term reads (a variable's random generator, its size, are not)
        read = set(graph_inputs([template]))
        kept = [k for k, inp in enumerate(placeholders) if inp in read]
        groups.append(TermGroup(template, [placeholders[k] for k in kept], members,
                                [[own[k] for k in kept] for own in leaves]))
    return LocalTerms(groups, len(variables))
