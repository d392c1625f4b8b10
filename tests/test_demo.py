"""``make demo`` (``python -m benchmarks.demo``) runs and compares the samplers with PyMC's
default."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.slow
def test_ising_demo_runs_and_compares_the_samplers(tmp_path, capsys):
    from benchmarks import demo

    out = tmp_path / "demo.png"
    rows = demo.main(side=8, out=out, draws=300, gibbs_draws=30)
    assert out.stat().st_size > 0
    table = capsys.readouterr().out
    for label in ("ALBP (barker)", "ALBP (sqrt)", "ALBP (sqrt, 8 compiled steps per draw)",
                  "ARWM", "BlockedGibbs", "BinaryGibbsMetropolis"):
        assert label in table
    assert "ESS/s logp vs BinaryGibbsMetropolis" in table  # the ratios to PyMC's default
    by_name = {r.sampler: r for r in rows}
    assert by_name["BinaryGibbsMetropolis"].time_per_draw_ms > by_name["ALBP (barker)"].time_per_draw_ms
    assert all(np.isfinite(r.ejd) and r.ejd > 0 for r in rows)
