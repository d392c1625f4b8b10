"""PyMC's progress bar shows each step's mean acceptance, scale and mean jump distance,
and turns red for a chain whose block stopped moving; the running stats behind it are in
the trace."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pymc as pm
import pytest

import pymc_discrete as pmd
from pymc_discrete.pymc.steps.block_step import STALLED_DRAWS_FAILING, SiteBlockStep
from tests.pymc.checks import sample


def test_the_bar_has_the_package_columns_and_fails_on_a_stalled_chain():
    columns, fields = SiteBlockStep._progressbar_config(3)
    assert [c.get_table_column().header for c in columns] == ["Accept", "Scale", "Jump"]
    assert fields == {name: [0.0] * 3 for name in ("pmd_accept", "pmd_scale", "pmd_jump")}
    (update,) = SiteBlockStep._make_progressbar_update_functions()
    stats = {"mean_accept": 0.4, "scaling": 3.5, "mean_jump": 2.25, "accept": 0.1,
             "stalled": STALLED_DRAWS_FAILING - 1}
    assert update(stats) == {"pmd_accept": 0.4, "pmd_scale": 3.5, "pmd_jump": 2.25,
                             "failing": False}
    assert update(stats | {"stalled": STALLED_DRAWS_FAILING})["failing"] is True


@pytest.mark.parametrize("make_step", [lambda x: pmd.ALBP([x]), lambda x: pmd.ARWM([x]),
                                       lambda x: pmd.BlockedGibbs([x])],
                         ids=["albp", "arwm", "blocked-gibbs"])
def test_running_stats_are_the_means_of_the_phase_and_the_stall_count(make_step):
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.4, shape=6)
        pm.Potential("pair", 0.5 * x[0] * x[1])
        step = make_step(x)
    idata = sample(model, step, draws=120, tune=80, discard_tuned_samples=False)
    for group, n in (("warmup_sample_stats", 80), ("sample_stats", 120)):
        stats = idata[group]
        draws = np.arange(1, n + 1)
        np.testing.assert_allclose(stats["mean_accept"].values,
                                   np.cumsum(stats["accept"].values, axis=1) / draws)
        np.testing.assert_allclose(stats["mean_jump"].values,
                                   np.cumsum(stats["jump_distance"].values, axis=1) / draws)
        for jumps, stalled in zip(stats["jump_distance"].values, stats["stalled"].values):
            expected, run = [], 0
            for jump in jumps:
                run = 0 if jump > 0 else run + 1
                expected.append(run)
            np.testing.assert_array_equal(stalled, expected)


def test_samcmc_reports_its_mean_acceptance_to_the_bar():
    with pm.Model() as model:
        pm.Normal("a", 0.0, 1.0, shape=2)
        step = pmd.SAMCMC(n_points=8)
    idata = sample(model, step, draws=50, tune=20, chains=1)
    stats = idata.sample_stats
    np.testing.assert_allclose(stats["mean_accept"].values[0],
                               np.cumsum(stats["accept"].values[0]) / np.arange(1, 51))
    columns, _ = pmd.SAMCMC._progressbar_config(1)
    assert [c.get_table_column().header for c in columns] == ["Accept"]


HEALTHY = """
    import pymc as pm, pymc_discrete as pmd
    with pm.Model():
        mu = pm.Normal("mu", 0, 1)
        x = pm.Bernoulli("x", pm.math.sigmoid(mu), shape=30)
        pm.Potential("c", 0.3 * (x[1:] * x[:-1]).sum())
        pm.sample(step=[pmd.ALBP([x])], draws=200, tune=200, chains=2, cores=1,
                  random_seed=1, compute_convergence_checks=False)
"""
# every flip costs e^-60: the chain cannot leave its start (tune=0: it is not refused)
STALLED = """
    import pymc as pm, pymc_discrete as pmd
    with pm.Model():
        x = pm.Bernoulli("x", 0.5, shape=5)
        pm.Potential("c", -60.0 * x.sum())
        pm.sample(step=[pmd.ALBP([x])], draws=150, tune=0, chains=1, cores=1,
                  random_seed=1, compute_convergence_checks=False)
"""
# the bar's colour for a failing chain: PyMC's "tab:red", as a 24-bit terminal colour
FAILING_RGB = "\x1b[38;2;214;39;40m"


def _run_in_a_terminal(source: str, tmp_path) -> str:
    """Run a script under ``script`` (a pseudo-terminal, as a user's shell is) and return
    what the terminal received."""
    assert shutil.which("script"), "util-linux's `script` is needed to test the live bar"
    path = tmp_path / "run.py"
    path.write_text(textwrap.dedent(source))
    out = tmp_path / "screen.out"
    env = os.environ | {"TERM": "xterm-256color", "COLORTERM": "truecolor", "COLUMNS": "200"}
    subprocess.run(["script", "-q", "-e", "-c", f"{sys.executable} {path}", str(out)],
                   env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=300)
    return out.read_text(errors="replace")


@pytest.mark.slow
def test_a_real_terminal_shows_the_columns_next_to_nuts_and_a_red_bar_when_stalled(tmp_path):
    healthy = _run_in_a_terminal(HEALTHY, tmp_path)
    for header in ("Accept", "Scale", "Jump", "Divergences", "Step size"):
        assert header in healthy, header
    assert FAILING_RGB not in healthy
    stalled = _run_in_a_terminal(STALLED, tmp_path)
    assert FAILING_RGB in stalled
