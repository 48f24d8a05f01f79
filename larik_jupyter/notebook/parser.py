"""Parsing `%larik` / `%%larik`: plain text is a prompt, a leading `/word` is a command."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass, field
from typing import NoReturn

from larik_jupyter.errors import LarikError


class MagicUsageError(LarikError):
    """Bad magic arguments; the message ends with the command's usage."""


@dataclass(frozen=True)
class Prompt:
    text: str
    model: str | None = None
    new: bool = False
    yes: bool = False
    expand: bool = False


@dataclass(frozen=True)
class Command:
    name: str
    args: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class CommandSpec:
    usage: str
    help: str


COMMANDS: dict[str, CommandSpec] = {
    "new": CommandSpec("/new [--model M]", "start a new session in this directory"),
    "sessions": CommandSpec("/sessions", "browse this directory's sessions"),
    "resume": CommandSpec("/resume [ID | --last]", "resume a session (the latest with --last)"),
    "fork": CommandSpec("/fork", "branch the current session at its end and continue there"),
    "rewind": CommandSpec("/rewind N", "branch before prompt N and put it in a new cell to edit"),
    "undo": CommandSpec("/undo", "revert the file changes of the newest turn that made any"),
    "checkpoints": CommandSpec("/checkpoints", "show the turns that changed files, without undoing"),
    "tree": CommandSpec("/tree", "the fork tree of this directory's sessions"),
    "history": CommandSpec("/history", "render the current session's transcript from disk"),
    "export": CommandSpec("/export [PATH]", "export the transcript as Markdown"),
    "compact": CommandSpec("/compact [instructions]", "summarise the conversation to free context"),
    "clear": CommandSpec("/clear", "start a fresh model context (the session file continues)"),
    "model": CommandSpec("/model [PROVIDER:MODEL]", "show or switch the model"),
    "usage": CommandSpec("/usage", "tokens and cost of this session"),
    "config": CommandSpec("/config [KEY [VALUE]]", "show the merged config, or set a personal value"),
    "lsp": CommandSpec("/lsp", "list the language servers with their state"),
    "delete": CommandSpec("/delete ID", "delete a session with its checkpoints"),
    "stop": CommandSpec("/stop", "stop the running turn"),
    "mcp": CommandSpec("/mcp", "MCP servers with their status and tools"),
    "agents": CommandSpec(
        "/agents [clean | discard NAME]", "subagent worktrees; clean removes merged ones"
    ),
    "debug": CommandSpec("/debug [on | off]", "write a debug trace of events and HTTP bodies"),
    "help": CommandSpec("/help", "list the commands"),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise MagicUsageError(f"{message}. Usage: {self.usage}")


def _parser(usage: str) -> _Parser:
    return _Parser(prog="%larik", usage=usage, add_help=False, exit_on_error=False)


def _prompt_options() -> _Parser:
    p = _parser("%larik [--model M] [--new] [--yes] [--expand] PROMPT")
    p.add_argument("--model")
    p.add_argument("--new", action="store_true")
    p.add_argument("--yes", action="store_true")
    p.add_argument("--expand", action="store_true")
    return p


def _split(text: str, usage: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise MagicUsageError(f"cannot parse arguments ({exc}). Usage: {usage}") from exc


def _leading_options(line: str) -> tuple[list[str], str]:
    """Split `--opt value` words off the front of `line`; the rest is prompt text, verbatim."""
    options: list[str] = []
    rest = line.lstrip()
    while rest.startswith("--"):
        word, _, after = rest.partition(" ")
        options.append(word)
        if word == "--model":
            value, _, after = after.lstrip().partition(" ")
            if not value:
                raise MagicUsageError("--model needs a value such as anthropic:claude-sonnet-4-6.")
            options.append(value)
        rest = after.lstrip()
    return options, rest


def parse_magic(line: str, cell: str | None = None) -> Prompt | Command:
    """Parse a line magic (`cell` None) or a cell magic (options on `line`, text in `cell`)."""
    if cell is not None and line.strip().startswith("/"):
        return _parse_command(line.strip())
    body = line if cell is None else cell
    options_text, text = (_leading_options(line) if cell is None else (_split(line, ""), cell))
    stripped = (text if cell is None else body).strip()
    if stripped.startswith("/"):
        if options_text:
            raise MagicUsageError("Options go after the command, e.g. `%larik /new --model M`.")
        return _parse_command(stripped)
    try:
        opts = _prompt_options().parse_args(options_text)
    except argparse.ArgumentError as exc:
        raise MagicUsageError(f"{exc}. Usage: %larik [--model M] [--new] [--yes] [--expand] PROMPT") from exc
    if not stripped:
        raise MagicUsageError("Nothing to send: write a prompt after %larik, or `%larik /help`.")
    return Prompt(text=stripped, model=opts.model, new=opts.new, yes=opts.yes, expand=opts.expand)


def _parse_command(text: str) -> Command:
    head, _, rest = text[1:].partition(" ")
    head = head.strip()
    rest = rest.strip()
    spec = COMMANDS.get(head)
    if spec is None:
        raise MagicUsageError(f"Unknown command /{head}; `%larik /help` lists the commands.")
    if head == "compact":
        return Command("compact", {"instructions": rest})
    if head == "config":
        key, _, value = rest.partition(" ")
        return Command("config", {"key": key or None, "value": value.strip() or None})
    words = _split(rest, spec.usage)
    p = _parser(spec.usage)
    if head == "new":
        p.add_argument("--model")
    elif head == "resume":
        p.add_argument("id", nargs="?")
        p.add_argument("--last", action="store_true")
    elif head == "rewind":
        p.add_argument("n", type=int)
    elif head == "export":
        p.add_argument("path", nargs="?")
    elif head == "model":
        p.add_argument("model", nargs="?")
    elif head == "delete":
        p.add_argument("id")
    elif head == "agents":
        p.add_argument("action", nargs="?", choices=["clean", "discard"])
        p.add_argument("name", nargs="?")
    elif head == "debug":
        p.add_argument("state", nargs="?", choices=["on", "off"])
    try:
        args = vars(p.parse_args(words))
    except argparse.ArgumentError as exc:
        raise MagicUsageError(f"{exc}. Usage: {spec.usage}") from exc
    if head == "resume" and args["id"] and args["last"]:
        raise MagicUsageError(f"Give a session id or --last, not both. Usage: {spec.usage}")
    if head == "agents" and (args["action"] == "discard") != bool(args["name"]):
        raise MagicUsageError(
            f"Name one worktree to discard, e.g. /agents discard task-1a2b3c. Usage: {spec.usage}"
        )
    if head == "rewind" and args["n"] < 1:
        raise MagicUsageError(f"Prompts are numbered from 1. Usage: {spec.usage}")
    return Command(head, args)


def help_text() -> str:
    """One line per command, for `/help`."""
    entries = [("PROMPT", "send a prompt (%%larik: the cell body is the prompt)")]
    entries += [(spec.usage, spec.help) for spec in COMMANDS.values()]
    width = max(len(usage) for usage, _ in entries)
    rows = [f"%larik {usage:<{width}}  {what}" for usage, what in entries]
    rows.insert(1, "  options: --model M  --new  --yes (allow asks)  --expand ({x} becomes the value of x)")
    return "\n".join(rows)
