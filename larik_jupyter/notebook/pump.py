"""Run a turn without blocking the notebook: the agent's loop runs in a worker thread while the
cell's thread keeps processing widget messages (button clicks) and does all display work.

Jupyter processes comm messages only between cell executions, so a cell that simply waited
would deadlock on an approval. jupyter-ui-poll lets the waiting cell handle those messages;
Jupyter's interrupt (KeyboardInterrupt in the cell's thread) becomes a clean `stop()`.
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


def _ui_events() -> Any:
    """jupyter-ui-poll's poller inside a real kernel, None in plain IPython or Python."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
        if shell is None or getattr(shell, "kernel", None) is None:
            return None
        from jupyter_ui_poll import ui_events

        return ui_events()
    except ImportError:
        return None


class MainThreadPump:
    """Queues work for the cell's thread; the worker thread never touches IPython directly."""

    def __init__(self) -> None:
        self._jobs: queue.Queue[Callable[[], None]] = queue.Queue()
        self._main = threading.get_ident()

    def post(self, job: Callable[[], None]) -> None:
        """Run `job` on the cell's thread soon (immediately when already on it)."""
        if threading.get_ident() == self._main:
            job()
        else:
            self._jobs.put(job)

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the cell's thread and wait for its result (used by the `python` tool)."""
        if threading.get_ident() == self._main:
            return fn()
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def job() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
                future.set_exception(exc)

        self._jobs.put(job)
        return future.result()

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
        on_tick: Callable[[], None] | None = None,
    ) -> T:
        """Run `coroutine` on a fresh loop in a worker thread until done, pumping UI meanwhile."""
        result: dict[str, Any] = {}

        def worker() -> None:
            try:
                result["value"] = asyncio.run(coroutine)
            except BaseException as exc:  # noqa: BLE001 - re-raised on the cell's thread
                result["error"] = exc

        thread = threading.Thread(target=worker, name="larik-turn", daemon=True)
        thread.start()
        poller = _ui_events()
        poll = poller.__enter__() if poller is not None else None
        try:
            while thread.is_alive():
                try:
                    if poll is not None:
                        poll(20)
                    self.drain()
                    if on_tick is not None:
                        on_tick()
                    thread.join(_POLL_SECONDS)
                except KeyboardInterrupt:
                    on_interrupt()
            self.drain()
        finally:
            if poller is not None:
                poller.__exit__(None, None, None)
        if "error" in result:
            raise result["error"]
        return result["value"]

