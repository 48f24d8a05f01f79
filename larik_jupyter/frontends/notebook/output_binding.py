"""`%larik -o NAME`: the names a turn's outcome may be bound to, and the binding.

A name that is not a variable name, a keyword, IPython's or Python's own name is refused. A
variable `-o` did not bind itself is never replaced unless the prompt says `--replace`; then
protect mode asks first (refused when nobody can answer). The binding is a change of the
turn's kernel variables, so undoing the turn puts back what the name held before.
"""

from __future__ import annotations

import builtins
import keyword
import re
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from larik_jupyter.api import LarikError
from larik_jupyter.api import describe_value as describe

if TYPE_CHECKING:
    from larik_jupyter.api import Agent, PermissionAnswer, PermissionRequest, TurnOutcome

# The names IPython keeps in every namespace: its shell, input and output history, exit.
IPYTHON_NAMES = frozenset({
    "get_ipython", "In", "Out", "display", "exit", "quit",
    "_", "__", "___", "_i", "_ii", "_iii", "_ih", "_oh", "_dh", "_sh",
})
_HISTORY = re.compile(r"_i?\d+")  # `_5`, `_i5`: output and input of cell 5
_EXAMPLE = "choose another name, e.g. `-o out`"


class OutputRefused(LarikError):
    """`-o NAME` names something it may not bind."""


def name_refusal(name: str) -> str | None:
    """Why `-o` may never bind `name`, in one sentence; None when it is an ordinary name."""
    if not name.isidentifier():
        return f"-o takes a Python variable name to bind the outcome to, e.g. `-o out`; got {name!r}."
    if keyword.iskeyword(name):
        return f"-o takes a Python variable name, and `{name}` is a Python keyword; {_EXAMPLE}."
    if name in IPYTHON_NAMES or _HISTORY.fullmatch(name):
        return (f"-o {name}: `{name}` is IPython's own name, and binding it would break the notebook; "
                f"{_EXAMPLE}.")
    if name.startswith("__") and name.endswith("__"):
        return f"-o {name}: `{name}` is Python's own name; {_EXAMPLE}."
    if name in vars(builtins):
        return f"-o {name}: `{name}` is a Python builtin, and binding it would hide the builtin; {_EXAMPLE}."
    return None


class OutputBinder:
    """The outcomes `-o` bound in `shell`'s namespace, by name: a name holding one of them is
    `-o`'s to bind again; any other value is the user's (or IPython's own)."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self._bound: dict[str, list[weakref.ref[TurnOutcome]]] = {}

    @property
    def namespace(self) -> dict[str, Any]:
        return self.shell.user_ns

    def _ours(self, name: str) -> bool:
        value = self.namespace.get(name)
        return any(ref() is value for ref in self._bound.get(name, ()))

    def replaces(self, name: str) -> bool:
        """Whether binding `name` would replace a value `-o` did not bind."""
        return name in self.namespace and not self._ours(name)

    def check(self, name: str, *, replace: bool) -> None:
        """Raise `OutputRefused` (one sentence) when `-o name` may not bind now: not a name it
        may ever bind, IPython's own, or a variable it did not bind and `replace` is not said."""
        problem = name_refusal(name)
        if problem is None and name in getattr(self.shell, "user_ns_hidden", {}) and not self._ours(name):
            problem = f"-o {name}: `{name}` is IPython's own name, and binding it would break the notebook; {_EXAMPLE}."
        if problem is None and self.replaces(name) and not replace:
            problem = (
                f"-o {name} would replace your variable `{name}` ({self._describe(name)}), which -o "
                f"did not bind; choose another name, or add --replace to replace it (/undo puts it back)."
            )
        if problem is not None:
            raise OutputRefused(problem)

    async def approve(
        self, name: str, agent: Agent, approver: Callable[[PermissionRequest], Awaitable[PermissionAnswer | None]]
    ) -> None:
        """Under protect mode, ask (through the turn's approver) before `--replace` replaces the
        user's variable `name`; raise `OutputRefused` when denied or nobody can answer."""
        if not agent.protecting or not self.replaces(name):
            return
        from larik_jupyter.api import PermissionRequest

        what = self._describe(name)
        request = PermissionRequest(
            id=f"larik-output-{name}",
            tool="-o",
            input={"name": name},
            summary=f"-o {name}: replace your variable `{name}` ({what}) with this turn's outcome",
            detail=f"# Protect mode: -o {name} --replace replaces your existing variable:\n#   {name}: {what} → TurnOutcome",
            question=f"Replace your variable {name} ({what}) with this turn's outcome?",
        )
        answer = await approver(request)
        if answer is None:
            raise OutputRefused(
                f"-o {name} --replace was refused: protect mode asks before replacing your variable "
                f"`{name}` and nobody can answer in this run; choose another name, e.g. `-o out`."
            )
        if answer.decision == "deny":
            raise OutputRefused(f"-o {name} --replace was denied, so `{name}` was left as it is and nothing ran.")

    def bind(self, agent: Agent, name: str, outcome: TurnOutcome) -> None:
        """Bind `name` to `outcome` as a change of the turn that made it (undo puts back the
        previous value)."""
        agent.bind(name, outcome)
        refs = [ref for ref in self._bound.get(name, []) if ref() is not None]
        self._bound[name] = [*refs, weakref.ref(outcome)]

    def _describe(self, name: str) -> str:
        try:
            return describe(self.namespace[name], preview=False)
        except Exception:  # a value whose repr or shape raises is still the user's
            return type(self.namespace[name]).__name__
