"""A scratch kernel for a notebook check: started with the notebook's kernelspec in its folder,
fed cells one by one under a per-cell and a total deadline, stopped by an event, and always
shut down (`with ScratchKernel(...) as kernel:`), also on an error or an interrupt."""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from larik_jupyter.tools.base import ToolError

START_TIMEOUT = 60.0
_POLL = 0.2


@dataclass
class CellOutcome:
    """How one cell ran: `error` (`NameError: name 'x' is not defined`), or `stopped`
    (`timeout`, `total timeout`, `stopped`) when it was cut short; `stdout` its printed text."""

    error: str = ""
    stopped: str = ""
    stdout: str = ""


class ScratchKernel:
    """A kernel of `kernel_name` started in `cwd`, owned by one check."""

    def __init__(self, kernel_name: str, cwd: Path, stop: threading.Event) -> None:
        self.kernel_name = kernel_name
        self.cwd = cwd
        self.stop = stop
        self.km: Any = None
        self.kc: Any = None

    def __enter__(self) -> ScratchKernel:
        from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
        from jupyter_client.manager import KernelManager

        try:
            KernelSpecManager().get_kernel_spec(self.kernel_name)
        except NoSuchKernel:
            raise ToolError(
                f"The notebook's kernel {self.kernel_name!r} is not installed here, so no scratch "
                "kernel can run it; install that kernelspec or set the notebook's kernel."
            ) from None
        try:
            self.km = KernelManager(kernel_name=self.kernel_name)
            self.km.start_kernel(cwd=str(self.cwd))
            self.kc = self.km.blocking_client()
            self.kc.start_channels()
            self.kc.wait_for_ready(timeout=START_TIMEOUT)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        process = getattr(getattr(self.km, "provisioner", None), "process", None)
        return getattr(process, "pid", None)

    def close(self) -> None:
        """Shut the kernel down at once (idempotent)."""
        kc, km, self.kc, self.km = self.kc, self.km, None, None
        if kc is not None:
            kc.stop_channels()
        if km is not None:
            try:
                km.shutdown_kernel(now=True)
            finally:
                km.cleanup_resources()

    def run(self, source: str, *, timeout: float, deadline: float) -> CellOutcome:
        """Run `source`; past `timeout` seconds, or the check's `deadline` (monotonic), or when
        `stop` is set, the kernel is interrupted and the outcome says why."""
        msg_id = self.kc.execute(source, store_history=False, allow_stdin=False)
        started = time.monotonic()
        outcome = CellOutcome()
        stdout: list[str] = []
        while True:
            now = time.monotonic()
            why = (
                "stopped" if self.stop.is_set()
                else "total timeout" if now >= deadline
                else "timeout" if now - started >= timeout
                else ""
            )
            if why:
                self.km.interrupt_kernel()
                outcome.stopped = why
                return outcome
            try:
                msg = self.kc.get_iopub_msg(timeout=_POLL)
            except queue.Empty:
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream" and content.get("name") == "stdout":
                stdout.append(content.get("text", ""))
            elif kind == "error":
                outcome.error = f"{content.get('ename', 'Error')}: {content.get('evalue', '')}".rstrip(": ")
            elif kind == "status" and content.get("execution_state") == "idle":
                outcome.stdout = "".join(stdout)
                return outcome
