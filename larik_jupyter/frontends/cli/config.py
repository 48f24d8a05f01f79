"""`larik-jupyter config` and `larik-jupyter approve`: the merged config and its trust gate."""

from __future__ import annotations

import argparse
import json
import os
import sys

from larik_jupyter.api import approve_pending as approve
from larik_jupyter.api import find_pending, load_config
from larik_jupyter.api import render_config as render
from larik_jupyter.frontends.cli import CliError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    show = sub.add_parser(
        "config",
        help="show the merged config, where each value comes from, and what awaits approval",
        description="Print the effective configuration of a project with each value's source layer.",
    )
    show.add_argument("--cwd", default=os.getcwd(), help="working directory (default: current)")
    show.set_defaults(func=_show)

    ok = sub.add_parser(
        "approve",
        help="approve an MCP server, hook, allow rule or LSP server from a shared config file",
        description=(
            "Show the definition of a pending item from .mcp.json or .larik/settings.json and "
            "approve it; the approval is pinned to its content, so any later change drops it."
        ),
    )
    ok.add_argument("--cwd", default=os.getcwd(), help="working directory (default: current)")
    ok.add_argument("--yes", action="store_true", help="approve without asking for confirmation")
    ok.add_argument("name", metavar="NAME", help="the pending item's name, or KIND:NAME")
    ok.set_defaults(func=_approve)


def _show(args: argparse.Namespace) -> int:
    loaded = load_config(args.cwd)
    print(render(loaded))
    return 0


def _approve(args: argparse.Namespace) -> int:
    item = find_pending(load_config(args.cwd), args.name)
    print(f"{item.kind} {item.name} from {item.layer}:")
    print(json.dumps(item.definition, indent=2, ensure_ascii=False))
    if not args.yes:
        if not sys.stdin.isatty():
            raise CliError(
                f"stdin is not a terminal, so approving {item.key} cannot be confirmed; "
                "rerun with --yes to approve it without a prompt."
            )
        if input(f"Approve {item.key}? [y/N] ").strip().lower() not in ("y", "yes"):
            print("Not approved.")
            return 1
    chosen = approve(args.cwd, item.key)
    print(f"Approved {chosen.key} (sha256 {chosen.hash[:12]}…) in your private project settings.")
    return 0
