"""Instruction files: `<config>/AGENTS.md`, then AGENTS.md (or CLAUDE.md) from the git root to cwd."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import NamedTuple

from larik_jupyter import paths

MAX_BYTES = 64 * 1024
_NAMES = ("AGENTS.md", "CLAUDE.md")


class InstructionFile(NamedTuple):
    """One loaded file: `source` is the label shown in the tag, `text` its (capped) content."""

    source: str
    text: str


@dataclass
class Instructions:
    """The instruction files in prompt order (general first) and notices about skipped parts."""

    files: list[InstructionFile] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    def render(self) -> str:
        """The `<instructions source="…">` blocks for the system prompt, general first."""
        return "\n\n".join(
            f'<instructions source="{escape(source)}">\n{text.rstrip()}\n</instructions>'
            for source, text in self.files
        )


def display_path(path: Path, root: Path | None = None) -> str:
    """`path` relative to `root` when inside it, else with the home directory shown as `~`."""
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except (ValueError, RuntimeError):
        return str(path)


def _directories(root: Path, cwd: Path) -> list[Path]:
    """The directories from `root` down to `cwd`, both included."""
    try:
        parts = cwd.relative_to(root).parts
    except ValueError:
        return [cwd]
    dirs = [root]
    for part in parts:
        dirs.append(dirs[-1] / part)
    return dirs


def _pick(directory: Path) -> Path | None:
    for name in _NAMES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def _decode(data: bytes, cut: bool) -> tuple[str, bool]:
    """The text and whether it decoded cleanly; a character split by the cap is dropped."""
    try:
        return data.decode("utf-8"), True
    except UnicodeDecodeError as exc:
        if cut and exc.reason == "unexpected end of data":
            return _decode(data[: exc.start], False)
        return data.decode("utf-8", errors="replace"), False


def _read(path: Path, source: str, notices: list[str]) -> str | None:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_BYTES + 1)
            size = os.fstat(handle.fileno()).st_size
    except OSError as exc:
        notices.append(f"Instruction file {path} could not be read ({exc.strerror or exc}); it was skipped.")
        return None
    cut = len(data) > MAX_BYTES
    text, clean = _decode(data[:MAX_BYTES], cut)
    if not clean:
        notices.append(f"Instruction file {path} is not valid UTF-8; undecodable bytes were replaced.")
    if cut:
        notices.append(
            f"Instruction file {path} is {size} bytes; only its first {MAX_BYTES} bytes are used."
        )
        text += f"\n[… {source} truncated: the remaining {size - MAX_BYTES} bytes were cut]"
    return text


def load_instructions(cwd: str | os.PathLike[str]) -> Instructions:
    """Load the personal AGENTS.md, then one file per directory from the project root to `cwd`."""
    cwd_path = Path(os.path.abspath(os.fspath(cwd)))
    root = paths.project_root(cwd_path)
    result = Instructions()
    candidates: list[tuple[Path, str]] = []
    personal = paths.config_dir() / "AGENTS.md"
    if personal.is_file():
        candidates.append((personal, display_path(personal)))
    for directory in _directories(root, cwd_path):
        found = _pick(directory)
        if found is not None:
            candidates.append((found, display_path(found, root)))
    for path, source in candidates:
        text = _read(path, source, result.notices)
        if text is not None and text.strip():
            result.files.append(InstructionFile(source, text))
    return result
