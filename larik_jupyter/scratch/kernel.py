"""The one driver of a scratch kernel (the check's, replay's): a kernel of a given kernelspec
started in a folder with its own temporary folder, confined by the operating system where it
can be (`scratch.confine`: Landlock, applied by a launcher before the kernel starts; else
`scratch.bubblewrap`), guarded before its first cell (`scratch.guard`), fed code under a
per-run timeout and an optional deadline and stop event, interrupted when one passes, and always shut down (`with ScratchKernel(...) as kernel:`), also
on an error or Ctrl-C. Its own log lines (warnings at start) are not shown."""

from __future__ import annotations

import base64
import glob
import json
import os
import queue
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from larik_jupyter.errors import LarikError
from larik_jupyter.scratch import bubblewrap
from larik_jupyter.scratch.confine import launcher
from larik_jupyter.scratch.copy import ScratchCopy, ScratchFolder
from larik_jupyter.scratch.guard import guard_cell
from larik_jupyter.scratch.held import Held

START_TIMEOUT = 60.0
# How long an interrupted run may take to wind down before the kernel counts as stuck.
INTERRUPT_GRACE = 10.0
_POLL = 0.2
# A line a program prints when the operating system refused it ("rm: cannot remove 'x':
# Permission denied"): a refusal no Python code raised.
_DENIED = re.compile(r"Permission denied|Operation not permitted|Read-only file system")


class ScratchKernelError(LarikError):
    """The scratch kernel could not be started or guarded."""


@dataclass(frozen=True)
class Confinement:
    """What a scratch kernel may change: the folders `roots` (its `tmp` folder always), how a
    refusal begins (`where`: "checked in a copy"), why shell commands are refused (empty: they
    run), in place, the time after which an existing file counts as changed by the user, and
    whether it may connect to other machines (`network`). `place` and `inside` name where it
    runs for the report ("a scratch copy of /p", "the copy")."""

    roots: tuple[Path, ...]
    tmp: Path
    where: str
    shell_rule: str = ""
    cutoff: float | None = None
    copy: ScratchCopy | None = None
    network: bool = False

    @classmethod
    def in_copy(cls, copy: ScratchCopy, where: str, *, network: bool = False) -> Confinement:
        """Changes only inside the copy (links to originals copied first); no shell commands."""
        return cls((copy.copy,), copy.folder.tmp, where, "a shell command cannot be kept inside the copy", copy=copy,
                   network=network)

    @classmethod
    def in_place(
        cls, root: Path, folder: ScratchFolder, where: str, *, shell_rule: str, cutoff: float | None, network: bool = False
    ) -> Confinement:
        """Changes only inside `root`, and not to files changed after `cutoff` (unless None)."""
        return cls((root,), folder.tmp, where, shell_rule, cutoff=cutoff, network=network)

    @property
    def place(self) -> str:
        return f"a scratch copy of {self.copy.original}" if self.copy else f"{self.roots[0]} itself"

    @property
    def inside(self) -> str:
        return "the copy" if self.copy else str(self.roots[0])

    def guard_config(self) -> dict[str, Any]:
        return {
            "roots": [str(p) for p in (*self.roots, self.tmp)],
            "where": self.where,
            "log": str(self.tmp / "refused.jsonl"),
            "shell_rule": self.shell_rule,
            "cutoff": self.cutoff,
            "original": str(self.copy.original) if self.copy else None,
            "copy": str(self.copy.copy) if self.copy else None,
            "network": self.network,
        }


@dataclass
class CellOutcome:
    """How one run went: what it printed, the `text/plain` of its results, the images it showed
    (PNG or JPEG bytes), `error` (`NameError: name 'x' is not defined`), `stopped` (`timeout`,
    `total timeout`, `stopped`) when it was cut short, `died` when the kernel is gone or stuck,
    and `refused`: each change outside its folders the guard refused."""

    stdout: str = ""
    stderr: str = ""
    results: list[str] = field(default_factory=list)
    images: list[bytes] = field(default_factory=list)
    error: str = ""
    stopped: str = ""
    died: bool = False
    refused: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The python tool's layout: stdout, then `[stderr]` and stderr, then the results."""
        parts = [self.stdout.rstrip("\n")] if self.stdout else []
        if self.stderr:
            parts.append("[stderr]\n" + self.stderr.rstrip("\n"))
        return "\n".join(parts + self.results)


