"""`%larik /egress --show N`: what the egress door kept from the model out of call N of the
session (as `/egress` numbers the calls), shown to the person who owns it: the sources and
policies withheld, and the call's result as stored on this machine."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from larik_jupyter.api import (
    RESULT_OF_CALL,
    LarikError,
    RequestRecord,
    counted,
    ledger_path,
    numbered_calls,
    read_ledger,
)

if TYPE_CHECKING:
    from larik_jupyter.api import Agent

# The most of a result shown: the panel is for reading what was withheld, not a dump.
MAX_SHOWN = 20_000


def show_call(agent: Agent, number: int) -> str:
    """Call `number` (1-based, in the session's order) as Markdown: its name, what the ledger
    says its result had withheld (each source with its policy), and the result itself."""
    agent.sync()
    messages = [entry.message for entry in agent.history.entries if entry.message is not None]
    calls = [use for message in messages for use in message.tool_uses()]
    if not calls:
        raise LarikError(f"Session {agent.session_id} has no call yet, so nothing was withheld from one.")
    if not 1 <= number <= len(calls):
        raise LarikError(
            f"Session {agent.session_id} has {len(calls)} call{'s' if len(calls) != 1 else ''}; pass "
            f"--show 1 to {len(calls)} (`%larik /egress` names them)."
        )
    use = calls[number - 1]
    name = numbered_calls(messages, agent.history.cell_position())[use.id]
    held: dict[tuple[str, str], int] = {}
    requests = (r for r in read_ledger(ledger_path(agent.session_path)) if isinstance(r, RequestRecord))
    for record in requests:
        for item in record.withheld:
            if item.where.startswith(f"{RESULT_OF_CALL}{use.id}"):
                held[item.source, item.policy] = held.get((item.source, item.policy), 0) + 1
    result = next((b for m in messages for b in m.tool_results() if b.tool_use_id == use.id), None)
    lines = [f"**{name[0].upper()}{name[1:]}**", ""]
    if held:
        which = ", ".join(f"{source} ({policy})" for source, policy in held)
        lines.append(f"Withheld from the model: {which}, in {counted(max(held.values()), 'request')}. Its result as "
                     "stored on this machine (the model was sent markers and the views the policies allow):")
    else:
        lines.append("Nothing of its result was withheld from the model. Its result as stored:")
    text = result.text(image="[image]") if result is not None else "(no result was recorded)"
    if len(text) > MAX_SHOWN:
        text = text[:MAX_SHOWN] + f"\n… ({len(text) - MAX_SHOWN:,} more characters; the session file holds them all)"
    fence = "`" * max(3, max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    return "\n".join([*lines, "", f"{fence}text", text, fence])
