"""Running a notebook cell's source in the kernel itself, for `notebook_run`.

A browser-side execute request would queue behind the `%larik` turn that is running (the kernel
serialises executions), so the cell runs here, nested in the turn, through IPython's own
`run_cell_async` (magics, top-level await, In/Out history and the execution count all as usual).
Its stdout, stderr, displays, result and error are captured as nbformat outputs instead of going
to the `%larik` cell, and streamed (throttled) to the cell in the open notebook.

The cell runs as a task of its own under the one stop path of the agent's code
(`tools/kernel/code_stop.py`): a timeout, Stop or Jupyter's interrupt raises KeyboardInterrupt in the
cell's code, or cancels it while it awaits; its outputs then end with a line saying so.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from IPython.core.displayhook import CapturingDisplayHook
from IPython.core.displaypub import CapturingDisplayPublisher

from larik_jupyter.api import STOP_GRACE_SECONDS, CellRun, CodeStop, ToolError, stoppable

STREAM_EVERY = 0.25  # seconds between streamed output updates
# What a stopped cell's code raises where it stops (IPython records it as the cell's error).
_STOPS = ("KeyboardInterrupt", "CancelledError")


class _Outputs:
    """nbformat outputs as they are produced; `changed` is called (throttled) on each.

    A stream output's text is kept as a list of the pieces written (joined when read), so a cell
    printing many lines costs time linear in what it prints."""

    def __init__(self, changed: Callable[[list[dict[str, Any]]], None] | None) -> None:
        self.items: list[dict[str, Any]] = []
        self._changed = changed
        self._last = 0.0

    def stream(self, name: str, text: str) -> None:
        last = self.items[-1] if self.items else None
        if last is not None and last.get("output_type") == "stream" and last["name"] == name:
            last["text"].append(text)
        else:
            self.items.append({"output_type": "stream", "name": name, "text": [text]})
        self.touch()

    def add(self, output: dict[str, Any]) -> None:
        self.items.append(output)
        self.touch()

    def touch(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if self._changed is not None and (force or now - self._last >= STREAM_EVERY):
            self._last = now
            self._changed(clean(self.items))


class _Stream:
    """A file-like object for sys.stdout / sys.stderr that records into the outputs."""

    def __init__(self, outputs: _Outputs, name: str) -> None:
        self._outputs, self.name = outputs, name

    def write(self, text: str) -> int:
        if text:
            self._outputs.stream(self.name, text)
        return len(text)

    def flush(self) -> None:
        """Nothing is buffered."""

    def isatty(self) -> bool:
        return False


class CellRunner:
    """Runs sources in one IPython shell with captured outputs."""

    def __init__(self, shell: Any, bridge: Any = None) -> None:
        self.shell = shell
        self.bridge = bridge

    async def run(
        self,
        source: str,
        *,
        timeout: float,
        stop: threading.Event,
        changed: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> CellRun:
        """Run `source` as the next cell; outputs also go to `changed` as they come. A turn
        cancelled meanwhile stops the cell, and the run says so (`cancelled`)."""
        if threading.current_thread() is not threading.main_thread():
            raise ToolError(
                "notebook_run cannot run a cell from a `%larik` line inside a larger cell (the "
                "kernel's thread is busy with that cell); put the prompt in a cell of its own."
            )
        shell = self.shell
        outputs = _Outputs(changed)
        run = CellRun(execution_count=shell.execution_count)
        saved = (sys.stdout, sys.stderr, shell.display_pub, sys.displayhook)
        recorded: list[dict[str, Any]] = []

        def showtraceback(etype: Any, evalue: Any, stb: list[str]) -> None:
            recorded.append(
                {"output_type": "error", "ename": getattr(etype, "__name__", str(etype)),
                 "evalue": str(evalue), "traceback": list(stb)}
            )
            outputs.add(recorded[-1])

        sys.stdout, sys.stderr = _Stream(outputs, "stdout"), _Stream(outputs, "stderr")
        shell.display_pub, sys.displayhook = _Publisher(outputs), _Hook(shell, outputs, run)
        shell._showtraceback = showtraceback  # instance attribute: the kernel's publishes to iopub
        try:
            with stoppable(timeout, stop) as code:
                result = await self._await(source, code, run)
        finally:
            sys.stdout, sys.stderr, shell.display_pub, sys.displayhook = saved
            del shell._showtraceback
        error = result.error_in_exec if result is not None else None
        if code.reason or result is None or type(error).__name__ in _STOPS:
            run.interrupted = code.reason or "interrupted"
            outputs.items = [o for o in outputs.items if o.get("ename") not in _STOPS]
            outputs.stream("stderr", (code.note or "[stopped: interrupted]") + "\n")
        run.error = bool(recorded) or result is None or not result.success
        run.outputs = clean(outputs.items)
        return run

    async def _await(self, source: str, code: CodeStop, run: CellRun) -> Any:
        """The cell's result (None when it was stopped before it had one), run as a task that
        `code` can cancel while it awaits; a turn cancelled meanwhile cancels it too."""
        loop = asyncio.get_running_loop()
        cell = asyncio.ensure_future(self._execute(source, code))

        def cancel() -> None:
            loop.call_soon_threadsafe(cell.cancel)

        code.cancel = cancel
        try:
            return await asyncio.shield(cell)
        except asyncio.CancelledError:
            this = asyncio.current_task()
            if this is None or not this.cancelling():
                return None  # the cell alone was cancelled (stopped before its code ran)
            run.cancelled = True
            cell.cancel()
            await asyncio.wait([cell], timeout=STOP_GRACE_SECONDS)
            return cell.result() if cell.done() and not cell.cancelled() else None

    async def _execute(self, source: str, code: CodeStop) -> Any:
        shell = self.shell
        try:
            try:
                transformed, failure = shell.transform_cell(source), None
            except Exception:
                transformed, failure = source, sys.exc_info()
            with code.code():
                return await shell.run_cell_async(
                    source, store_history=True, transformed_cell=transformed, preprocessing_exc_tuple=failure
                )
        # Stopped outside the cell's own code (IPython's bookkeeping around it): kept inside
        # this task, as a KeyboardInterrupt leaving a task would stop the kernel's loop.
        except KeyboardInterrupt:
            return None


class _Publisher(CapturingDisplayPublisher):
    """display() calls as display_data outputs (updates of a display id replace it in place)."""

    def __init__(self, outputs: _Outputs) -> None:
        super().__init__()
        self._into = outputs

    def publish(self, data: Any, metadata: Any = None, source: Any = None, *, transient: Any = None,
                update: bool = False, **kwargs: Any) -> None:
        output = {"output_type": "display_data", "data": data, "metadata": metadata or {}}
        display_id = (transient or {}).get("display_id")
        if update and display_id is not None:
            for i, old in enumerate(self._into.items):
                if old.get("_display_id") == display_id:
                    self._into.items[i] = {**output, "_display_id": display_id}
            self._into.touch()
            return
        if display_id is not None:
            output["_display_id"] = display_id
        self._into.add(output)

    def clear_output(self, wait: bool = False) -> None:
        self._into.items.clear()
        self._into.touch()


class _Hook(CapturingDisplayHook):
    """The cell's last expression value as an execute_result output."""

    def __init__(self, shell: Any, outputs: _Outputs, run: CellRun) -> None:
        super().__init__(shell, [])
        self._into, self._run = outputs, run

    def __call__(self, result: Any = None) -> None:
        if result is None:
            return
        data, metadata = self.shell.display_formatter.format(result)
        self._into.add(
            {"output_type": "execute_result", "data": data, "metadata": metadata,
             "execution_count": self._run.execution_count}
        )


def clean(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The outputs as nbformat holds them (stream text joined, without the display ids kept
    for updates)."""
    return [
        {k: "".join(v) if k == "text" and o["output_type"] == "stream" else v
         for k, v in o.items() if k != "_display_id"}
        for o in outputs
    ]
