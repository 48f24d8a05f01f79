"""The `diagnostics` tool: ask the language servers about a file, or about every file so far."""

from __future__ import annotations

from typing import Any

from larik_jupyter.errors import ToolError
from larik_jupyter.tools.base import Tool, ToolResult
from larik_jupyter.tools.env import Env


class DiagnosticsTool(Tool):
    name = "diagnostics"
    writes = frozenset()
    description = (
        "Errors and warnings that the language servers report for a file (read from disk now), "
        "or, without a path, for every file checked so far. write, edit and multi_edit already "
        "include them for the file they changed."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "File path, relative to the working directory (optional).",
            },
        },
    }

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        if env.diagnostics is None:
            raise ToolError("No language server is configured; add one under lspServers in the config.")
        given = args.get("path")
        path = env.resolve(given) if given else None
        if path is not None and not path.is_file():
            raise ToolError(f"{env.rel(path)} is not a file; pass the path of a source file.")
        return ToolResult(env.diagnostics.report(path))
