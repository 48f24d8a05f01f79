"""The kernel's front end of its one agent: `KernelSession` holds the kernel's `Agent` (opened at
the first prompt; `Agent` itself switches sessions and holds the outside agents') with what the
kernel offers it (host, display, the next cell), so magics and widgets hold no agent of their own."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from larik_jupyter.api import KernelRules, LarikError
from larik_jupyter.frontends.notebook.markdown_text import MarkdownText

# The magics import this module at `%load_ext`: the agent and the session store load when a
# session first opens.
if TYPE_CHECKING:
    from larik_jupyter.api import (
        Agent,
        AgentOptions,
        CheckReport,
        KernelHost,
        OptionKeywords,
        PendingApproval,
        PolicySet,
    )
    from larik_jupyter.frontends.notebook.context import KernelNotebook

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
        # The kernel's one agent, made at first need and opened on a session only when one is.
        self._agent: Agent | None = None
        # The notebook's egress rules (`/egress`): the kernel's, held by every agent it opens.
        self.egress_rules = KernelRules()
        # Set by Jupyter's interrupt while a command runs on a worker thread (a /check).
        self.command_stop = threading.Event()

    @property
    def agent(self) -> Agent | None:
        """The kernel's agent when a session is open on it, else None."""
        return self._agent if self._agent is not None and self._agent.opened else None

    @property
    def sessions(self) -> Agent:
        """The kernel's agent whether or not a session is open on it: what switches sessions
        and acts on stored ones (a new session is opened only when one is needed)."""
        if self._agent is None:
            from larik_jupyter.api import Agent

            self._agent = Agent(lazy=True, options=self.options(
                model=self.model, yes=self.yes, protect=self.protect, egress_rules=self.egress_rules
            ))
        return self._agent

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
            return self.agent.egress.door.policies
        from larik_jupyter.api import load_config

        return load_config(self.cwd).config.egress.policy_set()

    def require_idle(self) -> None:
        """Refuse while a turn runs (`Agent.require_idle`): switching or changing the session
        mid-turn would tear it."""
        if self._agent is not None:
            self._agent.require_idle()

    # -- opening ---------------------------------------------------------------------------

    def options(self, **keywords: Unpack[OptionKeywords]) -> AgentOptions:
        """The options of an agent this kernel opens: in its directory, on its host, and `keywords`."""
        from larik_jupyter.api import agent_options

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

    def open(self, *, model: str | None = None, resume: str | None = None, latest: bool = False) -> Agent:
        """Open the agent on a new session, or continue the session `resume` names (an id or a
        path) or, with `latest`, the latest one, and show the session's notices."""
        agent = self.sessions
        if resume is not None or latest:
            agent.resume(resume, last=latest)
        else:
            agent.new(model=model or self.model)
        self._show_opened(agent)
        return agent

    def is_current(self, session: str) -> bool:
        """Whether `session` (an id or a path) names the session open in this kernel."""
        from larik_jupyter.api import resolve_session as resolve

        return self.agent is not None and self.agent.session_path == resolve(session, self.cwd)

    def held_agent(self, session: str) -> Agent:
        """The agent this kernel holds on `session` (an id or a path): its own, or an outside
        agent's; a `LarikError` saying where else to look when it holds none."""
        from larik_jupyter.api import resolve_session as resolve

        path = resolve(session, self.cwd)
        if self.agent is not None and self.agent.session_path == path:
            return self.agent
        held = self.sessions.outside.holding(path)
        if held is None:
            raise LarikError(
                f"Session {session} is not open in this kernel (neither its own nor a connected outside "
                f"agent's); the sidebar lists its turns, and `%larik /undo --session {session}` undoes them."
            )
        return held

    def _show_opened(self, agent: Agent) -> None:
        """The notices of a freshly opened session, and (through `show_pending`) what the
        project's shared config declares awaiting approval, which replaces those notices."""
        pending = agent.config.pending() if self.show_pending is not None else []
        skip = set(agent.config.awaiting_notices()) if pending else set()
        for notice in agent.notices:
            if notice not in skip:
                self.show(MarkdownText(f"> {notice}"))
        if pending and self.show_pending is not None:
            self.show_pending(pending)

    def approve(self, key: str) -> list[str]:
        """Approve a pending MCP server, hook, rule or LSP server for this project and apply it
        to the open agent now; returns what happened, one line each."""
        if self.agent is None:
            from larik_jupyter.api import approve_pending as approve

            approve(self.cwd, key)
            return [f"Approved {key}; it takes effect when the agent opens (your next prompt)."]
        return [f"Approved {key}.", *self.agent.config.approve(key)]

    def close(self) -> None:
        if self._agent is not None:
            self._agent.close()
            self._agent = None
