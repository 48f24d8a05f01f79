"""The `/commands` of `%larik`: each declared once with `@command` (syntax, help, arguments and
handler together, see `command_registry.py`); parsing, dispatch and `/help` all come from that
registry, and importing this module registers the handlers: the session commands (`/new`,
`/resume`, `/rewind`, `/undo`, `/export`, ..., in `session_commands.py`) first, then those
declared here: the model context (`/compact`, `/clear`, `/model`, `/usage`), what may leave
(`/egress`), the config, the servers, subagents and the running turn, and `/help`.

A handler takes the kernel's `KernelSession`, an `Output` to write to, and its parsed
arguments as keywords. Handlers never touch IPython, so they run against a KernelSession
without a shell (tests hand them a recording Output).
"""

from __future__ import annotations

import json
from typing import Any

from larik_jupyter.api import counted
from larik_jupyter.frontends.notebook import session_commands  # noqa: F401 - registers the session commands (first in `/help`)
from larik_jupyter.frontends.notebook.command_registry import (
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
from larik_jupyter.frontends.notebook.kernel import KernelSession

__all__ = [
    "COMMANDS", "HELP_WIDTH", "PROMPT_USAGE", "Command", "HelpTable", "MagicUsageError", "Output",
    "UsageParser", "help_text", "parse_command", "run", "runs_off_main_thread", "split_words",
]

# Parsing runs at every `%larik`, also the first: what the handlers need loads when they run.


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:80]


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
    from larik_jupyter.api import cost_label

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
        from larik_jupyter.frontends.notebook.egress_show import show_call

        out.markdown(show_call(kernel.require(), show))
    elif target is not None and policy is not None:
        out.markdown(kernel.ensure().egress.set(target, policy))
    elif local_only is not None:
        out.markdown(kernel.ensure().egress.local_only(local_only))
    else:
        if kernel.agent is not None:
            said = kernel.agent.egress.report()
        else:
            from larik_jupyter.api import render_ledger as render
            from larik_jupyter.api import rule_lines

            said = render([], rule_lines(kernel.egress_policies(), origins=True))
        # What outside agents working in this kernel (over MCP) were sent, each its own session.
        for agent in kernel.sessions.outside:
            said += f"\n\n**Outside agent `{agent.model}`** (session `{agent.session_id}`): {agent.egress.totals()}"
        out.markdown(said)


def _key_value(rest: str) -> dict[str, object]:
    key, _, value = rest.partition(" ")
    return {"key": key or None, "value": value.strip() or None}


@command("/config [KEY [VALUE]]", "show the merged config, or set a personal value", parse=_key_value)
def _config(kernel: KernelSession, out: Output, *, key: str | None, value: str | None) -> None:
    from larik_jupyter.api import load_config, parse_setting_value, set_user_setting
    from larik_jupyter.api import render_config as render

    if key and value is not None:
        parsed = parse_setting_value(value)
        set_user_setting(key, parsed)
        out.markdown(f"Set `{key}` = `{json.dumps(parsed)}` in your personal config.")
        return
    out.preformatted(render(load_config(kernel.cwd), key))


# -- servers, subagents, the running turn ----------------------------------------------------


@command("/lsp", "list the language servers with their state")
def _lsp(kernel: KernelSession, out: Output) -> None:
    from larik_jupyter.api import LspManager, load_config

    if kernel.agent is not None:
        states = kernel.agent.servers.lsp()
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
    from larik_jupyter.api import McpManager, load_config, status_table
    from larik_jupyter.frontends.notebook.widgets.trust import TrustWidget

    loaded = load_config(kernel.cwd)
    if kernel.agent is not None:
        statuses = kernel.agent.servers.mcp()
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
    from larik_jupyter.api import (
        clean_worktrees,
        list_worktrees,
        project_root,
        remove_worktree,
    )

    root = project_root(kernel.cwd)
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
    from larik_jupyter.frontends.notebook.render import render_plan

    agent = kernel.require()
    plan = agent.history.plan
    if plan is None:
        out.markdown(f"Session `{agent.session_id}` has no plan yet; the agent makes one with `todo_write`.")
        return
    out.markdown(f"Plan of session `{agent.session_id}`:\n\n{render_plan(plan)}")


@command("/receipts", "what the agent's joins, filters and groups did to the rows, newest first")
def _receipts(kernel: KernelSession, out: Output) -> None:
    from larik_jupyter.api import receipt_text

    agent = kernel.require()
    found = agent.history.receipts()
    if not found:
        out.markdown(f"Session `{agent.session_id}` has no receipts yet: the agent's `python` and `notebook_run` "
                     "calls leave one for each join, filter, group or concat they run on a frame.")
        return
    rows = ["| prompt | variable | receipt |", "|---|---|---|"]
    for number, receipt in found:  # each line whole: it is what the person came to read
        said = receipt_text(receipt, bound=False).replace("|", "\\|")
        rows.append(f"| {number} | {_cell(receipt.variable or '')} | {said} |")
    out.markdown("\n".join(rows))


@command("/skills", "the skills found, personal and from the repository")
def _skills(kernel: KernelSession, out: Output) -> None:
    from larik_jupyter.api import config_dir, display_path, load_skills, project_root

    skills = load_skills(project_root(kernel.cwd))
    if not skills:
        personal = display_path(config_dir() / "skills")
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
