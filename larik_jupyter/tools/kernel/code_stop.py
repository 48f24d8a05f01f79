"""The one stop path of code the agent runs in the kernel: the python tool's code and the cells
notebook_run runs. A timeout, Stop and Jupyter's interrupt all end in a KeyboardInterrupt raised
inside that code, never in the turn's machinery around it.

Python runs signal handlers on the main thread only, between bytecodes or by breaking a blocking
call (a sleep). While the code runs, a watchdog thread sends SIGINT to that thread at the deadline
or when the turn's stop event is set (Stop), and again every `REPEAT_SECONDS` while the code goes
on (it may catch one); Jupyter's interrupt sends one too, which is also handed to the handler
installed before (the turn's, which stops the turn). The handler raises KeyboardInterrupt only
inside `CodeStop.code()` and in the task that entered it; code that is awaiting (a cell's
top-level await) is not running when a signal lands, so it is cancelled through `cancel` instead.
Code running on another thread (the `Agent` API driven from a worker thread) gets its
KeyboardInterrupt through `PyThreadState_SetAsyncExc`: a busy loop stops, a blocking call when it
returns.
"""

from __future__ import annotations

import asyncio
import ctypes
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from larik_jupyter.errors import ToolError

DEFAULT_TIMEOUT = 120
MAX_TIMEOUT = 3600
REPEAT_SECONDS = 2.0
_POLL_SECONDS = 0.05
# How long the end of a run waits for a SIGINT of its own that is still on its way.
_SETTLE_SECONDS = 0.2

TIMEOUT_INPUT: dict[str, Any] = {
    "type": "integer",
    "description": f"Seconds before the code is stopped (KeyboardInterrupt); default {DEFAULT_TIMEOUT}, "
    f"at most {MAX_TIMEOUT}.",
}


def timeout_of(args: dict[str, Any], tool: str) -> int:
    """The `timeout` input of `tool`, checked."""
    timeout = int(args.get("timeout") or DEFAULT_TIMEOUT)
    if not 1 <= timeout <= MAX_TIMEOUT:
        raise ToolError(f"{tool}: timeout must be between 1 and {MAX_TIMEOUT} seconds, not {timeout}.")
    return timeout


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


def _async_exc(thread: int, exc: type[BaseException] | None) -> None:
    """Raise `exc` in `thread` at its next bytecode (None takes back one not yet raised)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread), ctypes.py_object(exc) if exc else None)


class CodeStop:
    """One run of the agent's code. `reason` says why it was stopped: "", "timeout" or
    "interrupted"; `cancel`, when set, cancels the code while it awaits."""

    def __init__(self, timeout: float, stop: threading.Event) -> None:
        self.timeout = timeout
        self.reason = ""
        self.cancel: Callable[[], None] | None = None
        self._stop = stop
        self._thread = threading.get_ident()
        self._main = threading.current_thread() is threading.main_thread()
        self._lock = threading.Lock()
        self._inside = False
        self._task: asyncio.Task[Any] | None = None
        self._sent = False  # a SIGINT of the watchdog's that the handler has not seen yet
        self._last = 0.0  # when the code was last told to stop
        self._done = threading.Event()
        self._previous: Any = None

    @property
    def note(self) -> str:
        """The line a stopped run's output ends with ("" when it was not stopped)."""
        if self.reason == "timeout":
            return f"[stopped after {self.timeout:g} s (timeout)]"
        return "[stopped: interrupted]" if self.reason else ""

    @contextmanager
    def code(self) -> Iterator[None]:
        """Around the code itself: the KeyboardInterrupt of a stop is raised in here, only here."""
        with self._lock:
            self._inside, self._task = True, _current_task()
        try:
            yield
        finally:
            with self._lock:
                self._inside = False
                if not self._main:
                    _async_exc(self._thread, None)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._sent:
            self._sent = False
        else:  # Jupyter's interrupt: it stops the turn too
            self.reason = self.reason or "interrupted"
            self._last = time.monotonic()
            previous = self._previous
            if callable(previous) and previous is not signal.default_int_handler:
                previous(signum, frame)
        if self._inside and _current_task() is self._task:
            raise KeyboardInterrupt
        if self.cancel is not None:
            self.cancel()

    def _watch(self) -> None:
        deadline = time.monotonic() + self.timeout
        while not self._done.wait(_POLL_SECONDS):
            now = time.monotonic()
            if not self.reason:
                if self._stop.is_set():
                    self.reason = "interrupted"
                elif now >= deadline:
                    self.reason = "timeout"
                else:
                    continue
            elif now - self._last < REPEAT_SECONDS:
                continue
            self._last = now
            self._interrupt()

    def _interrupt(self) -> None:
        if self._main:
            if not self._sent:
                self._sent = True
                signal.pthread_kill(self._thread, signal.SIGINT)
            return
        with self._lock:
            if self._inside:
                _async_exc(self._thread, KeyboardInterrupt)


@contextmanager
def stoppable(timeout: float, stop: threading.Event) -> Iterator[CodeStop]:
    """A run of the agent's code that `timeout` seconds or `stop` (the turn's stop event) stop."""
    run = CodeStop(timeout, stop)
    if run._main:
        run._previous = signal.signal(signal.SIGINT, run._handle)
    watchdog = threading.Thread(target=run._watch, name="larik-code-stop", daemon=True)
    watchdog.start()
    try:
        yield run
    finally:
        run._done.set()
        watchdog.join()
        if run._main:
            # A SIGINT the watchdog sent just before the end is this run's, not the turn's.
            settle = time.monotonic() + _SETTLE_SECONDS
            while run._sent and time.monotonic() < settle:
                time.sleep(0.005)
            signal.signal(signal.SIGINT, run._previous)
