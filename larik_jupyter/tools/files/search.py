"""The tools that find things: glob (file names), grep (file contents) and ls (one directory)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from larik_jupyter.errors import ToolError
from larik_jupyter.tools.base import Tool, ToolResult
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.files.ignore import walk_files
from larik_jupyter.tools.files.textfile import is_binary, read_regular

MAX_GLOB = 500
MAX_GREP = 200
MAX_GREP_LINE = 300
MAX_GREP_FILE = 5 * 1024 * 1024
MAX_LS = 500


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a glob over /-separated paths: `**` spans directories, `*` and `?` do not."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            out.append(
                "[" + ("^" + body[1:] if body[0] == "!" else body).replace("\\", "\\\\") + "]"
            )
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _directory(env: Env, args: dict[str, Any]) -> Path:
    top = env.resolve(args.get("path") or ".")
    if not top.is_dir():
        raise ToolError(f"{env.rel(top)} is not a directory; pass a directory as path.")
    return top


def _shown(env: Env, full: Path) -> str:
    """A found path as the model sees it: relative to the working directory when inside it."""
    return full.relative_to(env.cwd).as_posix() if full.is_relative_to(env.cwd) else str(full)


class GlobTool(Tool):
    name = "glob"
    writes = frozenset()
    path_input = "path"
    description = (
        "Find files by name pattern, e.g. '**/*.py' or 'src/*.ts' ('**' spans directories). "
        "Git-ignored files and directories like .git and node_modules are skipped. "
        f"At most {MAX_GLOB} paths, sorted."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Glob pattern, relative to path."},
            "path": {
                "type": "string",
                "description": "Directory to search (default: working directory).",
            },
        },
        "required": ["pattern"],
    }

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        top = _directory(env, args)
        if Path(args["pattern"]).is_absolute():
            raise ToolError(
                f"The pattern {args['pattern']!r} is absolute; pass the directory as path "
                "and a pattern relative to it."
            )
        regex = glob_regex(args["pattern"].removeprefix("./"))
        found: list[str] = []
        for _rel, entry in walk_files(env.root, top):
            path = Path(entry.path)
            if regex.match(path.relative_to(top).as_posix()):
                found.append(_shown(env, path))
        if not found:
            return ToolResult(f"No files match {args['pattern']!r}.")
        found.sort()
        note = (
            f"\n[{len(found) - MAX_GLOB} more paths cut; narrow the pattern]"
            if len(found) > MAX_GLOB
            else ""
        )
        return ToolResult("\n".join(found[:MAX_GLOB]) + note)


class GrepTool(Tool):
    name = "grep"
    writes = frozenset()
    path_input = "path"
    description = (
        "Search file contents with a Python regular expression. Prints path:line: text for "
        f"each matching line (at most {MAX_GREP}). Git-ignored and binary files are skipped; "
        "glob filters file names (e.g. '*.py', or 'src/**/*.ts' for paths)."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Python regular expression."},
            "path": {
                "type": "string",
                "description": "File or directory (default: working directory).",
            },
            "glob": {
                "type": "string",
                "description": "Only search files whose name matches this glob.",
            },
        },
        "required": ["pattern"],
    }

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        try:
            regex = re.compile(args["pattern"])
        except re.error as exc:
            raise ToolError(
                f"The pattern {args['pattern']!r} is not a valid regular expression ({exc})."
            ) from exc
        target = env.resolve(args.get("path") or ".")
        if not target.exists():
            raise ToolError(f"{env.rel(target)} does not exist; check the path with ls or glob.")
        name_glob = args.get("glob")
        file_filter = glob_regex(name_glob) if name_glob else None
        by_path = bool(name_glob and "/" in name_glob)
        if target.is_dir():
            files = [
                Path(entry.path)
                for _rel, entry in walk_files(env.root, target)
                if file_filter is None
                or file_filter.match(
                    Path(entry.path).relative_to(target).as_posix() if by_path else entry.name
                )
            ]
        else:
            files = [target]
        hits: list[str] = []
        more = 0
        for path in sorted(files):
            shown = _shown(env, path)
            for number, line in _matching_lines(path, regex):
                if len(hits) >= MAX_GREP:
                    more += 1
                    continue
                if len(line) > MAX_GREP_LINE:
                    line = line[:MAX_GREP_LINE] + " […]"
                hits.append(f"{shown}:{number}: {line}")
        if not hits:
            return ToolResult(f"No matches for {args['pattern']!r}.")
        note = (
            f"\n[{more} more matching lines cut; narrow the pattern, path or glob]" if more else ""
        )
        return ToolResult("\n".join(hits) + note)


def _matching_lines(path: Path, regex: re.Pattern[str]) -> list[tuple[int, str]]:
    try:
        data = read_regular(path, MAX_GREP_FILE, str(path))
    except ToolError:  # too large, gone, or not a regular file (a FIFO is never waited on)
        return []
    if is_binary(data):
        return []
    text = data.decode("utf-8", errors="replace")
    return [
        (number, line.rstrip("\r"))
        for number, line in enumerate(text.split("\n"), 1)
        if regex.search(line)
    ]


class LsTool(Tool):
    name = "ls"
    writes = frozenset()
    path_input = "path"
    description = f"List a directory: subdirectories end with '/', files show their size. At most {MAX_LS} entries."
    input_schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Directory (default: working directory)."},
        },
    }

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        top = _directory(env, args)
        rows = []
        for entry in sorted(top.iterdir(), key=lambda p: p.name):
            if entry.is_symlink():
                rows.append(f"{entry.name} -> {entry.readlink()}")
            elif entry.is_dir():
                rows.append(entry.name + "/")
            else:
                rows.append(f"{entry.name}  ({_size(entry.stat().st_size)})")
        if not rows:
            return ToolResult(f"{env.rel(top)} is empty.")
        note = f"\n[{len(rows) - MAX_LS} more entries cut]" if len(rows) > MAX_LS else ""
        return ToolResult("\n".join(rows[:MAX_LS]) + note)


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    size = n / 1024
    for unit in ("KB", "MB"):
        if size < 1024:
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"
