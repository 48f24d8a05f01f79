"""Finding a test's own shell command in the process table, and waiting for an event with a deadline."""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import psutil

T = TypeVar("T")

#: How long a test waits for an event by default: generous, the machine may be loaded.
PATIENCE = 60.0


def wait_until(predicate: Callable[[], T], what: str, timeout: float = PATIENCE, every: float = 0.02) -> T:
    """Poll `predicate` until it returns a true value, and return that value.

    The one place a test sleeps to wait: fails with an AssertionError naming `what` was awaited
    when `timeout` seconds pass first.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}, and it did not happen")
        time.sleep(every)


async def await_until(predicate: Callable[[], T], what: str, timeout: float = PATIENCE) -> T:
    """`wait_until` for a coroutine: polls without blocking the event loop the awaited work runs on."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}, and it did not happen")
        await asyncio.sleep(0.01)
    return value


def unique_sleeps(start: int = 30) -> Iterator[str]:
    """`sleep` commands no other test run or user shell has: the pid is the fraction."""
    return (f"sleep {n}.{os.getpid()}" for n in itertools.count(start))


def processes_running(command: str) -> list[str]:
    """The process-table lines whose whole command line is `command`."""
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True)
    return [line for line in ps.stdout.splitlines() if line.split(None, 1)[1:] == [command]]


def left_in_cwd(pids: list[int], name: str) -> bool:
    """Whether one of these processes' working folders holds a file `name` (a sign code under
    test leaves when it reaches a point, e.g. a cell that has started its long sleep)."""
    for pid in pids:
        try:
            if (Path(psutil.Process(pid).cwd()) / name).exists():
                return True
        except psutil.Error:
            continue
    return False


def exited(pid: int) -> bool:
    """Whether process `pid` has exited (a zombie awaiting its reaper counts as exited)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"
