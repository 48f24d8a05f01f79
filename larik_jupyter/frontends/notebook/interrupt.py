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
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

# Seconds a Stop's own kernel interrupt may trail the turn it stopped. The Stop button sends its
# stop on the widget's comm and asks the server to interrupt the kernel (for code running
# synchronously, which reads no comm). When the comm message ends the turn first, the interrupt
# lands after it, while ipykernel sends the cell's reply under its own SIGINT handler: the
# KeyboardInterrupt lost the reply, and the cell showed [*] for good with the kernel idle.
STOP_GRACE = 2.0


@dataclass
class Interrupts:
    """What `sigint_stops` yields: `stopped`, set when the turn was stopped (by SIGINT here, or
    by the caller when the turn ended stopped any other way, such as the Stop button's comm)."""

    stopped: bool = False


@contextmanager
def sigint_stops(stop: Callable[[], None], *, reading_input: Callable[[], bool]) -> Iterator[Interrupts]:
    """While inside, SIGINT calls `stop` (signals reach only the main thread; elsewhere a no-op).
    Once the turn ends stopped, a SIGINT within `STOP_GRACE` seconds is the Stop's own, late,
    and is let go; a later one goes where it went before."""
    interrupts = Interrupts()
    if threading.current_thread() is not threading.main_thread():
        yield interrupts
        return

    def handle(signum: int, frame: FrameType | None) -> None:
        interrupts.stopped = True
        stop()
        if reading_input():
            raise KeyboardInterrupt

    saved = signal.signal(signal.SIGINT, handle)
    try:
        yield interrupts
    finally:
        signal.signal(signal.SIGINT, _trailing(saved) if interrupts.stopped else saved)


def _trailing(saved: Any) -> Callable[[int, FrameType | None], None]:
    """A SIGINT handler that lets the Stop's late interrupt go for `STOP_GRACE` seconds, then
    puts `saved` back and delivers the signal to it (ipykernel puts its own back after a cell,
    which ends this handler's time in any case)."""
    until = time.monotonic() + STOP_GRACE

    def handle(signum: int, frame: FrameType | None) -> None:
        if time.monotonic() < until:
            return
        signal.signal(signal.SIGINT, saved)
        signal.raise_signal(signum)

    return handle
