"""Running a shell command in its own process group, with a timeout, a stop event and an output cap."""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

MAX_OUTPUT = 30_000
# After the shell exits, background children may still hold its output open; wait this long.
LINGER_SECONDS = 0.5
# SIGTERM, then SIGKILL after this grace: a stopped command is gone within a second.
KILL_GRACE_SECONDS = 0.5


@dataclass
class Outcome:
    """How a command ended: its (possibly cut) output, exit code, and why it was stopped."""

    output: str
    exit_code: int | None
    timed_out: bool = False
    interrupted: bool = False
    lingering: bool = False


class _Capped:
    """Keeps the first and last halves of a stream up to a byte cap."""

    def __init__(self, cap: int) -> None:
        self.half = cap // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > 2 * self.half:
            del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        tail = bytes(self.tail[-self.half :])
        cut = self.total - len(self.head) - len(tail)
        head = self.head.decode("utf-8", errors="replace")
        if cut <= 0:
            return head + bytes(self.tail).decode("utf-8", errors="replace")
        return f"{head}\n[… {cut} bytes of output cut …]\n{tail.decode('utf-8', errors='replace')}"


def _shell() -> str:
    return shutil.which("bash") or "/bin/sh"


def group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs. Zombies do not count: a child orphaned by
    the kill waits for init to reap it, which may take a while, but it is already dead."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return True  # no /proc to tell zombies apart: count the group as running
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def kill_group(pgid: int, proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the whole process group, then SIGKILL whatever is left after a grace period."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + KILL_GRACE_SECONDS
    while time.monotonic() < deadline:
        proc.poll()
        if not group_alive(pgid):
            return
        time.sleep(0.02)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_command(
    command: str, cwd: Path, timeout: float, stop_event: threading.Event, *, cap: int = MAX_OUTPUT
) -> Outcome:
    """Run `command` in a new session; on timeout or `stop_event` kill its whole process group."""
    env = {**os.environ, "PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
    proc = subprocess.Popen(
        [_shell(), "-c", command],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=env,
    )
    assert proc.stdout is not None
    out = _Capped(cap)
    outcome = Outcome(output="", exit_code=None)
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    exited_at: float | None = None
    eof = False

    def drain() -> None:
        nonlocal eof
        while not eof:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                return
            if not chunk:
                eof = True
                sel.unregister(fd)
                return
            out.add(chunk)

    try:
        while True:
            if eof:
                try:
                    proc.wait(timeout=0.05)
                except subprocess.TimeoutExpired:
                    pass
            elif sel.select(timeout=0.05):
                drain()
            if proc.poll() is not None:
                if eof:
                    break
                exited_at = exited_at or time.monotonic()
                if time.monotonic() - exited_at > LINGER_SECONDS:
                    outcome.lingering = True
                    break
            if stop_event.is_set():
                outcome.interrupted = True
                kill_group(proc.pid, proc)
                break
            if time.monotonic() > deadline:
                outcome.timed_out = True
                kill_group(proc.pid, proc)
                break
    except BaseException:
        kill_group(proc.pid, proc)
        raise
    finally:
        drain()
        sel.close()
        proc.stdout.close()
        try:
            proc.wait(timeout=KILL_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            pass
    outcome.exit_code = proc.returncode
    outcome.output = out.text()
    return outcome
