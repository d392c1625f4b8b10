"""Sphinx configuration of the pymc-discrete documentation (built by ``make docs``)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pymc_discrete  # noqa: E402

project = "pymc-discrete"
author = "pymc-discrete developers"
copyright = "2026, pymc-discrete developers"
release = pymc_discrete.__version__

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

autosummary_generate = False
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# offline builds: no intersphinx inventories are fetched
intersphinx_mapping: dict = {}

html_theme = "pydata_sphinx_theme"
html_title = "pymc-discrete"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
