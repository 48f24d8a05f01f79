"""The execution count of a `%larik` cell whose turn runs cells of the notebook (`notebook_run`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HeldCount:
    """The execution count a running `%larik` cell holds, so that cells run inside its turn do not
    share a number with it: IPython (9 and later) gives the cell count N and moves the shell on to
    N+1 as it begins; a cell run inside takes N+1, and the kernel would answer the `%larik` cell
    with N+1 as well when it ends."""

    stored: int  # inputs in the shell's history as the cell began (its own the last)

    @classmethod
    def of(cls, shell: Any) -> HeldCount | None:
        """The count the running cell holds; None where it holds none of its own (a shell
        without history, a cell run without storing it)."""
        history = getattr(shell, "history_manager", None)
        if history is None or len(history.input_hist_raw) != getattr(shell, "execution_count", None):
            return None
        return cls(stored=len(history.input_hist_raw))

    def release(self, shell: Any) -> None:
        """At the cell's end, after cells ran inside it: it takes the count after theirs, its
        input stored again under it, so In[n] stays the input of the cell shown as [n] and the
        person's next cell follows on."""
        history = shell.history_manager
        now = len(history.input_hist_raw)
        if now == self.stored or now != shell.execution_count:
            return
        own = self.stored - 1
        history.store_inputs(now, history.input_hist_parsed[own], history.input_hist_raw[own])
        shell.execution_count = now + 1
