"""The summed-out density built lean: columns held as one scalar a kind give the values
and gradients of the vector operations they replace, the parameter checks shortened are
the same condition, an elementwise operation decided by a constant is its input, and the
generated summed-out occupancy model is a graph about the size of one summed out by hand
(its compilation's cost), with no gather or scatter."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.traversal import applys_between, graph_inputs

import pymc_discrete as pmd
from pymc_discrete.pymc.summing.alike_sites import each_element_at, elements_at
from pymc_discrete.pymc.summing.kind_scalars import (
    column_scalars,
    kind_logaddexp,
    mask_column,
    placed_by_kind,
    stacked_scalars,
    weighted_total,
)
from pymc_discrete.pymc.summing.lean_checks import lean_check

KIND = np.array([2, 0, 1, 1, 2, 0, 2])
COUNTS = np.bincount(KIND).astype("float64")
MASK = np.array([[True, True], [False, True], [True, True]])  # kind 1 cannot take value 0


def _size(outputs) -> int:
    return sum(1 for _ in applys_between(list(graph_inputs(outputs)), outputs))


def _columns(theta, held=None):
    """Two columns (a state each) of three kinds, one scalar graph a kind, masked."""
    a, b = theta[0], theta[1]
    raw = [[pt.log(pt.sigmoid(a)), 2.0 * a - b, pt.exp(-b)],
           [b * b - 1.0, pt.log1p(pt.exp(a)), a + 3.0 * b]]
    return [mask_column(stacked_scalars(col), MASK[:, v], held) for v, col in enumerate(raw)]


@pytest.mark.parametrize("checked", [False, True])
def test_scalar_columns_equal_the_vector_operations(checked):
    """The log-sum-exp over states, the count-weighted total and the placement at the
    sites, built from the kinds' scalars, give the values and gradients of the same
    operations on the stacked table (masked values -inf; with a check, -inf everywhere
    where it fails)."""
    theta = pt.vector("theta", shape=(2,))
    held = pt.gt(theta[0], -1.0) if checked else None
    columns = _columns(theta, held)
    assert all(column_scalars(c) is not None for c in columns)
    lse = kind_logaddexp(columns)
    placed = placed_by_kind(lse, KIND)
    total = weighted_total(lse, COUNTS)
    table = pt.stack(columns, axis=1)  # (3, 2), the vector form
    vector_lse = pt.logsumexp(table, axis=1)
    want_placed, want_total = vector_lse[KIND], (vector_lse * COUNTS).sum()
    f = pytensor.function([theta], [placed, total, pt.grad(total, theta),
                                    want_placed, want_total, pt.grad(want_total, theta)])
    for point in ([0.3, -0.4], [1.5, 2.0], [-2.0, 0.5]):
        got_placed, got_total, got_grad, exp_placed, exp_total, exp_grad = f(point)
        np.testing.assert_allclose(got_placed, exp_placed, rtol=1e-13)
        assert got_total == pytest.approx(exp_total, rel=1e-13)
        if np.isfinite(exp_total):
            np.testing.assert_allclose(got_grad, exp_grad, rtol=1e-12)
        else:  # the check fails: -inf at every site, as the stacked table gives
            assert checked and np.all(got_placed == -np.inf)


def test_a_failed_check_gives_minus_inf_and_a_finite_gradient():
    """Where a parameter check fails and a kind's values are NaN (a log of a negative
    number), the log-sum-exp, the placement and the total are -inf and their gradients
    finite: each value keeps its own check, ahead of the logaddexp."""
    theta = pt.vector("theta", shape=(2,))
    a, b = theta[0], theta[1]
    held = pt.gt(a, 0.0)
    raw = [[pt.log(a), a * b, b], [pt.log(a) + b, pt.log1p(a), a - b]]
    columns = [mask_column(stacked_scalars(col), MASK[:, v], held) for v, col in enumerate(raw)]
    lse = kind_logaddexp(columns)
    total = weighted_total(lse, COUNTS)
    placed = placed_by_kind(lse, KIND)
    f = pytensor.function([theta], [total, placed, pt.grad(total, theta),
                                    pt.grad(placed.sum(), theta)])
    got_total, got_placed, grad_total, grad_placed = f([-0.5, 0.7])
    assert got_total == -np.inf and np.all(got_placed == -np.inf)
    assert np.all(np.isfinite(grad_total)) and np.all(np.isfinite(grad_placed))


def _pymc_like_check(p):
    """A Bernoulli's parameter checks at two states of a block, as PyMC's graphs give
    them: ``all`` of ``all`` operations, a scalar round trip, a state's ``1 != 0``, and the
    parameter times the states ``[0, 1]``."""
    both = pt.mul(pt.constant(np.array([0, 1])), p)
    inner = pt.all(pt.stack([pt.all(pt.ge(both, 0)), pt.all(pt.le(both, 1))]))
    round_trip = pt.basic.tensor_from_scalar(pt.basic.scalar_from_tensor(inner))
    one = pt.all(pt.stack([pt.all(pt.ge(p, 0)), pt.all(pt.le(p, 1))]))
    return pt.and_(pt.and_(pt.neq(pt.constant(1), pt.constant(0)), pt.all(round_trip)),
                   pt.and_(one, pt.neq(pt.constant(1), pt.constant(0))))


def test_lean_checks_are_the_same_condition_in_fewer_operations():
    p = pt.scalar("p")
    held = _pymc_like_check(p)
    lean = lean_check(held)
    assert _size([lean]) < _size([held]) / 2
    f = pytensor.function([p], [held, lean])
    for value in [0.0, 0.3, 1.0, 1.2, -0.1, np.inf, -np.inf, np.nan]:
        original, shortened = f(value)
        assert bool(original) == bool(shortened), value


def test_integer_and_or_are_bitwise_and_never_decided():
    """``1 & x`` and ``1 | x`` on integers are bitwise (PyTensor's ``and_``/``or_``): a
    constant does not decide them, and the rebuilt graph gives the whole graph's values;
    in a check, ``all((n & 1) == 0)`` stays a test of n's parity."""
    x = pt.vector("x", shape=(3,), dtype="int64")
    ones = pt.constant(np.ones(3, dtype="int64"))
    for graph in (pt.and_(ones, x), pt.or_(ones, x)):
        rebuilt, _ = elements_at(graph, np.array([0, 1, 2]))
        f = pytensor.function([x], [graph, rebuilt])
        whole, got = f(np.array([2, 3, 4]))
        assert np.array_equal(whole, got)
    n = pt.scalar("n", dtype="int64")
    check = pt.all(pt.eq(pt.and_(pt.constant(np.ones(2, dtype="int64")), n), 0))
    f = pytensor.function([n], [check, lean_check(check)])
    for value in range(5):
        original, lean = f(value)
        assert bool(original) == bool(lean), value


def test_lean_checks_of_a_deep_shared_graph_take_linear_time():
    """A check on a quantity computed by a recursion that reads its previous value three
    times (a logistic growth over 60 steps) is shortened, and keeps its value: the
    graph's keys are computed once a variable (once a path, there are 3^60)."""
    r = pt.scalar("r")
    x = pt.constant(0.1)
    for _ in range(60):
        x = x + r * x * (1.0 - x)
    check = pt.and_(pt.and_(pt.ge(x, 0.0), pt.le(x, 1.0)), pt.ge(x, 0.0))
    lean = lean_check(check)
    assert _size([lean]) < _size([check])
    f = pytensor.function([r], [check, lean])
    for value in (0.1, 0.5, 2.9):
        original, shortened = f(value)
        assert bool(original) == bool(shortened), value


def test_an_operation_decided_by_a_constant_is_its_input():
    """``switch`` on a constant condition, ``and`` with True, ``mul`` by 1, read at
    elements: the rebuilt graph is the chosen input itself (no operation left to
    compile), and its values are the whole graph's there, to the bit."""
    x = pt.vector("x", shape=(4,))
    chosen = pt.log(x)
    graph = pt.switch(pt.constant(np.array([True, True, False, False])),
                      pt.mul(pt.constant(np.ones(4)), chosen), pt.exp(x))
    at_first_two, _ = elements_at(graph, np.array([0, 1]))
    assert at_first_two.owner.op == chosen.owner.op  # the log itself, no switch or mul
    flag = pt.vector("flag", shape=(3,), dtype="bool")
    anded = pt.and_(pt.constant(np.array([True, True, True])), flag)
    assert [e.owner.op for e in each_element_at(anded, np.array([0, 2]))] == \
        [flag[0].owner.op] * 2
    mixed, _ = elements_at(graph, np.array([1, 2]))  # the condition differs: kept
    f = pytensor.function([x], [graph, at_first_two, mixed], on_unused_input="ignore")
    whole, first_two, both = f(np.array([0.5, 2.0, 3.0, 0.1]))
    assert np.array_equal(first_two, whole[:2])
    assert np.array_equal(both, whole[1:3])


def _occupancy(y: np.ndarray):
    with pm.Model() as model:
        psi = pm.Beta("psi", 1.0, 1.0)
        p = pm.Beta("p", 1.0, 1.0)
        z = pm.Bernoulli("z", psi, shape=y.shape[0])
        pm.Bernoulli("y", z[:, None] * p, observed=y)
    counts, visits = y.sum(axis=1), y.shape[1]
    with pm.Model() as by_hand:
        psi = pm.Beta("psi", 1.0, 1.0)
        p = pm.Beta("p", 1.0, 1.0)
        occupied = pt.log(psi) + counts * pt.log(p) + (visits - counts) * pt.log1p(-p)
        empty = pt.log1p(-psi) + np.where(counts > 0, -np.inf, 0.0)
        pm.Potential("sites", pt.logaddexp(occupied, empty).sum())
    return model, by_hand


def _logp_and_gradient_size(model) -> int:
    logp = model.logp()
    return _size([logp, *pt.grad(logp, model.value_vars)])


def test_summed_out_occupancy_is_a_graph_the_size_of_one_summed_out_by_hand():
    """200 sites of 5 visits, a few kinds of site (by their number of detections): the
    generated summed-out density and its gradient, before PyTensor rewrites them, are
    within 1.5 times the operations of the model summed out by hand (what compiling
    them costs grows with it), and once compiled gather and scatter nothing; its density
    is the hand-written one's."""
    rng = np.random.default_rng(3)
    occupied = rng.random(200) < 0.6
    y = ((rng.random((200, 5)) < 0.3) & occupied[:, None]).astype("int64")
    model, by_hand = _occupancy(y)
    summed = pmd.marginalize(model)
    assert _logp_and_gradient_size(summed) <= 1.5 * _logp_and_gradient_size(by_hand)
    function = summed.logp_dlogp_function(ravel_inputs=True)
    ops = {type(node.op).__name__
           for node in function._pytensor_function.maker.fgraph.toposort()}
    assert not ops & {"AdvancedSubtensor", "AdvancedSubtensor1", "AdvancedIncSubtensor",
                      "AdvancedIncSubtensor1"}
    ours, theirs = summed.compile_logp(), by_hand.compile_logp()
    for point in ({"psi_logodds__": 0.3, "p_logodds__": -0.8},
                  {"psi_logodds__": -1.2, "p_logodds__": 0.4}):
        assert ours(point) == pytest.approx(theirs(point), rel=1e-12)


def test_the_exact_draw_reads_each_kind_once_and_draws_every_site_from_its_conditional():
    """Twelve occupancy sites of three kinds (by their detections): CollapsedNUTS's exact
    draw compiles one row a kind, and each site's log-odds of being occupied is the
    model's log density changed at that site alone; over 4,000 draws at fixed
    parameters, each undetected site is occupied with its exact probability, within 4
    standard errors."""
    from pymc.blocking import RaveledVars

    from pymc_discrete.pymc.summing.collapsed_nuts import ExactBlockDraw

    y = np.array([[0, 0], [1, 0], [0, 0], [1, 1], [0, 0], [1, 0]] * 2)
    model, _ = _occupancy(y)
    with model:
        step = pmd.CollapsedNUTS(random_seed=5)
    draw = next(m for m in step.methods if isinstance(m, ExactBlockDraw))
    assert draw._kind is not None and np.unique(draw._kind).size == 3
    point = model.initial_point()
    logp = model.compile_logp()
    psi, p = 0.6, 0.35
    point.update({"psi_logodds__": np.log(psi / (1 - psi)), "p_logodds__": np.log(p / (1 - p))})
    for name, shared in draw.shared.items():
        shared.set_value(point[name])
    table = draw._table()[draw._kind]
    z = np.ones(12, dtype="int64")
    base = logp({**point, "z": z})
    undetected = y.sum(axis=1) == 0
    for i in np.flatnonzero(undetected):
        other = z.copy()
        other[i] = 0
        assert table[i, 1] - table[i, 0] == pytest.approx(base - logp({**point, "z": other}),
                                                          abs=1e-10)
    assert np.all(table[~undetected, 0] == -np.inf)
    occupied = psi * (1 - p) ** 2 / (psi * (1 - p) ** 2 + 1 - psi)
    q = RaveledVars(z.copy(), [("z", (12,), 12, np.dtype("int64"))])
    drawn = np.array([draw.astep(q)[0].data for _ in range(4000)])
    assert np.all(drawn[:, ~undetected] == 1)
    frequency = drawn[:, undetected].mean(axis=0)
    assert np.all(np.abs(frequency - occupied) <= 4 * np.sqrt(occupied * (1 - occupied) / 4000))


def test_collapsed_nuts_with_kinds_draws_the_joint_posterior():
    """Six occupancy sites of three kinds, three never detected, sampled by
    ``CollapsedNUTS`` in PyMC's loop (NUTS on the sum by kind, the exact draw by kind):
    the joint frequencies of the six sites, chain by chain, and the mean of psi match a
    400 x 400 grid over (psi, p) times the 8 states of the undetected sites, within 4
    Monte Carlo standard errors."""
    import itertools

    from tests.pymc.joint import assert_joint_frequencies_match

    y = np.array([[1, 0, 0], [0, 0, 0], [1, 1, 0], [0, 0, 0], [1, 0, 0], [0, 0, 0]])
    hits, visits = y.sum(axis=1), y.shape[1]
    with pm.Model() as model:
        psi = pm.Beta("psi", 2, 2)
        p = pm.Beta("p", 2, 2)
        z = pm.Bernoulli("z", psi, shape=6)
        pm.Bernoulli("y", z[:, None] * p, observed=y)
    grid = (np.arange(400) + 0.5) / 400
    g_psi, g_p = grid[:, None], grid[None, :]
    states = np.array(list(itertools.product((0, 1), repeat=6)))
    weights = []
    for state in states:
        w = g_psi * (1 - g_psi) * g_p * (1 - g_p)  # Beta(2, 2) x Beta(2, 2)
        for site, occupied in enumerate(state):
            if occupied:
                w = w * g_psi * g_p ** hits[site] * (1 - g_p) ** (visits - hits[site])
            else:
                w = w * (1 - g_psi) * (hits[site] == 0)
        weights.append(w)
    weights = np.array(weights)
    weights /= weights.sum()
    with model:
        step = pmd.CollapsedNUTS()
        idata = pm.sample(draws=3000, tune=500, chains=2, step=step, random_seed=7,
                          progressbar=False, compute_convergence_checks=False)
    assert_joint_frequencies_match(idata, ["z"], states, weights.sum(axis=(1, 2)))
    import arviz as az

    draws = idata.posterior["psi"]
    exact = float((weights.sum(axis=0) * g_psi).sum())
    mcse = float(az.mcse(draws.to_dataset())["psi"])
    assert abs(float(draws.mean()) - exact) <= 4 * mcse
