"""The applied benchmark's marginal models are its discrete models with the discrete
variables summed out, exactly (``benchmarks/applied_models.py``).

On data small enough to enumerate every discrete configuration, at random continuous
points: the marginal model's log density equals the logsumexp of the discrete model's
over the configurations, and the Rao-Blackwellised summaries equal the expectations of
the discrete summaries under the enumerated conditional distribution. (That each NumPyro
version has PyMC's log density is checked by the benchmark itself, before every NumPyro
measurement, where NumPyro is installed: ``run_applied.numpyro_density_mismatch``.)
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from benchmarks import applied_models as am

#: no compilation: the graphs are small and evaluated a few hundred times at most, and
#: PyTensor's default (numba) linker would spend seconds compiling each
MODE = "FAST_COMPILE"


def _small_models() -> dict[str, tuple[am.AppliedModel, int]]:
    """Every family at a size whose discrete configurations can be enumerated, with the
    number of values of each discrete site."""
    iris = am.iris_standardised()[[0, 50, 100, 120]]  # one flower per species and one more
    X, y, names = am.diabetes_standardised()
    return {
        "mixture": (am.gaussian_mixture(iris, k=3), 3),
        # a site never detected, one detected once and one detected twice
        "occupancy": (am.site_occupancy(np.array([[0, 1, 0], [0, 0, 0], [1, 1, 0],
                                                  [0, 0, 0]])), 2),
        "capture": (am.capture_recapture(np.array([2, 0, 1, 0, 0]), occasions=5), 2),
        "changepoint": (am.change_point(), 0),  # its 111 years, enumerated directly
        "selection": (am.variable_selection(X[:25], y[:25], names), 2),
        # full size: 4 indicators, 16 configurations
        "small_spike_and_slab": (am.small_spike_and_slab(), 2),
        # 6 steps of the simulated chain: 3^6 = 729 state sequences
        "hmm": (am.gaussian_hmm(T=6), 3),
        "sticky_hmm": (am.sticky_hmm(T=6), 3),
        # 3 sites x 2 visits (one never counted), summed to K = 2 + 5: 8^3 = 512 values
        "nmixture": (am.n_mixture(np.array([-1.0, 0.0, 1.5]),
                                  np.array([[2, 1], [0, 0], [0, 1]]), extra=5), 8),
    }


MODELS = _small_models()


def _configurations(applied: am.AppliedModel, n_values: int) -> list[dict]:
    """Every value of the discrete variables (one variable per model here)."""
    (name,) = applied.discrete
    if applied.name == "changepoint":
        return [{name: np.int64(s)} for s in am.COAL_MINING_YEARS]
    size = applied.model.initial_point()[name].size
    return [{name: np.array(c, dtype=np.int64)}
            for c in itertools.product(range(n_values), repeat=size)]


@functools.cache
def _logp_functions(name: str) -> tuple:
    """The discrete and the marginal model's compiled log densities (once per model)."""
    applied, _ = MODELS[name]
    return applied.model.compile_logp(mode=MODE), applied.marginal.compile_logp(mode=MODE)


def _constrained_values(model, names: list[str]):
    """Function of a point (value variables) giving the constrained values of ``names``."""
    outs = model.replace_rvs_by_values([model[v] for v in names])
    return model.compile_fn(outs, inputs=model.value_vars, mode=MODE,
                            on_unused_input="ignore")


