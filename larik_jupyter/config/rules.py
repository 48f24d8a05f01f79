"""Permission rules: `tool` or `tool(pattern)`, and the allow/ask/deny decision for a tool call.

A rule names a tool (fnmatch wildcards allowed, case-insensitive, so Claude's `Bash(...)` works;
a tool may answer to more names, `Tool.rule_names`, such as Claude's `MultiEdit`) and optionally
an argument pattern, matched against what the tool says its call acts on (`CallSubject`, from
`Tool.rule_subject`), never against a list of tool names kept here:

- `bash(PATTERN)`: `PATTERN:*` covers any command starting with those words; `*` every command;
  anything else exactly that command (`*` in it is literal, as the shell would expand it). A
  chain (`a && b; c | d`) is covered only when every command in it is; a prefix never covers a
  command with `$(...)` or backticks.
- a tool that acts on a path (`read(src/**)`, `write(*.md)`, `notebook_run(./a.ipynb)`, …):
  gitignore-style glob against that path relative to the project root; a pattern starting with `./` is anchored at the project root
  (`./a.txt` is that file only, not `a.txt` at any depth); one starting with `/` or `~/` is an
  absolute path.
- a tool whose subject is code (`python(PATTERN)`): a glob over the code.
- any other tool: only the tool name is matched; a pattern other than `*` never matches.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from typing import Literal

import pathspec

from larik_jupyter import paths
from larik_jupyter.errors import LarikError

Decision = Literal["allow", "ask", "deny"]

_RULE = re.compile(r"^([^()\s]+)(?:\((.*)\))?$", re.S)
_SUBSTITUTION = ("$(", "`")
# Parentheses split too, so the commands inside `$(...)`, `<(...)` and subshells are checked.
_SEPARATOR_CHARS = frozenset(";&|\n()")


class RuleError(LarikError):
    """A permission rule that cannot be parsed."""


@dataclass(frozen=True)
class CallSubject:
    """What permission rules read of a tool call, as its tool declares it (`Tool.rule_subject`):
    the names a rule may call the tool by, and at most one argument a rule's pattern matches:
    a shell `command`, Python `code`, or the `path` the call acts on. One answer for the
    configured rules, an "always allow" answer and the scoping of a call to a notebook."""

    names: tuple[str, ...]
    command: str | None = None
    code: str | None = None
    path: str | None = None


def _tool_key(name: str) -> str:
    return name.strip().lower()


@lru_cache(maxsize=2048)
def _tokens(command: str) -> tuple[str, ...]:
    """Shell words and control operators; quotes are honoured, newlines separate commands."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|<>()\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    # A `#` mid-word is not a comment in bash; treating none as comments is the safe side.
    lexer.commenters = ""
    try:
        return tuple(lexer)
    except ValueError:  # unbalanced quotes: fall back to plain words
        return tuple(command.split())


def _is_separator(token: str) -> bool:
    return bool(token) and set(token) <= _SEPARATOR_CHARS


def _segments(command: str) -> list[list[str]]:
    """The simple commands of a chain, each as its list of words."""
    segments: list[list[str]] = [[]]
    for token in _tokens(command):
        if _is_separator(token):
            segments.append([])
        else:
            segments[-1].append(token)
    return [s for s in segments if s] or [[]]


@dataclass(frozen=True)
class _Call:
    """A tool call reduced to what rules look at."""

    names: tuple[str, ...]
    command: str | None = None
    segments: tuple[tuple[str, ...], ...] = ()
    relative: str | None = None  # path relative to the project root; None when outside it
    absolute: str | None = None
    code: str | None = None

    @classmethod
    def of(cls, subject: CallSubject, root: Path, cwd: Path) -> _Call:
        names = tuple(_tool_key(name) for name in subject.names)
        if subject.command is not None:
            command = subject.command
            return cls(names, command=command, segments=tuple(tuple(s) for s in _segments(command)))
        if subject.code is not None:
            return cls(names, code=subject.code)
        if subject.path is not None:
            absolute = os.path.normpath(os.path.join(cwd, os.path.expanduser(subject.path)))
            try:
                relative: str | None = Path(absolute).relative_to(root).as_posix()
            except ValueError:
                relative = None
            return cls(names, relative=relative, absolute=Path(absolute).as_posix())
        return cls(names)


