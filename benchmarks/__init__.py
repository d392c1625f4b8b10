"""Benchmark scripts: measurements of the samplers against PyMC's steps and NumPyro.

The benchmarks are a package. Run every script from the repository root as a module,
``python -m benchmarks.run_core`` (``make bench`` runs them all through
``python -m benchmarks.run_all``; ``make demo`` runs ``python -m benchmarks.demo``). The
scripts import each other as ``from benchmarks.harness import ...`` and the models the
examples define as ``from examples.iris_mixture import ...``; none changes the import
path. Each rewrites its own section of ``benchmarks/RESULTS.md``.
"""
