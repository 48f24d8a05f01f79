"""`larik-jupyter checkpoints ID` and `larik-jupyter undo ID`: a session's undo history from a terminal."""

from __future__ import annotations

import argparse

from larik_jupyter.api import (
    CheckpointStore,
    SessionLockedError,
    counted,
    project_root,
    session_cwd,
    session_id_of,
)
from larik_jupyter.api import resolve_session as resolve
from larik_jupyter.frontends.cli import CliError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `checkpoints` and `undo` commands."""
    listing = subparsers.add_parser(
        "checkpoints", help="list a session's turns and the files each changed"
    )
    listing.add_argument("session", metavar="ID", help="session id or path to a session .jsonl")
    listing.set_defaults(func=_list)
    undo = subparsers.add_parser("undo", help="undo a session's newest turn that changed files")
    undo.add_argument("session", metavar="ID", help="session id or path to a session .jsonl")
    changed = undo.add_mutually_exclusive_group()
    changed.add_argument(
        "--force", action="store_true",
        help="restore files changed since the turn anyway (those later changes are lost)",
    )
    changed.add_argument(
        "--skip-changed", action="store_true",
        help="keep files changed since the turn as they are and undo the rest",
    )
    undo.set_defaults(func=_undo)


def _list(args: argparse.Namespace) -> int:
    # The session's undo list, as every view reads it (agent.undo_list), oldest first.
    from larik_jupyter.api import cell_name, undo_list

    session_file = resolve(args.session)
    store = _open_store(args.session)
    listed = undo_list(store, session_file)
    if not listed.turns:
        print(f"Session {store.session_id} has no checkpoints.")
    for entry in reversed(listed.turns):
        turn = entry.info
        when = turn.time.astimezone().strftime("%Y-%m-%d %H:%M:%S")
        variables = f", {counted(len(turn.variables), 'kernel variable')}" if turn.variables else ""
        cells = sum(len(nb.cells) for nb in turn.notebooks)
        variables += f", {counted(cells, 'notebook cell')}" if cells else ""
        print(f"{turn.label}  {when}  {counted(len(turn.files), 'file')}{variables}")
        if entry.note:
            print(f"  {entry.note}")
        for info in turn.files:
            if info.existed:
                print(f"  changed  {info.path}  ({info.size} bytes, mode {info.mode or 0:o})")
            else:
                print(f"  created  {info.path}")
        for notebook in turn.notebooks:
            for cell in notebook.cells:
                print(f"  {'changed' if cell.existed else 'inserted'}  {cell_name(notebook.path, cell)}")
    return 0


def _undo(args: argparse.Namespace) -> int:
    # The same session object and undo path as `%larik /undo` and `Agent.undo`: files, cells,
    # variables, then the note the next prompt of this session carries.
    from larik_jupyter.api import Agent

    session_file = resolve(args.session)
    session_id = session_id_of(session_file)
    try:
        agent = Agent(session_cwd(session_file), session=str(session_file), for_turns=False)
    except SessionLockedError:
        raise CliError(
            f"Session {session_id} is open in another process (a kernel or `larik-jupyter "
            "run`); undo it there (`%larik /undo`), or close it and run this again."
        ) from None
    try:
        report = agent.undo(force=args.force, skip_changed=args.skip_changed)
    finally:
        agent.close()
    print(f"Session {session_id} in {project_root(session_cwd(session_file))}:")
    print(report.plain(f"larik-jupyter undo {session_id}"))
    return 0 if report.ok else 1


def _open_store(id_or_path: str) -> CheckpointStore:
    session_file = resolve(id_or_path)
    return CheckpointStore(session_id_of(session_file), project_root(session_cwd(session_file)))
