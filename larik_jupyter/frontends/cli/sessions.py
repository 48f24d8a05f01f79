"""`larik-jupyter ls|show|export|check|fork|rewind|rm|tree`: sessions from a terminal."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from larik_jupyter.api import (
    LarikError,
    TreeNode,
    UnknownSessionError,
    all_session_files,
    cost_label,
    delete_session,
    export_markdown,
    fork_after,
    fork_label,
    fork_session,
    fork_tree,
    list_sessions,
    load_entries,
    redactor_for,
    render_markdown,
    resolve_session,
    rewind_session,
    session_info,
    sessions_dir,
)
from larik_jupyter.api import replay_state as replay

_ID_HELP = "a session id (YYYYMMDD-HHMMSS-xxxxxx; this directory's sessions are searched first) or the path of a session file"


def _print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def _cmd_ls(args: argparse.Namespace) -> int:
    items = list_sessions(args.cwd or os.getcwd())
    if args.json:
        _print_json([i.model_dump(mode="json") for i in items])
        return 0
    if not items:
        print(f"No sessions for {os.path.abspath(args.cwd or os.getcwd())}.")
        return 0
    ids = {i.id for i in items}
    for i in items:
        label = fork_label(i.fork_of, i.fork_prompt, i.fork_of not in ids, name_source=True)
        fork = f"  {label}" if label else ""
        damage = "  DAMAGED (run `larik-jupyter check`)" if i.error else ""
        cost = f"  {cost_label(i.cost)}"
        print(f"{i.id}  {i.message_count:>5} msgs  {i.size / 1024:>8.1f} KB{cost}{fork}{damage}  {i.first_prompt or ''}")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    path = resolve_session(args.id)
    result = load_entries(path)
    if args.json:
        state = replay(result.entries)
        _print_json(
            {
                "session": session_info(path).model_dump(mode="json"),
                "prompt_positions": state.prompt_positions,
                "entries": [result.entries.raw(i) for i in range(len(result.entries))],
            }
        )
    else:
        sys.stdout.write(render_markdown(path, result.entries, redactor=redactor_for(os.getcwd())))
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    target = export_markdown(resolve_session(args.id), args.path, cwd=os.getcwd(), redactor=redactor_for(os.getcwd()))
    print(target)
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    if args.id is not None and args.all:
        raise UnknownSessionError("Give either a session id or --all, not both.")
    if args.id is not None:
        files = [resolve_session(args.id)]
    elif args.all:
        files = all_session_files()
    else:
        files = sorted(sessions_dir(os.getcwd()).glob("*.jsonl"))
    bad = 0
    for path in files:
        try:
            result = load_entries(path)
            for _ in result.entries:  # builds every model: the full schema check
                pass
        except LarikError as exc:  # damaged, or not a regular file
            bad += 1
            # A report of many files goes to stdout; the one file asked about fails on stderr.
            print(exc, file=sys.stderr if args.id is not None else sys.stdout)
            continue
        torn = f", torn tail of {result.size - result.torn_tail} bytes" if result.torn_tail is not None else ""
        print(f"ok {path} ({len(result.entries)} entries{torn})")
    if not files:
        print("No sessions to check.")
    return 1 if bad else 0


def _cmd_fork(args: argparse.Namespace) -> int:
    src = resolve_session(args.id)
    if args.at_message is not None:
        new = fork_session(src, args.at_message)
    else:
        new = fork_after(src, args.prompt_number)
    print(f"{new.name.removesuffix('.jsonl')}\n{new}")
    return 0


def _cmd_rewind(args: argparse.Namespace) -> int:
    new, prompt = rewind_session(resolve_session(args.id), args.prompt_number)
    print(f"{new.name.removesuffix('.jsonl')}\n{new}\nPrompt {args.prompt_number} was:\n{prompt}")
    return 0


def _cmd_rm(args: argparse.Namespace) -> int:
    path = delete_session(args.id)
    print(f"Deleted {path.name.removesuffix('.jsonl')} ({path})")
    return 0


def _print_tree(nodes: list[TreeNode], indent: str = "", parent: str | None = None) -> None:
    for node in nodes:
        # A branch listed beside its source (made inside the prompts its source copied) names it.
        label = fork_label(node.fork_of, node.fork_prompt, node.parent_deleted, name_source=node.fork_of != parent)
        shared = node.fork_prompt or 0  # the copied prompts are listed once, under the source
        flags = "".join(
            [
                f" ({label})" if label else "",
                " (no prompt yet)" if len(node.prompts) == shared and not node.error else "",
                " [interrupted]" if node.interrupted else "",
                " [damaged]" if node.error else "",
            ]
        )
        print(f"{indent}{node.id}{flags}")
        # The prompt number is what `fork --at` takes, the message position in brackets what `fork --at-message` takes.
        for n, prompt in enumerate(node.prompts[shared:], shared + 1):
            print(f"{indent}  {n}. [{prompt.position}] {prompt.first_line}")
        _print_tree(node.children, indent + "    ", node.id)


def _node_json(node: TreeNode) -> dict[str, Any]:
    """A node as `tree --json` prints it: with its session file's path, which the REST API leaves out."""
    return {**node.model_dump(mode="json", exclude={"children"}), "path": node.path,
            "children": [_node_json(child) for child in node.children]}


