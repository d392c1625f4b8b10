"""RESULTS.md is composed of sections that each benchmark script rewrites on its own."""

from __future__ import annotations

from pathlib import Path

from benchmarks.harness import HEADER, write_section


def test_write_section_replaces_its_own_section_and_keeps_the_others(tmp_path):
    path = tmp_path / "RESULTS.md"
    write_section("core", "## Core\n\nold numbers", path)
    write_section("exact", "## Exact\n\nexact numbers", path)
    write_section("core", "## Core\n\nnew numbers", path)
    text = path.read_text()
    assert text.startswith(HEADER)
    assert "new numbers" in text and "old numbers" not in text
    assert "exact numbers" in text
    assert text.index("## Core") < text.index("## Exact")
    assert text.count("<!-- begin:core -->") == 1


def test_median_site_ess_skips_constant_sites_and_caps_the_number_of_sites():
    import arviz as az
    import numpy as np

    from benchmarks.harness import MAX_ESS_SITES, median_site_ess

    rng = np.random.default_rng(0)
    flat = (rng.random((2, 200, 50)) < 0.4).astype(float)
    flat[..., :10] = 1.0  # constant sites: no ESS
    expected = np.median(np.asarray(az.ess(flat[..., 10:], method="bulk")))
    assert median_site_ess(flat) == expected
    many = (rng.random((2, 200, MAX_ESS_SITES + 300)) < 0.4).astype(float)
    full = np.median(np.asarray(az.ess(many, method="bulk")))
    # independent draws: every site's ESS is near 400; the subsample's median is close
    assert abs(median_site_ess(many) - full) < 0.05 * full
    assert np.isnan(median_site_ess(np.ones((2, 10, 3))))


def test_mixed_measurement_counts_changes_times_and_evaluations():
    import arviz as az
    import numpy as np

    from benchmarks.harness import format_mixed_table, mixed_measurement, smallest_ess

    rng = np.random.default_rng(1)
    discrete = np.zeros((2, 100, 3), dtype=np.int64)
    discrete[:, 1::2, 0] = 1  # site 0 flips at every draw, the others never change
    smooth = np.cumsum(rng.normal(size=(2, 100)), axis=1)  # autocorrelated: small ESS
    iid = rng.normal(size=(2, 100, 4))
    assert smallest_ess({"a": iid, "b": smooth}) == float(az.ess(smooth, method="bulk"))
    row = mixed_measurement("step", discrete, {"a": iid, "b": smooth}, seconds=4.0, tune=100,
                            accept=0.5, scale=2.0, nuts_steps=7.0, discrete_evals=3.0)
    assert row.draws == 200 and row.time_per_draw_ms == 10.0  # 4 s over 400 iterations
    assert row.ejd == 1.0  # one site changes between consecutive draws
    assert row.ess_min_per_s == row.ess_min / 2.0  # 200 post-tuning draws take 2 s
    assert np.isclose(row.ess_min_per_1k_evals, 1e3 * row.ess_min / (10.0 * 200))
    base = mixed_measurement("base", discrete, {"a": iid, "b": smooth}, seconds=8.0,
                             tune=100, accept=float("nan"), scale=float("nan"),
                             nuts_steps=7.0, discrete_evals=float("nan"))
    table = format_mixed_table([row, base], baseline="base").splitlines()
    assert table[2].endswith("| 2.0x | 2.0x |")  # half the time, same ESS
    assert "| - | - |" in table[3]  # unknown evaluations: no ESS per evaluation


def test_jump_distance_counts_changed_sites_not_value_differences():
    import numpy as np

    from benchmarks.harness import jump_distance

    flat = np.array([[[0, 0], [3, 0], [3, 2]]], dtype=float)  # 1 chain, 3 draws, 2 sites
    assert jump_distance(flat) == 1.0  # one site changes at each step, by 3 then by 2