def _random_points(applied: am.AppliedModel, n: int, seed: int) -> list[dict]:
    """Random points of the marginal model's (unconstrained) value variables."""
    rng = np.random.default_rng(seed)
    start = applied.marginal.initial_point()
    return [{k: v + rng.normal(0.0, 0.5, np.shape(v)) for k, v in start.items()}
            for _ in range(n)]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_marginal_is_the_discrete_model_summed_over_its_discrete_values(name):
    applied, n_values = MODELS[name]
    discrete_logp, marginal_logp = _logp_functions(name)
    # the same continuous value variables: a point of one is a point of the other
    continuous = set(applied.model.initial_point()) - set(applied.discrete)
    assert continuous == set(applied.marginal.initial_point())
    configurations = _configurations(applied, n_values)
    for point in _random_points(applied, 2, seed=len(name)):
        joint = [discrete_logp({**point, **c}) for c in configurations]
        np.testing.assert_allclose(marginal_logp(point), logsumexp(joint), rtol=0, atol=1e-8)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_rao_blackwellised_summaries_are_the_enumerated_expectations(name):
    applied, n_values = MODELS[name]
    model = applied.model
    discrete_logp, _ = _logp_functions(name)
    constrained = _constrained_values(model, applied.continuous)
    configurations = _configurations(applied, n_values)
    for point in _random_points(applied, 2, seed=7):
        logw = np.array([discrete_logp({**point, **c}) for c in configurations])
        prob = np.exp(logw - logsumexp(logw))
        values = constrained({**point, **configurations[0]})
        draws = {v: np.asarray(x)[None, None] for v, x in zip(applied.continuous, values)}
        expected = applied.marginal_summaries(draws)
        assert set(expected) == set(applied.summaries)
        for summary, fn in applied.summaries.items():
            per_config = np.array([fn({k: v[None, None] for k, v in c.items()})[0, 0]
                                   for c in configurations])
            np.testing.assert_allclose(expected[summary][0, 0], prob @ per_config,
                                       rtol=1e-9, atol=1e-9, err_msg=summary)


def test_full_size_settings_are_the_documented_ones():
    occupancy = am.simulate_occupancy()
    assert occupancy.shape == (200, 5)
    captures = am.simulate_captures()
    assert captures.shape == (300,) and 0 < (captures > 0).sum() <= 100
    assert captures.max() <= 5
    assert am.COAL_MINING_DISASTERS.size == am.COAL_MINING_YEARS.size == 111
    assert np.isnan(am.COAL_MINING_DISASTERS).sum() == 2
    assert np.nansum(am.COAL_MINING_DISASTERS) == 188


def test_the_runner_measures_agreement_and_reports_a_failed_variant_as_a_row():
    from benchmarks import run_applied as ra

    applied, _ = MODELS["occupancy"]
    rng = np.random.default_rng(0)
    shape = (4, 500)

    def run(variant: str, shift: float) -> ra.Run:
        psi, p = 0.6 + 0.01 * rng.normal(size=shape), 0.3 + 0.01 * rng.normal(size=shape)
        return ra.Run(variant, steps="x", draws=500, tune=500, chains=4, seconds=2.0,
                      continuous={"psi": psi + shift, "p": p},
                      summaries={"occupied": 3.0 + rng.normal(size=shape)})

    reference, close, far = run(ra.MARGINAL, 0.0), run(ra.PMD_DEFAULT, 0.0), run(
        ra.PYMC_DEFAULT, 0.01)
    failed = ra.Run(ra.PMD_BEST, error="unsupported: TypeError: no")
    rows = [ra.measure(r, reference) for r in (reference, close, far, failed)]
    assert rows[1].deviation < 4.0 < rows[2].deviation and rows[2].deviation_at == "psi"
    assert np.isnan(rows[0].deviation)  # the reference against itself: not measured
    # ESS per second of the post-tuning draws: half of the 2 s
    assert rows[1].ess_per_s == pytest.approx(rows[1].ess_min / 1.0)
    assert rows[1].problem is None and rows[3].problem == "unsupported"
    assert "MCSE off (psi)" in rows[2].problem  # not converged: far from the reference
    result = ra.ModelResult(applied, [1], [rows])
    table = ra.seeds_table(result)
    assert f"| {ra.PMD_BEST} | unsupported: TypeError: no | 0/1 (seed 1: unsupported) |" \
        in table
    assert table.count("\n") == len(rows) + 1
    assert "FAIL" in ra.bars_over_seeds(result) or "pass" in ra.bars_over_seeds(result)