def _cmd_tree(args: argparse.Namespace) -> int:
    roots = fork_tree(args.cwd or os.getcwd())
    if args.json:
        _print_json([_node_json(n) for n in roots])
    elif not roots:
        print(f"No sessions for {os.path.abspath(args.cwd or os.getcwd())}.")
    else:
        _print_tree(roots)
    return 0


def _directory(text: str) -> Path:
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory")
    return Path(text)


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def add_at(parser: argparse._ActionsContainer, what: str) -> None:
    """`--at N`, the one meaning it has in every command: after prompt N (1-based)."""
    parser.add_argument(
        "--at", metavar="N", dest="prompt_number", type=_positive_int, help=f"{what} after prompt N (1-based)"
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the session commands to the `larik-jupyter` parser."""
    p = sub.add_parser("ls", help="list the sessions of a working directory, last written to first")
    p.add_argument("--cwd", type=_directory, help="working directory (default: the current one)")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=_cmd_ls)

    p = sub.add_parser("show", help="print a session's transcript as Markdown")
    p.add_argument("id", metavar="ID", help=_ID_HELP)
    p.add_argument("--json", action="store_true", help="print the summary and raw entries as JSON")
    p.set_defaults(func=_cmd_show)

    p = sub.add_parser(
        "export",
        help="write a session's transcript as Markdown",
        description="Write the transcript as Markdown to PATH, or to ./.larik/exports/<id>.md. Never overwrites.",
    )
    p.add_argument("id", metavar="ID", help=_ID_HELP)
    p.add_argument("path", metavar="PATH", nargs="?", help="output file (refused if it exists)")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser(
        "check",
        help="validate session files; exits 1 naming the line of any damage",
        description="Validate one session, this directory's sessions (default), or all sessions (--all).",
    )
    p.add_argument("id", metavar="ID", nargs="?", help=_ID_HELP)
    p.add_argument("--all", action="store_true", help="check every session of every directory")
    p.set_defaults(func=_cmd_check)

    p = sub.add_parser(
        "fork",
        help="branch a session into a new one; prints the new id and path",
        description="Copy the session up to the end of prompt N (--at N; default: all of it) into a new session. "
        "--at-message N instead copies the first N messages; N must be a turn boundary: the end, or the message "
        "position of a prompt (in brackets in `larik-jupyter tree`), and a damaged session's error names one. "
        "The source is not touched.",
    )
    p.add_argument("id", metavar="ID", help=_ID_HELP)
    at = p.add_mutually_exclusive_group()
    add_at(at, "branch")
    at.add_argument("--at-message", metavar="N", type=_non_negative,
                    help="branch at message position N instead, a turn boundary as `tree` shows it in brackets "
                    "(with neither flag: at the end)")
    p.set_defaults(func=_cmd_fork)

    p = sub.add_parser(
        "rewind",
        help="branch just before prompt N and print that prompt for editing",
        description="Branch just before prompt N (1-based, as numbered by `larik-jupyter tree`).",
    )
    p.add_argument("id", metavar="ID", help=_ID_HELP)
    p.add_argument("prompt_number", metavar="N", type=int, help="prompt number, 1 for the first prompt")
    p.set_defaults(func=_cmd_rewind)

    p = sub.add_parser("rm", help="delete a session with its subagent transcripts, traces and checkpoints")
    p.add_argument("id", metavar="ID", help=_ID_HELP)
    p.set_defaults(func=_cmd_rm)

    p = sub.add_parser("tree", help="show which session forked from which, with each session's prompts")
    p.add_argument("--cwd", type=_directory, help="working directory (default: the current one)")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=_cmd_tree)