def _matplotlib_cache() -> Path:
    configured = os.environ.get("MPLCONFIGDIR")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "matplotlib"


def _kernel_env(tmp: Path) -> dict[str, str]:
    """The environment of a guarded kernel: its temporary files, IPython profile, library
    caches and larik's own data and config in `tmp` (so nothing it does needs the user's
    folders), matplotlib's font list copied there so it is not rebuilt."""
    mpl = tmp / "matplotlib"
    mpl.mkdir(exist_ok=True)
    for found in glob.glob(str(_matplotlib_cache() / "fontlist-*.json")):
        shutil.copy(found, mpl)
    # ipykernel reads what programs write to the kernel's stdout and stderr (so a refusal they
    # print is the cell's output) except where it believes pytest captures them: the scratch
    # kernel always reads them.
    inherited = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    return {
        **inherited, "TMPDIR": str(tmp), "MPLCONFIGDIR": str(mpl), "IPYTHONDIR": str(tmp / "ipython"),
        "XDG_CACHE_HOME": str(tmp / "cache"), "PYTHONDONTWRITEBYTECODE": "1",
        # A checked `%load_ext larik_jupyter` gets data and config of its own: its retention
        # prune must not reach the user's sessions, nor its config the user's keys.
        "LARIK_DATA_DIR": str(tmp / "larik-data"), "LARIK_CONFIG_DIR": str(tmp / "larik-config"),
    }