@pytest.mark.slow
@pytest.mark.parametrize("builder", ["gaussian_mixture", "site_occupancy", "capture_recapture",
                                     "change_point", "small_spike_and_slab", "n_mixture"])
def test_collapsed_nuts_sums_out_exactly_what_the_hand_written_marginal_does(builder):
    """CollapsedNUTS's automatic marginal (full-size models) has the log density and the
    gradient of the benchmark's hand-written marginal model at random points around the
    initial point (the two share their continuous variables and transforms). On the
    N-mixture model the two sum over different ranges (CollapsedNUTS over its window of
    values, the marginal up to ``max(y) + 100``) whose difference is below rounding."""
    from pymc.blocking import DictToArrayBijection

    import pymc_discrete as pmd

    applied = getattr(am, builder)()
    model, marginal = applied.model, applied.marginal
    with model:
        step = pmd.CollapsedNUTS([model[v] for v in applied.discrete])
    nuts = step.methods[0]
    ours = nuts._logp_dlogp_func
    ours.set_extra_values({})
    by_name = {v.name: v for v in marginal.value_vars}
    theirs = marginal.logp_dlogp_function(
        ravel_inputs=True, grad_vars=[marginal.values_to_rvs[by_name[n]] for n in nuts.var_names])
    theirs.set_extra_values({})
    start = model.initial_point()
    q = DictToArrayBijection.map({n: start[n] for n in nuts.var_names}).data
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = q + rng.normal(0.0, 0.3, q.size)
        (lp, grad), (lp_ref, grad_ref) = ours(x), theirs(x)
        np.testing.assert_allclose(lp, lp_ref, rtol=1e-10, atol=1e-8)
        np.testing.assert_allclose(grad, grad_ref, rtol=1e-8, atol=1e-8)


def test_exact_selection_is_the_brute_force_posterior():
    """The exact spike-and-slab means (eigendecomposed, whitened conjugate algebra) equal
    a brute-force computation on 3 predictors: the evidence of every pattern at every
    grid value of sigma from the dense marginal covariance ``sigma^2 I + W S^2 W'`` of y,
    the coefficients' conditional means ``S^2 W' Cov^-1 y``."""
    from scipy.stats import multivariate_normal

    from benchmarks.exact_selection import exact_selection

    X, y, _ = am.diabetes_standardised()
    X, y = X[:25, [1, 2, 8]], y[:25]
    n, p = X.shape
    inclusion, slab = 0.3, 0.5
    grid = np.linspace(0.05, 3.0, 300)
    patterns = am.all_patterns(p)
    exact = exact_selection(X, y, inclusion=inclusion, slab=slab, patterns=patterns,
                            sigma_grid=grid)

    log_w, means = [], []
    for g in patterns:
        W = np.column_stack([np.ones(n), X[:, g > 0]])
        S2 = np.diag(np.r_[1.0, np.full(int(g.sum()), slab**2)])
        for s in grid:
            cov = s**2 * np.eye(n) + W @ S2 @ W.T
            log_w.append(multivariate_normal(np.zeros(n), cov).logpdf(y) - 0.5 * s**2
                         + g.sum() * np.log(inclusion) + (p - g.sum()) * np.log1p(-inclusion))
            w = np.zeros(p + 1)
            w[np.r_[True, g > 0]] = S2 @ W.T @ np.linalg.solve(cov, y)
            means.append(np.r_[w, s, g, g.sum()])
    weight = np.exp(np.array(log_w) - max(log_w))
    expected = weight @ np.array(means) / weight.sum()
    got = np.r_[exact["alpha"], exact["beta"], exact["sigma"], exact["pip"], exact["size"]]
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    assert exact["edge_mass"] < 1e-12
    with pytest.raises(ValueError, match="misses posterior mass"):
        exact_selection(X, y, inclusion=inclusion, slab=slab, patterns=patterns,
                        sigma_grid=np.linspace(0.5, 0.7, 50))


