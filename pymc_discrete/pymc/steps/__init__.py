"""The step methods and the lifecycle they share.

``block_step`` holds :class:`~pymc_discrete.pymc.steps.block_step.SiteBlockStep`, the
lifecycle of every site step (``tuning`` its scale's tuner, ``chain_state`` PyMC's saved
state, ``draw_stats`` the per-draw statistics, ``stall`` the warning of a chain that
stopped, ``step_kernel`` the algorithm as one record). ``informed_step`` is the base of the
steps driven by local ratios (ALBP, PAS), with its ``proposal="auto"`` policy
(``auto_proposal``, ``reachability``). Then one module per step method: ``albp``,
``arwm``, ``pas``, ``gibbs`` (BlockedGibbs), ``joint`` (JointGibbs), ``chain``
(ChainGibbs), ``count_step`` (CountLBP), ``paired`` (PairedFlip).

May import: what :mod:`pymc_discrete.pymc.model` may, and the model reader itself. Never
summing out or choosing.
"""
