"""Summing a block of discrete sites out for NUTS, and drawing it back exactly.

``collapsible`` says whether a block can be summed out and over which values,
``marginal`` builds the summed-out log density of a block of independent sites
(``distinct_terms`` evaluates each distinct term once and sums alike sites once, from the
records ``alike_sites`` reads off the graph; ``broadcast_states`` lays the states along
a broadcast axis where they only select parameters, as a hand-written mixture does),
``chain_sum`` that of a chain (the forward algorithm), ``count_sum`` that of latent counts
over a checked window (and their exact draw), and ``collapsed_nuts`` holds the step,
:class:`~pymc_discrete.pymc.summing.collapsed_nuts.CollapsedNUTS`: NUTS on the marginal,
then the block drawn from its conditional. ``summed_block`` reads a block that sums out
and builds its sums, ``marginal_model`` turns them into a PyMC model of its own
(:func:`~pymc_discrete.marginalize`), and ``recover`` draws the block back into an
InferenceData (:func:`~pymc_discrete.recover_discrete`).

May import: the model reader (:mod:`pymc_discrete.pymc.model`) and the steps
(:mod:`pymc_discrete.pymc.steps`: ChainGibbs draws a summed-out chain). Never choosing.
"""
