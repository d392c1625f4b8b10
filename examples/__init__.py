"""Runnable example scripts (``.venv/bin/python examples/<script>.py``), which are also the
pages of the documentation's gallery: ``make docs`` runs each one as ``__main__`` with
sphinx-gallery (``docs/conf.py``) and renders its prose, output and figures.

Each script is standalone: it imports only ``pymc_discrete`` and public libraries, never
``benchmarks``, and leaves the import path alone; nothing runs on import, the work is in
``main()``, whose arguments are the sizes. This file makes the directory a package so
that the benchmarks, run from the repository root as modules (``python -m
benchmarks.run_models``), can import the models the examples define (``from
examples.iris_mixture import mixture_model``) instead of defining them twice.
"""
