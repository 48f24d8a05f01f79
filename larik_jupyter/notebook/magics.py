"""`%larik` and `%%larik`: prompts run as live turns, `/commands` manage sessions.

Configuration: traits below can be set in an IPython config (`c.LarikMagics.model = ...`).
They win over the Larik config files for this kernel; the files apply where a trait is unset.
"""

from __future__ import annotations

import ast
import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from IPython.display import Markdown, display
from traitlets import Bool, Unicode

from larik_jupyter.agent.loop import PromptExtras
from larik_jupyter.api import Agent
from larik_jupyter.errors import LarikError
from larik_jupyter.llm.messages import Message, TextBlock
from larik_jupyter.notebook import commands
from larik_jupyter.notebook.attachments import attach
from larik_jupyter.notebook.bridge import Bridge
from larik_jupyter.notebook.capture import KernelCapture
from larik_jupyter.notebook.context import KernelNotebook, kernel_notebook, notebook_context
from larik_jupyter.notebook.parser import Command, Prompt, parse_magic
from larik_jupyter.notebook.pump import MainThreadPump
from larik_jupyter.notebook.render import ContextPart, parts_from_messages
from larik_jupyter.notebook.runner import CellRunner
from larik_jupyter.notebook.view import TurnUI
from larik_jupyter.notebook.widgets.live import refresh_all
from larik_jupyter.tools.envelope import new_nonce


