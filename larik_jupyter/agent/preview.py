"""What an approval shows: the command, the code, or the diff a file tool would make."""

from __future__ import annotations

import json
from typing import Any

from larik_jupyter.errors import LarikError, exception_text
from larik_jupyter.tools.base import os_error_text
from larik_jupyter.tools.diff import unified_diff
from larik_jupyter.tools.edit import apply_edit
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.notebook import NotebookEditTool, notebook_path, open_notebook
from larik_jupyter.tools.notebook_file import source_text


def preview_change(env: Env, tool: str, tool_input: dict[str, Any]) -> str:
    """A read-only preview of the call; never touches the disk, never raises: a preview that
    fails says why instead (the call itself then fails with its own error result)."""
    try:
        return _preview(env, tool, tool_input)
    except LarikError as exc:
        return f"(no preview: {exc})"
    except OSError as exc:
        return f"(no preview: {os_error_text(exc)})"
    except Exception as exc:
        return f"(no preview: {exception_text(exc)})"


def _preview(env: Env, tool: str, tool_input: dict[str, Any]) -> str:
    if tool == "bash":
        return f"$ {tool_input.get('command', '')}"
    if tool == "python":
        return str(tool_input.get("code", ""))
    if tool == "notebook_run":
        nb = open_notebook(env, notebook_path(env, tool_input, tool))
        return source_text(nb.cells[nb.find(str(tool_input.get("cell_id", "")))])
    if tool in ("write", "edit", "multi_edit"):
        return _file_diff(env, tool, tool_input)
    if tool == "notebook_edit":
        change = NotebookEditTool().plan(env, tool_input)
        # A cell's source rarely ends with a newline: difflib's note about it is noise here.
        diff = change.diff.replace("\n\\ No newline at end of file", "")
        return change.question + "\n" + (diff or "(the source would not change)")
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
