"""The `/commands` that open and branch sessions, undo their turns and write them out: `/new`,
`/sessions`, `/resume`, `/fork`, `/rewind`, `/undo`, `/checkpoints`, `/tree`, `/history`,
`/check`, `/export`, `/notebook` and `/delete`, each declared with `@command` (see
`command_registry.py`); `commands.py` imports this module, so they register before the others.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from larik_jupyter.api import LarikError, counted
from larik_jupyter.frontends.notebook.command_registry import Output, arg, command
from larik_jupyter.frontends.notebook.kernel import KernelSession


@command("/new [--model M]", "start a new session in this directory", arg("--model"))
def _new(kernel: KernelSession, out: Output, *, model: str | None) -> None:
    agent = kernel.open(model=model)
    out.markdown(f"New session `{agent.session_id}` with `{agent.model}`.")


@command("/sessions", "browse this directory's sessions")
def _sessions(kernel: KernelSession, out: Output) -> None:
    from larik_jupyter.frontends.notebook.widgets.sessions import SessionsBrowser

    out.show(SessionsBrowser(kernel))


def _one_of_id_or_last(args: dict[str, Any]) -> str | None:
    return "Give a session id or --last, not both." if args["id"] and args["last"] else None


@command(
    "/resume [ID | --last]",
    "resume a session (with --last, the one last written to)",
    arg("id", nargs="?"),
    arg("--last", action="store_true"),
    check=_one_of_id_or_last,
)
def _resume(kernel: KernelSession, out: Output, *, id: str | None, last: bool) -> None:
    from larik_jupyter.api import UnknownSessionError

    try:
        agent = kernel.open(resume=id, latest=last or id is None)
    except UnknownSessionError:
        raise LarikError(
            f"No session {id!r} here; list this directory's sessions with `%larik /sessions` "
            "and resume one by its id (YYYYMMDD-HHMMSS-xxxxxx)."
        ) from None
    if not agent.branched_from:  # else its opening notice said which branch it continues on
        turns = len(agent.records.turns)
        out.markdown(f"Resumed session `{agent.session_id}` ({counted(turns, 'turn')}, `{agent.model}`).")
    _history(kernel, out)


@command("/fork", "branch the current session at its end and continue there")
def _fork(kernel: KernelSession, out: Output) -> None:
    source = kernel.require().session_id
    path = kernel.require().fork()
    out.markdown(f"Forked `{source}` at its end; now on branch `{Path(path).stem}`.")


def _from_one(args: dict[str, Any]) -> str | None:
    number = args.get("prompt_number")
    if number is not None and number < 1:
        return "Prompts are numbered from 1."
    if args.get("force") and args.get("skip_changed"):
        return "Pass --force or --skip-changed, not both."
    return None


# What to do with files and cells the user changed since the turn that is undone.
_CHANGED_ARGS = (arg("--force", action="store_true"), arg("--skip-changed", action="store_true"))


@command(
    "/rewind N [--files [--force | --skip-changed]]",
    "branch before prompt N and put it in a new cell to edit; --files also undoes the turns "
    "from prompt N on (files and kernel variables)",
    arg("prompt_number", metavar="N", type=int),
    arg("--files", action="store_true"),
    *_CHANGED_ARGS,
    check=_from_one,
    off_main_thread=True,
)
def _rewind(
    kernel: KernelSession, out: Output, *, prompt_number: int, files: bool, force: bool, skip_changed: bool
) -> None:
    agent = kernel.require()
    source = agent.session_id
    code = "%%larik\n" + agent.rewind(prompt_number, files=files, force=force, skip_changed=skip_changed)
    placed = kernel.set_next_cell(code) is not False
    where = "in a new cell below" if placed else "below (no front end here to add a cell); copy it into a cell"
    lines = [
        f"Rewound `{source}` to before prompt {prompt_number}; now on branch `{agent.session_id}`. "
        f"The prompt is {where}: edit it and run it."
    ]
    if files and not agent.last_undo:
        lines.append(agent.last_undo.nothing_left(source))
    elif files:
        lines += ["", agent.last_undo.markdown()]
    out.markdown("\n".join(lines))
    if not placed:
        out.preformatted(code)


@command(
    "/undo [--to N] [--force | --skip-changed] [--session ID]",
    "revert the newest turn's file and kernel-variable changes; --to N: every turn down to prompt "
    "N; --force / --skip-changed: restore or keep files you changed since; --session ID: in that "
    "session (an outside agent's, say), the notebook staying on its own",
    arg("--to", dest="prompt_number", type=int),
    *_CHANGED_ARGS,
    arg("--session"),
    check=_from_one,
    off_main_thread=True,
)
def _undo(kernel: KernelSession, out: Output, *, prompt_number: int | None, force: bool, skip_changed: bool,
          session: str | None) -> None:
    from larik_jupyter.api import (
        resolve_session,  # the store loads at first use, not at `%load_ext`
    )
    from larik_jupyter.frontends.notebook.widgets.session_widget import refresh_all
    from larik_jupyter.frontends.notebook.widgets.undo import UndoPanel

    if session is not None and not kernel.is_current(session):
        done = kernel.sessions.undo(prompt_number, session=session, force=force, skip_changed=skip_changed)
        named = resolve_session(session, kernel.cwd).stem  # its id, also when a path named it
        again = f"%larik /undo --session {named}" + (f" --to {prompt_number}" if prompt_number else "")
        out.markdown(f"In session `{named}` (this notebook stays on its own):\n\n" + done.markdown(again))
        refresh_all()  # the sidebar and panels of the sessions it changed
        return
    report = kernel.require().undo(prompt_number, force=force, skip_changed=skip_changed)
    # One report: the panel says what was undone (its static renderings too).
    out.show(UndoPanel(kernel, report))


@command(
    "/checkpoints [--session ID]", "the undo panel: what can be undone, without undoing; --session ID: of a "
    "connected outside agent's session", arg("--session"),
)
def _checkpoints(kernel: KernelSession, out: Output, *, session: str | None) -> None:
    from larik_jupyter.frontends.notebook.widgets.undo import UndoPanel

    kernel.held_agent(session) if session is not None else kernel.require()  # says why not, when neither
    out.show(UndoPanel(kernel, session=session))


@command("/tree", "the fork tree of this directory's sessions")
def _tree(kernel: KernelSession, out: Output) -> None:
    from larik_jupyter.frontends.notebook.widgets.tree import ForkTreeWidget

    out.show(ForkTreeWidget(kernel))


@command("/history", "render the current session's transcript from disk")
def _history(kernel: KernelSession, out: Output) -> None:
    from larik_jupyter.frontends.notebook.render import parts_from_entries, render_parts

    agent = kernel.require()
    # Cells named by where they stand now: in the open notebook, else in the file.
    parts = parts_from_entries(agent.history.entries, position=agent.history.cell_position())
    out.markdown(render_parts(parts) or "This session has no messages yet.")


@command(
    "/check [PATH] [--timeout S] [--network]",
    "run the notebook top to bottom in a scratch kernel: failing cells, hidden state, "
    "out-of-order runs, values that differ from the live kernel (--network: cells may connect out)",
    arg("path", nargs="?"),
    arg("--timeout", type=int, default=600),
    arg("--network", action="store_true"),
    off_main_thread=True,
)
def _check(kernel: KernelSession, out: Output, *, path: str | None, timeout: int, network: bool) -> None:
    from larik_jupyter.frontends.notebook.widgets.check import CheckWidget

    out.show(CheckWidget(kernel, kernel.check(path, timeout, network=network)))


@command("/export [PATH]", "export the transcript as Markdown", arg("path", nargs="?"))
def _export(kernel: KernelSession, out: Output, *, path: str | None) -> None:
    out.markdown(f"Exported to `{kernel.require().export(path)}`.")


@command(
    "/notebook [PATH] [--at N] [--include-shell] [--include-undone]",
    "write the current branch (up to prompt N) as a new runnable notebook; never overwrites; undone "
    "prompts are left out (--include-undone: kept as Markdown cells marked undone, not run)",
    arg("path", nargs="?"),
    arg("--at", dest="prompt_number", type=int),
    arg("--include-shell", action="store_true"),
    arg("--include-undone", action="store_true"),
)
def _notebook(
    kernel: KernelSession, out: Output, *, path: str | None, prompt_number: int | None, include_shell: bool,
    include_undone: bool,
) -> None:
    written = kernel.require().to_notebook(
        path, prompt_number=prompt_number, include_shell=include_shell, include_undone=include_undone
    )
    out.markdown(f"Wrote the branch as the notebook `{written}`; open it to read or re-run the analysis.")


@command("/delete ID", "delete a session with its checkpoints", arg("id"))
def _delete(kernel: KernelSession, out: Output, *, id: str) -> None:
    path = kernel.sessions.delete(id)
    out.markdown(f"Deleted session `{path.stem}` with its checkpoints.")
