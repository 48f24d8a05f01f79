"""Run a turn from synchronous code (a `%larik` line inside a larger cell, `run_line_magic`):
the agent's loop runs on a worker thread while the cell's thread does all display work.

The usual path is asynchronous (see `magics.async_cells`): a cell that is only a `%larik`
call is awaited on the kernel's own loop, where ipykernel keeps handling widget messages.
Here, in the synchronous fallback, kernel tools (the python tool) run back on the cell's
thread through `on_main_thread`, where Jupyter's interrupt can reach the model's code.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_POLL_SECONDS = 0.02


class MainThreadPump:
    """Queues work for the cell's thread; the worker thread never touches IPython directly."""

    def __init__(self) -> None:
        self._jobs: queue.Queue[Callable[[], None]] = queue.Queue()
        self._main = threading.get_ident()
        # While set, the cell's thread is busy here and the kernel hears no comm messages.
        self.running = False

    def post(self, job: Callable[[], None]) -> None:
        """Run `job` on the cell's thread soon (immediately when already on it)."""
        if threading.get_ident() == self._main:
            job()
        else:
            self._jobs.put(job)

    async def on_main_thread(self, job: Callable[[], T]) -> T:
        """Run `job` on the cell's thread and await its result from the worker's loop."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return  # the turn was stopped before the cell's thread got to it
            try:
                future.set_result(job())
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting worker
                future.set_exception(exc)

        self.post(run)
        return await asyncio.wrap_future(future)

    def drain(self) -> None:
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return
            job()

    def run(
        self,
        coroutine: Coroutine[Any, Any, T],
        *,
        on_interrupt: Callable[[], None],
    ) -> T:
        """Run `coroutine` on a fresh loop in a worker thread until done, showing its events."""
        result: dict[str, Any] = {}

        def worker() -> None:
            try:
                result["value"] = asyncio.run(coroutine)
            except BaseException as exc:  # noqa: BLE001 - re-raised on the cell's thread
                result["error"] = exc

        thread = threading.Thread(target=worker, name="larik-turn", daemon=True)
        self.running = True
        thread.start()
        try:
            while thread.is_alive():
                try:
                    self.drain()
                    thread.join(_POLL_SECONDS)
                except KeyboardInterrupt:
                    on_interrupt()
        finally:
            self.running = False
        self.drain()
        if "error" in result:
            raise result["error"]
        return result["value"]

