"""`%larik` and `%%larik`: prompts run as live turns, `/commands` manage sessions.

Configuration: traits below can be set in an IPython config (`c.LarikMagics.model = ...`).
They win over the Larik config files for this kernel; the files apply where a trait is unset.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from IPython.display import display
from traitlets import Bool, Unicode, observe

from larik_jupyter.api import KernelHost, LarikError
from larik_jupyter.frontends.notebook import commands
from larik_jupyter.frontends.notebook.display_capture import captured_displays
from larik_jupyter.frontends.notebook.kernel import KernelSession
from larik_jupyter.frontends.notebook.markdown_text import MarkdownText
from larik_jupyter.frontends.notebook.parser import Command, Prompt, parse_magic
from larik_jupyter.frontends.notebook.pump import MainThreadPump
from larik_jupyter.frontends.notebook.running_request import running_client
from larik_jupyter.frontends.notebook.static import headless, static_bundle
from larik_jupyter.frontends.notebook.turn_runner import TurnRunner
from larik_jupyter.frontends.notebook.warmup import Warmup

# `%load_ext` imports this module: the agent, the views and the widgets load at the first use.
if TYPE_CHECKING:
    from larik_jupyter.api import Agent, PendingApproval
    from larik_jupyter.frontends.notebook.bridge import Bridge
    from larik_jupyter.frontends.notebook.capture import KernelCapture


def refresh_all() -> None:
    """Refresh the session widgets shown so far; before the widgets module is first imported
    there are none, and nothing to import anywidget for."""
    widgets = sys.modules.get("larik_jupyter.frontends.notebook.widgets.session_widget")
    if widgets is not None:
        widgets.refresh_all()


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
    protect = Bool(
        False,
        help="Protect mode: python code the agent runs that would change an existing variable asks "
        "first, even when an allow rule or --yes would allow it.",
    ).tag(config=True)
    context = Bool(
        True,
        help="Send each prompt with the notebook context (the kernel's notebook, the last cells "
        "run, the last error); `--no-context` turns it off for one prompt.",
    ).tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.pump = MainThreadPump()
        # What this kernel offers the agent, built once; the extension attaches the bridge.
        self.host = (
            KernelHost(
                shell.user_ns,
                display=lambda value: self.pump.post(lambda: display(value)),
                displays=lambda: captured_displays(shell),
            )
            if shell is not None
            else None
        )
        self.kernel = KernelSession(
            os.getcwd(),
            model=self.model,
            yes=self.yes,
            protect=self.protect,
            host=self.host,
            show=display,
            set_next_cell=self._set_next_cell,
            show_pending=self._show_pending,
        )
        self.runner = TurnRunner(self.kernel, self.pump, shell, context=lambda: self.context)
        self._bridge: Bridge | None = None
        # Set by the extension: the kernel's background start (SDK warm-up, retention prune).
        self.warmup: Warmup | None = None

    @observe("model", "yes", "protect")
    def _defaults_changed(self, change: Any) -> None:
        if hasattr(self, "kernel"):
            setattr(self.kernel, change["name"], change["new"])

    @property
    def capture(self) -> KernelCapture | None:
        """What ran in the kernel; the extension starts it, a bare LarikMagics has none."""
        return self.runner.capture

    @capture.setter
    def capture(self, capture: KernelCapture | None) -> None:
        self.runner.capture = capture

    @property
    def bridge(self) -> Bridge | None:
        """The comm to the notebooks open in a browser (set by the extension in a kernel)."""
        return self._bridge

    @bridge.setter
    def bridge(self, bridge: Bridge | None) -> None:
        self._bridge = bridge
        self.runner.bridge = bridge
        if self.host is not None:
            self.host.bridge = bridge
            self.host.run_cell = self._run_cell

    def _run_cell(self, *args: Any, **kwargs: Any) -> Any:
        """`notebook_run`'s way to run a cell in this kernel (the runner loads at first use)."""
        from larik_jupyter.frontends.notebook.runner import CellRunner

        return CellRunner(self.shell, self._bridge).run(*args, **kwargs)

    @property
    def agent(self) -> Agent | None:
        """The kernel's agent (None before the first prompt)."""
        return self.kernel.agent

    @property
    def cwd(self) -> Path:
        return self.kernel.cwd

    @cwd.setter
    def cwd(self, value: str | os.PathLike[str]) -> None:
        self.kernel.cwd = Path(os.path.abspath(os.fspath(value)))

    # -- entry point -----------------------------------------------------------------------

    @no_var_expand
    @line_cell_magic
    def larik(self, line: str, cell: str | None = None) -> None:
        """Talk to the agent: `%larik PROMPT`, `%%larik` with the prompt in the cell, or `/help`."""
        self._dispatch(line, cell, prompt=self.prompt)

    def _dispatch(
        self, line: str, cell: str | None, *, prompt: Callable[[Prompt], None] | None
    ) -> Prompt | Command | None:
        """Run a command, or the prompt through `prompt`; with `prompt` None, hand it back, and
        also a command that runs off the main thread (the caller runs it there)."""
        handed_back: Prompt | Command | None = None
        if self._bridge is not None:  # the page that ran this cell applies its edits
            self._bridge.lead(running_client(self.shell))
        try:
            parsed = parse_magic(line, cell)
            if self.warmup is not None:
                self.warmup.start(parsed.model if isinstance(parsed, Prompt) else None)
                for notice in self.warmup.notices():
                    display(MarkdownText(f"> {notice}"))
            if isinstance(parsed, Command) and prompt is None and commands.runs_off_main_thread(parsed):
                handed_back = parsed
            elif isinstance(parsed, Command):
                commands.run(self.kernel, parsed, commands.Output(self._show))
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

    def _show_pending(self, pending: list[PendingApproval]) -> None:
        """The approval card for what the project's shared config declares awaiting approval."""
        from larik_jupyter.frontends.notebook.widgets.trust import TrustWidget

        display(TrustWidget(self.kernel, pending))

    def _show(self, value: object) -> None:
        """Display a command's output; a widget in a headless run as its static renderings,
        closed (nothing would ever render or refresh it there)."""
        bundle = static_bundle(value) if headless(self.shell) else None
        if bundle is None:
            display(value)
            return
        data, metadata = bundle
        display(data, metadata=metadata, raw=True)
        close = getattr(value, "close", None)
        if close is not None:
            close()

    # -- turns ---------------------------------------------------------------------------

    def prompt(self, parsed: Prompt) -> None:
        """The synchronous path (a `%larik` line inside a larger cell)."""
        self.runner.run(parsed, interactive=bool(self.interactive))

    async def aprompt(self, parsed: Prompt) -> None:
        """The asynchronous path (a cell holding only `%larik`)."""
        await self.runner.arun(parsed, interactive=self.interactive)

    async def run_async(self, line: str, cell: str | None) -> None:
        """What a cell holding only `%larik …` / `%%larik` runs (see `async_cells`)."""
        parsed = self._dispatch(line, cell, prompt=None)
        if parsed is not None:
            try:
                if isinstance(parsed, Command):
                    from larik_jupyter.frontends.notebook.interrupt import sigint_stops

                    # Its bridge requests wait on a worker thread; this loop delivers the replies.
                    # Jupyter's interrupt ends a long one (a /check) through the session.
                    with sigint_stops(self.kernel.command_stop.set, reading_input=lambda: False):
                        await asyncio.to_thread(commands.run, self.kernel, parsed, commands.Output(self._show))
                else:
                    await self.aprompt(parsed)
            except LarikError as exc:
                raise UsageError(str(exc)) from None
            finally:
                refresh_all()

    def _set_next_cell(self, code: str) -> bool:
        """Put `code` into a new cell below (the notebook's input box); False in a headless run
        (nbconvert), where no front end adds the cell."""
        if self.shell is None or headless(self.shell):
            return False
        self.shell.set_next_input(code, replace=False)
        return True
