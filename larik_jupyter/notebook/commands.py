"""The `/commands` of `%larik`: each declared once with `@command` (syntax, help, arguments and
handler together, see `command_registry.py`); parsing, dispatch and `/help` all come from that
registry, and importing this module registers the handlers.

A handler takes the kernel's `KernelSession`, an `Output` to write to, and its parsed
arguments as keywords. Handlers never touch IPython, so they run against a KernelSession
without a shell (tests hand them a recording Output).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from larik_jupyter.errors import LarikError
from larik_jupyter.notebook.command_registry import (
    COMMANDS,
    HELP_WIDTH,
    PROMPT_USAGE,
    Command,
    HelpTable,
    MagicUsageError,
    Output,
    UsageParser,
    arg,
    command,
    help_text,
    parse_command,
    run,
    runs_off_main_thread,
    split_words,
)
from larik_jupyter.notebook.kernel import KernelSession
from larik_jupyter.plural import counted

__all__ = [
    "COMMANDS", "HELP_WIDTH", "PROMPT_USAGE", "Command", "HelpTable", "MagicUsageError", "Output",
    "UsageParser", "help_text", "parse_command", "run", "runs_off_main_thread", "split_words",
]

# Parsing runs at every `%larik`, also the first: what the handlers need loads when they run.


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:80]


# -- sessions and branches -------------------------------------------------------------------


@command("/new [--model M]", "start a new session in this directory", arg("--model"))
def _new(kernel: KernelSession, out: Output, *, model: str | None) -> None:
    agent = kernel.new(model=model)
    out.markdown(f"New session `{agent.session_id}` with `{agent.model}`.")


@command("/sessions", "browse this directory's sessions")
def _sessions(kernel: KernelSession, out: Output) -> None:
    from larik_jupyter.notebook.widgets.sessions import SessionsBrowser

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
    from larik_jupyter.session.catalog import UnknownSessionError

    try:
        agent = kernel.resume(id, last=last or id is None)
    except UnknownSessionError:
        raise LarikError(
            f"No session {id!r} here; list this directory's sessions with `%larik /sessions` "
            "and resume one by its id (YYYYMMDD-HHMMSS-xxxxxx)."
        ) from None
    if not agent.branched_from:  # else its opening notice said which branch it continues on
        turns = len(agent.records.turns)
        out.markdown(f"Resumed session `{agent.session_id}` ({turns} turn{'' if turns == 1 else 's'}, `{agent.model}`).")
    _history(kernel, out)


@command("/fork", "branch the current session at its end and continue there")
def _fork(kernel: KernelSession, out: Output) -> None:
    source = kernel.require().session_id
    path = kernel.fork()
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
    code = kernel.rewind(prompt_number, files=files, force=force, skip_changed=skip_changed)
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
    from larik_jupyter.notebook.widgets.session_widget import refresh_all
    from larik_jupyter.notebook.widgets.undo import UndoPanel

    if session is not None and (done := kernel.undo_in(session, prompt_number, force=force, skip_changed=skip_changed)):
        out.markdown(done)
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
    from larik_jupyter.notebook.widgets.undo import UndoPanel

    kernel.held_agent(session) if session is not None else kernel.require()  # says why not, when neither
    out.show(UndoPanel(kernel, session=session))


@command("/tree", "the fork tree of this directory's sessions")
def _tree(kernel: KernelSession, out: Output) -> None:
    from larik_jupyter.notebook.widgets.tree import ForkTreeWidget

    out.show(ForkTreeWidget(kernel))


@command("/history", "render the current session's transcript from disk")
def _history(kernel: KernelSession, out: Output) -> None:
    from larik_jupyter.notebook.render import parts_from_entries, render_parts

    agent = kernel.require()
    # Cells named by where they stand now: in the open notebook, else in the file.
    parts = parts_from_entries(agent.entries, position=agent.cell_position())
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
    from larik_jupyter.notebook.widgets.check import CheckWidget

    out.show(CheckWidget(kernel, kernel.check(path, timeout, network=network)))


@command("/export [PATH]", "export the transcript as Markdown", arg("path", nargs="?"))
def _export(kernel: KernelSession, out: Output, *, path: str | None) -> None:
    out.markdown(f"Exported to `{kernel.export(None, path)}`.")


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
    written = kernel.to_notebook(
        None, path, prompt_number=prompt_number, include_shell=include_shell, include_undone=include_undone
    )
    out.markdown(f"Wrote the branch as the notebook `{written}`; open it to read or re-run the analysis.")


@command("/delete ID", "delete a session with its checkpoints", arg("id"))
def _delete(kernel: KernelSession, out: Output, *, id: str) -> None:
    path = kernel.delete(id)
    out.markdown(f"Deleted session `{path.stem}` with its checkpoints.")


# -- the model context -----------------------------------------------------------------------


@command("/compact [instructions]", "summarise the conversation to free context",
         parse=lambda rest: {"instructions": rest})
def _compact(kernel: KernelSession, out: Output, *, instructions: str) -> None:
    summary = kernel.require().compact(instructions)
    out.markdown(f"Compacted the conversation. Summary:\n\n> {summary.replace(chr(10), chr(10) + '> ')}")


@command("/clear", "start a fresh model context (the session file continues)")
def _clear(kernel: KernelSession, out: Output) -> None:
    kernel.require().clear()
    out.markdown("Started a fresh model context; the session file continues.")


@command("/model [PROVIDER:MODEL]", "show or switch the model", arg("model", nargs="?"))
def _model(kernel: KernelSession, out: Output, *, model: str | None) -> None:
    if model:
        out.markdown(f"Model is now `{kernel.ensure(model=model).model}`.")
    elif kernel.agent is not None:
        out.markdown(f"Model: `{kernel.agent.model}`.")
    else:
        out.markdown("No session yet; the next prompt picks the model from the config (see `/config`).")


@command("/usage", "tokens and cost of this session")
def _usage(kernel: KernelSession, out: Output) -> None:
    from larik_jupyter.llm.pricing import cost_label

    records = kernel.require().records
    u = records.usage
    # A server that reports no usage: the counts are our estimate, and unpriced.
    price = " (tokens estimated, price unknown)" if u.estimated else f", {cost_label(records.cost)}"
    about = "about " if u.estimated else ""
    out.markdown(
        f"Session `{records.session_id}`: {about}{u.input_tokens:,} input, {u.output_tokens:,} output, "
        f"{u.cache_read_tokens:,} cache read, {u.cache_write_tokens:,} cache write tokens{price}."
    )


EGRESS_USAGE = "/egress [TARGET POLICY | --local-only on|off | --show N]"


def _egress_args(rest: str) -> dict[str, object]:
    words = split_words(rest, EGRESS_USAGE)
    if not words:
        return {"target": None, "policy": None, "local_only": None}
    if words[0] == "--show":
        if len(words) != 2 or not words[1].isdigit():
            raise MagicUsageError(f"--show takes a call's number, as /egress names it. Usage: {EGRESS_USAGE}")
        return {"target": None, "policy": None, "local_only": None, "show": int(words[1])}
    if words[0] == "--local-only":
        if len(words) != 2 or words[1] not in ("on", "off"):
            raise MagicUsageError(f"--local-only takes on or off. Usage: {EGRESS_USAGE}")
        return {"target": None, "policy": None, "local_only": words[1] == "on"}
    if len(words) < 2:
        raise MagicUsageError(
            f"say what may leave of {words[0]}: never, schema, stats, sample N [mask COL,COL] or full. "
            f"Usage: {EGRESS_USAGE}"
        )
    return {"target": words[0], "policy": " ".join(words[1:]), "local_only": None}


@command(
    EGRESS_USAGE,
    "what of a variable or file may be sent to the model (never, schema, stats, sample N [mask COL,…], "
    "full); alone: the rules and the last turn's ledger of bytes sent; --show N: what call N had withheld",
    parse=_egress_args,
)
def _egress(
    kernel: KernelSession, out: Output, *, target: str | None, policy: str | None, local_only: bool | None,
    show: int | None = None,
) -> None:
    if show is not None:
        from larik_jupyter.notebook.egress_show import show_call

        out.markdown(show_call(kernel.require(), show))
    elif target is not None and policy is not None:
        out.markdown(kernel.ensure().set_egress(target, policy))
    elif local_only is not None:
        out.markdown(kernel.ensure().set_local_only(local_only))
    else:
        if kernel.agent is not None:
            said = kernel.agent.egress_report()
        else:
            from larik_jupyter.egress.report import render, rule_lines

            said = render([], rule_lines(kernel.egress_policies(), origins=True))
        # What outside agents working in this kernel (over MCP) were sent, each its own session.
        for agent in kernel.outside.values():
            if agent is not kernel.agent:
                said += f"\n\n**Outside agent `{agent.model}`** (session `{agent.session_id}`): {agent.egress_totals()}"
        out.markdown(said)


def _key_value(rest: str) -> dict[str, object]:
    key, _, value = rest.partition(" ")
    return {"key": key or None, "value": value.strip() or None}


@command("/config [KEY [VALUE]]", "show the merged config, or set a personal value", parse=_key_value)
def _config(kernel: KernelSession, out: Output, *, key: str | None, value: str | None) -> None:
    from larik_jupyter.config.layers import load_config
    from larik_jupyter.config.report import render
    from larik_jupyter.config.update import parse_setting_value, set_user_setting

    if key and value is not None:
        parsed = parse_setting_value(value)
        set_user_setting(key, parsed)
        out.markdown(f"Set `{key}` = `{json.dumps(parsed)}` in your personal config.")
        return
    out.preformatted(render(load_config(kernel.cwd), key))


# -- servers, subagents, the running turn ----------------------------------------------------


@command("/lsp", "list the language servers with their state")
def _lsp(kernel: KernelSession, out: Output) -> None:
    from larik_jupyter.config.layers import load_config
    from larik_jupyter.lsp.manager import LspManager

    if kernel.agent is not None:
        states = kernel.agent.lsp_status()
    else:
        loaded = load_config(kernel.cwd)
        states = LspManager.from_config(loaded.config, loaded.root).states()
    if not states:
        out.markdown(
            "No language server is configured: add one under `lspServers` in the config, "
            "or put `pylsp` or `pyright-langserver` on PATH for Python."
        )
        return
    rows = ["| server | state | pid | starts | open files | command | log |", "|---|---|---|---|---|---|---|"]
    for s in states:
        state = s.state + (f": {_cell(s.detail)}" if s.detail else "")
        rows.append(
            f"| {_cell(s.name)} | {state} | {s.pid or ''} | {s.starts} | {s.open_files} "
            f"| `{_cell(s.command)}` | `{s.log}` |"
        )
    out.markdown("\n".join(rows))


@command("/stop", "stop the running turn")
def _stop(kernel: KernelSession, out: Output) -> None:
    if kernel.agent is None or not kernel.agent.running:
        out.markdown("No turn is running.")
        return
    kernel.agent.stop()
    out.markdown("Stopping the running turn.")


@command("/mcp", "MCP servers with their status and tools")
def _mcp(kernel: KernelSession, out: Output) -> None:
    from larik_jupyter.agent.mcp import McpManager
    from larik_jupyter.agent.mcp_status import status_table
    from larik_jupyter.config.layers import load_config
    from larik_jupyter.notebook.widgets.trust import TrustWidget

    loaded = load_config(kernel.cwd)
    if kernel.agent is not None:
        statuses = kernel.agent.mcp_status()
    else:  # nothing started: show what the config declares and what awaits approval
        statuses = McpManager.from_config(loaded).statuses()
    out.markdown(status_table(statuses))
    if loaded.pending:
        out.show(TrustWidget(kernel, loaded.pending))


def _discard_needs_a_name(args: dict[str, Any]) -> str | None:
    if (args["action"] == "discard") != bool(args["name"]):
        return "Name one worktree to discard, e.g. /agents discard task-1a2b3c."
    return None


@command(
    "/agents [clean | discard NAME]",
    "subagent worktrees; clean removes merged ones",
    arg("action", nargs="?", choices=["clean", "discard"]),
    arg("name", nargs="?"),
    check=_discard_needs_a_name,
)
def _agents(kernel: KernelSession, out: Output, *, action: str | None, name: str | None) -> None:
    from larik_jupyter import paths
    from larik_jupyter.agent.worktree import clean_worktrees, list_worktrees, remove_worktree

    root = paths.project_root(kernel.cwd)
    if action == "discard":
        info = remove_worktree(root, str(name))
        out.markdown(f"Discarded worktree `{info.name}` and its branch `{info.branch}`.")
        return
    if action == "clean":
        removed = clean_worktrees(root)
        names = ", ".join(f"`{i.name}`" for i in removed) or "none"
        out.markdown(f"Removed {counted(len(removed), 'merged worktree')}: {names}.")
    rows = ["| worktree | branch | merged | changes |", "|---|---|---|---|"]
    rows += [
        f"| `{i.path}` | `{i.branch}` | {'yes' if i.merged else 'no'} | {_cell(i.changes)} |"
        for i in list_worktrees(root)
    ]
    out.markdown("\n".join(rows) if len(rows) > 2 else "No subagent worktrees in this project.")


@command("/debug [on | off]", "write a debug trace of events and HTTP bodies",
         arg("state", nargs="?", choices=["on", "off"]))
def _debug(kernel: KernelSession, out: Output, *, state: str | None) -> None:
    agent = kernel.require()
    if state == "on":
        out.markdown(f"Debug trace on: writing `{agent.trace(True)}`.")
    elif state == "off":
        stopped = agent.trace(False)
        out.markdown(f"Debug trace off; it is in `{stopped}`." if stopped else "No trace was on.")
    else:
        out.markdown(f"Debug trace on: `{agent.tracing}`." if agent.tracing else "Debug trace off (`/debug on`).")


@command("/plan", "the current plan (the agent's todo_write checklist)")
def _plan(kernel: KernelSession, out: Output) -> None:
    from larik_jupyter.notebook.render import render_plan

    agent = kernel.require()
    plan = agent.plan
    if plan is None:
        out.markdown(f"Session `{agent.session_id}` has no plan yet; the agent makes one with `todo_write`.")
        return
    out.markdown(f"Plan of session `{agent.session_id}`:\n\n{render_plan(plan)}")


@command("/skills", "the skills found, personal and from the repository")
def _skills(kernel: KernelSession, out: Output) -> None:
    from larik_jupyter import paths
    from larik_jupyter.config.instructions import display_path
    from larik_jupyter.config.skills import load_skills

    skills = load_skills(paths.project_root(kernel.cwd))
    if not skills:
        personal = display_path(paths.config_dir() / "skills")
        out.markdown(
            f"No skills found: put a folder with a `SKILL.md` in `{personal}/` "
            "(personal) or `.larik/skills/` in the project (repository)."
        )
        return
    rows = ["| skill | source | description | folder |", "|---|---|---|---|"]
    for s in skills:
        about = _cell(s.description)
        if s.error is not None:
            reason = s.error.replace("|", "\\|")
            about = f"**broken**: {reason}"
        elif s.shadowed:
            about = f"*hidden by the personal skill of the same name* · {about}"
        rows.append(f"| {_cell(s.name)} | {s.source} | {about} | `{s.folder}` |")
    out.markdown("\n".join(rows))


@command("/help", "list the commands")
def _help(kernel: KernelSession, out: Output) -> None:
    out.show(HelpTable())
