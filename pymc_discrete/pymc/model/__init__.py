"""Reading the model: what a PyMC model says about a block of discrete sites.

The modules here turn a model into what the steps evaluate: the log density split into
elementwise terms (``terms``; every variable's term derived from its own graph by
``local_terms``, and the alike terms of a model written one variable per site stacked into
one by ``stacking``, both reading the shape of a graph with ``graph_shape``), which sites
each term may depend on (``dependencies``),
the continuous relaxation for gradient proposals (``relaxation``, compiled by
``compiled``), exact local ratios and the block's colouring (``exact``, reading the
structure with ``structure_reading``; gathers and unary pieces made cheap by
``batched_gathers`` and ``unary_tables``), latent counts and their window (``counts``),
the pairing of an indicator with its coefficients (``pairing``), the checks of what a
user hands over (``validation``), what an evaluation costs (``step_cost``), a long
set-up's progress (``setup_progress``) and graphs built without PyTensor's creation
stacks (``creation_traces``).

May import: PyMC, PyTensor, :mod:`pymc_discrete.kernels`, :mod:`pymc_discrete.adaptation`
and :mod:`pymc_discrete.pymc.exceptions`. Never the steps, summing out or choosing.
"""
