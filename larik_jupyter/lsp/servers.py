"""Which servers exist (configured, plus a Python default found on PATH) and which files they serve."""

from __future__ import annotations

import functools
import re
import shutil
from pathlib import Path

from larik_jupyter.config.model import Config, LspServer

# Tried in order when no configured server handles Python; nothing is ever downloaded.
PYTHON_DEFAULTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("pylsp", "pylsp", ()),
    ("pyright", "pyright-langserver", ("--stdio",)),
)

_LANGUAGES = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascriptreact",
    ".ts": "typescript", ".tsx": "typescriptreact",
    ".rs": "rust", ".go": "go", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp",
    ".java": "java", ".kt": "kotlin", ".rb": "ruby", ".php": "php", ".cs": "csharp",
    ".sh": "shellscript", ".bash": "shellscript", ".lua": "lua", ".jl": "julia", ".r": "r",
    ".json": "json", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml", ".md": "markdown",
    ".html": "html", ".css": "css", ".sql": "sql", ".tex": "latex",
}


def language_of(path: Path) -> str | None:
    """The LSP language id of a file by its suffix, or None when unknown."""
    return _LANGUAGES.get(path.suffix.lower())


def enabled(spec: LspServer) -> bool:
    """False for a server configured with `"enabled": false`."""
    return (spec.model_extra or {}).get("enabled", True) is not False


def serves(spec: LspServer, rel: str, language: str | None) -> bool:
    """Whether a server handles the file at project-relative `rel` (by language id or glob).

    A pattern without `/` matches the file name anywhere (`*.py`); otherwise it matches the
    whole relative path, `**/` standing for any number of folders, none included.
    """
    if language is not None and language in spec.languages:
        return True
    name = rel.rsplit("/", 1)[-1]
    return any(
        _glob(pattern).fullmatch(rel if "/" in pattern else name) for pattern in spec.patterns
    )


@functools.lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"(\*\*/|\*\*|\*|\?)", pattern.removeprefix("./"))
    table = {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}
    return re.compile("".join(table.get(part, re.escape(part)) for part in parts))


def effective_servers(config: Config) -> dict[str, LspServer]:
    """The enabled servers: the configured ones, plus a Python default when none covers Python.

    A configured entry named like a default (`pylsp`, `pyright`) replaces it, and one with
    `"enabled": false` turns it off.
    """
    configured = dict(config.lspServers)
    covers_python = any(
        serves(spec, "x.py", "python") for spec in configured.values()
    ) or any(name in configured for name, _, _ in PYTHON_DEFAULTS)
    if not covers_python:
        default = python_default()
        if default is not None:
            configured[default[0]] = default[1]
    return {name: spec for name, spec in configured.items() if enabled(spec)}


def python_default() -> tuple[str, LspServer] | None:
    """`pylsp`, else `pyright-langserver --stdio`, whichever is on PATH first; None if neither."""
    for name, command, args in PYTHON_DEFAULTS:
        found = shutil.which(command)
        if found:
            return name, LspServer(command=found, args=list(args), languages=["python"])
    return None
