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
