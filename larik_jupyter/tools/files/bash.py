"""The bash tool: a shell command in the working directory, with what it changed outside the checkpoints."""

from __future__ import annotations

import glob as globmod
import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from larik_jupyter.config.rules import CallSubject
from larik_jupyter.egress.tags import files_tag
from larik_jupyter.errors import ToolError
from larik_jupyter.tools.base import Tool, ToolResult
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.files.process import MAX_OUTPUT, run_command
from larik_jupyter.tools.files.snapshot import Snapshot, changes, take_snapshot

if TYPE_CHECKING:
    from larik_jupyter.session.call_summary import CellPosition

DEFAULT_TIMEOUT = 120
MAX_TIMEOUT = 600
MAX_LISTED = 50
MAX_NAMED = 200  # files a command's words may name, for its result's egress tag


class BashTool(Tool):
    name = "bash"
    preview_is_call = True
    description = (
        "Run a shell command (bash -c) in the working directory; stdout and stderr come back "
        f"together, cut to {MAX_OUTPUT} characters. The command and its children are killed "
        f"after timeout seconds (default {DEFAULT_TIMEOUT}, at most {MAX_TIMEOUT}). Files the "
        "command changes cannot be undone unless listed in checkpoint_paths (files, directories "
        "or glob patterns), which are saved before it runs."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The shell command."},
            "timeout": {
                "type": "number",
                "description": f"Seconds before it is killed (default {DEFAULT_TIMEOUT}).",
            },
            "checkpoint_paths": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Files the command will change, saved first so undo can restore them.",
            },
        },
        "required": ["command"],
    }

    def preview(self, env: Env, args: dict[str, Any]) -> str:
        return f"$ {args.get('command', '')}"

    def rule_subject(self, args: Mapping[str, Any]) -> CallSubject:
        """Rules match the command (`bash(git status:*)`), each command of a chain."""
        return CallSubject((self.name, *self.rule_names), command=str(args.get("command", "")))

    def approval_question(
        self, args: Mapping[str, Any], preview: str, namespace: Mapping[str, Any] | None,
        position: CellPosition | None,
    ) -> tuple[str, str]:
        return "Run this shell command?", preview

    @classmethod
    def doer(cls) -> str:
        return "the shell"

    @classmethod
    def shell_command(cls, args: Mapping[str, Any]) -> str | None:
        return str(args.get("command", ""))

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        command: str = args["command"]
        if not command.strip():
            raise ToolError("The command is empty; pass a shell command to run.")
        timeout = DEFAULT_TIMEOUT if args.get("timeout") is None else args["timeout"]
        if not 0 < timeout <= MAX_TIMEOUT:
            raise ToolError(f"timeout must be between 0 and {MAX_TIMEOUT} seconds, got {timeout}.")
        targets = sorted(
            {
                *expand_paths(env, env.checkpoint_paths, env.root),
                *expand_paths(env, args.get("checkpoint_paths") or [], env.cwd),
            }
        )
        env.capture(targets)
        captured = {env.rel(p) for p in targets}
        before = _snapshot(env, captured)
        outcome = run_command(command, env.cwd, timeout, env.call.stop_event)
        after = _snapshot(env, captured)

        found = changes(before, after)
        uncaptured = [(path, change) for path, change in found if path not in captured]
        parts = [outcome.output.rstrip("\n")] if outcome.output.strip() else ["(no output)"]
        if outcome.timed_out:
            parts.append(
                f"[timed out after {timeout:g} s; the command and its child processes were killed]"
            )
        elif outcome.interrupted:
            parts.append(
                "[interrupted by the user; the command and its child processes were killed]"
            )
        elif outcome.exit_code:
            parts.append(f"[exit code {outcome.exit_code}]")
        if outcome.lingering:
            parts.append("[background processes kept running; their later output is not shown]")
        if uncaptured:
            parts.append(_uncaptured_note(uncaptured))
        if not (before.complete and after.complete):
            parts.append(
                "[the project has too many files to check them all for changes; some changes may be unlisted]"
            )
        failed = outcome.timed_out or outcome.interrupted or bool(outcome.exit_code)
        # Tagged with the restricted project files the command names (`cat secret/notes.txt`,
        # `head data/*`); any other file it read is left to the door's search.
        named = files_in_command(command, env.cwd, env.root)
        tag = files_tag(env.egress, env.root, [rel for rel in named if env.egress.for_file(rel).policy.restricted])
        return ToolResult(
            "\n".join(parts), is_error=failed, uncaptured=uncaptured, egress=tag or None
        )


def files_in_command(command: str, cwd: Path, root: Path) -> list[str]:
    """The files inside `root` that the words of a shell command name (relative to `cwd` or
    absolute; a glob expanded; `--opt=PATH` and `<PATH` too), at most `MAX_NAMED`, as POSIX
    paths relative to `root`."""
    try:
        words = shlex.split(command, comments=False)
    except ValueError:
        words = command.split()
    found: list[str] = []
    for word in words:
        word = word.lstrip("<>0123456789&").partition("=")[2] or word.lstrip("<>0123456789&")
        if not word or len(word) > 4096 or "\0" in word:
            continue
        named = globmod.glob(word, root_dir=cwd)[:MAX_NAMED] if globmod.has_magic(word) else [word]
        for name in named:
            path = Path(os.path.realpath(cwd / name))
            try:
                if path.is_relative_to(root) and path.is_file():
                    found.append(path.relative_to(root).as_posix())
            except OSError:
                continue
        if len(found) >= MAX_NAMED:
            break
    return list(dict.fromkeys(found))[:MAX_NAMED]


def expand_paths(env: Env, patterns: list[str], base: Path) -> list[Path]:
    """The files named by checkpoint paths: plain paths (existing or not), directories and globs."""
    found: list[Path] = []
    for pattern in patterns:
        if globmod.has_magic(pattern):
            full = pattern if os.path.isabs(pattern) else str(base / pattern)
            matches = [Path(m) for m in globmod.glob(full, recursive=True)]
            found += [env.resolve(str(m)) for m in matches if not m.is_dir()]
            continue
        path = env.resolve(pattern, base=base)
        if path.is_dir():
            found += [env.resolve(str(f)) for f in path.rglob("*") if not f.is_dir()]
        else:
            found.append(path)
    return found


def _snapshot(env: Env, captured: set[str]) -> Snapshot:
    """The project snapshot, plus the captured files even where git ignores them."""
    snap = take_snapshot(env.root)
    for rel in captured:
        try:
            st = os.stat(env.root / rel, follow_symlinks=False)
        except OSError:
            snap.files.pop(rel, None)
            continue
        snap.files[rel] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return snap


def _uncaptured_note(uncaptured: list[tuple[str, str]]) -> str:
    lines = [f"  {change}: {path}" for path, change in uncaptured[:MAX_LISTED]]
    if len(uncaptured) > MAX_LISTED:
        lines.append(f"  … and {len(uncaptured) - MAX_LISTED} more")
    return (
        "Files the command changed outside the checkpoints, not undoable "
        "(name them in checkpoint_paths next time to make such changes undoable):\n"
        + "\n".join(lines)
    )
