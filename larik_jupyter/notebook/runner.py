"""Running a notebook cell's source in the kernel itself, for `notebook_run`.

A browser-side execute request would queue behind the `%larik` turn that is running (the kernel
serialises executions), so the cell runs here, nested in the turn, through IPython's own
`run_cell_async` (magics, top-level await, In/Out history and the execution count all as usual).
Its stdout, stderr, displays, result and error are captured as nbformat outputs instead of going
to the `%larik` cell, and streamed (throttled) to the cell in the open document.

A timeout or Stop sends SIGINT to the kernel's main thread, like Jupyter's interrupt button;
either way the cell's code sees a KeyboardInterrupt and its outputs end with an interrupted note.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from IPython.core.displayhook import CapturingDisplayHook
from IPython.core.displaypub import CapturingDisplayPublisher

from larik_jupyter.tools.base import ToolError
from larik_jupyter.tools.notebook_run import CellRun

STREAM_EVERY = 0.25  # seconds between streamed output updates


class _Outputs:
    """nbformat outputs as they are produced; `changed` is called (throttled) on each."""

    def __init__(self, changed: Callable[[list[dict[str, Any]]], None] | None) -> None:
        self.items: list[dict[str, Any]] = []
        self._changed = changed
        self._last = 0.0

    def stream(self, name: str, text: str) -> None:
        last = self.items[-1] if self.items else None
        if last is not None and last.get("output_type") == "stream" and last["name"] == name:
            last["text"] += text
        else:
            self.items.append({"output_type": "stream", "name": name, "text": text})
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
        """Run `source` as the next cell; outputs also go to `changed` as they come."""
        if threading.current_thread() is not threading.main_thread():
            raise ToolError(
                "notebook_run cannot run a cell from a `%larik` line inside a larger cell (the "
                "kernel's thread is busy with that cell); put the prompt in a cell of its own."
            )
        shell = self.shell
        outputs = _Outputs(changed)
        run = CellRun(execution_count=shell.execution_count)
        saved = (sys.stdout, sys.stderr, shell.display_pub, sys.displayhook)
        publisher = _Publisher(outputs)
        hook = _Hook(shell, outputs, run)
        recorded: list[dict[str, Any]] = []

        def showtraceback(etype: Any, evalue: Any, stb: list[str]) -> None:
            recorded.append(
                {"output_type": "error", "ename": getattr(etype, "__name__", str(etype)),
                 "evalue": str(evalue), "traceback": list(stb)}
            )
            outputs.add(recorded[-1])

        done = threading.Event()
        why: list[str] = []
        main = threading.get_ident()

        def watchdog() -> None:
            deadline = time.monotonic() + timeout
            while not done.is_set():
                if stop.is_set() or time.monotonic() >= deadline:
                    why.append("interrupted" if stop.is_set() else "timeout")
                    signal.pthread_kill(main, signal.SIGINT)
                    return
                done.wait(0.05)

        guard = threading.Thread(target=watchdog, name="larik-notebook-run", daemon=True)
        sys.stdout, sys.stderr = _Stream(outputs, "stdout"), _Stream(outputs, "stderr")
        shell.display_pub, sys.displayhook = publisher, hook
        shell._showtraceback = showtraceback  # instance attribute: the kernel's publishes to iopub
        guard.start()
        try:
            try:
                transformed, failure = shell.transform_cell(source), None
            except Exception:
                transformed, failure = source, sys.exc_info()
            result = await shell.run_cell_async(
                source, store_history=True, transformed_cell=transformed, preprocessing_exc_tuple=failure
            )
        except KeyboardInterrupt:
            result = None
            why.append(why[0] if why else "interrupted")
        finally:
            done.set()
            sys.stdout, sys.stderr, shell.display_pub, sys.displayhook = saved
            del shell._showtraceback
        error = result.error_in_exec if result is not None else None
        if isinstance(error, KeyboardInterrupt) or result is None:
            run.interrupted = why[0] if why else "interrupted"
            text = (
                f"[interrupted after {timeout:g} s: the run timed out]\n"
                if run.interrupted == "timeout"
                else "[interrupted]\n"
            )
            outputs.items = [o for o in outputs.items if o.get("ename") != "KeyboardInterrupt"]
            outputs.stream("stderr", text)
        run.error = bool(recorded) or result is None or not result.success
        run.outputs = clean(outputs.items)
        return run


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
    """The outputs as nbformat holds them (without the display ids kept for updates)."""
    return [{k: v for k, v in o.items() if k != "_display_id"} for o in outputs]
