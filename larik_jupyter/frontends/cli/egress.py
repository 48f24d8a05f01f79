"""`larik-jupyter egress SESSION`: what a session sent to model providers, from its ledger."""

from __future__ import annotations

import argparse
import sys

from larik_jupyter.api import (
    PolicyRecord,
    by_turn,
    ledger_path,
    load_entries,
    numbered_calls,
    read_ledger,
    resolve_session,
)
from larik_jupyter.api import encode_ledger_record as encode
from larik_jupyter.api import render_ledger as render

_ID_HELP = "a session id (this directory's sessions are searched first) or the path of a session file"


def _cmd_egress(args: argparse.Namespace) -> int:
    path = resolve_session(args.id)
    records = read_ledger(ledger_path(path))
    if args.json:
        # JSON lines, as the ledger holds them: one record a line, oldest first.
        sys.stdout.writelines(encode(record).decode() + "\n" for record in records)
        return 0
    turns = by_turn(records)
    rules = [f"{r.target}: {r.policy} (set in the notebook {r.time})" for r in records if isinstance(r, PolicyRecord)]
    if rules:
        print("Rules the notebook set:", *rules, sep="\n  ")
    for turn in turns:
        withheld = "; withheld " + ", ".join(f"{n} ×{c}" for n, c in turn.withheld.items()) if turn.withheld else ""
        print(f"prompt {turn.prompt}: {turn.sent()}, {turn.bytes:,} bytes to {', '.join(turn.destinations)}{withheld}")
    print()
    print(render(records, calls=numbered_calls(e.message for e in load_entries(path).entries if e.message is not None)))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `egress` to the `larik-jupyter` parser."""
    p = sub.add_parser(
        "egress",
        help="print what a session sent to model providers: bytes per request by source, and what was withheld",
    )
    p.add_argument("id", metavar="SESSION", help=_ID_HELP)
    p.add_argument("--json", action="store_true", help="print the ledger's records as JSON lines (one object a line, as the ledger file holds them)")
    p.set_defaults(func=_cmd_egress)
