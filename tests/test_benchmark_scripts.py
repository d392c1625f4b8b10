"""Every benchmark script of ``benchmarks/run_all.py`` runs end to end at its smallest size
(``main(smoke=True)``), so that a change to the package cannot break one unseen. The
output goes to a temporary folder (``PYMC_DISCRETE_BENCH_OUT``), never to the committed
``benchmarks/RESULTS.md`` and plots, and NumPyro is hidden as in ``make test`` (which does
not install it): the scripts must leave its rows out and run the rest."""

from __future__ import annotations

import ast
import hashlib
import sys
from pathlib import Path

import pytest

from benchmarks import run_all
from benchmarks.harness import OUTPUT

BENCHMARKS = Path(run_all.__file__).resolve().parent


def _digests() -> dict[str, str]:
    """The committed results and plots, by content."""
    files = [BENCHMARKS / "RESULTS.md", *sorted(BENCHMARKS.glob("*.png"))]
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files if f.exists()}


def _check_smoke_output(name: str, tmp_path: Path, committed: dict[str, str]) -> str:
    """The committed results are untouched, and every section the run wrote to the
    temporary RESULTS.md is whole and names the smoke command. Returns that text."""
    assert _digests() == committed
    text = (tmp_path / "RESULTS.md").read_text()
    sections = text.count("<!-- begin:")
    assert sections >= 1 and sections == text.count("<!-- end:")
    assert text.count(f"Produced by `python -m benchmarks.{name} --smoke") == sections
    return text


#: run_phrasings' smoke run is the one of test_phrasings_large_flag_adds_the_large_lattice:
#: ``--large`` runs every lattice of the smoke size and adds one, and that test makes the
#: same checks of its output
@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in run_all.SCRIPTS if n != "run_phrasings"])
def test_script_runs_at_its_smoke_size(name, tmp_path, monkeypatch):
    monkeypatch.setenv(OUTPUT, str(tmp_path))
    monkeypatch.setitem(sys.modules, "numpyro", None)  # "import numpyro" fails, as without it
    committed = _digests()
    run_all.run_script(name, "smoke")
    _check_smoke_output(name, tmp_path, committed)


def test_run_all_lists_every_script():
    scripts = {p.stem for p in BENCHMARKS.glob("run_*.py")} - {"run_all"}
    assert sorted(scripts) == sorted(run_all.SCRIPTS)


def _offences(path: Path) -> list[str]:
    """Where ``path`` reads or sets an attribute starting with one underscore on anything
    but itself and the benchmarks' own modules, or assigns an attribute of an imported
    module or class (monkey-patching)."""
    tree = ast.parse(path.read_text())
    own, imported = {"self", "cls"}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                target = own if (node.module or "").startswith("benchmarks") else imported
                target.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                target = own if alias.name.startswith("benchmarks") else imported
                target.add((alias.asname or alias.name).split(".")[0])
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                and not node.attr.startswith("__"):
            if not (isinstance(node.value, ast.Name) and node.value.id in own):
                out.append(f"{path.name}:{node.lineno}: .{node.attr}")
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) \
                    and t.value.id in imported:
                out.append(f"{path.name}:{t.lineno}: {t.value.id}.{t.attr} = ...")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "setattr":
            out.append(f"{path.name}:{node.lineno}: setattr(...)")
    return out


def test_scripts_use_the_public_api_only():
    """No private attribute of the package (or of PyMC, PyTensor) is read, and nothing is
    patched: a script times stages with a profiler, not by wrapping methods.
    ``draw_digests.py`` is kept as it is (it reads none either)."""
    offences = [o for p in sorted(BENCHMARKS.glob("*.py")) for o in _offences(p)]
    assert offences == []


@pytest.mark.slow
def test_phrasings_large_flag_adds_the_large_lattice(tmp_path, monkeypatch):
    """``run_phrasings --large`` (which run_all.py never passes) adds the large Ising
    lattice: its two baselines and its phrasings, under the command that asked for it.
    It is also run_phrasings' smoke run: the smoke size's lattices, checked as every
    script's smoke output is."""
    from benchmarks import run_phrasings

    monkeypatch.setenv(OUTPUT, str(tmp_path))
    monkeypatch.setitem(sys.modules, "numpyro", None)
    committed = _digests()
    run_phrasings.main(smoke=True, large=True)
    text = _check_smoke_output("run_phrasings", tmp_path, committed)
    small = run_phrasings.BUDGETS["smoke"].side
    for lattice in (run_phrasings.ISING, run_phrasings.POTTS):
        assert f"| {lattice.name}, {small} x {small} |" in text
    assert "Produced by `python -m benchmarks.run_phrasings --smoke --large`" in text
    side = run_phrasings.BUDGETS["smoke"].large_side
    assert text.count(f"| Ising, {side} x {side} |") == 2 + len(run_phrasings.LARGE_ISING.phrasings)
    assert "| NumPyro DiscreteGibbs | - | not installed |" in text