class ScratchKernel:
    """A guarded kernel of `kernel_name` working in `cwd`, owned by one check or replay."""

    def __init__(
        self, cwd: Path, confinement: Confinement, *, kernel_name: str = "python3",
        stop: threading.Event | None = None, store_history: bool = False,
    ) -> None:
        self.cwd = cwd
        self.confinement = confinement
        self.kernel_name = kernel_name
        self.stop = stop or threading.Event()
        self.store_history = store_history
        self.km: Any = None
        self.kc: Any = None
        self._log_offset = 0
        self.held = Held.here(network=confinement.network)

    def __enter__(self) -> ScratchKernel:
        from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
        from jupyter_client.manager import KernelManager

        try:
            spec = KernelSpecManager().get_kernel_spec(self.kernel_name)
        except NoSuchKernel:
            raise ScratchKernelError(
                f"The kernel {self.kernel_name!r} is not installed here, so no scratch kernel can run "
                "it; install that kernelspec or set the notebook's kernel."
            ) from None
        if (spec.language or "").lower() != "python":
            raise ScratchKernelError(
                f"The kernel {self.kernel_name!r} runs {spec.language}; only Python kernels can be kept "
                "inside a scratch copy, so nothing was run."
            )
        failed = self.confinement.tmp / "confine-error.txt"
        try:
            if self.held.bubblewrap:  # its own network namespace: unix sockets, not TCP
                self.km = KernelManager(kernel_name=self.kernel_name, transport="ipc", ip=str(self.confinement.tmp / "kernel"))
            else:
                self.km = KernelManager(kernel_name=self.kernel_name)
            if self.held.os_confined:
                self._launch_confined(failed)
            self.km.start_kernel(cwd=str(self.cwd), env=_kernel_env(self.confinement.tmp),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.kc = self.km.blocking_client()
            self.kc.start_channels()
            self.kc.wait_for_ready(timeout=START_TIMEOUT)
            if self.held.off:  # tests only: nothing guards the kernel
                return self
            guarded = self.run(guard_cell(**self.confinement.guard_config()), timeout=START_TIMEOUT, history=False)
        except BaseException as exc:
            self.close()
            if failed.exists():
                raise ScratchKernelError(failed.read_text(encoding="utf-8")) from None
            if isinstance(exc, Exception) and not isinstance(exc, LarikError):
                raise ScratchKernelError(f"The scratch kernel did not start: {exc}.") from None
            raise
        if guarded.error or guarded.stopped or guarded.died:
            self.close()
            raise ScratchKernelError(
                f"The scratch kernel could not be guarded ({guarded.error or guarded.stopped or 'it died'}), "
                "so nothing was run in it."
            )
        return self

    def _launch_confined(self, failed: Path) -> None:
        """Start the kernel through what confines it: the Landlock launcher (`scratch.confine`),
        else bubblewrap (`scratch.bubblewrap`)."""
        km = self.km
        plain = km.format_kernel_cmd
        writable: list[os.PathLike[str]] = [*self.confinement.roots, self.confinement.tmp]
        network = self.confinement.network
        if self.held.landlock:
            prefix = launcher(writable, network=network, error_file=failed)
        else:
            prefix = bubblewrap.command([os.fspath(p) for p in writable], network=network)

        def confined(extra_arguments: list[str] | None = None) -> list[str]:
            return [*prefix, *plain(extra_arguments=extra_arguments)]

        km.format_kernel_cmd = confined

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
                if km.has_kernel:
                    km.shutdown_kernel(now=True)
            finally:
                km.cleanup_resources()

    def run(self, source: str, *, timeout: float, deadline: float | None = None, history: bool | None = None) -> CellOutcome:
        """Run `source` as a cell. Past `timeout` seconds, the `deadline` (monotonic) or when
        `stop` is set, the kernel is interrupted; one that does not wind down within
        `INTERRUPT_GRACE`, or exits, counts as `died`."""
        km, kc = self.km, self.kc
        outcome = CellOutcome()
        if km is None or not km.is_alive():
            outcome.died, outcome.error = True, "the scratch kernel is not running"
            return outcome
        store = self.store_history if history is None else history
        msg_id = kc.execute(source, store_history=store, allow_stdin=False)
        started = time.monotonic()
        interrupted_at: float | None = None
        stdout: list[str] = []
        stderr: list[str] = []
        while True:
            now = time.monotonic()
            if interrupted_at is None:
                why = (
                    "stopped" if self.stop.is_set()
                    else "total timeout" if deadline is not None and now >= deadline
                    else "timeout" if now - started >= timeout
                    else ""
                )
                if why:
                    km.interrupt_kernel()
                    outcome.stopped, interrupted_at = why, now
            elif now - interrupted_at > INTERRUPT_GRACE:
                outcome.died = True
                outcome.error = outcome.error or f"the kernel did not stop within {INTERRUPT_GRACE:.0f} s of an interrupt"
                break
            if not km.is_alive():
                outcome.died = True
                outcome.error = "the kernel died"
                break
            try:
                msg = kc.get_iopub_msg(timeout=_POLL)
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
                    # A picture shown again unchanged (`display(fig)`, then the inline backend's
                    # drawing at the end of the cell) is one picture, as the python tool keeps it.
                    image = base64.b64decode(raw)
                    if image not in outcome.images:
                        outcome.images.append(image)
                elif kind == "execute_result" or "text/plain" in data:
                    outcome.results.append(str(data.get("text/plain", "")))
            elif kind == "error":
                outcome.error = f"{content.get('ename', 'Error')}: {content.get('evalue', '')}".rstrip(": ")
            elif kind == "status" and content.get("execution_state") == "idle":
                break
        outcome.stdout, outcome.stderr = "".join(stdout), "".join(stderr)
        outcome.refused = self._refusals()
        if not self.held.off:
            outcome.refused += [
                f"{self.confinement.where}; the operating system refused what this cell ran: {line.strip()}"
                for line in (outcome.stdout + outcome.stderr).splitlines()
                if _DENIED.search(line) and not any(line.strip() in m for m in outcome.refused)
            ]
        return outcome

    def _refusals(self) -> list[str]:
        """The refusals the guard logged since the last look."""
        log = self.confinement.tmp / "refused.jsonl"
        try:
            with open(log, "rb") as handle:
                handle.seek(self._log_offset)
                data = handle.read()
        except OSError:
            return []
        self._log_offset += len(data)
        found = []
        for line in data.decode("utf-8", "replace").splitlines():
            try:
                found.append(str(json.loads(line)["refused"]))
            except (ValueError, KeyError, TypeError):
                continue
        return found