def test_the_runner_measures_agreement_against_exact_means_where_known():
    """With exact means, every run's deviation (the reference's included) is its distance
    from them in units of its own MCSE."""
    from benchmarks import run_applied as ra

    rng = np.random.default_rng(1)
    shape = (4, 500)
    exact = {"psi": 0.6, "occupied": 3.0}

    def run(variant: str, shift: float) -> ra.Run:
        return ra.Run(variant, steps="x", draws=500, tune=500, chains=4, seconds=2.0,
                      continuous={"psi": 0.6 + shift + 0.01 * rng.normal(size=shape)},
                      summaries={"occupied": 3.0 + rng.normal(size=shape)})

    reference, far = run(ra.MARGINAL, 0.0), run(ra.PMD_DEFAULT, 0.01)
    rows = [ra.measure(r, reference, exact) for r in (reference, far)]
    assert rows[0].deviation < 4.0 < rows[1].deviation and rows[1].deviation_at == "psi"
    # 0.01 away with an MCSE of 0.01 / sqrt(2000): about 45 standard errors
    assert rows[1].deviation == pytest.approx(0.01 / (0.01 / np.sqrt(2000)), rel=0.1)
    result = ra.ModelResult(MODELS["occupancy"][0], [1], [rows], exact)
    assert "the exact posterior means" in ra.bars_over_seeds(result)
    assert "| ref |" not in ra.seeds_table(result)
    assert "| ref |" not in ra.per_seed_table(result)


def test_scale_mixture_prior_summed_over_g_is_the_normal_mixture():
    """The hand-written marginal of the small spike-and-slab (``beta ~ NormalMixture(
    w=[0.5, 0.5], mu=0, sigma=[0.1, 1])``) has, at 20 random points, the log density of
    the discrete model summed over the 16 indicator patterns, to rounding."""
    applied, _ = MODELS["small_spike_and_slab"]
    discrete_logp, marginal_logp = _logp_functions("small_spike_and_slab")
    patterns = am.all_patterns(4).astype(np.int64)
    rng = np.random.default_rng(2024)
    gaps = []
    for _ in range(20):
        point = {"beta": rng.normal(0.0, 1.0, 4), "s_log__": rng.normal(0.0, 0.5)}
        joint = logsumexp([discrete_logp({**point, "g": g}) for g in patterns])
        gaps.append(abs(marginal_logp(point) - joint))
    print(f"max |marginal - logsumexp over g| at 20 points: {max(gaps):.2e}")
    assert max(gaps) < 1e-10


def test_small_spike_and_slab_settings_and_recommendation():
    """The documented data (100 rows, 4 standard normal predictors, seed 0), and
    ``recommend`` sums the indicators out (the spike is 0.1 of the slab, at least
    ``SPIKE_CROSSED``)."""
    import pymc_discrete as pmd
    from pymc_discrete.pymc.choosing.recommend import SPIKE_CROSSED

    X, y = am.simulate_spike_and_slab()
    assert X.shape == (100, 4) and y.shape == (100,)
    rng = np.random.default_rng(am.SCALE_DATA_SEED)
    X0 = rng.normal(size=(100, 4))
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_allclose(y, X0 @ [1.0, 0.5, 0.0, 0.0] + rng.normal(size=100))
    applied, _ = MODELS["small_spike_and_slab"]
    model = applied.model
    assert am.SCALE_SPIKE / am.SCALE_SLAB >= SPIKE_CROSSED
    assert pmd.recommend([model["g"]], model=model).step is pmd.CollapsedNUTS


