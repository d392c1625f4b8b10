"""A batched piece summed by site through its linearity in scalar functions of the
parameters: equal to the term-by-term sums, values and gradients, at the edges of the
parameters' support too; None where the piece is not of that form."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest

from pymc_discrete.pymc.model.terms import without_checks
from pymc_discrete.pymc.summing.linear_sums import linear_site_sums

K, N, J = 6, 5, 4
RNG = np.random.default_rng(0)
Y = RNG.integers(0, 4, size=(N, J))
VALUES = (np.arange(K)[:, None] + Y.max(axis=1)[None, :] - 1)  # some below the counts


def _site_sums(array: np.ndarray) -> np.ndarray:
    return array.reshape(K, N, J).sum(axis=2)


def _binomial_piece(p):
    """The (K, N * J) terms of counts Y ~ Binomial(n, p) at K abundances n a site,
    without PyMC's parameter checks (as the summed-out route reads them)."""
    n = pt.constant(VALUES[:, :, None])
    terms = pm.logp(pm.Binomial.dist(n=n, p=p), pt.constant(Y))
    unchecked, _ = without_checks(terms, [p])
    return unchecked.reshape((K, N * J))


def _compare(piece_of, parameter: pt.TensorVariable, at: list[float]) -> None:
    batch = piece_of(parameter)
    linear = linear_site_sums(batch, (K, N * J), _site_sums)
    assert linear is not None
    direct = batch.reshape((K, N, J)).sum(axis=2)
    weights = pt.constant(RNG.normal(size=(K, N)))
    finite = pt.isfinite(direct)
    both = pytensor.function([parameter], [linear, direct])
    grads = pytensor.function(
        [parameter], [pt.grad(pt.sum(pt.switch(finite, linear * weights, 0.0)), parameter),
                      pt.grad(pt.sum(pt.switch(finite, direct * weights, 0.0)), parameter)])
    for value in at:
        got, want = both(value)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-10)
        assert np.array_equal(np.isneginf(got), np.isneginf(want))
        if 0.0 < value < 1.0:
            g_got, g_want = grads(value)
            np.testing.assert_allclose(g_got, g_want, rtol=1e-10)


def test_binomial_counts_sum_through_their_sufficient_statistics():
    """An N-mixture model's counts: equal to the term-by-term sums at inner values of p,
    and at p = 0 and p = 1, where PyMC's logpow gives 0 or -inf by the counts."""
    p = pt.dscalar("p")
    _compare(_binomial_piece, p, [0.3, 0.9, 1e-12, 0.0, 1.0])


def test_a_rate_on_the_logit_scale_sums_too():
    """p = sigmoid(a): log p and log(1 - p) are functions of the parameter, however
    PyTensor writes them."""
    a = pt.dscalar("a")
    _compare(lambda a: _binomial_piece(pt.sigmoid(a)), a, [-2.0, 0.4, 3.0])


def test_terms_that_vary_with_the_parameters_by_element_are_left_alone():
    """A Poisson rate per site (log of a product of the value and a parameter) and a
    product of two varying factors are not constants times scalar functions."""
    lam = pt.dvector("lam")
    n = pt.constant(VALUES[:, :, None].astype(float))
    per_site = pm.logp(pm.Poisson.dist(mu=n * lam[None, :, None]), pt.constant(Y))
    per_site, _ = without_checks(per_site, [lam])
    assert linear_site_sums(per_site.reshape((K, N * J)), (K, N * J), _site_sums) is None
    s = pt.dscalar("s")
    product = (pt.constant(Y[None].astype(float)) * s) * (n * s + 1.0) ** 2
    product = pt.broadcast_to(product, (K, N, J)).reshape((K, N * J))
    assert linear_site_sums(product, (K, N * J), _site_sums) is None


@pytest.mark.parametrize("p", [0.25, 0.75])
def test_the_sum_is_a_few_tables_times_scalars(p):
    """The summed graph holds (K, N) tables and scalars only: no (K, N, J) array is
    computed from the parameter."""
    q = pt.dscalar("q")
    linear = linear_site_sums(_binomial_piece(q), (K, N * J), _site_sums)
    fn = pytensor.function([q], linear)
    shapes = [tuple(var.type.shape) for node in fn.maker.fgraph.apply_nodes
              for var in node.outputs if hasattr(var.type, "shape")]
    assert all(len(shape) <= 2 for shape in shapes)
    assert np.all(np.isfinite(fn(p)) | (fn(p) == -np.inf))


def test_the_summed_out_n_mixture_model_reads_its_counts_linearly(monkeypatch):
    """pmd.marginalize of an N-mixture model sums its visits' counts through their
    sufficient statistics (its exactness against enumeration: test_marginal_model's
    test_counts_sum_out_over_their_window, on the same model)."""
    import pymc_discrete as pmd
    from pymc_discrete.pymc.summing import marginal
    from tests.pymc.test_counts import _model

    read = []

    def spy(batch, shape, site_sums):
        result = linear_site_sums(batch, shape, site_sums)
        read.append(result is not None)
        return result

    monkeypatch.setattr(marginal, "linear_site_sums", spy)
    pmd.marginalize(_model("poisson"))
    assert read == [True]
