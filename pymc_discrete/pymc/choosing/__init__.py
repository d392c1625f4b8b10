"""Choosing a step for each block: the policy, and PyMC's hook for it.

``recommend`` is the policy (which step suits a block and why, from its structure),
``auto_step`` the registry device that builds the recommended step when ``pm.sample``
assigns steps, ``summed_route`` the wrapped ``pm.sample`` that samples the summed-out model
with the NUTS PyMC would pick for it (nutpie), and ``register`` the opt-in edit of PyMC's
list of step methods and of ``pm.sample``.

May import: everything else in :mod:`pymc_discrete.pymc`. Nothing imports it but the
package's public API.
"""
