"""A fresh Python kernel driven with jupyter_client: run code, collect what it printed, shown and
raised; a run past its timeout is interrupted. The kernel is shut down however the `with`
block ends (an error, Ctrl-C)."""

from __future__ import annotations

import base64
import queue
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from larik_jupyter.analysis.compare import ImageSize, image_size
from larik_jupyter.errors import LarikError

# How long an interrupted run may take to wind down before the kernel counts as stuck.
_INTERRUPT_GRACE = 10.0


class KernelStartError(LarikError):
    """The replay kernel did not start."""


@dataclass
class CellRun:
    """What one run produced: `text` in the python tool's layout (stdout, then `[stderr]` and
    stderr, then the result's `text/plain`), `images` the size of each image shown, `error`
    `Name: value` of an exception, `timed_out` when it was interrupted for its timeout."""

    text: str = ""
    images: list[ImageSize | None] = field(default_factory=list)
    error: str | None = None
    timed_out: bool = False


class FreshKernel:
    """A new `python3` kernel working in `cwd`, for one replay."""

    def __init__(self, cwd: Path, *, startup_timeout: float = 60.0) -> None:
        self.cwd = cwd
        self.startup_timeout = startup_timeout
        self._km: Any = None
        self._kc: Any = None

    def __enter__(self) -> FreshKernel:
        from jupyter_client.manager import KernelManager

        self._km = KernelManager(kernel_name="python3")
        try:
            # Its own log lines (a TCP warning at start) are not the replay's output.
            self._km.start_kernel(cwd=str(self.cwd), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self._kc = self._km.blocking_client()
            self._kc.start_channels()
            self._kc.wait_for_ready(timeout=self.startup_timeout)
        except BaseException as exc:
            self.close()
            if isinstance(exc, Exception):
                raise KernelStartError(f"The replay kernel did not start: {exc}.") from None
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Stop the channels and shut the kernel down (killing it if it does not go)."""
        if self._kc is not None:
            self._kc.stop_channels()
            self._kc = None
        if self._km is not None:
            try:
                if self._km.has_kernel:
                    self._km.shutdown_kernel(now=True)
            finally:
                self._km = None

    def run(self, code: str, timeout: float) -> CellRun:
        """Run `code` as a cell; interrupt it after `timeout` seconds."""
        kc, km = self._kc, self._km
        msg_id = kc.execute(code, store_history=True, allow_stdin=False)
        stdout: list[str] = []
        stderr: list[str] = []
        results: list[str] = []
        run = CellRun()
        deadline = time.monotonic() + timeout
        interrupted_at: float | None = None
        while True:
            now = time.monotonic()
            if interrupted_at is None and now > deadline:
                km.interrupt_kernel()
                run.timed_out, interrupted_at = True, now
            if interrupted_at is not None and now - interrupted_at > _INTERRUPT_GRACE:
                run.error = run.error or f"the kernel did not stop within {_INTERRUPT_GRACE:.0f} s of an interrupt"
                break
            if not km.is_alive():
                run.error = "the kernel died"
                break
            try:
                msg = kc.get_iopub_msg(timeout=0.5)
            except queue.Empty:
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                (stdout if content.get("name") == "stdout" else stderr).append(content.get("text", ""))
            elif kind in ("execute_result", "display_data"):
                data = content.get("data", {})
                raw = data.get("image/png") or data.get("image/jpeg")
                if raw:
                    run.images.append(image_size(base64.b64decode(raw)))
                elif kind == "execute_result" or "text/plain" in data:
                    results.append(str(data.get("text/plain", "")))
            elif kind == "error":
                run.error = f"{content.get('ename')}: {content.get('evalue')}"
            elif kind == "status" and content.get("execution_state") == "idle":
                break
        parts = ["".join(stdout).rstrip("\n")] if stdout else []
        if stderr:
            parts.append("[stderr]\n" + "".join(stderr).rstrip("\n"))
        parts += results
        run.text = "\n".join(parts)
        return run
