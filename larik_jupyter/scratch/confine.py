"""The operating system's confinement of a scratch kernel: Landlock (Linux 5.13+, unprivileged,
no namespaces), applied by a launcher before it execs the kernel, so the kernel and every
process it starts may write only in the folders given, and (unless `--network`) open no TCP
connection. Reads and execution stay allowed everywhere: a confined cell still reads any file
the user can.

    python -m larik_jupyter.scratch.confine --write DIR [--write DIR ...] [--network] -- KERNEL ARGV

The three Landlock system calls are made through ctypes: the maintained Python packages for
Landlock were pre-releases or young bindings, and the calls are few. The launcher runs in
larik's own Python and execs the kernel's, so the kernel's Python needs nothing installed.

`LARIK_TEST_CONFINEMENT` is for tests only: `off` runs checked code with no confinement at all
(neither this nor the audit hook; the made-false twin of a test that something was refused),
`unavailable` acts as if the kernel had neither Landlock nor bubblewrap (`scratch.bubblewrap`,
the stand-in), `bubblewrap` as if it had no Landlock.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys

TEST_SWITCH = "LARIK_TEST_CONFINEMENT"
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_PR_SET_NO_NEW_PRIVS = 38
_VERSION = 1
_RULE_PATH_BENEATH = 1
_NET_CONNECT_TCP = 1 << 1
_SCOPE_SIGNAL = 1 << 1  # ABI 6: no signals to processes outside the confinement (the live kernel)
# Filesystem rights that change something, by the ABI that added them; reads and execution
# are not handled, so they stay allowed everywhere.
_WRITE_FILE, _TRUNCATE, _REFER = 1 << 1, 1 << 14, 1 << 13
_CHANGES_V1 = _WRITE_FILE | sum(1 << bit for bit in (4, 5, 6, 7, 8, 9, 10, 11, 12))  # remove, make
_FILE_RIGHTS = _WRITE_FILE | _TRUNCATE
# Devices a kernel writes to or opens for writing in ordinary work; /dev/shm holds
# multiprocessing's semaphores and shared arrays.
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/urandom", "/dev/random")
_DEVICE_DIRS = ("/dev/pts", "/dev/shm")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class Availability:
    """Whether this machine can confine a kernel with Landlock: `abi` (0: it cannot) and, when
    it cannot, `reason` ("Landlock is not available (kernel 5.10)"); `off`: the test switch
    turned all confinement off. (A plain class: the launcher imports only what it needs, and
    starts in milliseconds.)"""

    def __init__(self, abi: int, reason: str = "", *, off: bool = False) -> None:
        self.abi, self.reason, self.off = abi, reason, off


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def availability() -> Availability:
    """Landlock's ABI version here, or why it cannot be used."""
    switch = os.environ.get(TEST_SWITCH, "")
    if switch == "off":
        return Availability(0, "confinement was switched off for a test", off=True)
    if switch in ("unavailable", "bubblewrap"):
        return Availability(0, "Landlock was reported unavailable for a test")
    if sys.platform != "linux":
        return Availability(0, f"Landlock is Linux only and this is {sys.platform}")
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION))
    if abi > 0:
        return Availability(int(abi))
    release = os.uname().release
    if ctypes.get_errno() == errno.EOPNOTSUPP:  # built in, not enabled at boot
        return Availability(0, f"Landlock is disabled in this kernel ({release})")
    return Availability(0, f"Landlock is not available (kernel {release})")


def _changes(abi: int) -> int:
    return _CHANGES_V1 | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)


def _call(libc: ctypes.CDLL, number: int, *args: object) -> int:
    result = int(libc.syscall(number, *args))
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"Landlock refused the ruleset ({os.strerror(errno)})")
    return result


def confine(writable: list[str], *, network: bool) -> None:
    """Confine this process and its future children: changes only beneath `writable` (and to
    the usual devices), no TCP connection unless `network`. Raises OSError where it cannot."""
    abi = availability().abi
    if abi <= 0:
        raise OSError("Landlock is not available here")
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    handled = _changes(abi)
    attr = _RulesetAttr(handled, _NET_CONNECT_TCP if abi >= 4 and not network else 0, _SCOPE_SIGNAL if abi >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _call(libc, _CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        rules = [(path, handled) for path in (*writable, *_DEVICE_DIRS)]
        rules += [(path, handled & _FILE_RIGHTS) for path in _DEVICES]
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a device this machine does not have
            try:
                if not os.path.isdir(f"/proc/self/fd/{fd}"):
                    rights &= _FILE_RIGHTS
                rule = _PathBeneathAttr(rights, fd)
                _call(libc, _ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0))
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
            raise OSError(ctypes.get_errno(), "no_new_privs could not be set")
        _call(libc, _RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)


def launcher(writable: list[os.PathLike[str]], *, network: bool, error_file: os.PathLike[str]) -> list[str]:
    """The command that confines, then runs what follows `--`; a failure is written to
    `error_file` (the kernel's own output is not kept)."""
    # Run as a file, isolated (-I) and without site-packages (-S): it needs only the standard
    # library, and starts in a few milliseconds.
    words = [sys.executable, "-I", "-S", os.path.abspath(__file__), "--error-file", str(error_file)]
    for path in writable:
        words += ["--write", str(path)]
    return [*words, *(["--network"] if network else []), "--"]


def main(argv: list[str]) -> int:
    """`python -m larik_jupyter.scratch.confine ... -- COMMAND`: confine, then exec COMMAND."""
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print("usage: python -m larik_jupyter.scratch.confine --write DIR ... [--network] -- COMMAND", file=sys.stderr)
        return 2
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1:]
    writable = [options[i + 1] for i, word in enumerate(options[:-1]) if word == "--write"]
    error_file = next((options[i + 1] for i, word in enumerate(options[:-1]) if word == "--error-file"), None)
    try:
        confine(writable, network="--network" in options)
    except OSError as exc:
        message = f"The scratch kernel could not be confined by the operating system ({exc.strerror or exc}), so it was not started."
        if error_file:
            with open(error_file, "w", encoding="utf-8") as handle:
                handle.write(message)
        print(message, file=sys.stderr)
        return 126
    os.execvp(command[0], command)
    return 127  # execvp does not return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
