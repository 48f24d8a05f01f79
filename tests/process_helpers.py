"""Finding a test's own shell command in the process table."""

from __future__ import annotations

import itertools
import os
import subprocess
from collections.abc import Iterator


def unique_sleeps(start: int = 30) -> Iterator[str]:
    """`sleep` commands no other test run or user shell has: the pid is the fraction."""
    return (f"sleep {n}.{os.getpid()}" for n in itertools.count(start))


def processes_running(command: str) -> list[str]:
    """The process-table lines whose whole command line is `command`."""
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True)
    return [line for line in ps.stdout.splitlines() if line.split(None, 1)[1:] == [command]]
