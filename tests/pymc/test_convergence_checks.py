"""The convergence checks made while registered give PyMC's warnings on a posterior of
many variables (pymc_discrete/pymc/choosing/convergence_checks.py)."""

import arviz_base as azb
import numpy as np
import pymc as pm
import pytest
from pymc.sampling import mcmc
from pymc.stats.convergence import run_convergence_checks

import pymc_discrete as pmd
from pymc_discrete.pymc.choosing.convergence_checks import MANY_VARIABLES, convergence_checks

N_SITES = MANY_VARIABLES + 10


def _model() -> pm.Model:
    """Scalar sites written one per variable, a transformed scale, a vector mean and a
    Deterministic (in the posterior, not checked)."""
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma")
        pm.Normal("mu", shape=3)
        for i in range(N_SITES):
            pm.Bernoulli(f"z_{i}", 0.5)
        pm.Deterministic("scale", 2 * sigma)
    return model


def _idata(chains: int, draws: int, stuck: bool = False, apart: bool = False,
           divergent: bool = False, seed: int = 0):
    """A posterior of the model's variables: independent draws, or with one site stuck
    at a value (a NaN r-hat), or with the chains of ``mu`` apart (r-hat above 1.01)."""
    rng = np.random.default_rng(seed)
    post = {"sigma": np.abs(rng.normal(size=(chains, draws))),
            "mu": rng.normal(size=(chains, draws, 3)),
            "scale": rng.normal(size=(chains, draws))}
    for i in range(N_SITES):
        post[f"z_{i}"] = (rng.random((chains, draws)) < 0.5).astype(np.int64)
    if stuck:
        post["z_0"][:] = 1
    if apart:
        post["mu"] += np.arange(chains)[:, None, None]
    diverging = np.zeros((chains, draws), dtype=bool)
    diverging[0, :3] = divergent
    depth = np.zeros((chains, draws), dtype=bool)
    return azb.from_dict({"posterior": post, "sample_stats": {
        "diverging": diverging, "reached_max_treedepth": depth}})


CASES = {
    "four chains, mixed": dict(chains=4, draws=300),
    "two chains": dict(chains=2, draws=300),
    "one chain": dict(chains=1, draws=300),
    "too few draws": dict(chains=4, draws=50),
    "chains apart": dict(chains=4, draws=300, apart=True),
    "a stuck site": dict(chains=4, draws=300, stuck=True),
    "divergences": dict(chains=4, draws=300, divergent=True),
    "correlated draws": dict(chains=2, draws=120),
}


@pytest.mark.parametrize("case", CASES)
def test_the_warnings_are_pymcs(case):
    model = _model()
    idata = _idata(**CASES[case])
    if case == "correlated draws":  # few effective draws: the ESS warning
        for name in list(idata.posterior.data_vars):
            values = idata.posterior[name].values
            idata.posterior[name] = idata.posterior[name].copy(
                data=np.repeat(values[:, ::6], 6, axis=1)[:, :values.shape[1]])
    _assert_the_same_warnings(convergence_checks(idata, model),
                              run_convergence_checks(idata, model))


def _assert_the_same_warnings(ours: list, theirs: list) -> None:
    """The same warnings, in order, with the same values attached (ESS, r-hat)."""
    assert [(w.kind, w.message, w.level) for w in ours] == \
        [(w.kind, w.message, w.level) for w in theirs]
    for mine, pymcs in zip(ours, theirs):
        if pymcs.extra is None:
            assert mine.extra is None
            continue
        assert list(mine.extra.data_vars) == list(pymcs.extra.data_vars)
        for name in pymcs.extra.data_vars:
            np.testing.assert_array_equal(mine.extra[name].values, pymcs.extra[name].values)


def test_the_cases_give_each_of_pymcs_warnings():
    """So that the comparison above compares every warning PyMC gives."""
    model = _model()
    messages = {case: " ".join(w.message for w in convergence_checks(_idata(**kw), model))
                for case, kw in CASES.items() if case != "correlated draws"}
    assert "rhat statistic is larger" in messages["chains apart"]
    assert "There were 3 divergences" in messages["divergences"]
    assert "too small to check convergence" in messages["too few draws"]
    assert "Only one chain" in messages["one chain"]
    assert "at least 4 chains" in messages["two chains"]
    assert "rhat" not in messages["a stuck site"]  # its NaN r-hat is passed over, as PyMC does


def test_register_wraps_pymcs_checks_and_unregister_restores_them():
    before = mcmc.run_convergence_checks
    pmd.register()
    try:
        assert mcmc.run_convergence_checks is not before
        assert mcmc.run_convergence_checks.__wrapped__ is before
    finally:
        pmd.unregister()
    assert mcmc.run_convergence_checks is before


def test_a_small_posterior_is_checked_by_pymcs_own_function():
    calls = []

    def pymcs(idata, model):
        calls.append(1)
        return []

    with pm.Model() as model:
        pm.Normal("x")
    idata = azb.from_dict({"posterior": {"x": np.zeros((4, 200))}})
    assert convergence_checks(idata, model, pymcs) == [] and calls == [1]
    convergence_checks(_idata(4, 300), _model(), pymcs)  # many variables: read once
    assert calls == [1]


