"""Jupyter's interrupt during a turn does what the Stop button does.

ipykernel turns SIGINT into a cancel of an async cell only once that cell yields to a callback
it never gets while a turn awaits, and a synchronous cell's KeyboardInterrupt would land in
whatever the cell's thread is doing. So for the length of a turn SIGINT calls the agent's
`stop()` (the turn ends, its partial reply stored as interrupted, a shell command's process
group killed) and raises KeyboardInterrupt only while a terminal approval prompt waits for an
answer. Code the turn runs in the kernel (the python tool's, a cell notebook_run runs) puts its
own handler on top of this one for its length (`tools/kernel/code_stop.py`): it stops that code, then
hands Jupyter's interrupt on to this one.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType


@contextmanager
def sigint_stops(stop: Callable[[], None], *, reading_input: Callable[[], bool]) -> Iterator[None]:
    """While inside, SIGINT calls `stop` (signals reach only the main thread; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum: int, frame: FrameType | None) -> None:
        stop()
        if reading_input():
            raise KeyboardInterrupt

    saved = signal.signal(signal.SIGINT, handle)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, saved)
