"""How the live views name a pending call and who changed a file (the summaries themselves are
in session/call_summary.py)."""

from __future__ import annotations

# Tools whose approval preview (agent/preview.py) is the call's own text: the command, the code.
_CALL_PREVIEWS = frozenset({"bash", "python"})


def asked_label(tool: str, summary: str) -> str:
    """How an approval, and the status and tool row around it, name a pending call: by its
    summary, or by the tool alone when the preview already shows the call's text, so the code
    appears once."""
    return tool if tool in _CALL_PREVIEWS else summary


def changed_by(tool: str) -> str:
    """Who made a file change the checkpoints did not capture, in words."""
    return "the shell" if tool in ("bash", "") else f"the tool `{tool}`"
