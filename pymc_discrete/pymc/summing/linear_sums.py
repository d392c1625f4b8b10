"""A site's terms summed through their linearity in the parameters: the sufficient
statistics a hand-written marginal uses, read off the graph.

A block summed over many values evaluates its terms at every (value, element) pair: an
N-mixture model's binomial counts, ``log C(n, y_ij) + y_ij log p + (n - y_ij) log(1 - p)``
at every abundance n and visit j. Summed over a site's visits, that is
``sum_j log C(n, y_ij) + (sum_j y_ij) log p + (J n - sum_j y_ij) log(1 - p)``: constants
times a few scalar functions of the parameters, so the site's sum needs one product per
function and value, not one term per visit and value. A hand-written marginal sums the
counts first; reading terms for equality cannot see this (no two visits' terms are
equal).

:func:`linear_site_sums` reads a batched piece's graph as a sum of ``coefficient x
function`` items: a coefficient is a graph of constants alone (the values, the data), a
function a scalar of the parameters (every axis broadcast), through additions,
subtractions, negations, products and quotients with such factors, switches whose
condition is constant (a mask on the coefficients) or a scalar of the parameters (taken
outside the sum: ``sum switch(c, a, b) = switch(c, sum a, sum b)`` when ``c`` is one value
for all the site's elements), conjunctions and disjunctions of the two kinds of
condition, and the reshapes and transpositions that lay the elements out. The
coefficients are computed once and summed by site with NumPy; the graph keeps only the
(values, sites) tables times the scalar functions. Where any part of the piece is not of
this form, None: the piece is summed term by term as before. It is exact: floating
point sums in another order (the tests compare with the term-by-term sums).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.compile.mode import Mode
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.traversal import graph_inputs
from pytensor.tensor.basic import Alloc
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.shape import Reshape, SpecifyShape

__all__ = ["linear_site_sums"]

#: items: ("linear", coefficient graph (constants alone), scalar function or None for 1)
#: or ("switch", scalar condition, items where it holds, items where it does not)
Items = list[tuple]

#: the most items a piece may have: each is a (values, sites) table in the graph
MAX_ITEMS = 16


class _NotLinear(Exception):
    """A part of the piece is not a sum of constants times scalar functions."""


def linear_site_sums(batch: Variable, shape: tuple[int, int],
                     site_sums: Callable[[np.ndarray], np.ndarray]) -> Variable | None:
    """The (K, N) sums by site of a batched piece ``batch`` (K, size), through its
    linearity in scalar functions of the parameters (module docstring), or None where
    the piece is not of that form.

    Parameters
    ----------
    batch : Variable
        The piece's terms at K states of the block.
    shape : (int, int)
        Its shape, (K, size).
    site_sums : callable
        (K, size) array -> (K, N) array: the elements summed by the site each belongs to.

    Returns
    -------
    Variable or None
    """
    reader = _Reader()
    try:
        items = reader.items(batch, None, tuple(shape))
    except _NotLinear:
        return None
    coefficients = _coefficients(items)
    if not coefficients or len(coefficients) > MAX_ITEMS:
        return None
    evaluate = pytensor.function([], coefficients, mode=Mode(linker="py", optimizer=None),
                                 on_unused_input="ignore")
    tables = {id(c): site_sums(np.broadcast_to(np.asarray(v, dtype="float64"), shape))
              for c, v in zip(coefficients, evaluate(), strict=True)}
    return _build(items, tables)


def _build(items: Items, tables: dict) -> Variable:
    """The graph of ``items`` with every coefficient replaced by its table of site
    sums; coefficients of the same function are added first."""
    by_function: dict = {}
    switches = []
    for item in items:
        if item[0] == "linear":
            _, coefficient, function = item
            table = tables[id(coefficient)]
            by_function[function] = (by_function[function] + table if function in by_function
                                     else table)
        else:
            _, condition, held, failed = item
            if not any(tables[id(c)].any() for c in _coefficients(held + failed)):
                continue  # both branches add nothing
            switches.append(pt.switch(condition, _build(held, tables), _build(failed, tables)))
    terms = [_table(table) if function is None else _times(table, function)
             for function, table in by_function.items() if table.any()]
    terms += switches
    if not terms:
        return pt.constant(0.0)
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def _times(table: np.ndarray, function: Variable) -> Variable:
    """``table * function``, 0 where the table is 0: no element of that site multiplies
    the function, so an infinite value of it (log p at p = 0) must not make it nan."""
    product = _table(table) * function
    empty = table == 0
    return pt.switch(pt.constant(empty), 0.0, product) if empty.any() else product


def _table(table: np.ndarray) -> Variable:
    """A (K, N) table as a graph: ``rows[:, None] + columns[None, :]`` where it is the
    sum of a function of the state and one of the site, exactly in floating point (an
    abundance's ``J n - sum_j y_ij``, a site's ``sum_j y_ij``: two short vectors read,
    not a table), else the table itself."""
    if table.size and np.all(table == table.flat[0]):
        return pt.constant(table.flat[0])
    if table.ndim == 2 and np.isfinite(table).all():
        rows = table[:, 0] - table[0, 0]
        columns = table[0, :]
        if np.array_equal(rows[:, None] + columns[None, :], table):
            if not rows.any():
                return pt.constant(columns)[None, :]
            return pt.constant(rows)[:, None] + pt.constant(columns)[None, :]
    return pt.constant(table)


class _Reader:
    """Reads a graph as items (module docstring), remembering which variables are
    constants and which are scalar functions of the parameters."""

    def __init__(self) -> None:
        self._constant: dict[Variable, bool] = {}

    def is_constant(self, var: Variable) -> bool:
        """Whether ``var`` is computed from constants alone."""
        if var not in self._constant:
            self._constant[var] = all(isinstance(v, Constant) for v in graph_inputs([var]))
        return self._constant[var]

    def is_function(self, var: Variable) -> bool:
        """Whether ``var`` is one value for every element: every axis broadcast, and not
        a constant."""
        return all(var.type.broadcastable) and not self.is_constant(var)

    def items(self, var: Variable, mask: Variable | None,
              shape: tuple[int, ...] | None = None) -> Items:
        """``var`` where ``mask`` holds (None: everywhere), 0 elsewhere, as items
        (``shape``: ``var``'s static shape where its type does not say)."""
        if self.is_constant(var):
            return [("linear", _masked(var, mask), None)]
        if self.is_function(var):
            return [("linear", _masked(pt.ones_like(var, dtype="float64"), mask),
                     _scalar(var))]
        node = var.owner
        if node is None:
            raise _NotLinear(var)
        op = node.op
        if isinstance(op, Reshape | DimShuffle | SpecifyShape | Alloc):
            return self._laid_out(node, mask, shape)
        if not isinstance(op, Elemwise):
            raise _NotLinear(op)
        scalar = op.scalar_op
        inputs = node.inputs
        if isinstance(scalar, ps.Add):
            return [item for x in inputs for item in self.items(x, mask)]
        if isinstance(scalar, ps.Sub):
            return self.items(inputs[0], mask) + _scaled(self.items(inputs[1], mask), -1.0,
                                                         None, mask)
        if isinstance(scalar, ps.Neg):
            return _scaled(self.items(inputs[0], mask), -1.0, None, mask)
        if isinstance(scalar, ps.Mul):
            return self._product(inputs, mask)
        if isinstance(scalar, ps.TrueDiv):
            numerator, denominator = inputs
            if not (self.is_constant(denominator) or self.is_function(denominator)):
                raise _NotLinear(op)
            return self._product([numerator, pt.reciprocal(denominator)], mask)
        if isinstance(scalar, ps.Switch):
            return self._switch(*inputs, mask)
        raise _NotLinear(op)

    def _product(self, inputs, mask) -> Items:
        constants = [x for x in inputs if self.is_constant(x)]
        functions = [x for x in inputs if not self.is_constant(x) and self.is_function(x)]
        sorted_out = {id(x) for x in constants + functions}
        others = [x for x in inputs if id(x) not in sorted_out]
        if len(others) > 1:
            raise _NotLinear("a product of two terms that vary")
        factor = _product_of(constants)
        function = _product_of([_scalar(f) for f in functions])
        if not others:
            one = pt.ones_like(inputs[0], dtype="float64")
            base = [("linear", _masked(one if factor is None else factor * one, mask), None)]
            return base if function is None else _scaled(base, None, function, mask)
        return _scaled(self.items(others[0], mask), factor, function, mask)

    def _switch(self, condition, held, failed, mask) -> Items:
        if self.is_constant(condition):
            return self.items(held, _and(mask, condition)) + \
                self.items(failed, _and(mask, pt.invert(_bool(condition))))
        if self.is_function(condition):
            return [("switch", _scalar(condition), self.items(held, mask),
                     self.items(failed, mask))]
        node = condition.owner
        if node is not None and isinstance(node.op, Elemwise) and len(node.inputs) == 2 and \
                isinstance(node.op.scalar_op, ps.AND | ps.OR):
            first, second = node.inputs
            if self.is_constant(first) and self.is_function(second):
                first, second = second, first
            if self.is_function(first) and self.is_constant(second):
                inner = ("switch", _scalar(first), self.items(held, mask),
                         self.items(failed, mask))
                if isinstance(node.op.scalar_op, ps.AND):
                    # switch(p & c, a, b) = switch(c, switch(p, a, b), b)
                    return _masked_items([inner], _bool(second)) + \
                        self.items(failed, _and(mask, pt.invert(_bool(second))))
                # switch(p | c, a, b) = switch(c, a, switch(p, a, b))
                return self.items(held, _and(mask, second)) + \
                    _masked_items([inner], pt.invert(_bool(second)))
        raise _NotLinear("a switch whose condition varies with the parameters by element")

    def _laid_out(self, node, mask, shape) -> Items:
        """A reshape, broadcast or transposition of items: applied to every coefficient
        (broadcast to the input's shape first), then masked; the scalar functions are
        unchanged. Shapes are static (``shape``: the output's, where its type does not say)."""
        source, *rest = node.inputs
        out_shape = _known(node.outputs[0].type.shape) or shape
        in_shape = _known(source.type.shape)
        if out_shape is None or in_shape is None:
            raise _NotLinear(node.op)
        if isinstance(node.op, Alloc):
            def apply(full):
                return pt.broadcast_to(full, out_shape)
        elif isinstance(node.op, Reshape):
            def apply(full):
                return full.reshape(out_shape)
        elif isinstance(node.op, DimShuffle):
            def apply(full):
                return node.op(full)
        else:  # SpecifyShape
            def apply(full):
                return full

        laid = _mapped(self.items(source, None),
                       lambda c, f: (apply(pt.broadcast_to(c, in_shape)), f))
        return laid if mask is None else _masked_items(laid, mask)


def _known(shape) -> tuple[int, ...] | None:
    return None if shape is None or None in shape else tuple(int(d) for d in shape)


def _mapped(items: Items, linear: Callable) -> Items:
    """``items`` with every linear item's ``(coefficient, function)`` replaced by
    ``linear(coefficient, function)``, inside switches too."""
    return [("linear", *linear(item[1], item[2])) if item[0] == "linear"
            else ("switch", item[1], _mapped(item[2], linear), _mapped(item[3], linear))
            for item in items]


def _coefficients(items: Items) -> list[Variable]:
    """Every coefficient of ``items``, inside switches too."""
    found = []
    for item in items:
        if item[0] == "linear":
            found.append(item[1])
        else:
            found += _coefficients(item[2]) + _coefficients(item[3])
    return found


def _masked_items(items: Items, mask: Variable) -> Items:
    """``items`` where the constant ``mask`` holds, 0 elsewhere."""
    return _mapped(items, lambda c, f: (_masked(c, mask), f))


def _scaled(items: Items, factor, function, mask) -> Items:
    """Every item times a constant ``factor`` and a scalar ``function`` (None: 1), masked
    again (a factor's infinities must not reach the elements the mask leaves out)."""
    def scale(coefficient, own):
        if factor is not None:
            coefficient = _masked(coefficient * factor, mask)
        return coefficient, (own if function is None else function if own is None
                             else own * function)

    return _mapped(items, scale)


def _masked(coefficient: Variable, mask: Variable | None) -> Variable:
    coefficient = pt.cast(coefficient, "float64")
    return coefficient if mask is None else pt.switch(mask, coefficient, 0.0)


def _bool(condition: Variable) -> Variable:
    return condition if condition.type.dtype == "bool" else pt.neq(condition, 0)


def _and(mask: Variable | None, condition: Variable) -> Variable:
    condition = _bool(condition)
    return condition if mask is None else pt.and_(mask, condition)


def _scalar(var: Variable) -> Variable:
    """A variable with every axis broadcast, as a scalar."""
    return var.dimshuffle([]) if var.type.ndim else var


def _product_of(factors: list[Variable]) -> Variable | None:
    if not factors:
        return None
    product = factors[0]
    for factor in factors[1:]:
        product = product * factor
    return product