@dataclass(frozen=True)
class Rule:
    """One parsed permission rule."""

    text: str
    tool: str
    pattern: str | None = None

    def matches(
        self,
        subject: CallSubject,
        *,
        root: str | os.PathLike[str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> bool:
        """Whether this rule covers the whole call (for bash: every command of a chain)."""
        return self._applies(call_of(subject, root, cwd), all)

    def touches(self, call: _Call) -> bool:
        """Whether this rule applies to any part of the call; how deny and ask rules match."""
        return self._applies(call, any)

    def _applies(self, call: _Call, segments: Callable[[Iterable[bool]], bool]) -> bool:
        """Whether the rule names the call's tool and matches its argument; for a bash chain,
        the whole command or, by `segments` (`all`: covers, `any`: touches), its commands."""
        if not self._names(call):
            return False
        if call.command is not None and self.pattern not in (None, "*"):
            return self._whole_command(call) or segments(self._segment(s) for s in call.segments)
        return self._argument(call)

    def _names(self, call: _Call) -> bool:
        return any(fnmatchcase(name, self.tool) for name in call.names)

    def _whole_command(self, call: _Call) -> bool:
        """An exact rule for the whole command, as an "always allow" answer stores it."""
        assert self.pattern is not None and call.command is not None
        return not self.pattern.endswith(":*") and _tokens(self.pattern) == _tokens(call.command)

    def _segment(self, words: tuple[str, ...]) -> bool:
        assert self.pattern is not None
        # A quoted `"$(...)"` or a backtick stays inside one word, yet the shell runs it.
        if any(mark in word for word in words for mark in _SUBSTITUTION):
            return False
        if self.pattern.endswith(":*"):
            prefix = _tokens(self.pattern[:-2])
            return bool(prefix) and words[: len(prefix)] == prefix
        # No globbing: an "always allow" for `rm -f *.log` must not cover `rm -f anything`.
        return words == _tokens(self.pattern)

    def _argument(self, call: _Call) -> bool:
        pattern = self.pattern
        if pattern is None or pattern == "*":
            return True
        if call.absolute is not None:
            return _path_matches(pattern, call)
        return call.code is not None and fnmatchcase(call.code, pattern)


def _path_matches(pattern: str, call: _Call) -> bool:
    if pattern == "**":
        return True
    if pattern.startswith("./"):
        pattern = "/" + pattern[2:]  # gitignore's own anchor: relative to the root only
    elif pattern.startswith(("/", "~/")):
        absolute = os.path.expanduser(pattern).lstrip("/")
        return call.absolute is not None and _glob(absolute, call.absolute.lstrip("/"))
    return bool(call.relative) and call.relative != "." and _glob(pattern, call.relative or "")


@lru_cache(maxsize=512)
def _spec(pattern: str) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines([pattern])


def _glob(pattern: str, path: str) -> bool:
    return _spec(pattern).match_file(path)


@lru_cache(maxsize=1024)
def parse_rule(text: str) -> Rule:
    """Parse `tool` or `tool(pattern)`; raise RuleError naming the rule when it is malformed."""
    found = _RULE.match(text.strip()) if isinstance(text, str) else None
    if not found or not found.group(1):
        raise RuleError(
            f"Permission rule {text!r} is malformed; write a tool name with an optional "
            "argument pattern, e.g. `bash(git status:*)` or `write(src/**)`."
        )
    tool, pattern = found.group(1), found.group(2)
    if pattern is not None and not pattern.strip():
        pattern = None
    return Rule(text=text, tool=_tool_key(tool), pattern=pattern.strip() if pattern else None)


def call_of(
    subject: CallSubject,
    root: str | os.PathLike[str] | None,
    cwd: str | os.PathLike[str] | None,
) -> _Call:
    cwd_path = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
    root_path = Path(os.path.abspath(root)) if root is not None else paths.project_root(cwd_path)
    return _Call.of(subject, root_path, cwd_path)


def allowed(call: _Call, rules: Iterable[Rule]) -> bool:
    """Every command of a bash chain must be covered, possibly by different allow rules."""
    return bool(allowing(call, rules))


def allowing(call: _Call, rules: Iterable[Rule]) -> list[str]:
    """The allow rules that together cover `call` (one per command of a bash chain that needs
    its own), in their order; empty when they do not cover it."""
    named = [r for r in rules if r._names(call)]
    if call.command is None:
        return [r.text for r in named if r._argument(call)][:1]
    whole = [r.text for r in named if r.pattern in (None, "*") or r._whole_command(call)]
    if whole:
        return whole[:1]
    covering = [next((r.text for r in named if r._segment(s)), None) for s in call.segments]
    if not covering or None in covering:
        return []
    return list(dict.fromkeys(text for text in covering if text is not None))
