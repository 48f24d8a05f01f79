"""The kernel's one agent: `KernelSession` owns it, switches its session and guards every command
and widget action that changes it, so front ends (magics, widgets) hold no agent of their own."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from larik_jupyter.egress.kernel_rules import KernelRules
from larik_jupyter.errors import LarikError
from larik_jupyter.frontends.notebook.markdown_text import MarkdownText

# The magics import this module at `%load_ext`: the agent and the session store load when a
# session first opens.
if TYPE_CHECKING:
    from larik_jupyter.agent.options import AgentOptions, OptionKeywords
    from larik_jupyter.analysis.branch_diff import BranchDiff
    from larik_jupyter.api import Agent
    from larik_jupyter.config.layers import PendingApproval
    from larik_jupyter.egress.policy import PolicySet
    from larik_jupyter.frontends.notebook.context import KernelNotebook
    from larik_jupyter.tools.check import CheckReport
    from larik_jupyter.tools.host import KernelHost

Show = Callable[[Any], None]


class KernelSession:
    """The working directory and the kernel's one `Agent`, opened at the first prompt.

    `model` and `yes` are the defaults for new sessions and `protect` turns protect mode on
    for every turn (the magics' traits feed them), `host` what the kernel offers the agent
    (handed to it as is), `show` displays an object in the cell that runs (notices, approval
    cards), and `set_next_cell` puts code into a new cell below and says whether it could (a
    headless run has no cell to add), `show_pending` shows what the project's shared config
    declares awaiting approval (the magics show the approval card; without it the session's
    notices say it). All are optional, so commands and widget actions run against a
    KernelSession without an IPython shell; it builds no widget itself.
    """

    def __init__(
        self,
        cwd: str | os.PathLike[str] | None = None,
        *,
        model: str | None = None,
        yes: bool = False,
        protect: bool = False,
        host: KernelHost | None = None,
        show: Show | None = None,
        set_next_cell: Callable[[str], bool | None] | None = None,
        show_pending: Callable[[list[PendingApproval]], None] | None = None,
    ) -> None:
        self.cwd = Path(os.path.abspath(os.fspath(cwd or os.getcwd())))
        self.model = model
        self.yes = yes
        self.protect = protect
        self.host = host
        self.show: Show = show or (lambda _value: None)
        self.set_next_cell: Callable[[str], bool | None] = set_next_cell or (lambda _code: False)
        self.show_pending = show_pending
        self.agent: Agent | None = None
        # The sessions of outside agents (MCP clients) working in this kernel, by connection.
        self.outside: dict[str, Agent] = {}
        # The notebook's egress rules (`/egress`): the kernel's, held by every agent it opens.
        self.egress_rules = KernelRules()
        # Set by Jupyter's interrupt while a command runs on a worker thread (a /check).
        self.command_stop = threading.Event()

    # -- guards ----------------------------------------------------------------------------

    def require(self) -> Agent:
        """The open agent, or a LarikError saying how to open one."""
        if self.agent is None:
            raise LarikError(
                "No session is open in this kernel yet; send a prompt or `%larik /resume --last` first."
            )
        return self.agent

    def own_notebook(self) -> KernelNotebook:
        """The notebook this kernel belongs to: what a browser showing it says through the
        bridge, else what the front end hinted (see `context.notebook_from_hints`)."""
        from larik_jupyter.frontends.notebook.context import KernelNotebook, notebook_from_hints

        bridge = self.host.bridge if self.host is not None else None
        if bridge is not None and bridge.notebook_path is not None:
            return KernelNotebook(bridge.notebook_path, "the notebook bridge")
        return notebook_from_hints(self.host.namespace if self.host is not None else {}, self.cwd)

    def check(self, path: str | None, timeout: int, *, network: bool = False) -> CheckReport:
        """`/check`: the notebook (default: the kernel's own) run in a scratch kernel; `network`
        lets its cells connect to other machines."""
        self.require_idle()
        agent = self.ensure()
        self.command_stop.clear()
        return agent.check(
            path, timeout=timeout, stop=self.command_stop, notebook=self.own_notebook().path, network=network
        )

    def egress_policies(self) -> PolicySet:
        """The egress rules in force: the open session's, else the config's."""
        if self.agent is not None:
            return self.agent.egress_door.policies
        from larik_jupyter.config.layers import load_config

        return load_config(self.cwd).config.egress.policy_set()

    def require_idle(self) -> None:
        """Refuse while a turn runs (`Agent.require_idle`): switching or changing the session
        mid-turn would tear it."""
        if self.agent is not None:
            self.agent.require_idle()

    # -- opening ---------------------------------------------------------------------------

    def options(self, **keywords: Unpack[OptionKeywords]) -> AgentOptions:
        """The options of an agent this kernel opens: in its directory, on its host, and `keywords`."""
        from larik_jupyter.agent.options import agent_options

        keywords.setdefault("host", self.host)
        return agent_options(self.cwd, **keywords)

    def ensure(self, *, model: str | None = None, new: bool = False) -> Agent:
        """The agent for the next prompt: opened on a new session at first use (or with `new`),
        switched to `model` when one is given."""
        if self.agent is None or new:
            return self.open(model=model)
        if model and model != self.agent.model:
            self.agent.switch_model(model)
        return self.agent

    def open(
        self, *, model: str | None = None, resume: str | None = None, latest: bool = False
    ) -> Agent:
        """Open the agent on a new session, or continue the session `resume` names (an id or a
        path) or, with `latest`, the latest one; the first time a new `Agent`, after that the
        current one switches."""
        resuming = resume is not None or latest
        held = self._outside_holding(resume) if resume is not None else None
        if held is not None:
            # An outside agent's session stays that agent's: the notebook keeps its own (a
            # prompt there would have no model to answer it), and undoes the client's calls by id.
            client = held.model.partition(":")[2] or held.model
            raise LarikError(
                f"Session {held.session_id} is the live session of the outside agent `{client}` "
                "(over MCP), so this notebook keeps its own session. Undo its calls "
                f"with `%larik /undo --session {held.session_id}` (the sidebar lists them)."
            )
        if self.agent is None:
            from larik_jupyter.api import Agent

            self.agent = Agent(session=resume, continue_latest=latest, options=self.options(
                model=model or self.model, yes=self.yes, egress_rules=self.egress_rules
            ))
        elif resuming:
            self.agent.resume(resume, last=latest)
        else:
            self.agent.new(model=model or self.model)
        self._show_opened(self.agent)
        return self.agent

    def _outside_holding(self, session: str) -> Agent | None:
        """The outside agent whose session `session` (an id or a path) names, if this kernel holds it."""
        try:
            path = self._resolve(session)
        except LarikError:
            return None
        return next((a for a in self.outside.values() if a.session_path == path), None)

    def held_agent(self, session: str) -> Agent:
        """The agent this kernel holds on `session` (an id or a path): its own, or an outside
        agent's; a `LarikError` saying where else to look when it holds none."""
        if self.agent is not None and self._is_current(session):
            return self.agent
        held = self._outside_holding(session)
        if held is None:
            raise LarikError(
                f"Session {session} is not open in this kernel (neither its own nor a connected outside "
                f"agent's); the sidebar lists its turns, and `%larik /undo --session {session}` undoes them."
            )
        return held

    def undo_in(self, session: str, prompt_number: int | None = None, **how: bool) -> str | None:
        """Undo in `session` (an id or a path; an outside agent's, say) as `Agent.undo`, the
        notebook staying on its own session; the report as Markdown. None when `session` is the
        notebook's own (undo it as usual). The agent is the outside agent's that holds it, else
        one opened on it for this undo."""
        path = self._resolve(session)
        if self.agent is not None and self.agent.session_path == path:
            return None
        agent, opened = self._outside_holding(session), False
        if agent is None:
            agent, opened = self._opened_on(path), True
        try:
            report = agent.undo(prompt_number, **how)
        finally:
            if opened:
                agent.close()
        again = f"%larik /undo --session {agent.session_id}" + (f" --to {prompt_number}" if prompt_number else "")
        return f"In session `{agent.session_id}` (this notebook stays on its own):\n\n" + report.markdown(again)

    def _opened_on(self, path: Path) -> Agent:
        """An agent on the stored session at `path`, to act on it (no turns)."""
        from larik_jupyter.api import Agent
        from larik_jupyter.session.store import SessionLockedError

        try:
            return Agent(session=str(path), options=self.options(for_turns=False))
        except SessionLockedError:
            raise LarikError(
                f"Session {path.stem} is open in another process (a kernel or `larik-jupyter run`); "
                "undo it there, or close it and run this again."
            ) from None

    def open_outside(self, key: str, client: str) -> Agent:
        """The session of the outside agent connected as `key` (an MCP connection), opened on
        its first call: a session of its own, named after the client, on this kernel's host."""
        agent = self.outside.get(key)
        if agent is None:
            from larik_jupyter.api import Agent

            agent = Agent(options=self.options(
                model=f"mcp:{client}", protect=self.protect, egress_rules=self.egress_rules
            ))
            self.outside[key] = agent
        return agent

    def close_outside(self, key: str) -> None:
        """The outside agent `key` disconnected: its session closes, unless the user opened it here."""
        agent = self.outside.pop(key, None)
        if agent is not None and agent is not self.agent:
            agent.close()

    def _show_opened(self, agent: Agent) -> None:
        """The notices of a freshly opened session, and (through `show_pending`) what the
        project's shared config declares awaiting approval, which replaces those notices."""
        pending = agent.pending_approvals() if self.show_pending is not None else []
        skip = set(agent.awaiting_notices()) if pending else set()
        for notice in agent.notices:
            if notice not in skip:
                self.show(MarkdownText(f"> {notice}"))
        if pending and self.show_pending is not None:
            self.show_pending(pending)

    # -- what commands and widgets do ------------------------------------------------------

    def new(self, model: str | None = None) -> Agent:
        self.require_idle()
        return self.open(model=model)

    def resume(self, session: str | None, *, last: bool = False) -> Agent:
        """Continue `session` (or the latest with `last`), opening the agent if needed."""
        self.require_idle()
        return self.open(resume=session, latest=last)

    def fork(self, *, session_id: str | None = None, prompt_number: int | None = None) -> Path:
        """Branch `session_id` (default: the current session) after the turn of its prompt
        `prompt_number` (default: at its end) and continue there: `/fork` at the last prompt, else exactly what
        `/rewind N+1` makes."""
        self.require_idle()
        if session_id and not self._is_current(session_id):
            # Another session is branched from its file alone: it may be held elsewhere.
            from larik_jupyter.session import branch

            path = branch.fork_after(self._resolve(session_id), prompt_number)
            self.open(resume=str(path))
            return path
        return self.require().fork(prompt_number)

    def rewind(
        self, prompt_number: int, *, session_id: str | None = None, files: bool = False, force: bool = False,
        skip_changed: bool = False,
    ) -> str:
        """Branch before prompt `prompt_number` of `session_id` (default: the current session)
        and continue there (with `files`, also undo the source's turns from the newest down to
        that prompt, `force` and `skip_changed` as for `undo`); returns that prompt as a
        `%%larik` cell to edit."""
        self.require_idle()
        if session_id and not files and not self._is_current(session_id):
            # Another session is branched from its file alone: it may be held elsewhere.
            from larik_jupyter.session import branch

            path, text = branch.rewind(self._resolve(session_id), prompt_number)
            self.open(resume=str(path))
            return "%%larik\n" + text
        agent = self.resume(session_id) if session_id else self.require()
        return "%%larik\n" + agent.rewind(prompt_number, files=files, force=force, skip_changed=skip_changed)

    def _resolve(self, session_id: str) -> Path:
        from larik_jupyter.session import catalog

        return catalog.resolve(session_id, self.cwd)

    def _is_current(self, session_id: str) -> bool:
        """Whether `session_id` (an id or a path) names the session this kernel has open."""
        return self.agent is not None and self._resolve(session_id) == self.agent.session_path

    def export(self, session_id: str | None = None, path: str | None = None) -> Path:
        """Write a session (default: the current one) as Markdown, to `path` or under
        `<cwd>/.larik/exports/`."""
        from larik_jupyter.config.secrets import redactor_for
        from larik_jupyter.session.export import export_markdown

        source = self._resolve(session_id) if session_id else self.require().session_path
        if self.agent is not None and self.agent.session_path == source:
            self.agent.sync()
        return export_markdown(source, path, cwd=self.cwd, redactor=redactor_for(self.cwd))

    def to_notebook(self, session_id: str | None = None, path: str | None = None, *,
                    prompt_number: int | None = None, include_shell: bool = False,
                    include_undone: bool = False) -> Path:
        """Write a session (default: the current one) up to prompt `prompt_number` as a new
        notebook, to `path` or as `<id>.ipynb` in the session's directory."""
        if self.agent is None and session_id:  # a stored session, none open in this kernel yet
            from larik_jupyter.analysis.as_notebook import write_notebook

            return write_notebook(self._resolve(session_id), path, prompt_number=prompt_number,
                                  include_shell=include_shell, cwd=self.cwd, include_undone=include_undone)
        return self.require().to_notebook(path, session=session_id, prompt_number=prompt_number,
                                          include_shell=include_shell, include_undone=include_undone)

    def diff(self, session_id: str, other: str) -> BranchDiff:
        """Compare two sessions of this directory: common prefix, prompts, code outputs."""
        from larik_jupyter.analysis.branch_diff import diff_branches

        if self.agent is not None:
            self.agent.sync()
        return diff_branches(session_id, other, cwd=self.cwd)

    def delete(self, session_id: str) -> Path:
        """Remove a session with its agents, trace and checkpoints (the same validated delete
        as the CLI and the server); never the open one."""
        from larik_jupyter.session import catalog

        agent = self.agent
        if agent is not None and session_id in (agent.session_id, str(agent.session_path)):
            raise LarikError("That is the open session; `%larik /new` first, then delete it.")
        return catalog.delete(session_id, self.cwd)

    def approve(self, key: str) -> list[str]:
        """Approve a pending MCP server, hook, rule or LSP server for this project and apply it
        to the open agent now; returns what happened, one line each."""
        from larik_jupyter.config.update import approve

        if self.agent is None:
            approve(self.cwd, key)
            return [f"Approved {key}; it takes effect when the agent opens (your next prompt)."]
        return [f"Approved {key}.", *self.agent.approve(key)]

    def close(self) -> None:
        for key in list(self.outside):
            self.close_outside(key)
        if self.agent is not None:
            self.agent.close()
            self.agent = None
