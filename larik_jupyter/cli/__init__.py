"""`larik-jupyter`: inspect and manage sessions from a terminal.

Each command family lives in its own module exposing ``register(subparsers)``; a
command sets ``func(args) -> int`` on its parser.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from larik_jupyter.errors import LarikError

# Modules that contribute subcommands, in help order.
_COMMAND_MODULES = ("sessions", "checkpoints", "config", "run")


class CliError(LarikError):
    """A user mistake: printed as one line, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="larik-jupyter",
        description="Inspect and manage larik_jupyter agent sessions stored in Larik's on-disk layout.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(f"larik_jupyter.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"larik_jupyter.cli.{name}":
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
        print(f"larik-jupyter: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