@magics_class
class LarikMagics(Magics):
    """The `%larik` magics; one agent per kernel, opened at the first prompt."""

    model = Unicode(
        None, allow_none=True, help="PROVIDER:MODEL for new sessions; wins over the config files."
    ).tag(config=True)
    yes = Bool(False, help="Allow tool calls that would ask, without asking.").tag(config=True)
    interactive = Bool(
        None,
        allow_none=True,
        help="Whether approvals can be answered in this notebook; unset means detect a browser.",
    ).tag(config=True)
    context = Bool(
        True,
        help="Send each prompt with the notebook context (the kernel's notebook, the last cells "
        "run, the last error); `--no-context` turns it off for one prompt.",
    ).tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.agent: Agent | None = None
        self.pump = MainThreadPump()
        self.cwd = Path(os.getcwd())
        self.bridge: Bridge | None = None
        # What ran in the kernel; the extension starts it, a bare LarikMagics has none.
        self.capture: KernelCapture | None = None
        self._context_since = 0

    # -- entry point -----------------------------------------------------------------------

    @no_var_expand
    @line_cell_magic
    def larik(self, line: str, cell: str | None = None) -> None:
        """Talk to the agent: `%larik PROMPT`, `%%larik` with the prompt in the cell, or `/help`."""
        self._dispatch(line, cell, prompt=self.prompt)

    def _dispatch(
        self, line: str, cell: str | None, *, prompt: Callable[[Prompt], None] | None
    ) -> Prompt | None:
        """Run a command, or the prompt through `prompt`; with `prompt` None, hand it back."""
        handed_back: Prompt | None = None
        try:
            parsed = parse_magic(line, cell)
            if isinstance(parsed, Command):
                commands.run(self, parsed)
            elif prompt is None:
                handed_back = parsed
            else:
                prompt(parsed)
        except LarikError as exc:
            raise UsageError(str(exc)) from None
        finally:
            if handed_back is None:
                refresh_all()  # trees and panels shown earlier follow the session
        return handed_back

    # -- the agent -------------------------------------------------------------------------

    def ensure_agent(self, *, model: str | None = None, new: bool = False) -> Agent:
        """The kernel's agent, opened on a new session at the first use (it continues nothing)."""
        if self.agent is None or new:
            self.replace_agent(model=model)
        elif model and model != self.agent.model:
            self.agent.switch_model(model)
        assert self.agent is not None
        return self.agent

    def resume_session(self, session: str | None, *, last: bool = False) -> Agent:
        """Continue `session` (or the latest with `last`), opening the agent if needed."""
        if self.agent is None:
            return self.replace_agent(session=session, continue_latest=last)
        self.agent.resume(session, last=last)
        self.show_opened(self.agent)
        return self.agent

    def replace_agent(self, *, model: str | None = None, **kwargs: Any) -> Agent:
        """Open a new agent (new session unless `session`/`continue_latest` say otherwise); the
        kernel's MCP servers carry over from the agent it replaces."""
        agent = Agent(
            self.cwd,
            model=model or self.model,
            yes=self.yes,
            namespace=self.shell.user_ns if self.shell is not None else None,
            display=self._display_from_tool,
            mcp=self.agent.loop.mcp if self.agent is not None else None,
            live=self.bridge,
            run_cell=CellRunner(self.shell, self.bridge).run if self.shell is not None else None,
            **kwargs,
        )
        if self.agent is not None:
            self.agent.close(keep_mcp=True)
        self.agent = agent
        self.show_opened(agent)
        return agent

    def show_notices(self, notices: list[str]) -> None:
        for notice in notices:
            display(Markdown(f"> {notice}"))

    def show_opened(self, agent: Agent) -> None:
        """The notices of a freshly opened agent, and the approval card when the project's
        shared config declares something awaiting approval (it replaces those notices)."""
        from larik_jupyter.agent.mcp import awaiting_notice
        from larik_jupyter.notebook.widgets.trust import TrustWidget

        pending = agent.loop.loaded.pending
        awaiting = agent.loop.mcp.awaiting if pending and agent.loop.mcp is not None else []
        skip = {awaiting_notice(status) for status in awaiting}
        self.show_notices([n for n in agent.notices if n not in skip])
        if pending:
            display(TrustWidget(self, pending))

    def _display_from_tool(self, value: object) -> None:
        self.pump.post(lambda: display(value))

    def _extras(self, parsed: Prompt, agent: Agent) -> PromptExtras:
        """The notebook context and the `--with` attachments of a prompt, under a new nonce."""
        nonce = new_nonce()
        namespace = self.shell.user_ns if self.shell is not None else {}
        try:
            attached = attach(parsed.attach, namespace, self.cwd, nonce)
        except LarikError as exc:
            raise UsageError(str(exc)) from None
        notebook = kernel_notebook(namespace, self.cwd)
        if self.bridge is not None and self.bridge.notebook_path is not None:
            # A browser showing this kernel's notebook says so reliably through the bridge.
            notebook = KernelNotebook(self.bridge.notebook_path, "the notebook bridge")
        agent.loop.env.notebook_path = notebook.path
        before = []
        if parsed.context and self.context:
            text = notebook_context(
                self.capture, notebook, since=self._context_since, nonce=nonce, cwd=self.cwd
            )
            before.append(TextBlock(text=text))
        self._context_since = self.capture.last_count if self.capture is not None else 0
        return PromptExtras(
            before=list(before), after=attached.blocks, attachments=attached.metadata, nonce=nonce
        )

    def _start_turn(
        self, parsed: Prompt, *, interactive: bool | None
    ) -> tuple[Agent, TurnUI, str, PromptExtras]:
        text = parsed.text
        if parsed.expand and self.shell is not None:
            text = self.shell.var_expand(text, depth=2)
        agent = self.ensure_agent(model=parsed.model, new=parsed.new)
        extras = self._extras(parsed, agent)
        if parsed.yes:
            agent.loop.yes = True
        ui = TurnUI(self.pump, agent.stop, interactive=interactive)
        # What the prompt carries besides its text, folded, as /history shows it.
        sent = Message(role="user", content=[*extras.before, TextBlock(text=text), *extras.after])
        ui.view.parts += [p for p in parts_from_messages([sent]) if isinstance(p, ContextPart)]
        ui.show()
        agent.loop.approver = ui.approver
        agent.loop.subscribe(ui.listener)
        return agent, ui, text, extras

    def _end_turn(self, agent: Agent, ui: TurnUI) -> None:
        agent.loop.unsubscribe(ui.listener)
        agent.loop.approver = None
        agent.loop.yes = self.yes
        self.pump.drain()
        ui.finish()

    def prompt(self, parsed: Prompt) -> None:
        """The synchronous path: nobody can click while the cell's thread waits, so asks are
        answered by rules and `--yes` only (a cell holding just `%larik` runs asynchronously)."""
        agent, ui, text, extras = self._start_turn(parsed, interactive=bool(self.interactive))
        try:
            self.pump.run(agent.arun(text, extras), on_interrupt=agent.stop)
        finally:
            self._end_turn(agent, ui)

    async def aprompt(self, parsed: Prompt) -> None:
        """The asynchronous path: the turn runs on the kernel's loop, which keeps handling
        widget messages (approvals, Stop) while the cell awaits it."""
        agent, ui, text, extras = self._start_turn(parsed, interactive=self.interactive)
        try:
            await agent.arun(text, extras)
        except asyncio.CancelledError:
            # Jupyter's interrupt button cancels an async cell; the loop has already stored
            # the partial reply as interrupted, so the cell ends quietly.
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        finally:
            self._end_turn(agent, ui)

    async def run_async(self, line: str, cell: str | None) -> None:
        """What a cell holding only `%larik …` / `%%larik` runs (see `async_cells`)."""
        parsed = self._dispatch(line, cell, prompt=None)
        if parsed is not None:
            try:
                await self.aprompt(parsed)
            finally:
                refresh_all()

    def set_next_cell(self, code: str) -> None:
        """Put `code` into a new cell below (the notebook's input box)."""
        if self.shell is not None:
            self.shell.set_next_input(code, replace=False)


def _magic_call(node: ast.stmt) -> ast.Call | None:
    """The `get_ipython().run_line_magic('larik', …)` / `run_cell_magic` call a cell became."""
    if not isinstance(node, ast.Expr) or not isinstance(call := node.value, ast.Call):
        return None
    func = call.func
    if not (
        isinstance(func, ast.Attribute)
        and func.attr in ("run_line_magic", "run_cell_magic")
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "get_ipython"
    ):
        return None
    args = call.args
    if len(args) < 2 or not (isinstance(args[0], ast.Constant) and args[0].value == "larik"):
        return None
    return call


def async_cells(lines: list[str]) -> list[str]:
    """IPython input transformer: a cell that is exactly one `%larik` / `%%larik` call is run as
    `await magics.run_async(...)`, so the kernel keeps processing button clicks during the turn."""
    try:
        tree = ast.parse("".join(lines))
    except SyntaxError:
        return lines
    if len(tree.body) != 1 or (call := _magic_call(tree.body[0])) is None:
        return lines
    line = ast.unparse(call.args[1])
    cell = ast.unparse(call.args[2]) if len(call.args) > 2 else "None"
    return [
        "await get_ipython().magics_manager.registry['LarikMagics']"
        f".run_async({line}, {cell})\n"
    ]
