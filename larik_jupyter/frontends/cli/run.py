"""`larik-jupyter run`: one headless turn with the plain-text front end."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import threading

from larik_jupyter.api import Agent, TextLog, TurnOutcome


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        help="run one agent turn headless",
        description=(
            "Run one agent turn in a terminal, in the same sessions the notebook uses. "
            "Without --yes, tool calls that would ask for permission are denied."
        ),
    )
    p.add_argument("--cwd", default=os.getcwd(), help="working directory (default: current)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--continue", dest="continue_latest", action="store_true",
                       help="continue the session of the directory last written to")
    which.add_argument("--session", metavar="ID", help="continue this session (id or file path)")
    p.add_argument("--model", metavar="M", help="PROVIDER:MODEL, e.g. anthropic:claude-sonnet-4-6")
    p.add_argument("--yes", action="store_true", help="allow tool calls that would ask")
    p.add_argument("prompt", nargs="+", help="the prompt")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    # The same session object every front end drives (`Agent`), with the plain-text view.
    agent = Agent(args.cwd, session=args.session, continue_latest=args.continue_latest, model=args.model, yes=args.yes)
    for notice in agent.notices:
        print(f"! {notice}", file=sys.stderr)
    agent.subscribe(TextLog(sys.stdout))
    stopped = threading.Event()

    def interrupt() -> None:
        stopped.set()
        agent.stop()

    async def turn() -> TurnOutcome:
        # Ctrl-C stops the turn as the notebook's Stop does: a running command's process group
        # is killed at once and the transcript records the interruption; asyncio's own handler
        # would cancel the turn but leave the command running until it finished.
        loop = asyncio.get_running_loop()
        handled = threading.current_thread() is threading.main_thread()  # signals reach only it
        if handled:
            loop.add_signal_handler(signal.SIGINT, interrupt)
        try:
            return await agent.arun(" ".join(args.prompt))
        finally:
            if handled:
                loop.remove_signal_handler(signal.SIGINT)

    try:
        outcome = asyncio.run(turn())
    finally:
        agent.close()
    print(f"session {agent.session_id} ({agent.session_path})", file=sys.stderr)
    if stopped.is_set():
        print(
            f"Interrupted: the turn was stopped; continue with `larik-jupyter run --session {agent.session_id} PROMPT`.",
            file=sys.stderr,
        )
        return 130
    return 0 if outcome.status == "done" else 1
