"""The tools that change a file's text: write, edit and multi_edit. Each works its change out
from the file's text as it is (`changed`), shows it as a diff for the approval, and makes it as
planned while the file's text is unchanged (`tools/planned.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from larik_jupyter.errors import ToolError
from larik_jupyter.plural import counted
from larik_jupyter.session.call_summary import CellPosition
from larik_jupyter.textdiff import unified_diff
from larik_jupyter.tools.base import FILE_PATH, Tool, ToolResult, Writes
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.files.textfile import read_text, text_bytes, write_text
from larik_jupyter.tools.planned import Planned, replanned_note, still_planned

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


class TextTool(Tool):
    """A tool that writes one file's text: the change worked out from the file's text (`changed`:
    the new text and the result's summary), its diff the approval's preview."""

    writes: ClassVar[frozenset[Writes]] = frozenset({"files"})
    path_input = "path"

    @classmethod
    def changed(cls, old: str | None, args: Mapping[str, Any], where: str) -> tuple[str, str]:
        """The file's new text and what the result says of it, from its text `old` (None: no
        such file); raises `ToolError` naming `where` when the call cannot apply."""
        raise NotImplementedError

    @classmethod
    def new_text(cls, old: str | None, args: Mapping[str, Any], where: str) -> str:
        """The text a call leaves in its file (a branch's steps and replay recreate it)."""
        return cls.changed(old, args, where)[0]

    def plan(self, env: Env, args: dict[str, Any]) -> Planned[tuple[str, str]]:
        path = env.resolve(str(args["path"]))
        return self._worked_out(env, path, _text(env, path), args)

    def _worked_out(self, env: Env, path: Path, old: str | None, args: Mapping[str, Any]) -> Planned[tuple[str, str]]:
        rel = env.rel(path)
        new, summary = self.changed(old, args, rel)
        text_bytes(rel, new)  # refused here, before its diff is shown or made
        return Planned(unified_diff(rel, old, new) or "(no change)", old, (new, summary))

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        path = env.resolve(str(args["path"]))
        old = _text(env, path)
        planned = still_planned(env.call.planned, old)
        note = ""
        if planned is None:
            planned = self._worked_out(env, path, old, args)
            note = replanned_note(env.call.planned, planned, env.rel(path))
        new, summary = planned.change
        return _commit(env, path, old, new, note + summary)


def _text(env: Env, path: Path) -> str | None:
    """The file's text, None when there is no such file."""
    return read_text(env, path) if path.exists() else None


def _existing(old: str | None, where: str) -> str:
    if old is None:
        raise ToolError(f"{where} does not exist, so there is nothing to edit; check the path with ls or glob.")
    return old


class WriteTool(TextTool):
    name = "write"
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

    @classmethod
    def changed(cls, old: str | None, args: Mapping[str, Any], where: str) -> tuple[str, str]:
        content = str(args.get("content", ""))
        return content, f"{'Created' if old is None else 'Overwrote'} {where} ({counted(len(content.splitlines()), 'line')})."

    def approval_question(
        self, args: Mapping[str, Any], preview: str, namespace: Mapping[str, Any] | None,
        position: CellPosition | None,
    ) -> tuple[str, str]:
        creates = preview.startswith("--- /dev/null")
        return f"{'Create' if creates else 'Overwrite'} {args.get('path') or ''} with this content?", preview


class EditTool(TextTool):
    name = "edit"
    description = (
        "Replace an exact string in a file. old_string must match exactly once "
        "(or pass replace_all=true); the edit is refused when it matches nothing or several places."
    )
    input_schema = {
        "type": "object",
        "properties": {"path": FILE_PATH, **_EDIT_FIELDS},
        "required": ["path", "old_string", "new_string"],
    }

    @classmethod
    def changed(cls, old: str | None, args: Mapping[str, Any], where: str) -> tuple[str, str]:
        new, count = apply_edit(
            _existing(old, where), str(args.get("old_string", "")), str(args.get("new_string", "")),
            bool(args.get("replace_all")), where,
        )
        return new, f"Edited {where}: replaced {counted(count, 'occurrence')}."

    def approval_question(
        self, args: Mapping[str, Any], preview: str, namespace: Mapping[str, Any] | None,
        position: CellPosition | None,
    ) -> tuple[str, str]:
        return _edits_question(args), preview


class MultiEditTool(TextTool):
    name = "multi_edit"
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

    @classmethod
    def changed(cls, old: str | None, args: Mapping[str, Any], where: str) -> tuple[str, str]:
        edits = args.get("edits")
        if not isinstance(edits, list) or not edits:
            raise ToolError(f"multi_edit of {where} got no edits; pass at least one.")
        new = _existing(old, where)
        total = 0
        for i, edit in enumerate(edits, 1):
            new, count = apply_edit(
                new, str(edit.get("old_string", "")), str(edit.get("new_string", "")),
                bool(edit.get("replace_all")), f"{where}, edit {i} of {len(edits)} (no edit was applied)",
            )
            total += count
        return new, f"Edited {where}: {len(edits)} edits, replaced {counted(total, 'occurrence')}."

    def approval_question(
        self, args: Mapping[str, Any], preview: str, namespace: Mapping[str, Any] | None,
        position: CellPosition | None,
    ) -> tuple[str, str]:
        return _edits_question(args), preview


def _edits_question(args: Mapping[str, Any]) -> str:
    edits = args.get("edits")
    many = f"these {len(edits)} edits" if isinstance(edits, list) and len(edits) > 1 else "this edit"
    return f"Make {many} to {args.get('path') or ''}?"
