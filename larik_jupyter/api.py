"""The Python API: what the magics call, and what users script with.

    from larik_jupyter import Agent
    agent = Agent(model="scripted:demo", yes=True)
    agent.run("create hello.py")
    agent.undo()
    agent.session.turns            # plain records; .to_dataframe() with pandas
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from larik_jupyter.agent.events import Listener
from larik_jupyter.agent.factory import open_agent
from larik_jupyter.agent.loop import AgentLoop, PromptExtras, TurnOutcome
from larik_jupyter.agent.mcp import McpManager
from larik_jupyter.agent.permissions import Approver
from larik_jupyter.checkpoint.store import UndoResult
from larik_jupyter.config.update import approve as approve_pending
from larik_jupyter.records import SessionRecords
from larik_jupyter.session import branch
from larik_jupyter.session.catalog import resolve
from larik_jupyter.tools.env import LiveNotebooks

T = TypeVar("T")


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion, also from code already inside an event loop (a kernel)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    result: dict[str, Any] = {}

    def worker() -> None:
        try:
            result["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            result["error"] = exc

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


class Agent:
    """A coding agent working in `cwd` on one session at a time.

    Parameters: `cwd` (default: the current directory), `session` (an id or file path to
    resume), `continue_latest` (resume the directory's latest session), `model`
    (`provider:model`), `yes` (allow calls that would ask), `namespace` (a kernel's user
    namespace, enabling the `python` and `inspect_variables` tools), `approver` (async
    callback answering asks), `live` (the notebooks open in a browser, see `tools/env.py`),
    `run_cell` (how `notebook_run` runs a cell in the kernel), `mcp` (the MCP servers of an agent this one replaces in the same
    directory, reused instead of restarted; the old agent is then closed with `keep_mcp=True`).
    """

    def __init__(
        self,
        cwd: str | os.PathLike[str] | None = None,
        *,
        session: str | None = None,
        continue_latest: bool = False,
        model: str | None = None,
        yes: bool = False,
        namespace: dict[str, Any] | None = None,
        approver: Approver | None = None,
        display: Any = None,
        mcp: McpManager | None = None,
        live: LiveNotebooks | None = None,
        run_cell: Any = None,
    ) -> None:
        self.cwd = Path(os.path.abspath(os.fspath(cwd or os.getcwd())))
        self.live = live
        self.run_cell = run_cell
        self.yes = yes
        self.namespace = namespace
        self.approver = approver
        self.display = display
        self.notices: list[str] = []
        self._listeners: list[Listener] = []
        self.loop: AgentLoop = self._open(
            session=session, continue_latest=continue_latest, model=model, mcp=mcp
        )

    def _open(self, *, session: str | None = None, continue_latest: bool = False,
              model: str | None = None, mcp: McpManager | None = None) -> AgentLoop:
        opened = open_agent(
            self.cwd,
            session=session,
            continue_latest=continue_latest,
            model=model,
            approver=self.approver,
            yes=self.yes,
            namespace=self.namespace,
            display=self.display,
            mcp=mcp,
        )
        self.notices = opened.notices
        opened.agent.env.live = self.live
        opened.agent.env.run_cell = self.run_cell
        for listener in self._listeners:
            opened.agent.subscribe(listener)
        return opened.agent

    def _switch(self, *, model: str | None, **kwargs: Any) -> None:
        """Open another session; the current one is closed only once the new one opened.

        `model` None lets a resumed session keep the model it was recorded with. The MCP
        servers carry over to the new session instead of restarting."""
        new = self._open(model=model, mcp=self.loop.mcp, **kwargs)
        self.loop.close(keep_mcp=True)
        self.loop = new

    # -- session ---------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self.loop.session.id

    @property
    def session_path(self) -> Path:
        return Path(self.loop.session.path)

    @property
    def model(self) -> str:
        return self.loop.provider.name

    @property
    def session(self) -> SessionRecords:
        """The current session as plain records (turns, tool calls, files, tokens, cost)."""
        return SessionRecords.from_state(self.loop.session.state, self.session_id)

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)
        self.loop.subscribe(listener)

    # -- turns -----------------------------------------------------------------------------

    async def arun(self, prompt: str, extras: PromptExtras | None = None) -> TurnOutcome:
        return await self.loop.run_turn(prompt, extras)

    def run(self, prompt: str, extras: PromptExtras | None = None) -> TurnOutcome:
        """Run one turn to its end and return how it ended; `extras` adds blocks (notebook
        context, attachments) to the prompt message."""
        return run_sync(self.loop.run_turn(prompt, extras))

    def stop(self) -> None:
        self.loop.stop()

    def compact(self, instructions: str = "") -> str:
        return run_sync(self.loop.compact(instructions))

    def clear(self) -> None:
        self.loop.clear()

    def undo(self) -> UndoResult:
        """Revert the newest turn that changed files; the next prompt tells the model."""
        return self.loop.undo()

    # -- branches and sessions -------------------------------------------------------------

    def new(self, model: str | None = None) -> None:
        self._switch(model=model or self.model)

    def resume(self, session: str | None = None, *, last: bool = False) -> None:
        """Continue a session by id or path, or the directory's latest with `last=True`."""
        if session is not None and self.session_path == resolve(session, self.cwd):
            return
        self._switch(model=None, session=session, continue_latest=last or session is None)

    def fork(self) -> Path:
        """Branch the session at its end and continue on the branch."""
        self.loop.session.sync()
        path = branch.fork(self.session_path)
        self._switch(model=self.model, session=str(path))
        return path

    def rewind(self, n: int) -> str:
        """Branch just before prompt `n` (1-based), continue there, return that prompt's text."""
        self.loop.session.sync()
        path, text = branch.rewind(self.session_path, n)
        self._switch(model=self.model, session=str(path))
        return text

    def switch_model(self, model: str) -> None:
        from larik_jupyter.llm.select import select_provider

        provider, _ = select_provider(model, self.loop.loaded.config)
        self.loop.provider = provider

    def approve(self, name: str) -> list[str]:
        """Approve a pending MCP server, hook, allow rule or LSP server (`name` or `kind:name`,
        pinned to its definition's hash) and apply it to this agent now; returns notices."""
        approve_pending(self.cwd, name)
        return self.loop.reload_config()

    def close(self, *, keep_mcp: bool = False) -> None:
        """Close the session; `keep_mcp` leaves the MCP servers to the agent handed them."""
        self.loop.close(keep_mcp=keep_mcp)

