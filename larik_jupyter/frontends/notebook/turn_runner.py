"""Running one `%larik` prompt as a turn in the cell that holds it: the prompt's notebook context
and attachments, the cell's view (a streaming transcript with approvals, or plain text in a
terminal), and the two paths, synchronous (a line inside a larger cell) and asynchronous (a cell
holding only `%larik`, awaited on the kernel's loop)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from larik_jupyter.api import LarikError
from larik_jupyter.frontends.notebook.counts import HeldCount
from larik_jupyter.frontends.notebook.interrupt import sigint_stops
from larik_jupyter.frontends.notebook.kernel import KernelSession
from larik_jupyter.frontends.notebook.output_binding import OutputBinder
from larik_jupyter.frontends.notebook.parser import Prompt
from larik_jupyter.frontends.notebook.pump import MainThreadPump

# The magics build a runner at `%load_ext`: what a turn needs loads with the first turn.
if TYPE_CHECKING:
    from larik_jupyter.api import Agent, InlineRunner, PromptExtras, TurnOutcome
    from larik_jupyter.frontends.notebook.bridge import Bridge
    from larik_jupyter.frontends.notebook.capture import KernelCapture
    from larik_jupyter.frontends.notebook.terminal import TerminalTurnUI
    from larik_jupyter.frontends.notebook.turn_ui import TurnUI


DEMO_MODEL = "scripted:demo"
# How the "Fix with Larik" button's prompt starts (labextension/src/fix.ts `fixPrompt`).
FIX_PROMPT_START = "Fix the error in cell "
FIX_NEEDS_A_MODEL = (
    "The offline demo model (scripted:demo) answers every prompt with the same script, so it cannot "
    "fix anything. Set ANTHROPIC_API_KEY or OPENAI_API_KEY in the environment JupyterLab starts "
    "from (or choose a configured model with `%larik /model PROVIDER:MODEL`), restart the kernel, "
    "and click Fix with Larik again."
)


class TurnRunner:
    """Runs prompts through `kernel` (the `KernelSession`) in the cells of `shell`.

    `context` says whether prompts carry the notebook context (the magics' trait); `capture`
    (what ran in the kernel) and `bridge` (the open notebooks) are set by the extension.
    """

    def __init__(
        self, kernel: KernelSession, pump: MainThreadPump, shell: Any, *, context: Callable[[], bool]
    ) -> None:
        self.kernel = kernel
        self.pump = pump
        self.shell = shell
        self.context = context
        self.capture: KernelCapture | None = None
        self.bridge: Bridge | None = None
        self._context_since = 0
        self._cells_recorded = 0  # the execution count up to which cells went with a prompt
        # What `-o NAME` bound in this kernel (a bare runner without a shell binds nothing).
        self.outputs = OutputBinder(shell) if shell is not None else None

    def _extras(self, parsed: Prompt) -> tuple[PromptExtras, Path | None]:
        """The notebook context and the `--with` attachments of a prompt, under a new nonce,
        and the kernel's own notebook, when known."""
        from larik_jupyter.api import PromptExtras, new_nonce, redactor_for
        from larik_jupyter.frontends.notebook.attachments import attach
        from larik_jupyter.frontends.notebook.context import cells_ran, context_block

        nonce = new_nonce()
        namespace = self.shell.user_ns if self.shell is not None else {}
        try:
            attached = attach(parsed.attach, namespace, self.kernel.cwd, nonce, self.kernel.egress_policies())
        except LarikError as exc:
            raise UsageError(str(exc)) from None
        notebook = self.kernel.own_notebook()
        before = []
        if parsed.context and self.context():
            env = self.kernel.require().egress.env  # its egress rules tag the last error's part
            before.append(context_block(
                self.capture, notebook, since=self._context_since, nonce=nonce, cwd=self.kernel.cwd, env=env
            ))
        self._context_since = self.capture.last_count if self.capture is not None else 0
        # The user's cells may hold a key typed in: stored redacted, as exports are.
        cells = redactor_for(self.kernel.cwd).data(cells_ran(self.shell, self.capture, after=self._cells_recorded))
        self._cells_recorded = max(self._cells_recorded, getattr(self.shell, "execution_count", 0) or 0)
        extras = PromptExtras(
            before=list(before), after=attached.blocks, attachments=attached.metadata, nonce=nonce, cells=cells
        )
        return extras, notebook.path

    def _start_turn(
        self, parsed: Prompt, *, interactive: bool | None
    ) -> tuple[Agent, TurnUI | TerminalTurnUI, Callable[[InlineRunner | None], Any]]:
        """Open the turn's view; the agent, the view, and the turn's coroutine given where
        kernel tools run."""
        from larik_jupyter.api import Message, TextBlock, under_server_documents
        from larik_jupyter.frontends.notebook.reattach import MirroredCell, running_cell_id
        from larik_jupyter.frontends.notebook.render import ContextPart, parts_from_messages
        from larik_jupyter.frontends.notebook.static import headless
        from larik_jupyter.frontends.notebook.terminal import TerminalTurnUI, is_terminal
        from larik_jupyter.frontends.notebook.turn_ui import TurnUI

        if parsed.output is not None and self.outputs is not None:
            self.outputs.check(parsed.output, replace=parsed.replace)
        text = parsed.text
        if parsed.expand and self.shell is not None:
            text = self.shell.var_expand(text, depth=2)
        agent = self.kernel.ensure(model=parsed.model, new=parsed.new)
        if agent.model == DEMO_MODEL and text.startswith(FIX_PROMPT_START):
            raise LarikError(FIX_NEEDS_A_MODEL)
        extras, notebook = self._extras(parsed)
        ui: TurnUI | TerminalTurnUI = (
            TerminalTurnUI(self.pump)
            if is_terminal(self.shell)
            else TurnUI(self.pump, agent.stop, interactive=interactive, headless=headless(self.shell))
        )
        if isinstance(ui, TurnUI):
            # What the prompt carries besides its text, folded, as /history shows it.
            sent = Message(role="user", content=[*extras.before, TextBlock(text=text), *extras.after])
            ui.view.parts += [p for p in parts_from_messages([sent]) if isinstance(p, ContextPart)]
        if isinstance(ui, TurnUI) and under_server_documents():
            # The server runs the cell there, so it counts as headless: the transcript is
            # redrawn as one output, and approvals are answered in the page through the server.
            from larik_jupyter.frontends.notebook.page_approvals import page_approver

            ui.view.redraw = True
            ui.page = page_approver()
        ui.show()
        if isinstance(ui, TurnUI) and self.bridge is not None:
            cell_id = running_cell_id(self.shell)
            if cell_id is not None:
                ui.follow(MirroredCell(self.bridge, cell_id, ui.outputs))

        async def turn(inline_runner: InlineRunner | None) -> TurnOutcome:
            # This cell's approver, view and notebook apply to this turn only.
            agent.protect = self.kernel.protect
            if parsed.output is not None and self.outputs is not None:
                await self.outputs.approve(parsed.output, agent, ui.approver)
            return await agent.arun(
                text, extras, approver=ui.approver, yes=parsed.yes or self.kernel.yes,
                listener=ui.listener, notebook=notebook, inline_runner=inline_runner,
            )

        return agent, ui, turn

    def _bind(self, parsed: Prompt, agent: Agent, outcome: TurnOutcome) -> None:
        """`-o NAME`: the turn's outcome as a variable of the user's namespace, a change of the
        turn that undo puts back."""
        if parsed.output is not None and self.outputs is not None:
            self.outputs.bind(agent, parsed.output, outcome)
            if outcome.answer is None:
                from larik_jupyter.frontends.notebook.markdown_text import MarkdownText

                name = parsed.output
                self.kernel.show(MarkdownText(
                    f"> `{name}` holds this turn's outcome, but the agent handed back no value: `{name}.value` "
                    "is None (ask it to hand one back, e.g. \"… and hand back the table\")."
                ))

    def _end_turn(self, ui: TurnUI | TerminalTurnUI, held: HeldCount | None) -> None:
        self.pump.drain()
        ui.finish()
        if held is not None:
            held.release(self.shell)
        # Cells run inside the turn were the agent's: the next prompt's cells start after them.
        self._cells_recorded = max(self._cells_recorded, (getattr(self.shell, "execution_count", 1) or 1) - 1)

    def run(self, parsed: Prompt, *, interactive: bool) -> None:
        """The synchronous path: nobody can click while the cell's thread waits, so asks are
        answered by rules and `--yes` only (a cell holding just `%larik` runs asynchronously)."""
        held = HeldCount.of(self.shell)
        agent, ui, turn = self._start_turn(parsed, interactive=interactive)
        try:
            with sigint_stops(agent.stop, reading_input=lambda: ui.reading_input) as interrupts:
                outcome = self.pump.run(turn(self.pump.on_main_thread), on_interrupt=agent.stop)
                interrupts.stopped |= outcome.status == "interrupted"
            self._bind(parsed, agent, outcome)
        finally:
            self._end_turn(ui, held)

    async def arun(self, parsed: Prompt, *, interactive: bool | None) -> None:
        """The asynchronous path: the turn runs on the kernel's loop, which keeps handling
        widget messages (approvals, Stop) while the cell awaits it."""
        held = HeldCount.of(self.shell)
        agent, ui, turn = self._start_turn(parsed, interactive=interactive)
        try:
            with sigint_stops(agent.stop, reading_input=lambda: ui.reading_input) as interrupts:
                outcome = await turn(None)
                interrupts.stopped |= outcome.status == "interrupted"  # the Stop button's comm, say
            self._bind(parsed, agent, outcome)
        except asyncio.CancelledError:
            # Something else cancelled the cell (ipykernel's own interrupt handling, when it
            # gets there first); the loop has stored the partial reply as interrupted.
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        finally:
            self._end_turn(ui, held)

