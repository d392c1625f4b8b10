"""RESULTS.md is composed of sections that each benchmark script rewrites on its own."""

from __future__ import annotations

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
