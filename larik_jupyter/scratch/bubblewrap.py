"""The stand-in where Landlock is missing: bubblewrap (`bwrap`), when it is on PATH and works
here (it needs user namespaces or root, and an AppArmor profile on Ubuntu 24.04+, so it is
tried once before it is used). The kernel sees the whole file system read-only except the
folders it may change, devices of its own, no capabilities (so root inside cannot remount),
and, unless the network is allowed, a network namespace of its own with no interface but
loopback; the kernel then talks to its client over unix sockets (`ipc`) in its temp folder.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

from larik_jupyter.scratch.confine import TEST_SWITCH


@functools.cache
def _works(bwrap: str) -> str:
    """"" when `bwrap` confines a trial command here, else why not."""
    try:
        trial = subprocess.run([*_sandbox(bwrap, [], network=False), "true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap did not run ({exc})"
    if trial.returncode != 0:
        return f"bubblewrap did not work here ({(trial.stderr.strip().splitlines() or ['no reason given'])[-1]})"
    return ""


def unusable() -> str:
    """"" when bubblewrap can confine the scratch kernel here, else why not."""
    if os.environ.get(TEST_SWITCH) == "unavailable":
        return "bubblewrap was reported unavailable for a test"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    return _works(bwrap)


def _sandbox(bwrap: str, writable: list[str], *, network: bool) -> list[str]:
    words = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--cap-drop", "ALL", "--die-with-parent"]
    for path in writable:
        words += ["--bind", path, path]
    return [*words, *([] if network else ["--unshare-net"]), "--"]


def command(writable: list[str], *, network: bool) -> list[str]:
    """The words that run what follows them in bubblewrap, changing only `writable`."""
    return _sandbox(shutil.which("bwrap") or "bwrap", writable, network=network)
