"""`larik-jupyter checkpoints ID` and `larik-jupyter undo ID`: a session's undo history from a terminal."""

from __future__ import annotations

import argparse

from larik_jupyter import paths
from larik_jupyter.checkpoint.store import CheckpointStore
from larik_jupyter.cli import CliError
from larik_jupyter.session.catalog import resolve, session_cwd
from larik_jupyter.session.reader import session_id_of
from larik_jupyter.session.store import Session, SessionLockedError


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
    store = _open_store(args.session)
    turns = store.turns()
    if not turns:
        print(f"Session {store.session_id} has no checkpoints.")
    for turn in turns:
        when = turn.time.astimezone().strftime("%Y-%m-%d %H:%M:%S")
        variables = f", {len(turn.variables)} kernel variable(s)" if turn.variables else ""
        cells = sum(len(nb.cells) for nb in turn.notebooks)
        variables += f", {cells} notebook cell(s)" if cells else ""
        print(f"{turn.label}  {when}  {len(turn.files)} file(s){variables}")
        for info in turn.files:
            if info.existed:
                print(f"  changed  {info.path}  ({info.size} bytes, mode {info.mode or 0:o})")
            else:
                print(f"  created  {info.path}")
        for notebook in turn.notebooks:
            for cell in notebook.cells:
                how = "changed" if cell.existed else "inserted"
                print(f"  {how}  {notebook.path}#{cell.id}  (cell)")
    return 0


def _undo(args: argparse.Namespace) -> int:
    from larik_jupyter.agent.undo import record_note, undo_note, undo_turn  # kernel_undo: on use

    session_file = resolve(args.session)
    store = _open_store(args.session)
    try:
        session = Session.open(session_file)
    except SessionLockedError:
        raise CliError(
            f"Session {store.session_id} is open in another process (a kernel or `larik-jupyter "
            "run`); undo it there (`%larik /undo`), or close it and run this again."
        ) from None
    with session:
        # The same path as `/undo` and `Agent.undo`: files, cells, variables, then the note
        # the next prompt of this session carries.
        result = undo_turn(store, force=args.force, skip_changed=args.skip_changed)
        if note := undo_note(result):
            record_note(session, session.state.pending_note, note, None)
    if result.changed:
        print(f"{result.label.capitalize()} of session {store.session_id} was not undone: these "
              "files changed since that turn, and undoing it would overwrite those changes:")
        for path in result.changed:
            print(f"  changed since  {path}")
        print(f"Run `larik-jupyter undo {store.session_id} --force` to restore them anyway (the later "
              f"changes are lost), or `--skip-changed` to keep them as they are and undo the rest.")
        return 1
    print(f"Undid {result.label} of session {store.session_id} in {store.root}:")
    for path in result.restored:
        print(f"  restored  {path}")
    for path, count, where in result.restored_cells:
        print(f"  restored  {count} cell(s) of {path} in {where}")
    for path in result.skipped:
        print(f"  kept      {path}: changed since the turn, left as it is")
    for path, reason in result.refused:
        print(f"  refused   {path}: {reason}")
    for path in result.removed_dirs:
        print(f"  removed   {path}/ (created by the turn)")
    for path, reason in result.kept_dirs:
        print(f"  kept      {path}/: {reason}")
    if result.variables:
        print(f"  {result.variables_text()}")
    if not result.ok:
        print("The snapshot was kept; fix the refused paths and run undo again.")
        return 1
    return 0


def _open_store(id_or_path: str) -> CheckpointStore:
    session_file = resolve(id_or_path)
    return CheckpointStore(session_id_of(session_file), paths.project_root(session_cwd(session_file)))
