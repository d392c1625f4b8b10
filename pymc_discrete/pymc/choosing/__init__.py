"""Choosing a step for each block: the policy, and PyMC's hook for it.

``recommend`` is the policy (which step suits a block and why, from its structure),
``auto_step`` the registry device that builds the recommended step when ``pm.sample``
assigns steps, and ``register`` the opt-in edit of PyMC's list of step methods.

May import: everything else in :mod:`pymc_discrete.pymc`. Nothing imports it but the
package's public API.
"""
