"""The package's layout holds: small modules, imports that run one way, no circles.

The PyMC layer (``pymc_discrete/pymc/``) is split by concern into folders ranked from the
bottom up (the errors, reading the model, the steps, summing out, choosing); a module may
import from its own folder and the folders below it, never above. The pure layers
(kernels, adaptation) import neither PyMC nor PyTensor. These are read off the source with
``ast``, so a violation fails here before it tangles anything.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
from pymc.step_methods.compound import BlockedStep

import pymc_discrete

PACKAGE = Path(pymc_discrete.__file__).parent
MODULES = sorted(PACKAGE.rglob("*.py"))
MAX_LINES = 500

#: the PyMC layer's folders, bottom first: a module imports from its rank and below
GLUE_RANKS = {"exceptions": 0, "model": 1, "steps": 2, "summing": 3, "choosing": 4}
PURE = ("kernels", "adaptation")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, top_level_only: bool = False) -> set[str]:
    """The modules ``path`` imports (``from a.b import c`` gives ``a.b`` and ``a.b.c``)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _glue_rank(module: str) -> int | None:
    parts = module.split(".")
    if parts[:2] != ["pymc_discrete", "pymc"] or len(parts) < 3:
        return None
    return GLUE_RANKS.get(parts[2])


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_module_is_at_most_500_lines(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {lines} lines"


def test_the_glue_has_exactly_the_ranked_folders():
    glue = PACKAGE / "pymc"
    found = {p.stem if p.is_file() else p.name for p in glue.iterdir()
             if p.name != "__pycache__" and p.name != "__init__.py"}
    assert found == set(GLUE_RANKS)
    for folder in glue.iterdir():
        if folder.is_dir() and folder.name != "__pycache__":
            assert ast.get_docstring(ast.parse((folder / "__init__.py").read_text())), folder


def test_glue_imports_run_down_the_ranks_only():
    wrong = []
    for path in MODULES:
        module = _module_name(path)
        rank = _glue_rank(module)
        if rank is None:
            continue
        for imported in _imports(path):
            other = _glue_rank(imported)
            if other is not None and other > rank:
                wrong.append(f"{module} imports {imported}")
    assert not wrong, wrong


def test_pure_layers_import_no_pymc_or_pytensor():
    wrong = []
    for path in MODULES:
        module = _module_name(path)
        parts = module.split(".")
        if len(parts) < 2 or parts[1] not in PURE:
            continue
        for imported in _imports(path):
            top = imported.split(".")[0]
            if top in ("pymc", "pytensor") or imported.startswith("pymc_discrete.pymc"):
                wrong.append(f"{module} imports {imported}")
    assert not wrong, wrong


def test_no_import_circles():
    """Module-level imports between the package's modules form no cycle."""
    names = {_module_name(p): p for p in MODULES}
    graph = {m: {i for i in _imports(p, top_level_only=True) if i in names and i != m}
             for m, p in names.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module, path):
        state[module] = 1
        for nxt in sorted(graph[module]):
            if state.get(nxt) == 1:
                raise AssertionError(" -> ".join([*path, module, nxt]))
            if nxt not in state:
                visit(nxt, [*path, module])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [])


def test_no_private_step_class():
    """Every step class PyMC may list or a traceback may show has a public name and a
    docstring (PyMC's log lists the parts of a compound step by class)."""
    import importlib

    private = []
    for path in MODULES:
        module = importlib.import_module(_module_name(path))
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, BlockedStep)
                    and obj.__module__ == module.__name__):
                if obj.__qualname__.startswith("_") or not inspect.getdoc(obj):
                    private.append(f"{module.__name__}.{name}")
    assert not private, private
