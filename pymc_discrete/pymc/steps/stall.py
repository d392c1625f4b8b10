"""A chain that stopped moving after tuning, told the way PyMC tells its own sampler
warnings: a ``SamplerWarning`` in the draw's ``warning`` stat, which ``pm.sample`` logs
(with or without a progress bar) and keeps with ``keep_warning_stat=True``."""

from __future__ import annotations

import numpy as np
from pymc.stats.convergence import SamplerWarning, WarningType

__all__ = ["STALLED_DRAWS_FAILING", "StallWatch", "chain_index"]

#: the progress bar marks a chain as failing, and the chain's last draw warns, once this
#: many consecutive draws left its block unchanged (at acceptance 0.234, 100 draws
#: without a move have probability 3e-12; a chain that accepts nearly nothing, or a
#: block whose posterior sits on one state, gets there)
STALLED_DRAWS_FAILING = 100


def chain_index(rng: np.random.Generator | None) -> int | None:
    """The number of the chain a step's generator was made for, or None.

    ``pm.sample`` spawns one generator per chain from the seed (its spawn key ends in
    the chain's number) and a ``CompoundStep`` spawns one per step from that (one more
    number): the first number of the key is the chain's.
    """
    try:
        key = rng.bit_generator.seed_seq.spawn_key
    except AttributeError:
        return None
    return int(key[0]) if len(key) else None


class StallWatch:
    """Counts, after tuning, the consecutive draws that left a block unchanged, and
    warns once a chain at its last draw (or at the threshold when the number of draws
    is unknown) when a run reached :data:`STALLED_DRAWS_FAILING` draws.

    Parameters
    ----------
    step_name : str
        The step's class name, for the message.
    var_names : list of str
        The block's variables.
    advice : str
        What to try, appended to the message.
    """

    def __init__(self, step_name: str, var_names: list[str], advice: str) -> None:
        self.step_name = step_name
        self.var_names = list(var_names)
        self.advice = advice
        self.start_chain(None, None)

    def start_chain(self, rng: np.random.Generator | None, n_draws: int | None) -> None:
        """Forget the last chain; ``n_draws`` is the number of draws after tuning."""
        self.chain = chain_index(rng)
        self.n_draws = None if n_draws is None else int(n_draws)
        self.draw = 0  # draws after tuning so far
        self.run = 0  # the current run of unchanged draws
        self.longest = 0
        self.longest_from = 0
        self.warned = False

    def record(self, moved: bool, tuning: bool) -> SamplerWarning | None:
        """Count a draw; the warning to report with it, if this is the draw that tells."""
        if tuning:
            return None
        self.run = 0 if moved else self.run + 1
        if self.run > self.longest:
            self.longest, self.longest_from = self.run, self.draw - self.run + 1
        self.draw += 1
        if self.warned or self.longest < STALLED_DRAWS_FAILING:
            return None
        last = self.n_draws is not None and self.draw >= self.n_draws
        if self.n_draws is not None and not last:
            return None
        self.warned = True
        return SamplerWarning(WarningType.BAD_ACCEPTANCE, self.message(), "warn",
                              step=self.draw - 1, extra={"chain": self.chain,
                                                         "stalled_draws": self.longest})

    def message(self) -> str:
        """One paragraph naming the chain, the variables and the stalled draws."""
        chain = "a chain" if self.chain is None else f"chain {self.chain}"
        of = "" if self.n_draws is None else f" of {self.n_draws}"
        last = self.longest_from + self.longest - 1
        return (
            f"{self.step_name}: {chain} left {self.var_names} unchanged for {self.longest} "
            f"consecutive draws after tuning (draws {self.longest_from} to {last}{of}): "
            "those draws repeat one state, so the chain's draws of these variables are not "
            "a sample of their posterior unless it sits on that state. "
            f"{self.advice}"
        )