def test_ratios_over_seeds_are_medians_of_converged_seeds_with_their_spread():
    import numpy as np

    from benchmarks.harness import (
        SeedOutcome,
        counted_ratios,
        ratio_number,
        ratio_over_seeds,
        spread_over_seeds,
    )

    ok = [SeedOutcome(v) for v in (40.0, 36.0, 50.0)]
    base = [SeedOutcome(v) for v in (2.0, 2.0, 2.0)]
    assert ratio_over_seeds(ok, base) == "20x (18-25)"  # the median, then min-max
    assert spread_over_seeds([2577.2, 2400.0, 2650.0], ".0f") == "2577 (2400-2650)"
    assert spread_over_seeds([float("nan"), 3.0], ".1f") == "3.0 (1 seed)"
    assert spread_over_seeds([float("nan")]) == "-"
    assert [ratio_number(x) for x in (304.3, 4.62, 1.0, 0.76, 0.0042)] == [
        "304", "4.6", "1.0", "0.76", "0.0042"]

    # PyMC's Metropolis stuck in seed 1: that seed is no speed-up (304x), only a count
    ours = [SeedOutcome(v) for v in (2577.0, 1.0, 1.25, 0.8)]
    pymc = [SeedOutcome(8.5, "r-hat 1.532"), SeedOutcome(1.0), SeedOutcome(1.0),
            SeedOutcome(1.0)]
    assert counted_ratios(ours, pymc) == [1.0, 1.25, 0.8]
    assert ratio_over_seeds(ours, pymc) == \
        "1.0x (0.8-1.2), 3/4 seeds; baseline did not converge in 1"
    # a run of ours that did not converge is shown as such, also when nothing is left
    stuck = [SeedOutcome(9.0, "r-hat > 10")] * 3
    assert ratio_over_seeds(stuck, base) == "n/c, 0/3 seeds; this run did not converge in 3"
    both = [SeedOutcome(5.0, "1.0x off"), SeedOutcome(4.0), SeedOutcome(float("nan"),
                                                                        "failed")]
    assert ratio_over_seeds(both, [SeedOutcome(1.0, "r-hat 1.1")] + base[:2]) == (
        "2.0x, 1/3 seeds; baseline did not converge in 1; this run did not converge in 1; "
        "not measured in 1")
    assert ratio_over_seeds([SeedOutcome(3.0)], [SeedOutcome(1.0)]) == "3.0x, 1 seed"
    assert np.isnan(SeedOutcome(float("nan")).value)


def test_applied_tables_report_medians_spreads_and_unconverged_baselines():
    """run_applied's tables over seeds, from fabricated rows (no sampling)."""
    from types import SimpleNamespace

    from benchmarks import run_applied as ra

    applied = SimpleNamespace(title="Change point", source="made up",
                              headline=["switchpoint"])

    def row(variant, ess_per_s, summary_per_s, rhat=1.001, deviation=1.0, seconds=2.0,
            steps="NUTS: a"):
        r = ra.Row(ra.Run(variant, steps=steps, draws=100, tune=100, chains=4,
                          seconds=seconds),
                   ess_min=100.0, ess_min_at="a", ess_per_s=ess_per_s,
                   rhat_continuous=rhat, rhat_summaries=rhat,
                   means={"switchpoint": 1890.8}, deviation=deviation, deviation_at="a",
                   ess_summary=50.0, ess_summary_per_s=summary_per_s)
        r.problem = ra.convergence_problem(r)
        return r

    ours = "AutoStep -> BlockedGibbs: switchpoint; NUTS: early_rate, late_rate"
    seeds = [1, 2, 3]
    rows = [
        [row(ra.MARGINAL, 7000.0, 900.0, deviation=float("nan")),
         row(ra.PYMC_DEFAULT, 8.5, 1.0, rhat=1.532, deviation=3.5),  # stuck: not converged
         row(ra.PMD_DEFAULT, 2577.0, 40.0, steps=ours),
         ra.Row(ra.Run(ra.NUMPYRO, error="failed: boom"), problem="failed")],
        [row(ra.MARGINAL, 7400.0, 900.0, deviation=float("nan")),
         row(ra.PYMC_DEFAULT, 2000.0, 10.0),
         row(ra.PMD_DEFAULT, 2500.0, 46.0, steps=ours),
         ra.Row(ra.Run(ra.NUMPYRO, error="failed: boom"), problem="failed")],
        [row(ra.MARGINAL, 7200.0, 900.0, deviation=float("nan")),
         row(ra.PYMC_DEFAULT, 2500.0, 10.0),
         row(ra.PMD_DEFAULT, 1900.0, 50.0, rhat=1.02, steps=ours),  # ours did not converge
         ra.Row(ra.Run(ra.NUMPYRO, error="failed: boom"), problem="failed")],
    ]
    assert rows[0][1].problem == "r-hat 1.532"
    result = ra.ModelResult(applied, seeds, rows)
    table = ra.seeds_table(result)
    assert len({line.count("|") for line in table.splitlines()}) == 1  # failed rows too
    line = next(x for x in table.splitlines() if x.startswith(f"| {ra.PMD_DEFAULT} |"))
    cells = [c.strip() for c in line.split("|")[1:-1]]
    assert cells[2] == "2/3 (seed 3: r-hat 1.020)"
    assert cells[4] == "2500.0 (1900.0-2577.0)"  # min ESS/s: median (min-max)
    # vs PyMC: seed 1's baseline stuck, seed 3 ours: one seed left, 2500 / 2000
    assert cells[6] == ("1.2x, 1/3 seeds; baseline did not converge in 1; this run did not "
                        "converge in 1")
    assert cells[7] == ("4.6x, 1/3 seeds; baseline did not converge in 1; this run did not "
                        "converge in 1")
    assert cells[8] == "0.35x (0.34-0.37), 2/3 seeds; this run did not converge in 1"
    assert cells[9] == "1.020 / 1.020"  # the worst over the seeds
    pymc = next(x for x in table.splitlines() if x.startswith(f"| {ra.PYMC_DEFAULT} |"))
    assert "1/3 (seed 1: r-hat 1.532; 3.5 MCSE off" not in pymc  # 3.5 < 4: agreement ok
    assert "2/3 (seed 1: r-hat 1.532)" in pymc
    numpyro = next(x for x in table.splitlines() if x.startswith(f"| {ra.NUMPYRO} |"))
    assert "| failed: boom | 0/3 (seeds 1, 2, 3: failed) |" in numpyro
    summary = ra.summary_table([result]).splitlines()[2]
    assert "| BlockedGibbs + NUTS | switchpoint |" in summary
    assert "| 2/3 / 2/3 / 3/3 |" in summary
    bars = ra.bars_over_seeds(result)
    assert "r-hat <= 1.01: FAIL in 2/3 seeds (worst 1.020)" in bars
    assert "min ESS/s >= 2x PyMC default: FAIL (median 1.2x, 1/3 seeds;" in bars
    per_seed = ra.per_seed_table(result)
    assert len({line.count("|") for line in per_seed.splitlines()}) == 1
    assert len({line.count("|") for line in ra.summary_table([result]).splitlines()}) == 1
    assert per_seed.count("\n") == 2 + 4 * 3 - 1  # every run of every seed
    assert "| no: r-hat 1.532 |" in per_seed


