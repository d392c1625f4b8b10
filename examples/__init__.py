"""Runnable example scripts (``.venv/bin/python examples/<script>.py``).

Each script is standalone: it imports only ``pymc_discrete`` and public libraries, never
``benchmarks``, and leaves the import path alone. This file makes the directory a
package so that the benchmarks, run from the repository root as modules (``python -m
benchmarks.run_models``), can import the models the examples define (``from
examples.iris_mixture import mixture_model``) instead of defining them twice.
"""
