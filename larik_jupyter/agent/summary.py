"""How the live views name a pending call, what its approval asks, and who changed a file (the
summaries themselves are in session/call_summary.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from larik_jupyter.session.call_summary import CellPosition, cell_label
from larik_jupyter.tools.kernel import effects_sentence

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


def approval_question(
    tool: str, tool_input: Mapping[str, Any], summary: str, preview: str,
    namespace: Mapping[str, Any] | None, position: CellPosition | None = None,
) -> tuple[str, str]:
    """What an approval asks, as a full question, and the detail shown under it (`preview`,
    the tool's own, less a question it opens with): every front end (the notebook's card, the
    terminal) asks the same words. A `python` call, and a `notebook_run` of a cell, say what
    the code may do to which of the kernel's variables (`namespace`), as read from its text."""
    question, _, rest = preview.partition("\n")
    if question.endswith("?") and rest.startswith("--- "):  # notebook_edit asks its own question
        return question, rest
    path = str(tool_input.get("path") or "")
    if tool == "python":
        code = str(tool_input.get("code") or "")
        return f"Run this Python in your kernel? {effects_sentence(code, namespace or {})}", preview
    if tool == "notebook_run":
        cell_id = str(tool_input.get("cell_id") or "")
        cell = cell_label(cell_id, path or None, position) if cell_id else "this cell"
        of = f" of {path.rsplit('/', 1)[-1]}" if path else ""
        said = "" if preview.startswith("(no preview") else f" {effects_sentence(preview, namespace or {})}"
        return f"Run {cell}{of} in your kernel?{said}", preview
    if tool == "bash":
        return "Run this shell command?", preview
    if tool == "write":
        creates = preview.startswith("--- /dev/null")
        return f"{'Create' if creates else 'Overwrite'} {path} with this content?", preview
    if tool in ("edit", "multi_edit"):
        edits = tool_input.get("edits")
        many = f"these {len(edits)} edits" if isinstance(edits, list) and len(edits) > 1 else "this edit"
        return f"Make {many} to {path}?", preview
    if tool == "notebook_check":
        checked = path or "this notebook"
        return (f"Run {checked} top to bottom in a scratch kernel, on a copy (your kernel, the notebook "
                "and your files stay as they are)?"), preview
    if tool == "read":
        return f"Read {path}?", preview
    if tool.startswith("mcp__"):
        return f"Call the MCP tool {tool.removeprefix('mcp__').replace('__', ' → ', 1)} with these arguments?", preview
    return f"Run the {tool} tool with these arguments?", preview
