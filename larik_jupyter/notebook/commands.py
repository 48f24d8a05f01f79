"""The `/commands` of `%larik`; each renders into the cell's output."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.display import display

from larik_jupyter.agent.textlog import format_cost
from larik_jupyter.errors import LarikError
from larik_jupyter.notebook.parser import Command, help_text
from larik_jupyter.notebook.render import parts_from_entries, render_parts
from larik_jupyter.session.export import export_markdown

if TYPE_CHECKING:
    from larik_jupyter.notebook.magics import LarikMagics


def show_markdown(text: str) -> None:
    """Display Markdown that text-only front ends (terminal IPython, jupyter console) print as
    its source, instead of `<IPython.core.display.Markdown object>`."""
    display({"text/markdown": text, "text/plain": text}, raw=True)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:80]


def run(magics: LarikMagics, command: Command) -> None:
    handler = _HANDLERS[command.name]
    handler(magics, command.args)


def _help(magics: LarikMagics, args: dict[str, Any]) -> None:
    show_markdown("```text\n" + help_text() + "\n```")


def _new(magics: LarikMagics, args: dict[str, Any]) -> None:
    agent = magics.ensure_agent(model=args.get("model"), new=True)
    show_markdown(f"New session `{agent.session_id}` with `{agent.model}`.")


def _require_agent(magics: LarikMagics) -> Any:
    if magics.agent is None:
        raise LarikError(
            "No session is open in this kernel yet; send a prompt or `%larik /resume --last` first."
        )
    return magics.agent


def _resume(magics: LarikMagics, args: dict[str, Any]) -> None:
    last = bool(args.get("last")) or args.get("id") is None
    agent = magics.resume_session(args.get("id"), last=last)
    show_markdown(f"Resumed session `{agent.session_id}` ({len(agent.session.turns)} turns, `{agent.model}`).")
    _history(magics, {})


def _fork(magics: LarikMagics, args: dict[str, Any]) -> None:
    agent = _require_agent(magics)
    source = agent.session_id
    agent.fork()
    show_markdown(f"Forked `{source}` at its end; now on branch `{agent.session_id}`.")


def _rewind(magics: LarikMagics, args: dict[str, Any]) -> None:
    agent = _require_agent(magics)
    source = agent.session_id
    text = agent.rewind(int(args["n"]))
    magics.set_next_cell("%%larik\n" + text)
    show_markdown(
        f"Rewound `{source}` to before prompt {args['n']}; now on branch `{agent.session_id}`. "
        "The prompt is in a new cell below: edit it and run it."
    )


def _undo(magics: LarikMagics, args: dict[str, Any]) -> None:
    from larik_jupyter.notebook.widgets import actions
    from larik_jupyter.notebook.widgets.undo import UndoPanel

    # The panel shows the outcome (and, without a widget manager, its static renderings do).
    display(UndoPanel(magics, result=actions.undo(magics)))


def _checkpoints(magics: LarikMagics, args: dict[str, Any]) -> None:
    from larik_jupyter.notebook.widgets.undo import UndoPanel

    _require_agent(magics)
    display(UndoPanel(magics))


def _tree(magics: LarikMagics, args: dict[str, Any]) -> None:
    from larik_jupyter.notebook.widgets.tree import ForkTreeWidget

    display(ForkTreeWidget(magics))


def _sessions(magics: LarikMagics, args: dict[str, Any]) -> None:
    from larik_jupyter.notebook.widgets.sessions import SessionsBrowser

    display(SessionsBrowser(magics))


def _history(magics: LarikMagics, args: dict[str, Any]) -> None:
    agent = _require_agent(magics)
    parts = parts_from_entries(agent.loop.session.entries)
    show_markdown(render_parts(parts) or "This session has no messages yet.")


def _export(magics: LarikMagics, args: dict[str, Any]) -> None:
    agent = _require_agent(magics)
    agent.loop.session.sync()
    out = export_markdown(agent.session_path, args.get("path"), cwd=magics.cwd)
    show_markdown(f"Exported to `{out}`.")


def _compact(magics: LarikMagics, args: dict[str, Any]) -> None:
    agent = _require_agent(magics)
    summary = agent.compact(str(args.get("instructions") or ""))
    show_markdown(f"Compacted the conversation. Summary:\n\n> {summary.replace(chr(10), chr(10) + '> ')}")


def _clear(magics: LarikMagics, args: dict[str, Any]) -> None:
    _require_agent(magics).clear()
    show_markdown("Started a fresh model context; the session file continues.")


def _model(magics: LarikMagics, args: dict[str, Any]) -> None:
    if args.get("model"):
        agent = magics.ensure_agent(model=args["model"])
        show_markdown(f"Model is now `{agent.model}`.")
    elif magics.agent is not None:
        show_markdown(f"Model: `{magics.agent.model}`.")
    else:
        show_markdown("No session yet; the next prompt picks the model from the config (see `/config`).")


def _usage(magics: LarikMagics, args: dict[str, Any]) -> None:
    records = _require_agent(magics).session
    u = records.usage
    show_markdown(
        f"Session `{records.session_id}`: {u.input_tokens:,} input, {u.output_tokens:,} output, "
        f"{u.cache_read_tokens:,} cache read, {u.cache_write_tokens:,} cache write tokens"
        f"{format_cost(records.cost) or ' (price unknown)'}."
    )


def _config(magics: LarikMagics, args: dict[str, Any]) -> None:
    from larik_jupyter.config.layers import load_config
    from larik_jupyter.config.report import render
    from larik_jupyter.config.update import parse_setting_value, set_user_setting

    key, value = args.get("key"), args.get("value")
    if key and value is not None:
        parsed = parse_setting_value(value)
        set_user_setting(key, parsed)
        show_markdown(f"Set `{key}` = `{json.dumps(parsed)}` in your personal config.")
        return
    text = render(load_config(magics.cwd), key)
    show_markdown("```text\n" + text + "\n```")


def _lsp(magics: LarikMagics, args: dict[str, Any]) -> None:
    from larik_jupyter.config.layers import load_config
    from larik_jupyter.lsp.manager import LspManager

    if magics.agent is not None:
        manager = magics.agent.loop.lsp
    else:
        loaded = load_config(magics.cwd)
        manager = LspManager.from_config(loaded.config, loaded.root)
    states = manager.states()
    if not states:
        show_markdown(
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
    show_markdown("\n".join(rows))


def _delete(magics: LarikMagics, args: dict[str, Any]) -> None:
    from larik_jupyter.notebook.widgets import actions

    path = actions.delete(magics, str(args["id"]))
    show_markdown(f"Deleted session `{Path(path).stem}` with its checkpoints.")


def _stop(magics: LarikMagics, args: dict[str, Any]) -> None:
    if magics.agent is None or not magics.agent.loop.running:
        show_markdown("No turn is running.")
        return
    magics.agent.stop()
    show_markdown("Stopping the running turn.")


def _mcp(magics: LarikMagics, args: dict[str, Any]) -> None:
    from larik_jupyter.agent.mcp import McpManager, status_table
    from larik_jupyter.config.layers import load_config
    from larik_jupyter.notebook.widgets.trust import TrustWidget

    loaded = load_config(magics.cwd)
    manager = magics.agent.loop.mcp if magics.agent is not None else None
    if manager is None:  # nothing started: show what the config declares and what awaits approval
        statuses = McpManager.from_config(loaded).statuses()
    else:
        statuses = manager.check()
    show_markdown(status_table(statuses))
    if loaded.pending:
        display(TrustWidget(magics, loaded.pending))


def _agents(magics: LarikMagics, args: dict[str, Any]) -> None:
    from larik_jupyter import paths
    from larik_jupyter.agent.worktree import clean_worktrees, list_worktrees, remove_worktree

    root = paths.project_root(magics.cwd)
    if args.get("action") == "discard":
        info = remove_worktree(root, str(args["name"]))
        show_markdown(f"Discarded worktree `{info.name}` and its branch `{info.branch}`.")
        return
    if args.get("action") == "clean":
        removed = clean_worktrees(root)
        names = ", ".join(f"`{i.name}`" for i in removed) or "none"
        show_markdown(f"Removed {len(removed)} merged worktree(s): {names}.")
    rows = ["| worktree | branch | merged | changes |", "|---|---|---|---|"]
    rows += [
        f"| `{i.path}` | `{i.branch}` | {'yes' if i.merged else 'no'} | {_cell(i.changes)} |"
        for i in list_worktrees(root)
    ]
    show_markdown("\n".join(rows) if len(rows) > 2 else "No subagent worktrees in this project.")


def _debug(magics: LarikMagics, args: dict[str, Any]) -> None:
    from larik_jupyter.agent.trace import active_trace, start_trace, stop_trace

    loop = _require_agent(magics).loop
    if args.get("state") == "on":
        show_markdown(f"Debug trace on: writing `{start_trace(loop).directory}`.")
    elif args.get("state") == "off":
        stopped = stop_trace(loop)
        show_markdown(f"Debug trace off; it is in `{stopped.directory}`." if stopped else "No trace was on.")
    else:
        trace = active_trace(loop)
        show_markdown(f"Debug trace on: `{trace.directory}`." if trace else "Debug trace off (`/debug on`).")


_HANDLERS: dict[str, Callable[[LarikMagics, dict[str, Any]], None]] = {
    "help": _help,
    "new": _new,
    "sessions": _sessions,
    "resume": _resume,
    "fork": _fork,
    "rewind": _rewind,
    "undo": _undo,
    "checkpoints": _checkpoints,
    "tree": _tree,
    "history": _history,
    "export": _export,
    "compact": _compact,
    "clear": _clear,
    "model": _model,
    "usage": _usage,
    "config": _config,
    "lsp": _lsp,
    "delete": _delete,
    "stop": _stop,
    "mcp": _mcp,
    "agents": _agents,
    "debug": _debug,
}
