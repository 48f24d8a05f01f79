"""`%larik` and `%%larik`: prompts run as live turns, `/commands` manage sessions.

Configuration: traits below can be set in an IPython config (`c.LarikMagics.model = ...`).
They win over the Larik config files for this kernel; the files apply where a trait is unset.
"""

from __future__ import annotations

import ast
import asyncio
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from IPython.display import display
from traitlets import Bool, Unicode

from larik_jupyter.api import Agent
from larik_jupyter.errors import LarikError
from larik_jupyter.notebook import commands
from larik_jupyter.notebook.interrupt import sigint_stops
from larik_jupyter.notebook.parser import Command, Prompt, parse_magic
from larik_jupyter.notebook.pump import MainThreadPump
from larik_jupyter.notebook.terminal import TerminalTurnUI, is_terminal
from larik_jupyter.notebook.view import TurnUI
from larik_jupyter.notebook.widgets.live import refresh_all


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

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.agent: Agent | None = None
        self.pump = MainThreadPump()
        self.cwd = Path(os.getcwd())

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
            **kwargs,
        )
        if self.agent is not None:
            self.agent.close(keep_mcp=True)
        self.agent = agent
        self.show_opened(agent)
        return agent

    def show_notices(self, notices: list[str]) -> None:
        for notice in notices:
            commands.show_markdown(f"> {notice}")

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

    def _start_turn(
        self, parsed: Prompt, *, interactive: bool | None
    ) -> tuple[Agent, TurnUI | TerminalTurnUI, str]:
        text = parsed.text
        if parsed.expand and self.shell is not None:
            text = self.shell.var_expand(text, depth=2)
        agent = self.ensure_agent(model=parsed.model, new=parsed.new)
        if parsed.yes:
            agent.loop.yes = True
        ui: TurnUI | TerminalTurnUI = (
            TerminalTurnUI(self.pump)
            if is_terminal(self.shell)
            else TurnUI(self.pump, agent.stop, interactive=interactive)
        )
        ui.show()
        agent.loop.approver = ui.approver
        agent.loop.subscribe(ui.listener)
        return agent, ui, text

    def _end_turn(self, agent: Agent, ui: TurnUI | TerminalTurnUI) -> None:
        agent.loop.unsubscribe(ui.listener)
        agent.loop.approver = None
        agent.loop.env.run_inline = None
        agent.loop.yes = self.yes
        self.pump.drain()
        ui.finish()

    def prompt(self, parsed: Prompt) -> None:
        """The synchronous path: nobody can click while the cell's thread waits, so asks are
        answered by rules and `--yes` only (a cell holding just `%larik` runs asynchronously)."""
        agent, ui, text = self._start_turn(parsed, interactive=bool(self.interactive))
        agent.loop.env.run_inline = self.pump.on_main_thread
        try:
            with sigint_stops(agent.stop, reading_input=lambda: ui.reading_input):
                self.pump.run(agent.arun(text), on_interrupt=agent.stop)
        finally:
            self._end_turn(agent, ui)

    async def aprompt(self, parsed: Prompt) -> None:
        """The asynchronous path: the turn runs on the kernel's loop, which keeps handling
        widget messages (approvals, Stop) while the cell awaits it."""
        agent, ui, text = self._start_turn(parsed, interactive=self.interactive)
        try:
            with sigint_stops(agent.stop, reading_input=lambda: ui.reading_input):
                await agent.arun(text)
        except asyncio.CancelledError:
            # Something else cancelled the cell (ipykernel's own interrupt handling, when it
            # gets there first); the loop has stored the partial reply as interrupted.
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
            except LarikError as exc:
                raise UsageError(str(exc)) from None
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


# `%larik <text>` on a line of its own; the text must hold more than question marks, so that
# `%larik?` and `%larik??` stay IPython's help on the magic.
_QUESTION_LINE = re.compile(r"^(?P<indent>[ \t]*)%larik[ \t]+(?P<text>.*[^?\s].*?)[ \t]*$")


def keep_questions(lines: list[str]) -> list[str]:
    """IPython cleanup transformer: a `%larik` line ending in `?` / `??` reaches the magic
    unchanged; left alone, IPython's help syntax would turn it into a lookup of its last word."""
    if lines and lines[0].lstrip().startswith("%%"):
        return lines  # a cell magic's body is its prompt, verbatim
    out = []
    for line in lines:
        match = _QUESTION_LINE.match(line.rstrip("\r\n"))
        if match is None or not match["text"].endswith("?"):
            out.append(line)
            continue
        out.append(f"{match['indent']}get_ipython().run_line_magic('larik', {match['text']!r})\n")
    return out


def install_transformers(shell: Any) -> None:
    """Register both input transformers on `shell` (once)."""
    if keep_questions not in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.append(keep_questions)
    if async_cells not in shell.input_transformers_post:
        shell.input_transformers_post.append(async_cells)
