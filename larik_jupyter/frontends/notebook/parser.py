"""Parsing `%larik` / `%%larik`: plain text is a prompt, a leading `/word` is a command
(parsed by the command registry, `commands.parse_command`)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from larik_jupyter.frontends.notebook.commands import (
    PROMPT_USAGE,
    Command,
    MagicUsageError,
    UsageParser,
    parse_command,
    split_words,
)
from larik_jupyter.frontends.notebook.output_binding import name_refusal

__all__ = ["Command", "MagicUsageError", "Prompt", "parse_magic"]


@dataclass(frozen=True)
class Prompt:
    text: str
    model: str | None = None
    new: bool = False
    yes: bool = False
    expand: bool = False
    context: bool = True
    attach: tuple[str, ...] = ()
    output: str | None = None
    replace: bool = False


# Options that take a value, and an example of it for the error when it is missing.
_VALUE_OPTIONS = {"--model": "anthropic:claude-sonnet-4-6", "--with": "df,fig,data.csv", "-o": "out"}


def prompt_options() -> UsageParser:
    """The prompt's options (`--model`, `--yes`, `-o`, …), for parsing and the reference pages."""
    p = UsageParser(PROMPT_USAGE)
    p.add_argument("--model")
    p.add_argument("--new", action="store_true")
    p.add_argument("--yes", action="store_true")
    p.add_argument("--expand", action="store_true")
    p.add_argument("--no-context", action="store_true")
    p.add_argument("--with", dest="attach", action="append", default=[])
    p.add_argument("-o", dest="output")
    p.add_argument("--replace", action="store_true")
    return p


def _output_name(name: str | None, replace: bool) -> str | None:
    """The variable `-o NAME` binds the outcome to; a name it may never bind is refused, and
    so is `--replace` without `-o`."""
    if name is None and replace:
        raise MagicUsageError("--replace goes with -o NAME: it lets the outcome replace an existing variable NAME.")
    problem = name_refusal(name) if name is not None else None
    if problem is not None:
        raise MagicUsageError(problem)
    return name


def _attach_names(values: list[str]) -> tuple[str, ...]:
    """`--with a,b --with c` as ("a", "b", "c"); an empty name is refused."""
    names = tuple(name.strip() for value in values for name in value.split(","))
    if any(not name for name in names):
        raise MagicUsageError(
            "--with takes names separated by commas, e.g. `--with df,fig,data.csv`; one was empty."
        )
    return tuple(dict.fromkeys(names))


def _leading_options(line: str) -> tuple[list[str], str]:
    """Split `--opt value` words off the front of `line`; the rest is prompt text, verbatim."""
    options: list[str] = []
    rest = line.lstrip()
    while rest.startswith("--") or rest.split(" ", 1)[0] == "-o":
        word, _, after = rest.partition(" ")
        options.append(word)
        if word in _VALUE_OPTIONS:
            value, _, after = after.lstrip().partition(" ")
            if not value:
                raise MagicUsageError(f"{word} needs a value such as {_VALUE_OPTIONS[word]}.")
            options.append(value)
        rest = after.lstrip()
    return options, rest


def parse_magic(line: str, cell: str | None = None) -> Prompt | Command:
    """Parse a line magic (`cell` None) or a cell magic (options on `line`, text in `cell`)."""
    if cell is not None and line.strip().startswith("/"):
        return parse_command(line.strip())
    body = line if cell is None else cell
    options_text, text = (_leading_options(line) if cell is None else (split_words(line, ""), cell))
    stripped = (text if cell is None else body).strip()
    if stripped.startswith("/"):
        if options_text:
            raise MagicUsageError("Options go after the command, e.g. `%larik /new --model M`.")
        return parse_command(stripped)
    try:
        opts = prompt_options().parse_args(options_text)
    except argparse.ArgumentError as exc:
        raise MagicUsageError(f"{exc}. Usage: {PROMPT_USAGE}") from exc
    if not stripped:
        raise MagicUsageError("Nothing to send: write a prompt after %larik, or `%larik /help`.")
    return Prompt(
        text=stripped,
        model=opts.model,
        new=opts.new,
        yes=opts.yes,
        expand=opts.expand,
        context=not opts.no_context,
        attach=_attach_names(opts.attach),
        output=_output_name(opts.output, opts.replace),
        replace=opts.replace,
    )