def _vector_idata(chains: int, draws: int, apart: bool = False, seed: int = 1):
    """A posterior of a few variables, one of them a discrete vector whose sites repeat
    series: sites stuck at 1 or at 0 (an occupancy model's detected sites), two sites
    equal at every draw, and Categorical sites of a matrix variable."""
    rng = np.random.default_rng(seed)
    z = (rng.random((chains, draws, 30)) < 0.4).astype(np.int64)
    z[:, :, :8], z[:, :, 8:11] = 1, 0
    z[:, :, 20] = z[:, :, 21]
    if apart:  # one site's chains apart: an r-hat above 1.01 on the discrete variable
        z[:, :, 25] = (rng.random((chains, draws)) < np.linspace(0.1, 0.9, chains)[:, None])
    labels = rng.integers(0, 3, size=(chains, draws, 4, 5))
    labels[:, :, 0] = 2
    post = {"psi": rng.random((chains, draws)), "z": z, "labels": labels,
            "flags": rng.random((chains, draws, 6)) < 0.5}
    stats = {"diverging": np.zeros((chains, draws), dtype=bool),
             "reached_max_treedepth": np.zeros((chains, draws), dtype=bool)}
    return azb.from_dict({"posterior": post, "sample_stats": stats},
                         dims={"z": ["site"]}, coords={"site": np.arange(100, 130)})


def _vector_model() -> pm.Model:
    with pm.Model(coords={"site": np.arange(100, 130)}) as model:
        pm.Uniform("psi")
        pm.Bernoulli("z", 0.5, dims="site")
        pm.Categorical("labels", np.ones(3) / 3, shape=(4, 5))
        pm.Bernoulli("flags", 0.5, shape=6)
    return model


@pytest.mark.parametrize("chunk", [1024, 7])
def test_discrete_variables_give_arvizs_values_to_the_bit(chunk, monkeypatch):
    """Each distinct series of a discrete variable's sites diagnosed once, all at once,
    the result copied to the sites that repeat it: ArviZ's values, dims, coordinates and
    order (the series read and diagnosed in one chunk, and in chunks of 7 sites)."""
    import arviz_stats

    from pymc_discrete.pymc.choosing import convergence_checks as checks
    from pymc_discrete.pymc.choosing.convergence_checks import _diagnostics, _distinct_series

    monkeypatch.setattr(checks, "_SERIES_CHUNK", chunk)
    monkeypatch.setattr(checks, "_DIAGNOSED_VALUES", chunk * 4 * 200)  # chunk series a batch

    posterior = _vector_idata(4, 200).posterior.to_dataset()
    names = ["psi", "z", "labels", "flags"]
    assert len(_distinct_series(posterior, "z")[0]) < 30  # repeats found
    assert len(_distinct_series(posterior, "labels")[0]) < 20
    assert len(_distinct_series(posterior, "flags")[0]) == 6  # none: still all at once
    assert _distinct_series(posterior, "psi") is None
    ess, rhat = _diagnostics(posterior, names)
    for ours, theirs in ((ess, arviz_stats.ess(posterior[names])),
                         (rhat, arviz_stats.rhat(posterior[names]))):
        assert list(ours.data_vars) == names
        for name in names:
            assert ours[name].dims == theirs[name].dims
            np.testing.assert_array_equal(ours[name].values, theirs[name].values)
            for dim in ours[name].dims:
                np.testing.assert_array_equal(ours[dim].values, theirs[dim].values)
    assert np.isnan(rhat["z"].values[:11]).all()  # stuck sites: ArviZ's NaN, passed over


def test_a_discrete_variable_of_no_elements_is_left_to_arviz():
    from pymc_discrete.pymc.choosing.convergence_checks import _distinct_series

    empty = azb.from_dict({"posterior": {"z": np.zeros((4, 200, 0), dtype=np.int64)}})
    assert _distinct_series(empty.posterior.to_dataset(), "z") is None


def test_a_discrete_variable_too_large_to_copy_is_checked_element_by_element(monkeypatch):
    from pymc_discrete.pymc.choosing import convergence_checks as checks

    posterior = _vector_idata(4, 200).posterior.to_dataset()
    monkeypatch.setattr(checks, "REPEATS_MAX_BYTES", posterior["z"].nbytes - 1)
    assert checks._distinct_series(posterior, "z") is None
    assert checks._distinct_series(posterior, "labels") is not None  # smaller


@pytest.mark.parametrize("apart", [False, True])
def test_a_small_posterior_with_a_discrete_vector_gives_pymcs_warnings(apart):
    calls = []

    def pymcs(idata, model):
        calls.append(1)
        return run_convergence_checks(idata, model)

    model, idata = _vector_model(), _vector_idata(4, 200, apart=apart)
    ours, theirs = convergence_checks(idata, model, pymcs), run_convergence_checks(idata, model)
    assert calls == []  # read by the package: its repeated series computed once
    _assert_the_same_warnings(ours, theirs)
    assert any("rhat statistic" in w.message for w in ours) == apart
