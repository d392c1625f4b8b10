"""Terms evaluated once per distinct term: equal codes mean equal terms, the sums from
distinct terms equal the sums of every term, reduced checks equal the checks, and a change
point summed out this way equals the enumerated sum."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy.special import logsumexp

import pymc_discrete as pmd
from pymc_discrete.pymc.summing.alike_sites import AlikeSites
from pymc_discrete.pymc.summing.distinct_terms import (
    PieceAtStates,
    distinct_checks,
    kind_columns,
    kind_sums,
    piece_codes,
    worth_codes,
)

COUNTS = np.array([4, 5, 4, 0, 1, 4, 3, 4, 0, 6, 3, 3, 4, 0, 2, 6, 3, 3, 5, 4, 5, 3, 1, 4])
YEARS = np.arange(COUNTS.size)


def _change_point_piece(k: int):
    """The Poisson terms of a change point at K switch years, as one (K, T) graph of the
    two rates (``rate = late if t >= s else early``)."""
    early, late = pt.scalar("early"), pt.scalar("late")
    s = pt.constant(np.arange(k)[:, None])
    rate = pt.switch(pt.ge(pt.constant(YEARS)[None, :], s), late, early)
    terms = pm.logp(pm.Poisson.dist(rate), pt.constant(COUNTS)[None, :])
    return terms, [early, late]


def test_a_change_point_has_few_distinct_terms_and_equal_codes_are_equal_terms():
    k = 12
    terms, inputs = _change_point_piece(k)
    piece = PieceAtStates(k, COUNTS.size, batched=terms)
    code = piece_codes(piece)
    # every term is one of (count, year on or after the switch): at most 2 x 7 values
    assert np.unique(code).size <= 2 * np.unique(COUNTS).size
    values = pytensor.function(inputs, terms)(0.7, 3.1)
    for c in np.unique(code):
        assert np.all(values[code == c] == values[code == c][0])


@pytest.mark.parametrize(("with_kinds", "by_code", "by_state", "weighing"), [
    (False, False, False, "dense"), (False, True, False, "dense"),
    (True, False, False, "dense"), (True, True, False, "dense"),
    (True, True, True, "dense"), (False, False, True, "dense"),
    (True, True, False, "gather"), (True, True, True, "gather"),
])
def test_sums_from_distinct_terms_equal_the_sums_of_every_term(with_kinds, by_code,
                                                              by_state, weighing,
                                                              monkeypatch):
    """Per-site sums by distinct terms and multiplicities (or by every term) equal the
    direct sums, at rates where some terms are -inf (a zero weight on one must not make
    a NaN); with kinds, the sums of each kind's first site. By state: the piece given as
    one graph a state and the sums as one column a state. The terms weighed by a dense
    table of weights or gathered row by row."""
    from pymc_discrete.pymc.summing import distinct_terms

    if weighing == "gather":
        monkeypatch.setattr(distinct_terms, "DENSE_FACTOR", 0)
        monkeypatch.setattr(distinct_terms, "DENSE_MIN", 0)
    k, n = 12, 4
    terms, inputs = _change_point_piece(k)
    own = np.repeat(np.arange(n), COUNTS.size // n)  # four sites of six years each
    own[-2:] = -1  # two terms no site moves
    alike = (AlikeSites(np.array([0, 1, 3]), np.array([0, 1, 0, 2])) if with_kinds
             else AlikeSites(np.arange(n), np.arange(n)))
    if by_state:  # one graph a state, as a block of few values is built
        early, late = inputs
        rows = [pm.logp(pm.Poisson.dist(pt.switch(pt.ge(YEARS, v), late, early)),
                        pt.constant(COUNTS)) for v in range(k)]
        piece = PieceAtStates(k, COUNTS.size, rows=rows)
    else:
        piece = PieceAtStates(k, COUNTS.size, batched=terms)
    code = piece_codes(piece) if by_code else None
    if by_state:
        columns, loose = kind_columns(piece, code, own, alike, k)
        sums = pt.stack(columns)
    else:
        sums, loose = kind_sums(piece, code, own, alike, k)
    f = pytensor.function(inputs, [sums, loose])
    direct = pytensor.function(inputs, terms)
    for early, late in [(0.7, 3.1), (2.0, 0.0), (0.0, 0.0)]:
        got, got_loose = f(early, late)
        every = direct(early, late)
        expected = np.stack([every[:, own == site].sum(axis=1) for site in alike.first],
                            axis=1)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got_loose, every[0, own < 0].sum(), rtol=1e-12)


def test_whether_distinct_terms_are_worth_it():
    """A change point's terms at 12 switch years, one site: 12 x 24 pairs, at most 14
    distinct terms a state; split into 24 one-year sites, nothing repeats within a
    sum."""
    k = 12
    terms, _ = _change_point_piece(k)
    code = piece_codes(PieceAtStates(k, COUNTS.size, batched=terms))
    one_site = AlikeSites(np.array([0]), np.array([0]))
    assert worth_codes(code, np.zeros(COUNTS.size, dtype=np.int64), one_site, k)
    every_year = AlikeSites(np.arange(COUNTS.size), np.arange(COUNTS.size))
    assert not worth_codes(code, np.arange(COUNTS.size), every_year, k)


def test_checks_reduced_over_distinct_elements_equal_the_checks():
    """``all`` of a (K, T) condition, whole and along an axis, reduced over its distinct
    elements: the same value wherever some elements fail and others hold."""
    early, late = pt.scalar("early"), pt.scalar("late")
    side = pt.constant(YEARS[None, :] >= np.arange(12)[:, None])
    cond = pt.ge(pt.switch(side, late, early), 0)
    held = pt.and_(pt.all(cond), pt.all(pt.all(cond, axis=1)))
    per_state = pt.all(cond, axis=1)
    reduced = distinct_checks(held)
    reduced_rows = distinct_checks(pt.all(per_state))
    assert reduced is not held and reduced_rows is not per_state
    f = pytensor.function([early, late], [held, reduced, pt.all(per_state), reduced_rows])
    for e, l in [(1.0, 1.0), (-1.0, 1.0), (1.0, -1.0), (-1.0, -1.0)]:
        a, b, c, d = f(e, l)
        assert a == b and c == d


@pytest.mark.parametrize("pseudo_years", [8, 30])
def test_change_point_summed_out_equals_the_enumerated_sum(pseudo_years):
    """The summed-out density of a change point (more than 4 values: one vectorised
    graph, evaluated once per distinct term) equals log-sum-exp over the switch year of
    the original model, at random points, to 1e-9."""
    counts = np.resize(COUNTS, pseudo_years)
    years = np.arange(pseudo_years)
    with pm.Model() as model:
        s = pm.DiscreteUniform("s", 0, pseudo_years - 1)
        early = pm.Exponential("early", 1.0)
        late = pm.Exponential("late", 1.0)
        pm.Poisson("y", pm.math.switch(years >= s, late, early), observed=counts)
    summed = pmd.marginalize(model)
    original, marginal = model.compile_logp(), summed.compile_logp()
    rng = np.random.default_rng(2)
    start = summed.initial_point()
    for _ in range(5):
        point = {k: v + rng.normal(0.0, 0.8, np.shape(v)) for k, v in start.items()}
        exact = logsumexp([original({**point, "s": v}) for v in range(pseudo_years)])
        assert marginal(point) == pytest.approx(exact, abs=1e-9, rel=1e-12)
