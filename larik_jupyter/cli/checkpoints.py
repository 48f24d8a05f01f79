"""`larik-jupyter checkpoints ID` and `larik-jupyter undo ID`: a session's undo history from a terminal."""

from __future__ import annotations

import argparse

from larik_jupyter import paths
from larik_jupyter.checkpoint.store import CheckpointStore
from larik_jupyter.session.catalog import resolve, session_cwd
from larik_jupyter.session.reader import session_id_of


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `checkpoints` and `undo` commands."""
    listing = subparsers.add_parser(
        "checkpoints", help="list a session's turns and the files each changed"
    )
    listing.add_argument("session", metavar="ID", help="session id or path to a session .jsonl")
    listing.set_defaults(func=_list)
    undo = subparsers.add_parser("undo", help="undo a session's newest turn that changed files")
    undo.add_argument("session", metavar="ID", help="session id or path to a session .jsonl")
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
    store = _open_store(args.session)
    result = store.undo()
    print(f"Undid {result.label} of session {store.session_id} in {store.root}:")
    for path in result.restored:
        print(f"  restored  {path}")
    for path, count, where in result.restored_cells:
        print(f"  restored  {count} cell(s) of {path} in {where}")
    for path, reason in result.refused:
        print(f"  refused   {path}: {reason}")
    for path in result.removed_dirs:
        print(f"  removed   {path}/ (created by the turn)")
    for path, reason in result.kept_dirs:
        print(f"  kept      {path}/: {reason}")
    if result.variables:
        result.lost_variables = result.variables  # only the kernel that ran the turn holds them
        print(f"  {result.variables_text()}")
    if not result.ok:
        print("The snapshot was kept; fix the refused paths and run undo again.")
        return 1
    return 0


def _open_store(id_or_path: str) -> CheckpointStore:
    session_file = resolve(id_or_path)
    return CheckpointStore(session_id_of(session_file), paths.project_root(session_cwd(session_file)))