def test_exact_scale_mixture_is_the_brute_force_posterior():
    """The exact means of the small spike-and-slab (whitened conjugate algebra) equal a
    brute-force computation on 2 predictors and 25 rows: the evidence of every pattern
    at every grid value of ``s`` from the dense covariance ``s^2 I + X D X'`` of y, the
    coefficients' conditional means ``D X' Cov^-1 y``."""
    from scipy.stats import multivariate_normal

    X, y = am.simulate_spike_and_slab(n=25, coef=(1.0, 0.0), seed=3)
    n, p = X.shape
    grid = np.linspace(0.05, 4.0, 300)
    exact = am.exact_scale_mixture(X, y, inclusion=0.3, slab=1.0, spike=0.1, s_grid=grid)
    log_w, means = [], []
    for g in am.all_patterns(p):
        D = np.diag(np.where(g > 0, 1.0, 0.1) ** 2)
        for s in grid:
            cov = s**2 * np.eye(n) + X @ D @ X.T
            log_w.append(multivariate_normal(np.zeros(n), cov).logpdf(y) - 0.5 * s**2
                         + g.sum() * np.log(0.3) + (p - g.sum()) * np.log(0.7))
            means.append(np.r_[D @ X.T @ np.linalg.solve(cov, y), s, g])
    weight = np.exp(np.array(log_w) - max(log_w))
    expected = weight @ np.array(means) / weight.sum()
    got = np.r_[exact["beta"], exact["s"], exact["pip"]]
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="misses posterior mass"):
        am.exact_scale_mixture(X, y, s_grid=np.linspace(0.9, 1.0, 50))


def test_the_data_seed_is_the_first_whose_inclusion_probabilities_are_clear():
    """``SCALE_DATA_SEED`` is the first seed at which every exact inclusion probability
    is within 4e-4 of 0 or 1 or at least 0.02 from both (its comment says why)."""

    def clear(seed: int) -> bool:
        pip = am.exact_scale_mixture(*am.simulate_spike_and_slab(seed=seed))["pip"]
        rare = np.minimum(pip, 1.0 - pip)
        return bool(np.all((rare < 4e-4) | (rare >= 0.02)))

    seeds = [s for s in range(am.SCALE_DATA_SEED + 1) if clear(s)]
    assert seeds == [am.SCALE_DATA_SEED]


def test_hmm_forward_algorithm_is_the_joint_summed_over_the_states():
    """The HMM's marginal (the forward algorithm, a ``pytensor.scan`` over the steps, not
    an unrolled loop) has, at T = 6 and 10 random values of mu and sigma, the log density
    of the discrete model summed over the 3^6 state sequences, to rounding; at full size
    its log density is finite at the initial point."""
    from pytensor.graph.traversal import ancestors
    from pytensor.scan.op import Scan

    applied, _ = MODELS["hmm"]
    discrete_logp, marginal_logp = _logp_functions("hmm")
    sequences = [np.array(c, dtype=np.int64) for c in itertools.product(range(3), repeat=6)]
    rng = np.random.default_rng(33)
    gaps = []
    for _ in range(10):
        point = {"mu_ordered__": rng.normal(0.0, 1.0, 3), "sigma_log__": rng.normal(0.0, 0.5)}
        joint = logsumexp([discrete_logp({**point, "z": z}) for z in sequences])
        gaps.append(abs(marginal_logp(point) - joint))
    print(f"max |marginal - logsumexp over z| at 10 points: {max(gaps):.2e}")
    assert max(gaps) < 1e-10
    full = am.gaussian_hmm()
    (forward,) = full.marginal.potentials
    assert any(v.owner is not None and isinstance(v.owner.op, Scan)
               for v in ancestors([forward]))
    assert np.isfinite(full.marginal.compile_logp(mode=MODE)(full.marginal.initial_point()))


