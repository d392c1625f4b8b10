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
