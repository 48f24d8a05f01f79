"""The `@command` registry of `%larik`'s `/commands`: each declared once (syntax, help,
arguments and handler together); parsing, dispatch and `/help` all come from it. The handlers
are in `commands.py`, which registers them on import.
"""

from __future__ import annotations

import argparse
import html
import shlex
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from larik_jupyter.api import LarikError
from larik_jupyter.frontends.notebook.kernel import KernelSession, Show
from larik_jupyter.frontends.notebook.markdown_text import MarkdownText, Preformatted


class MagicUsageError(LarikError):
    """Bad magic arguments; the message ends with the command's usage."""


@dataclass(frozen=True)
class Command:
    """A parsed `/command`: its name and its arguments by name."""

    name: str
    args: dict[str, object] = field(default_factory=dict)


class Output:
    """Where a command writes: Markdown text and displayable objects (widgets), shown in the
    running cell by `show` (IPython's `display` in a kernel; a list's `append` in a test)."""

    def __init__(self, show: Show) -> None:
        self._show = show

    def markdown(self, text: str) -> None:
        self._show(MarkdownText(text))

    def preformatted(self, text: str) -> None:
        self._show(Preformatted(text))

    def show(self, value: object) -> None:
        self._show(value)


Handler = Callable[..., None]


@dataclass(frozen=True)
class Arg:
    """One argparse argument of a command: its name or flags and `add_argument` keywords."""

    flags: tuple[str, ...]
    options: dict[str, Any]


def arg(*flags: str, **options: Any) -> Arg:
    return Arg(flags, options)


@dataclass(frozen=True)
class CommandSpec:
    """A command as declared: `usage` (`/name ARGS`), one line of `help`, its arguments, and
    `parse` for a command that takes the rest of the line as free text instead."""

    name: str
    usage: str
    help: str
    handler: Handler
    arguments: tuple[Arg, ...] = ()
    parse: Callable[[str], dict[str, object]] | None = None
    check: Callable[[dict[str, Any]], str | None] | None = None
    off_main_thread: bool = False


COMMANDS: dict[str, CommandSpec] = {}


def command(
    usage: str,
    help: str,
    *arguments: Arg,
    parse: Callable[[str], dict[str, object]] | None = None,
    check: Callable[[dict[str, Any]], str | None] | None = None,
    off_main_thread: bool = False,
) -> Callable[[Handler], Handler]:
    """Register the decorated handler as the command `usage` names (`/name …`); `check`
    returns a complaint about parsed arguments argparse cannot express, or None. An
    `off_main_thread` command runs off the kernel's main thread when a cell holds only it: it
    may wait for the browser (undo restores cells of open notebooks through the bridge), whose
    replies the main thread delivers, or run long (a /check Jupyter's interrupt stops)."""

    def register(handler: Handler) -> Handler:
        name = usage.split()[0].removeprefix("/")
        COMMANDS[name] = CommandSpec(name, usage, help, handler, arguments, parse, check, off_main_thread)
        return handler

    return register


class UsageParser(argparse.ArgumentParser):
    """argparse for `%larik`: an error is a MagicUsageError ending with the usage, never an exit."""

    def __init__(self, usage: str) -> None:
        super().__init__(prog="%larik", usage=usage, add_help=False, exit_on_error=False)

    def error(self, message: str) -> NoReturn:
        raise MagicUsageError(f"{message}. Usage: {self.usage}")


def split_words(text: str, usage: str) -> list[str]:
    """Shell-like words of `text`; unbalanced quotes are a usage error."""
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise MagicUsageError(f"cannot parse arguments ({exc}). Usage: {usage}") from exc


def parse_command(text: str) -> Command:
    """Parse `/name ARGS` (the leading slash included) against the registry."""
    head, _, rest = text.strip()[1:].partition(" ")
    spec = COMMANDS.get(head.strip())
    if spec is None:
        raise MagicUsageError(f"Unknown command /{head.strip()}; `%larik /help` lists the commands.")
    if spec.parse is not None:
        return Command(spec.name, spec.parse(rest.strip()))
    parser = UsageParser(spec.usage)
    for argument in spec.arguments:
        parser.add_argument(*argument.flags, **argument.options)
    try:
        args = vars(parser.parse_args(split_words(rest, spec.usage)))
    except argparse.ArgumentError as exc:
        raise MagicUsageError(f"{exc}. Usage: {spec.usage}") from exc
    complaint = spec.check(args) if spec.check is not None else None
    if complaint:
        raise MagicUsageError(f"{complaint} Usage: {spec.usage}")
    return Command(spec.name, args)


def run(kernel: KernelSession, command: Command, out: Output) -> None:
    """Run a parsed command's handler."""
    COMMANDS[command.name].handler(kernel, out, **command.args)


def runs_off_main_thread(command: Command) -> bool:
    """Whether a cell holding only this command runs it off the main thread (see `command`)."""
    return COMMANDS[command.name].off_main_thread


PROMPT_USAGE = (
    "%larik [--model M] [--new] [--yes] [--expand] [--no-context] [--with NAME[,NAME…]] "
    "[-o NAME [--replace]] PROMPT"
)


# `/help` as text fits this many columns (a terminal, a text-only front end).
HELP_WIDTH = 100
_PROMPT_OPTIONS = (
    "options: --model M  --new  --yes (allow asks)  --expand ({x} becomes the value of x)  "
    "--no-context (no notebook context this time)  --with NAME[,NAME…] (attach variables, figures "
    "or files)  -o NAME (bind the turn's outcome to NAME; a variable -o did not bind is replaced "
    "only with --replace, and /undo puts it back)"
)


def _help_entries() -> list[tuple[str, str]]:
    """`/help`'s rows: a usage (empty: the prompt's options) and what it does."""
    entries = [("PROMPT", "send a prompt (%%larik: the cell body is the prompt)"), ("", _PROMPT_OPTIONS)]
    return entries + [(spec.usage, spec.help) for spec in COMMANDS.values()]


def help_text() -> str:
    """One row per command, for `/help`: usages aligned, what each does wrapped beside it to
    `HELP_WIDTH` columns."""
    entries = _help_entries()
    width = max(len(usage) for usage, _ in entries)
    indent = " " * (len("%larik ") + width + 2)
    rows = []
    for usage, what in entries:
        first = f"%larik {usage:<{width}}  " if usage else indent
        rows.append(textwrap.fill(what, HELP_WIDTH, initial_indent=first, subsequent_indent=indent, break_on_hyphens=False))
    return "\n".join(rows)


class HelpTable:
    """`/help` as a table whose right column wraps to the output's width (HTML), and as
    `help_text` where only text shows."""

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        # JupyterLab lets a <code> wrap at its spaces: a usage stays on one line.
        usage_html = '<code style="white-space: nowrap">%larik {}</code>'
        rows = "".join(
            f'<tr><td style="vertical-align: top; text-align: left">'
            f"{usage_html.format(html.escape(usage)) if usage else ''}</td>"
            f'<td style="text-align: left">{html.escape(what)}</td></tr>'
            for usage, what in _help_entries()
        )
        return {"text/html": f'<table class="larik-help">{rows}</table>', "text/plain": help_text()}
