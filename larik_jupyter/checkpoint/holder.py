"""Which process holds a turn's kernel variables: their values live only in the memory of the
kernel that ran the turn, so its manifest names that process (`this_process`), and any other
process (the server's sidebar, the CLI, a restarted kernel) can tell whether they still exist
(`running`)."""

from __future__ import annotations

import os
from pathlib import Path


def _stat(pid: int) -> list[str]:
    """Process `pid`'s /proc stat fields from its state on (empty where unknown)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    # The command name (field 2) may hold spaces and parentheses: count from its last ')'.
    return stat[stat.rfind(")") + 2:].split()


def _started(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot), None where unknown."""
    fields = _stat(pid)
    return fields[19] if len(fields) > 19 else None


def this_process() -> str:
    """This process as a manifest names it: `PID:START` (START: when it began, where known), so a
    later process that reuses the pid is not taken for it."""
    return f"{os.getpid()}:{_started(os.getpid()) or ''}"


def running(identity: str) -> bool:
    """Whether the process `this_process` named as `identity` is still running."""
    pid_text, _, started = identity.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, owned by another user
    fields = _stat(pid)
    if fields and fields[0] in ("Z", "X"):
        return False  # ended, not yet reaped by its parent
    return not started or (len(fields) > 19 and fields[19] == started)
