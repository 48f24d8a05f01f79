"""The tools that change a file's text: write, edit and multi_edit."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from larik_jupyter.errors import ToolError
from larik_jupyter.textdiff import unified_diff
from larik_jupyter.tools.base import FILE_PATH, Tool, ToolResult
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.files.textfile import read_text, write_text

if TYPE_CHECKING:
    from larik_jupyter.session.call_summary import CellPosition

_EDIT_FIELDS: dict[str, Any] = {
    "old_string": {"type": "string", "description": "Exact text to replace, including whitespace."},
    "new_string": {"type": "string", "description": "Text to put in its place."},
    "replace_all": {
        "type": "boolean",
        "description": "Replace every match (default: exactly one).",
    },
}


def _commit(env: Env, path: Path, old: str | None, new: str, summary: str) -> ToolResult:
    """Write `new` over `old` and describe the change with its diff and diagnostics."""
    write_text(env, path, new)
    rel = env.rel(path)
    if env.diagnostics is not None:
        found = env.diagnostics.after_write(path, new)
        summary += f"\n\n{found}" if found else ""
    return ToolResult(summary, diff=unified_diff(rel, old, new))


def apply_edit(text: str, old: str, new: str, replace_all: bool, where: str) -> tuple[str, int]:
    """Replace `old` in `text`; refuse a missing, ambiguous or no-op edit, naming `where`."""
    if old == "":
        raise ToolError(
            f"{where}: old_string is empty; use write to create or overwrite a whole file."
        )
    if old == new:
        raise ToolError(f"{where}: old_string and new_string are the same; nothing would change.")
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
        # The model writes \n; a CRLF file's text only matches with the file's own endings.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise ToolError(
            f"{where}: old_string was not found; read the file and copy the exact text, including whitespace."
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"{where}: old_string matches {count} places; add surrounding lines to make it unique "
            "or pass replace_all=true."
        )
    return text.replace(old, new), count


def _preview(env: Env, args: dict[str, Any], edits: list[dict[str, Any]] | None) -> str:
    """The diff a write (`edits` None) or edits of `args["path"]` would make; nothing written."""
    path = env.resolve(str(args["path"]))
    rel = env.rel(path)
    old = path.read_text(encoding="utf-8") if path.is_file() else None
    if edits is None:
        new = str(args["content"])
    elif old is None:
        return f"(no preview: {rel} does not exist, so there is nothing to edit)"
    else:
        new = old
        for edit in edits:
            new, _ = apply_edit(
                new, edit["old_string"], edit["new_string"], bool(edit.get("replace_all")), rel
            )
    return unified_diff(rel, old, new) or "(no change)"


def _lines(text: str) -> str:
    count = len(text.splitlines())
    return f"{count} line" + ("" if count == 1 else "s")


def _plural(count: int) -> str:
    return f"{count} occurrence" + ("" if count == 1 else "s")


class WriteTool(Tool):
    name = "write"
    writes = frozenset({"files"})
    path_input = "path"
    description = (
        "Create a file or overwrite it with the given content. Read a file before overwriting it."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": FILE_PATH,
            "content": {"type": "string", "description": "The whole new content of the file."},
        },
        "required": ["path", "content"],
    }

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        path = env.resolve(args["path"])
        old = read_text(env, path) if path.exists() else None
        content: str = args["content"]
        verb = "Created" if old is None else "Overwrote"
        return _commit(env, path, old, content, f"{verb} {env.rel(path)} ({_lines(content)}).")

    def preview(self, env: Env, args: dict[str, Any]) -> str:
        return _preview(env, args, None)

    def approval_question(
        self, args: Mapping[str, Any], preview: str, namespace: Mapping[str, Any] | None,
        position: CellPosition | None,
    ) -> tuple[str, str]:
        creates = preview.startswith("--- /dev/null")
        return f"{'Create' if creates else 'Overwrite'} {args.get('path') or ''} with this content?", preview


class EditTool(Tool):
    name = "edit"
    writes = frozenset({"files"})
    path_input = "path"
    description = (
        "Replace an exact string in a file. old_string must match exactly once "
        "(or pass replace_all=true); the edit is refused when it matches nothing or several places."
    )
    input_schema = {
        "type": "object",
        "properties": {"path": FILE_PATH, **_EDIT_FIELDS},
        "required": ["path", "old_string", "new_string"],
    }

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        path = env.resolve(args["path"])
        rel = env.rel(path)
        old = read_text(env, path)
        new, count = apply_edit(
            old, args["old_string"], args["new_string"], bool(args.get("replace_all")), rel
        )
        return _commit(env, path, old, new, f"Edited {rel}: replaced {_plural(count)}.")

    def preview(self, env: Env, args: dict[str, Any]) -> str:
        return _preview(env, args, [args])

    def approval_question(
        self, args: Mapping[str, Any], preview: str, namespace: Mapping[str, Any] | None,
        position: CellPosition | None,
    ) -> tuple[str, str]:
        return _edits_question(args), preview


class MultiEditTool(Tool):
    name = "multi_edit"
    writes = frozenset({"files"})
    path_input = "path"
    rule_names = ("multiedit",)
    description = (
        "Apply several exact-string edits to one file in order, each seeing the result of the "
        "previous ones. All or nothing: if any edit fails, the file is left unchanged."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": FILE_PATH,
            "edits": {
                "type": "array",
                "description": "The edits, applied in order.",
                "items": {
                    "type": "object",
                    "properties": _EDIT_FIELDS,
                    "required": ["old_string", "new_string"],
                },
            },
        },
        "required": ["path", "edits"],
    }

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        path = env.resolve(args["path"])
        rel = env.rel(path)
        edits: list[dict[str, Any]] = args["edits"]
        if not edits:
            raise ToolError(f"multi_edit of {rel} got no edits; pass at least one.")
        old = read_text(env, path)
        new = old
        total = 0
        for i, edit in enumerate(edits, 1):
            where = f"{rel}, edit {i} of {len(edits)} (no edit was applied)"
            new, count = apply_edit(
                new, edit["old_string"], edit["new_string"], bool(edit.get("replace_all")), where
            )
            total += count
        return _commit(
            env, path, old, new, f"Edited {rel}: {len(edits)} edits, replaced {_plural(total)}."
        )

    def preview(self, env: Env, args: dict[str, Any]) -> str:
        return _preview(env, args, list(args["edits"]))

    def approval_question(
        self, args: Mapping[str, Any], preview: str, namespace: Mapping[str, Any] | None,
        position: CellPosition | None,
    ) -> tuple[str, str]:
        return _edits_question(args), preview


def _edits_question(args: Mapping[str, Any]) -> str:
    edits = args.get("edits")
    many = f"these {len(edits)} edits" if isinstance(edits, list) and len(edits) > 1 else "this edit"
    return f"Make {many} to {args.get('path') or ''}?"