def test_output_goes_to_the_folder_the_environment_names(tmp_path, monkeypatch):
    from benchmarks import harness

    monkeypatch.setenv(harness.OUTPUT, str(tmp_path / "out"))
    assert harness.results_path() == tmp_path / "out" / "RESULTS.md"
    harness.write_section("smoke", "## Smoke\n\nnumbers")
    assert "## Smoke" in (tmp_path / "out" / "RESULTS.md").read_text()
    fig, _ = harness.subplots()
    assert harness.save_figure(fig, "plot.png").exists()
    monkeypatch.delenv(harness.OUTPUT)
    here = Path(harness.__file__).resolve().parent
    monkeypatch.setattr(harness, "_run_size", "full")  # restored after the test
    assert harness.size_name() == "full"
    assert harness.results_path() == here / "RESULTS.md"
    # a short run never writes over the committed full-size results
    assert harness.size_name(quick=True) == "quick"
    assert harness.results_path() == here / "out" / "quick" / "RESULTS.md"
    assert harness.size_name(smoke=True) == "smoke"
    assert harness.results_path() == here / "out" / "smoke" / "RESULTS.md"


def test_tables_provenance_and_sizes():
    import pytest

    from benchmarks.harness import cell, markdown_table, provenance, size_name

    assert markdown_table(["a", "b"], [[1, "x"], [2.5, "-"]]).splitlines() == [
        "| a | b |", "|---|---|", "| 1 | x |", "| 2.5 | - |"]
    with pytest.raises(ValueError, match="2 columns"):
        markdown_table(["a", "b"], [[1]])
    assert [cell(v, ".1f") for v in (1.26, float("nan"), None)] == ["1.3", "-", "-"]
    assert [size_name(), size_name(quick=True), size_name(True, True)] == [
        "full", "quick", "smoke"]
    text = provenance("run_core", "quick", minutes=2.0, versions="; extra")
    assert text.startswith("Produced by `python -m benchmarks.run_core --quick` on ")
    assert "(the run took 2.0 min)." in text and text.endswith("; extra.")


def test_profile_time_goes_to_the_owner_of_the_file_or_else_of_the_callers():
    """run_scaling's attribution on a made-up profile: a builtin called from the kernel
    and from an unowned helper that PyMC calls splits by the time under each caller."""
    import pytest

    from benchmarks import run_scaling as rs

    folder = {owner: path for path, owner in rs._owner_folders()}
    kernel = (folder[rs.KERNEL] + "albp.py", 1, "step")
    loop = (folder[rs.PYMC] + "sampling/mcmc.py", 1, "loop")
    helper = ("/usr/lib/python3.12/functools.py", 1, "wrapper")  # no owner
    builtin = ("~", 0, "<built-in method numpy.sum>")
    stats = {  # (calls, calls, own time, cumulative time, {caller: (.., .., own time, ..)})
        loop: (1, 1, 0.1, 1.2, {}),
        kernel: (2, 2, 0.2, 0.6, {loop: (2, 2, 0.2, 0.6)}),
        helper: (1, 1, 0.1, 0.3, {loop: (1, 1, 0.1, 0.3)}),
        builtin: (3, 3, 0.6, 0.6, {kernel: (2, 2, 0.4, 0.4), helper: (1, 1, 0.2, 0.2)}),
    }
    parts = rs.attribute(rs.Profile(stats, iterations=2, wall=1.2))
    assert parts[rs.KERNEL] == pytest.approx((0.2 + 0.4) / 2)
    assert parts[rs.PYMC] == pytest.approx((0.1 + 0.1 + 0.2) / 2)
    assert parts[rs.STEP] == parts[rs.MODEL] == parts["other"] == 0.0
    assert rs.top_functions(rs.Profile(stats, 2, 1.2), 1)[0][1] == pytest.approx(0.3)
