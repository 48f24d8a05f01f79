"""Walking project files the way git sees them: .gitignore honoured, heavy directories skipped."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path

import pathspec

# Never worth searching or snapshotting, whether or not a .gitignore says so.
HEAVY_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".ipynb_checkpoints",
    }
)


@dataclass(frozen=True)
class _Rules:
    base: str  # directory of the .gitignore, relative to the root ("" for the root)
    spec: pathspec.GitIgnoreSpec
    # Matches whenever any pattern might; most paths match none, and skipping pathspec's
    # per-pattern loop for them makes a snapshot several times cheaper.
    any_pattern: re.Pattern[str] | None


def _any_pattern(spec: pathspec.GitIgnoreSpec) -> re.Pattern[str] | None:
    sources = []
    for pattern in spec.patterns:
        regex = getattr(pattern, "regex", None)
        if pattern.include is None:
            continue
        if not isinstance(regex, re.Pattern):
            return None
        sources.append(re.sub(r"\(\?P<\w+>", "(?:", regex.pattern))
    try:
        return re.compile("|".join(f"(?:{source})" for source in sources))
    except re.error:
        return None


class GitIgnore:
    """The .gitignore files of a project (plus .git/info/exclude), deeper files winning."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._rules: list[_Rules] = []
        self._loaded: set[str] = set()
        self._load("", root / ".git" / "info" / "exclude")

    def _load(self, base: str, file: Path) -> None:
        try:
            lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
        if spec.patterns:
            self._rules.append(_Rules(base, spec, _any_pattern(spec)))

    def enter(self, rel_dir: str) -> None:
        """Read the .gitignore of a directory (relative to the root) about to be walked."""
        if rel_dir not in self._loaded:
            self._loaded.add(rel_dir)
            self._load(rel_dir, self.root / rel_dir / ".gitignore")

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether git ignores the path `rel` (relative to the root)."""
        verdict: bool | None = None
        for rules in self._rules:
            if rules.base:
                if not rel.startswith(rules.base + "/"):
                    continue
                sub = rel[len(rules.base) + 1 :]
            else:
                sub = rel
            if is_dir:
                sub += "/"
            if rules.any_pattern is not None and not rules.any_pattern.search(sub):
                continue
            result = rules.spec.check_file(sub)
            if result.include is not None:
                verdict = result.include
        return bool(verdict)


def walk_files(root: Path, top: Path) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Yield `(path relative to root, entry)` for files under `top`, in sorted order.

    Git-ignored paths and heavy directories are skipped, symlinks are not followed, and
    `top` itself is walked even when ignored (the caller asked for it by name).
    """
    if not top.is_relative_to(root):
        root = top
    rules = GitIgnore(root)
    top_rel = "" if top == root else top.relative_to(root).as_posix()
    parts = top_rel.split("/") if top_rel else []
    for depth in range(len(parts) + 1):
        rules.enter("/".join(parts[:depth]))
    stack = [top_rel]
    by_name = attrgetter("name")
    while stack:
        rel_dir = stack.pop()
        try:
            with os.scandir(root / rel_dir if rel_dir else root) as it:
                entries = sorted(it, key=by_name)
        except OSError:
            continue
        if any(entry.name == ".gitignore" for entry in entries):
            rules.enter(rel_dir)
        subdirs = []
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if entry.name not in HEAVY_DIRS and not rules.ignored(rel, True):
                    subdirs.append(rel)
            elif not rules.ignored(rel, False):
                yield rel, entry
        stack.extend(reversed(subdirs))
