"""`larik-jupyter`: inspect and manage sessions from a terminal.

Each command family lives in its own module exposing ``register(subparsers)``; a
command sets ``func(args) -> int`` on its parser.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

from larik_jupyter.api import LarikError

# Modules that contribute subcommands, in help order.
_COMMAND_MODULES = ("sessions", "checkpoints", "config", "run", "analysis", "mcp", "egress")


class CliError(LarikError):
    """A user mistake: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """Reports a bad command line as one line on stderr (argparse's usage block is for --help)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {_one_line(message)} (see `{self.prog} --help`)\n")


def _one_line(text: str) -> str:
    return " ".join(text.split("\n"))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="larik-jupyter",
        description="Inspect and manage larik_jupyter agent sessions stored in Larik's on-disk layout.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(f"larik_jupyter.frontends.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"larik_jupyter.frontends.cli.{name}":
                raise
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except LarikError as exc:
        print(f"larik-jupyter: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:  # the disk or the OS refused (full, permissions): a fact, not a bug
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"larik-jupyter: {_one_line(exc.strerror or str(exc))}{where}.", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
