"""What an approval shows: the command, the code, or the diff a file tool would make."""

from __future__ import annotations

import json
from typing import Any

from larik_jupyter.errors import LarikError
from larik_jupyter.tools.diff import unified_diff
from larik_jupyter.tools.edit import apply_edit
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.notebook import NotebookEditTool, notebook_path, open_notebook
from larik_jupyter.tools.notebook_file import source_text


def preview_change(env: Env, tool: str, tool_input: dict[str, Any]) -> str:
    """A read-only preview of the call; never touches the disk."""
    if tool == "bash":
        return f"$ {tool_input.get('command', '')}"
    if tool == "python":
        return str(tool_input.get("code", ""))
    if tool == "notebook_run":
        try:
            nb = open_notebook(env, notebook_path(env, tool_input, tool))
            return source_text(nb.cells[nb.find(str(tool_input.get("cell_id", "")))])
        except (LarikError, OSError) as exc:
            return f"(no preview: {exc})"
    if tool in ("write", "edit", "multi_edit"):
        try:
            return _file_diff(env, tool, tool_input)
        except (LarikError, OSError, KeyError, TypeError) as exc:
            return f"(no preview: {exc})"
    if tool == "notebook_edit":
        try:
            change = NotebookEditTool().plan(env, tool_input)
        except (LarikError, OSError) as exc:
            return f"(no preview: {exc})"
        return change.summary + "\n" + (change.diff or "(the source would not change)")
    return json.dumps(tool_input, indent=2, ensure_ascii=False)


def _file_diff(env: Env, tool: str, tool_input: dict[str, Any]) -> str:
    path = env.resolve(str(tool_input["path"]))
    rel = env.rel(path)
    old = path.read_text(encoding="utf-8") if path.is_file() else None
    if tool == "write":
        new = str(tool_input["content"])
    elif old is None:
        return f"(no preview: {rel} does not exist, so there is nothing to edit)"
    else:
        edits = tool_input["edits"] if tool == "multi_edit" else [tool_input]
        new = old
        for edit in edits:
            new, _ = apply_edit(
                new, edit["old_string"], edit["new_string"], bool(edit.get("replace_all")), rel
            )
    return unified_diff(rel, old, new) or "(no change)"
