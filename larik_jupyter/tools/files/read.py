"""The read tool: a text file with line numbers, a range of it, cut to a size the model can take."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from larik_jupyter.egress.tags import file_tag
from larik_jupyter.errors import ToolError
from larik_jupyter.textdiff import printable
from larik_jupyter.tools.base import FILE_PATH, Tool, ToolResult
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.files.textfile import read_text

if TYPE_CHECKING:
    from larik_jupyter.session.call_summary import CellPosition

DEFAULT_LIMIT = 2000
MAX_CHARS = 100_000
MAX_LINE = 2000


class ReadTool(Tool):
    name = "read"
    writes = frozenset()
    path_input = "path"
    description = (
        "Read a text file. Lines come back numbered (number, tab, text). "
        f"At most {DEFAULT_LIMIT} lines and {MAX_CHARS} characters per call; "
        "use offset (first line, 1-based) and limit to read further."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": FILE_PATH,
            "offset": {
                "type": "integer",
                "description": "First line to read, 1-based (default 1).",
            },
            "limit": {
                "type": "integer",
                "description": f"Number of lines (default {DEFAULT_LIMIT}).",
            },
        },
        "required": ["path"],
    }

    def approval_question(
        self, args: Mapping[str, Any], preview: str, namespace: Mapping[str, Any] | None,
        position: CellPosition | None,
    ) -> tuple[str, str]:
        return f"Read {args.get('path') or ''}?", preview

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        path = env.resolve(args["path"])
        offset = 1 if args.get("offset") is None else args["offset"]
        limit = DEFAULT_LIMIT if args.get("limit") is None else args["limit"]
        if offset < 1 or limit < 1:
            raise ToolError("offset and limit must be at least 1; line numbers start at 1.")
        content = printable(read_text(env, path))
        lines = _lines(content)
        total = len(lines)
        if total == 0:
            return ToolResult(f"{env.rel(path)} is empty.")
        if offset > total:
            raise ToolError(f"{env.rel(path)} has {total} lines; offset {offset} is past the end.")
        out: list[str] = []
        size = 0
        long_lines = 0
        last = offset - 1
        for number in range(offset, min(total, offset - 1 + limit) + 1):
            text = lines[number - 1]
            if len(text) > MAX_LINE:
                text = text[:MAX_LINE] + f" [… {len(text) - MAX_LINE} characters cut]"
                long_lines += 1
            row = f"{number:>6}\t{text}"
            if out and size + len(row) + 1 > MAX_CHARS:
                break
            out.append(row)
            size += len(row) + 1
            last = number
        notes = []
        if offset > 1 or last < total:
            more = f"; call again with offset={last + 1} to read more" if last < total else ""
            notes.append(f"[showing lines {offset}-{last} of {total}{more}]")
        if long_lines:
            notes.append(f"[{long_lines} lines longer than {MAX_LINE} characters were cut]")
        tag = file_tag(env.egress, path.relative_to(env.root).as_posix(), content) if env.inside_root(path) else None
        return ToolResult("\n".join(out + notes), egress=tag)


def _lines(text: str) -> list[str]:
    """Lines split on \\n only (as editors number them), without their line endings."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]
