"""The guard a scratch kernel runs before its first cell: a Python audit hook (PEP 578) that
refuses every write, delete, rename, folder change and subprocess reaching outside the folders
the run may change, with absolute paths, `dir_fd`-relative names and symlinks resolved first,
and (unless the network is allowed) every connection to another machine. The operating system
confines the kernel too (`scratch.confine`); a refusal only it saw (a `PermissionError` from C
code, with its errno) is named after the cell, as is one the guard made.

This module is sent to the kernel as source text (`guard_cell`), so it imports only the
standard library: the scratch kernel's Python need not have larik_jupyter installed. A refused
operation raises `PermissionError` naming the path, and is logged (one JSON line) to the file
the driver reads after each cell, so a refusal the cell's code caught still counts.

Files of a scratch copy are links to the originals (`scratch.copy`); a write through such a
link first replaces the link by a copy of the original (copy on write), so the original is
never opened for writing. In place (`cutoff` set), an existing file last changed after
`cutoff` (by the user, since the session) is left alone unless this run created or wrote it.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import struct
import sys
import termios
import time
from typing import Any

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
# Event -> (verb, indexes of the path arguments, index of their dir_fd or None, whether the
# operation follows a final symlink (True) or acts on the directory entry itself (False)).
_PATH_EVENTS: dict[str, tuple[str, tuple[int, ...], int | None, bool]] = {
    "os.remove": ("delete", (0,), 1, False),
    "os.rmdir": ("delete the folder", (0,), 1, False),
    "shutil.rmtree": ("delete the folder", (0,), 1, False),
    "os.rename": ("rename", (0, 1), 2, False),
    "os.mkdir": ("create the folder", (0,), 2, False),
    "os.mkfifo": ("create", (0,), 2, False),
    "os.mknod": ("create", (0,), 3, False),
    "os.symlink": ("create the link", (1,), 2, False),
    "os.link": ("create the link", (1,), 3, False),
    "os.chmod": ("change the permissions of", (0,), 2, True),
    "os.chown": ("change the owner of", (0,), 3, True),
    "os.chflags": ("change the flags of", (0,), None, True),
    "os.utime": ("change the times of", (0,), 3, True),
    "os.truncate": ("truncate", (0,), None, True),
    "os.setxattr": ("change the attributes of", (0,), None, True),
    "os.removexattr": ("change the attributes of", (0,), None, True),
    "sqlite3.connect": ("open a database at", (0,), None, True),
}
# Programs library code runs to ask about the machine (matplotlib's font list, ctypes'
# library search): they only read, so they run even where shell commands do not.
_QUERIES = frozenset({"fc-list", "fc-match", "ldconfig", "uname", "getconf", "locale", "lscpu"})
_SHELL_EVENTS = {"subprocess.Popen": 1, "os.system": 0, "os.exec": 1, "os.posix_spawn": 1, "os.spawn": 2, "pty.spawn": 0}


def install(
    *, roots: list[str], where: str, log: str, shell_rule: str = "", cutoff: float | None = None,
    original: str | None = None, copy: str | None = None, network: bool = True,
) -> None:
    """Refuse, from now on in this process, changes outside `roots` (real paths) and, when
    `shell_rule` says why ("a shell command cannot be kept inside the copy"), every subprocess.
    `where` opens each refusal's sentence ("checked in a copy"); `original`/`copy` name a
    scratch copy whose links to the originals are copied on write; without `network`, no
    connection to another machine (IPv4, IPv6) is made."""
    real_roots = [os.path.realpath(r) for r in roots]
    own = os.path.realpath(os.path.dirname(log))  # the run's own folder: never the user's files
    log_fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    seen: set[str] = set()  # in place: files this run created or was allowed to change
    busy: list[bool] = []

    def inside(path: str, root: str) -> bool:
        return path == root or path.startswith(root.rstrip(os.sep) + os.sep)

    def allowed(path: str) -> bool:
        return path == os.devnull or any(inside(path, root) for root in real_roots)

    def refuse(message: str) -> None:
        os.write(log_fd, (json.dumps({"refused": message}) + "\n").encode("utf-8", "replace"))
        raise PermissionError(message)

    def absolute(raw: Any, dir_fd: Any) -> str | None:
        if isinstance(raw, int) or raw is None:
            return None  # an open file descriptor: it was checked when it was opened
        path = os.fsdecode(raw)
        if isinstance(dir_fd, int) and dir_fd >= 0 and not os.path.isabs(path):
            base = os.readlink(f"/proc/self/fd/{dir_fd}")
        else:
            base = os.getcwd()
        return os.path.normpath(os.path.join(base, path))

    def materialise(link: str, truncating: bool) -> None:
        target = os.readlink(link)
        busy.append(True)
        try:
            if truncating:
                os.unlink(link)
                return
            temp = f"{link}.larik-copy-{os.getpid()}"
            with open(target, "rb") as src, open(temp, "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            os.chmod(temp, os.stat(target).st_mode & 0o7777)
            os.replace(temp, link)
        finally:
            busy.pop()

    def entry(path: str) -> str:
        return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))

    def followed(path: str, truncating: bool) -> str:
        for _ in range(40):
            path = entry(path)
            if not os.path.islink(path):
                return path
            target = os.readlink(path)
            if copy and original and os.path.isabs(target) and inside(target, original) and inside(path, copy):
                materialise(path, truncating)
                return path
            path = os.path.normpath(os.path.join(os.path.dirname(path), target))
        return os.path.realpath(path)

    def check(verb: str, path: str) -> None:
        if not allowed(path):
            refuse(f"{where}; this cell tried to {verb} {path} outside it")
        if cutoff is None or path in seen or inside(path, own):
            return
        try:
            changed = os.lstat(path).st_mtime > cutoff
        except OSError:
            changed = False
        if changed:
            refuse(f"{where}; {path} changed since the session, so it is left alone (--force replays over it)")
        seen.add(path)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if busy:
            return
        if event == "open":
            if len(args) < 3 or not isinstance(args[2], int) or not args[2] & _WRITE_FLAGS:
                return
            path = absolute(args[0], None)
            if path is not None:
                check("write", followed(path, bool(args[2] & os.O_TRUNC)))
        elif event in _PATH_EVENTS:
            verb, indexes, fd_index, follows = _PATH_EVENTS[event]
            dir_fd = args[fd_index] if fd_index is not None and fd_index < len(args) else None
            for index in indexes:
                path = absolute(args[index], dir_fd) if index < len(args) else None
                if path is None or (event == "sqlite3.connect" and path.endswith(":memory:")):
                    continue
                check(verb, followed(path, False) if follows else entry(path))
        elif event in ("socket.connect", "socket.sendto") and not network:
            sock, address = args[0], args[1] if len(args) > 1 else None
            if getattr(sock, "family", None) in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
                refuse(f"{where}; this cell tried to connect to {address[0]}:{address[1]}: the network is off "
                       "(--network allows it)")
        elif event == "os.chdir":
            path = absolute(args[0], None)
            if path is not None and not allowed(os.path.realpath(path)):
                refuse(f"{where}; this cell tried to change to the folder {path} outside it")
        elif event in _SHELL_EVENTS and shell_rule:
            command = args[_SHELL_EVENTS[event]] if len(args) > _SHELL_EVENTS[event] else ""
            if isinstance(command, (list, tuple)):
                words = [os.fsdecode(c) if isinstance(c, (bytes, str)) else str(c) for c in command]
                if words and os.path.basename(words[0]) in _QUERIES:
                    return
                command = " ".join(words)
            elif isinstance(command, bytes):
                command = os.fsdecode(command)
            refuse_shell(str(command))

    def refuse_shell(command: str, *_: Any, **__: Any) -> None:
        refuse(f"{where}; this cell tried to run `{command[:200]}`: {shell_rule}")

    def os_refused(error: BaseException | None) -> BaseException | None:
        """The refusal the operating system raised behind `error`, if any: `EACCES`, `EPERM`
        (Landlock), `EROFS` (bubblewrap); a refusal of the guard's own has no errno."""
        for _ in range(10):
            if error is None:
                return None
            if isinstance(error, OSError) and error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                return error
            reason = getattr(error, "reason", None)  # urllib's URLError
            error = reason if isinstance(reason, BaseException) else error.__cause__ or error.__context__
        return None

    def drain() -> None:
        """Wait (a moment at most) until what programs the cell ran wrote to the kernel's
        stdout and stderr (IPython reads those pipes on a thread) is read, and send it, so a
        refusal they printed ("rm: …: Permission denied") is this cell's output."""
        deadline = time.monotonic() + 2.0
        for stream in (sys.stdout, sys.stderr):
            pipe = getattr(stream, "_fid", None)
            while isinstance(pipe, int) and time.monotonic() < deadline:
                if struct.unpack("i", fcntl.ioctl(pipe, termios.FIONREAD, b"\0\0\0\0"))[0] == 0:
                    break
                time.sleep(0.002)
        time.sleep(0.002)  # the reading thread writes what it read
        for stream in (sys.stdout, sys.stderr):
            stream.flush()

    def after_cell(result: Any) -> None:
        drain()
        found = os_refused(getattr(result, "error_in_exec", None))
        if found is not None:
            path = getattr(found, "filename", None)
            at = f" at {path}" if path is not None else ""
            message = f"{where}; the operating system refused what this cell tried{at} ({type(found).__name__}: {found})"
            os.write(log_fd, (json.dumps({"refused": message}) + "\n").encode("utf-8", "replace"))

    sys.addaudithook(hook)
    ipython = sys.modules["IPython"].get_ipython() if "IPython" in sys.modules else None
    if ipython is not None:
        ipython.events.register("post_run_cell", after_cell)
    # IPython runs `!cmd`, `%sx` and `%pip` through a forked terminal whose exec the hook can
    # only refuse in the child: refuse them here, where the cell sees why.
    shell = ipython if shell_rule else None
    for name in ("system", "system_piped", "system_raw", "getoutput"):
        if shell is not None and hasattr(shell, name):
            setattr(shell, name, refuse_shell)


def guard_cell(**config: Any) -> str:
    """The code a scratch kernel runs first: this module's source run in a namespace of its
    own, then `install(**config)`; it leaves no name in the kernel's namespace."""
    with open(__file__, encoding="utf-8") as handle:
        source = handle.read()
    return (
        "def _larik_guard(source, config):\n"
        "    namespace = {'__name__': 'larik_scratch_guard'}\n"
        "    exec(compile(source, '<larik scratch guard>', 'exec'), namespace)\n"
        "    namespace['install'](**config)\n"
        f"_larik_guard({source!r}, {config!r})\n"
        "del _larik_guard\n"
    )
