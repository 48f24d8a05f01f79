"""Protect mode after a kernel call, on its receipts: a join that fanned out (a key repeated on
the side it was looked up in: a many-to-one join that turned out many-to-many) or a filter that
dropped every row, whose result the code bound to a variable, is kept only if the user says so.
Where nobody can answer, the result is kept and the turn ends with the receipt as a warning, so
nothing is built on it unseen."""

from __future__ import annotations

from collections.abc import Callable

from larik_jupyter.agent import events as ae
from larik_jupyter.agent.permissions import Approver
from larik_jupyter.agent.protect import ask_keep
from larik_jupyter.llm.messages import ToolUseBlock
from larik_jupyter.session.receipts import warning_of
from larik_jupyter.tools.base import ToolResult
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.kernel import call_snapshots


async def check_receipts(
    call: ToolUseBlock, result: ToolResult, env: Env, approver: Approver | None,
    emit: Callable[[ae.AgentEvent], None],
) -> str | None:
    """Ask about the call's warned receipts (see the module's docstring); returns the warning
    that ends the turn where nobody could answer, else None."""
    warned = [(r.variable, w) for r in result.receipts if r.variable and (w := warning_of(r)) is not None]
    if not warned or env.host is None:
        return None
    names = list(dict.fromkeys(name for name, _ in warned if name))
    summary = "; ".join(w for _, w in warned)
    if approver is None:
        warning = f"Protect mode: {summary}. The result is kept; check it before building on it."
        emit(ae.Notice(warning, level="warning"))
        return warning
    answer = await ask_keep(
        call, approver, summary, "# Protect mode: receipts of this call\n" + "\n".join(f"#   {w}" for _, w in warned),
        f"Keep {', '.join(names)}? {summary[:1].upper()}{summary[1:]}", emit, lambda: _unbind(env, result, names),
    )
    if answer is not None and answer.decision != "deny":
        emit(ae.Notice(f"Kept: {', '.join(names)}."))
        return None
    _unbind(env, result, names)
    result.content += (
        f"\n[Protect mode: the user did not keep {', '.join(names)} ({summary}); "
        "it is back as before the call. Fix the join or filter before going on.]"
    )
    result.is_error = True
    return None


def _unbind(env: Env, result: ToolResult, names: list[str]) -> None:
    """Put `names` back as before the call: gone where the call created them, else their old
    values (from protect mode's snapshot)."""
    assert env.host is not None
    created = {c.name for c in result.variables if c.change == "created"}
    for name in names:
        if name in created:
            env.host.namespace.pop(name, None)
    snapshots = call_snapshots(env)
    if snapshots is not None and (existed := [n for n in names if n not in created]):
        snapshots.roll_back(env.host.namespace, existed)
