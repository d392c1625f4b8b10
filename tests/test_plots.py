"""pmd.plot_tuning and pmd.plot_moves on small sampled models: one row per step of the
package, the right stat under each line, the target and the end of tuning where they
belong, and the compound-step cases where PyMC stacks the stats of several samplers."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402

import pymc_discrete as pmd  # noqa: E402

TUNE, DRAWS, CHAINS = 30, 20, 2


def _sample(step):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.sample(draws=DRAWS, tune=TUNE, chains=CHAINS, cores=1, step=step,
                         random_seed=3, discard_tuned_samples=False, progressbar=False,
                         compute_convergence_checks=False)


@pytest.fixture(scope="module")
def nuts_albp_arwm():
    """NUTS (assigned by PyMC) for mu, ALBP for g, ARWM for h: two steps of ours."""
    with pm.Model():
        g = pm.Bernoulli("g", 0.3, shape=12)
        h = pm.Bernoulli("h", 0.6, shape=8)
        mu = pm.Normal("mu")
        pm.Normal("y", mu + g.sum() - h.sum(), 3.0, observed=1.0)
        return _sample([pmd.ALBP([g]), pmd.ARWM([h])])


@pytest.fixture(scope="module")
def metropolis_gibbs():
    """pm.Metropolis first, BlockedGibbs second: both report accept, accepted, scaling."""
    with pm.Model():
        k = pm.Poisson("k", 3.0)
        g = pm.Bernoulli("g", 0.5, shape=6)
        pm.Potential("chain", 0.5 * (g[1:] * g[:-1]).sum() + 0.1 * pt.minimum(k, 4))
        steps = [pm.Metropolis([k]), pmd.BlockedGibbs([g])]
        return _sample(steps), steps


def _lines(ax, prefix):
    return [line for line in ax.get_lines() if line.get_label().startswith(prefix)]


def _stat(idata, stat, column=None, group="sample_stats"):
    da = idata[group][stat]
    if column is not None:
        da = da.isel({f"{stat}_dim_0": column})
    return da.transpose("chain", "draw").values


def _whole(idata, stat, column=None):
    """(chain, tune + draws): the tuning draws, then the posterior ones."""
    return np.concatenate([_stat(idata, stat, column, "warmup_sample_stats"),
                           _stat(idata, stat, column)], axis=1)


def _target(ax):
    lines = _lines(ax, "target")
    return [line.get_ydata()[0] for line in lines]


def _without_warmup(idata):
    return xr.DataTree.from_dict({
        f"/{name}": node.to_dataset() for name, node in idata.children.items()
        if not name.startswith("warmup")
    })


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_compound_step_with_nuts_gives_one_row_per_step_of_ours(nuts_albp_arwm):
    idata = nuts_albp_arwm
    # what PyMC does: the stats of ALBP and ARWM stacked, NUTS's under its own names
    assert idata["sample_stats"]["scaling"].dims == ("chain", "draw", "scaling_dim_0")
    assert "step_size" in idata["sample_stats"]
    axes = pmd.plot_tuning(idata)
    assert axes.shape == (2, 2)
    # ALBP aims at 0.574, ARWM at 0.234, in sampler order
    assert _target(axes[0, 1]) == [pytest.approx(0.574)]
    assert _target(axes[1, 1]) == [pytest.approx(0.234)]
    for row, column in ((0, 0), (1, 1)):
        lines = _lines(axes[row, 0], "chain")
        assert [line.get_label() for line in lines] == ["chain 0", "chain 1"]
        expected = _whole(idata, "scaling", column)
        for c, line in enumerate(lines):
            np.testing.assert_array_equal(line.get_xdata(), np.arange(TUNE + DRAWS))
            np.testing.assert_array_equal(line.get_ydata(), expected[c])
        assert axes[row, 0].get_yscale() == "log"
    # the two steps are told apart by their scales
    assert not np.array_equal(_whole(idata, "scaling", 0), _whole(idata, "scaling", 1))


def test_end_of_tuning_is_marked_at_the_number_of_tuning_draws(nuts_albp_arwm):
    for plot in (pmd.plot_tuning, pmd.plot_moves):
        axes = plot(nuts_albp_arwm)
        for ax in axes.flat:
            (end,) = _lines(ax, "end of tuning")
            assert list(end.get_xdata()) == [TUNE, TUNE]
            assert ax.get_xlabel() == "draw (tuning draws first)"


def test_acceptance_is_the_trailing_mean_of_the_accept_stat(nuts_albp_arwm):
    idata = nuts_albp_arwm
    axes = pmd.plot_tuning(idata, window=5)
    accept = _whole(idata, "accept", 1)[0]  # ARWM, chain 0
    line = _lines(axes[1, 1], "chain 0")[0]
    expected = [accept[max(0, i - 4):i + 1].mean() for i in range(accept.size)]
    np.testing.assert_allclose(line.get_ydata(), expected)
    assert "mean of the last 5 draws" in axes[1, 1].get_title(loc="left")
    assert axes[0, 0].get_legend() is not None  # the chains
    legend = [t.get_text() for t in axes[0, 1].get_legend().get_texts()]
    assert legend == ["tuning", "end of tuning", "target 0.574"]


def test_moves_plots_jump_distance_and_accept_per_draw(nuts_albp_arwm):
    idata = nuts_albp_arwm
    axes = pmd.plot_moves(idata, window=1)
    assert axes.shape == (2, 2)
    jumps = _whole(idata, "jump_distance", 0)
    for c in range(CHAINS):
        (dots,) = _lines(axes[0, 0], f"_draws of chain {c}")
        np.testing.assert_array_equal(dots.get_ydata(), jumps[c])
        (mean,) = _lines(axes[0, 0], f"chain {c}")
        np.testing.assert_array_equal(mean.get_ydata(), jumps[c])  # a window of one
    (dots,) = _lines(axes[1, 1], "_draws of chain 1")
    np.testing.assert_array_equal(dots.get_ydata(), _whole(idata, "accept", 1)[1])
    assert _target(axes[1, 1]) == [pytest.approx(0.234)]


def test_tuning_plot_without_tuning_draws_says_how_to_keep_them(nuts_albp_arwm):
    idata = _without_warmup(nuts_albp_arwm)
    with pytest.raises(ValueError, match=r"discard_tuned_samples=False"):
        pmd.plot_tuning(idata)
    # the draws after tuning alone: no tuning marked, x from 0
    axes = pmd.plot_moves(idata)
    assert not _lines(axes[0, 0], "end of tuning")
    line = _lines(axes[0, 0], "chain 0")[0]
    np.testing.assert_array_equal(line.get_xdata(), np.arange(DRAWS))
    assert axes[0, 0].get_xlabel() == "draw"
    # and warmup=False leaves the tuning draws out of a trace that holds them
    axes = pmd.plot_moves(nuts_albp_arwm, warmup=False)
    assert len(_lines(axes[1, 0], "chain 1")[0].get_xdata()) == DRAWS


def test_stats_shared_with_another_sampler_need_the_steps(metropolis_gibbs):
    idata, steps = metropolis_gibbs
    # Metropolis and BlockedGibbs both report accept and scaling: stacked, unnamed
    assert idata["sample_stats"].sizes["scaling_dim_0"] == 2
    assert "jump_distance_dim_0" not in idata["sample_stats"].dims
    with pytest.raises(ValueError, match=r"steps=\[\.\.\.\]"):
        pmd.plot_tuning(idata)
    with pytest.raises(ValueError, match=r"steps="):
        pmd.plot_moves(idata)
    axes = pmd.plot_tuning(idata, steps=steps)
    assert axes.shape == (1, 2)
    assert axes[0, 0].get_title(loc="left").startswith("BlockedGibbs: [g]")
    # the second column is BlockedGibbs's: its number of colours, 2 on a chain graph
    expected = _whole(idata, "scaling", 1)
    assert np.all(expected == 2.0) and np.all(_whole(idata, "scaling", 0) == 1.0)
    for c, line in enumerate(_lines(axes[0, 0], "chain")):
        np.testing.assert_array_equal(line.get_ydata(), expected[c])
    # BlockedGibbs tunes nothing: its target_accept is NaN and no target is drawn
    assert np.all(np.isnan(_whole(idata, "target_accept")))
    assert _target(axes[0, 1]) == []
    axes = pmd.plot_moves(idata, steps=steps, window=1)
    line = _lines(axes[0, 1], "chain 0")[0]
    np.testing.assert_array_equal(line.get_ydata(), _whole(idata, "accept", 1)[0])
    assert _target(axes[0, 1]) == []


def test_steps_that_do_not_match_the_trace_are_refused(metropolis_gibbs, nuts_albp_arwm):
    idata, steps = metropolis_gibbs
    with pytest.raises(ValueError, match=r"lists 0"):
        pmd.plot_tuning(idata, steps=steps[:1])
    with pytest.raises(ValueError, match=r"no pymc_discrete step"):
        pmd.plot_tuning(xr.DataTree.from_dict({
            "/sample_stats": nuts_albp_arwm["sample_stats"].to_dataset()[["step_size"]]}))


def test_stats_named_per_sampler_need_no_steps(nuts_albp_arwm):
    """A trace naming its stats sampler_<i>__<stat> (PyMC's ZarrTrace) says who is who."""
    idata = nuts_albp_arwm

    def prefixed(group):
        ds = idata[group].to_dataset()
        out = {"sampler_2__step_size": ds["step_size"]}
        for stat in ("accept", "scaling", "jump_distance", "target_accept"):
            for i in range(2):
                out[f"sampler_{i}__{stat}"] = ds[stat].isel({f"{stat}_dim_0": i}, drop=True)
        return xr.Dataset(out)

    renamed = xr.DataTree.from_dict({
        "/sample_stats": prefixed("sample_stats"),
        "/warmup_sample_stats": prefixed("warmup_sample_stats"),
    })
    axes = pmd.plot_tuning(renamed)
    assert axes.shape == (2, 2)
    assert axes[1, 0].get_title(loc="left").startswith("sampler 1")
    assert _target(axes[1, 1]) == [pytest.approx(0.234)]
    line = _lines(axes[1, 0], "chain 1")[0]
    np.testing.assert_array_equal(line.get_ydata(), _whole(idata, "scaling", 1)[1])


def test_axes_and_figure_size(nuts_albp_arwm, monkeypatch):
    monkeypatch.setattr(plt, "show", lambda *a, **k: pytest.fail("plt.show was called"))
    axes = pmd.plot_moves(nuts_albp_arwm, figsize=(7.0, 5.0))
    assert isinstance(axes, np.ndarray)
    assert tuple(axes[0, 0].figure.get_size_inches()) == (7.0, 5.0)
    _, own = plt.subplots(2, 2)
    assert pmd.plot_tuning(nuts_albp_arwm, ax=own)[1, 1] is own[1, 1]
    _, too_few = plt.subplots(1, 2)
    with pytest.raises(ValueError, match=r"\(2, 2\)"):
        pmd.plot_tuning(nuts_albp_arwm, ax=too_few)
