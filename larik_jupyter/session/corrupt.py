"""A session file damaged before its last line, said the one way every reader of it says so."""

from __future__ import annotations

from pathlib import Path

from larik_jupyter.errors import LarikError


class CorruptSessionError(LarikError):
    """A session file is damaged before its last line; it is refused, never silently repaired."""

    def __init__(self, path: Path, line: int, what: str, fork_at: int | None = None) -> None:
        self.path = path
        self.line = line
        self.what = what
        self.fork_at = fork_at
        if fork_at is None:
            advice = "Nothing before it can be recovered; the file is left unchanged"
        else:
            advice = (
                f"Fork the valid prefix with `larik-jupyter fork {session_id_of(path)} --at-message {fork_at}` "
                "to continue from before it; the file itself is left unchanged"
            )
        super().__init__(f"{path}:{line}: {what}. {advice}.")


def session_id_of(path: Path) -> str:
    """The session id a transcript path names (its file name without `.jsonl`)."""
    return path.name.removesuffix(".jsonl")
