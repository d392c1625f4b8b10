"""Sphinx configuration of the pymc-discrete documentation (built by ``make docs``)."""

from __future__ import annotations

import logging
import shutil
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
    "sphinx_gallery.gen_gallery",
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

# The gallery: sphinx-gallery runs every script of examples/ (each one's ``if __name__ ==
# "__main__":`` block included: it runs them as __main__, at the sizes their main()
# defaults to, which are chosen for the docs build) and renders its prose, code, printed
# output and figures into docs/gallery/ (generated, ignored by git). A failing example
# fails the build: all examples run, then the build stops with the list of failures.
# Every build starts from an empty docs/gallery/: the pages of renamed or deleted examples
# go too (they would be in no toctree, which -W makes an error).
shutil.rmtree(Path(__file__).parent / "gallery", ignore_errors=True)
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "gallery",
    "filename_pattern": r"\.py$",  # execute every example, not only plot_*.py
    "ignore_pattern": r"__init__\.py",
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
    # rerun unchanged scripts too (the package may have changed), should the directory
    # above ever be kept between builds
    "run_stale_examples": True,
    "download_all_examples": False,
    "show_signature": False,
    "remove_config_comments": True,
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
}


class _CurrentStdout(logging.StreamHandler):
    """Writes to whatever ``sys.stdout`` is when a record is emitted."""

    @property
    def stream(self):
        return sys.stdout

    @stream.setter
    def stream(self, value):
        pass


# PyMC's messages (the step pymc_discrete chose and why, which step samples which
# variable, the sampling time) go to stderr, which sphinx-gallery does not capture: send
# them to stdout, which it captures, so that they appear on the pages as in a notebook.
_pymc_log = logging.getLogger("pymc")
for _handler in list(_pymc_log.handlers):
    _pymc_log.removeHandler(_handler)
_pymc_log.addHandler(_CurrentStdout())
_pymc_log.setLevel(logging.INFO)