def test_hmm_settings_and_recommendation():
    """The documented data (300 steps, 3 states, transitions 0.95 / 0.025, seed 0) and
    ``recommend`` draws the whole chain by forward filtering, backward sampling
    (ChainGibbs) at full size and at T = 6."""
    import pymc_discrete as pmd

    P = am.hmm_transitions()
    np.testing.assert_allclose(P, [[0.95, 0.025, 0.025], [0.025, 0.95, 0.025],
                                   [0.025, 0.025, 0.95]])
    z, y = am.simulate_hmm()
    assert z.shape == y.shape == (300,) and set(np.unique(z)) == {0, 1, 2}
    # sticky: far fewer switches than the 2/3 * 299 of independent states
    assert 0 < (z[1:] != z[:-1]).sum() < 40
    np.testing.assert_array_equal(z, am.simulate_hmm(seed=am.HMM_DATA_SEED)[0])
    for applied in (am.gaussian_hmm(), MODELS["hmm"][0]):
        model = applied.model
        assert pmd.recommend([model["z"]], model=model).step is pmd.ChainGibbs


def test_hmm_smoothing_in_chunks_is_the_same_as_at_once():
    """The Rao-Blackwellised summaries do not depend on how the draws are chunked, and
    the expected occupancies sum to 1 at every draw."""
    _, y = am.simulate_hmm(T=50)
    rng = np.random.default_rng(5)
    mu = np.sort(rng.normal(0.0, 2.0, (7, 3)), axis=1)
    sigma = np.exp(rng.normal(-0.5, 0.3, 7))
    log_P = np.log(am.hmm_transitions())
    occ, sw = am.hmm_smoothing(mu, sigma, y, log_P)
    occ3, sw3 = am.hmm_smoothing(mu, sigma, y, log_P, chunk=3)
    np.testing.assert_allclose(occ3, occ, rtol=1e-12)
    np.testing.assert_allclose(sw3, sw, rtol=1e-12)
    np.testing.assert_allclose(occ.sum(1), 1.0, rtol=1e-12)
    assert np.all((sw >= 0) & (sw <= 49))


def test_n_mixture_settings_truncation_and_starts():
    """The documented data (150 sites x 4 visits, seed 0); the marginal's truncation
    ``K = max(y) + 100`` is generous: summing to ``max(y) + 300`` changes its log density by
    less than rounding at the initial point and at 5 random points around the true values;
    the model's initial point and every chain's start keep each abundance at or above its
    site's largest count (finite log density) and the starts differ between chains."""
    x, N, y = am.simulate_n_mixture()
    assert x.shape == N.shape == (150,) and y.shape == (150, 4)
    assert np.all(y <= N[:, None])
    rng = np.random.default_rng(am.NMIX_DATA_SEED)
    x0 = rng.normal(size=150)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(N, rng.poisson(np.exp(am.NMIX_B0 + am.NMIX_B1 * x0)))
    applied = am.n_mixture()
    wider = am.n_mixture(extra=300)
    logp, logp_wider = (a.marginal.compile_logp(mode=MODE) for a in (applied, wider))
    truth = {"b0": am.NMIX_B0, "b1": am.NMIX_B1,
             "p_logodds__": np.log(am.NMIX_P / (1 - am.NMIX_P))}
    points = [applied.marginal.initial_point()] + [
        {k: np.asarray(v + rng.normal(0.0, 0.3)) for k, v in truth.items()} for _ in range(5)]
    for point in points:
        assert np.isfinite(logp(point))
        np.testing.assert_allclose(logp(point), logp_wider(point), rtol=1e-13, atol=0)
    model = applied.model
    discrete_logp = model.compile_logp(mode=MODE)
    lower = y.max(axis=1)
    starts = applied.start(4, 1)
    for start in [{"N": model.initial_point()["N"]}, *starts]:
        assert np.all(start["N"] >= lower)
        assert np.isfinite(discrete_logp({**model.initial_point(), **start}))
    assert len({s["N"].tobytes() for s in starts}) == 4
    assert applied.numpyro_model is None and "nmixture" in am.BUILDERS
