"""The index of restricted values, built off the request path (issue 51: no wait in a request).

A source's values (`egress/values.py` forms) are made and their search compiled on one daemon
thread, started when a rule is set, the kernel's rules are taken or a restricted variable is
seen changed (`egress/restricted.py` hands it the sources whose index is out of date). The
finished index is a new `ValueIndex` (the published one copied, changed, compiled) swapped in
by one assignment under a lock: a request searches the index published when it began, never a
half-built one. A source not in it yet is unfinished: the door withholds what it would have
had to search for it (`egress/decisions.py`). A small source is indexed in the request itself
(`index_now`), where that costs a few ms and no other build holds the index.

A forked process (a user's multiprocessing) has no builder thread and may hold a lock taken in
the parent: it makes new ones and queues its unfinished sources again. A build that raises is
reported once (logged) and its source stays unfinished until its value changes.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable

from larik_jupyter.egress.tags import source_label
from larik_jupyter.egress.values import ValueIndex

Forms = Callable[[str, object], Iterable[tuple[str, str]]]
Key = tuple[object, ...]

_log = logging.getLogger(__name__)


class IndexBuilder:
    """The published index of some sources (`variable:df`, `file:x.csv`), and the thread that
    builds what `want` asks for. `forms(source, value)` makes a source's (text, label) pairs."""

    def __init__(self, forms: Forms) -> None:
        self._forms = forms
        self.index = ValueIndex()  # the published index; replaced whole, never changed
        self.version = 0  # counts the published indexes
        self.keys: dict[str, Key] = {}  # each published source's key
        # Tests: the thread waits on this before each build (a build held unfinished at will).
        self.gate: threading.Event | None = None
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()  # the state below and the published index's reference
        self._write = threading.Lock()  # held by whoever makes the next index
        self._changed = threading.Condition(self._lock)
        self._wanted: dict[str, Key] = {}
        self._jobs: dict[str, tuple[Key, object]] = {}  # queued, not yet taken
        self._queued: dict[str, Key] = {}  # queued or being built
        self._failed: dict[str, Key] = {}
        self._thread: threading.Thread | None = None

    def _forked(self) -> None:
        if self._pid != os.getpid():
            self._reset()

    def want(self, wanted: dict[str, tuple[Key, object]], now: Iterable[str] = ()) -> None:
        """Index the sources of `wanted` (source: its key and its value) under their key, and
        no others: those out of date are queued for the thread, except those of `now`, which
        the caller indexes itself (`index_now`)."""
        self._forked()
        inline = set(now)
        with self._lock:
            self._wanted = {source: key for source, (key, _) in wanted.items()}
            wake = any(source not in self._wanted for source in self.keys)
            for source, (key, value) in wanted.items():
                if source in inline or self.keys.get(source) == key:
                    continue
                if self._queued.get(source) == key or self._failed.get(source) == key:
                    continue
                self._jobs[source] = (key, value)
                self._queued[source] = key
                wake = True
            if wake:
                self._jobs.setdefault("", ((), None))  # a drop alone still makes a new index
                self._start()
                self._changed.notify_all()

    def unfinished(self) -> list[str]:
        """The wanted sources the published index does not hold under their key."""
        return self.snapshot()[1]

    def index_now(self, wanted: dict[str, tuple[Key, object]]) -> None:
        """Index `wanted` in this thread, unless a build is under way (then they are queued)."""
        built = {source: (key, self._made(source, key, value)) for source, (key, value) in wanted.items()}
        if self._write.acquire(blocking=False):
            try:
                self._publish_built(built)
                return
            finally:
                self._write.release()
        with self._lock:
            for source, (key, value) in wanted.items():
                self._jobs[source] = (key, value)
                self._queued[source] = key
            self._start()
            self._changed.notify_all()

    def settle(self, timeout: float) -> bool:
        """Wait until nothing is queued or being built (True), or `timeout` seconds (False)."""
        self._forked()
        with self._lock:
            return self._changed.wait_for(lambda: not self._queued and not self._jobs, timeout)

    def snapshot(self) -> tuple[ValueIndex, list[str]]:
        """The published index and the wanted sources it does not hold, read together."""
        with self._lock:
            keys = self.keys
            return self.index, [source for source, key in self._wanted.items() if keys.get(source) != key]

    def _start(self) -> None:
        """Start the thread (under `_lock`) unless it runs: it ends when nothing is left to
        build, so a session's builder holds no thread (and no index) once its work is done."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="larik-egress-index", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._jobs:
                    self._thread = None
                    self._changed.notify_all()
                    return
                jobs, self._jobs = self._jobs, {}
            jobs.pop("", None)
            gate = self.gate
            if gate is not None:
                gate.wait()
            built = {source: (key, self._made(source, key, value)) for source, (key, value) in jobs.items()}
            with self._write:
                self._publish_built(built)
            with self._lock:
                for source, (key, _) in jobs.items():
                    if self._queued.get(source) == key and source not in self._jobs:
                        del self._queued[source]
                self._changed.notify_all()

    def _made(self, source: str, key: Key, value: object) -> list[tuple[str, str]] | None:
        """`source`'s forms, or None (reported once, the source left unfinished) when making
        them raised."""
        try:
            return list(self._forms(source, value))
        except Exception as exc:
            with self._lock:
                self._failed[source] = key
            _log.warning("The restricted values of %s could not be indexed (%s): what the door "
                         "would search for them is withheld until it changes.", source_label(source), exc)
            return None

    def _publish_built(self, built: dict[str, tuple[Key, list[tuple[str, str]] | None]]) -> None:
        """`_publish` the forms made; where that raises, the sources stay unfinished (held back,
        never sent) until they change, and it is reported once."""
        try:
            self._publish({s: b for s, b in built.items() if b[1] is not None})
        except Exception as exc:
            with self._lock:
                self._failed.update({source: key for source, (key, _) in built.items()})
            _log.warning("The index of restricted values could not be built (%s): what the door "
                         "would search for %s is withheld until they change.", exc, ", ".join(built))

    def _publish(self, built: dict[str, tuple[Key, list[tuple[str, str]] | None]]) -> None:
        """Make and swap in the next index (under `_write`): the published one without the
        sources no longer wanted, with `built` where it is still what is wanted."""
        with self._lock:
            base, wanted, keys = self.index, dict(self._wanted), dict(self.keys)
        drops = [source for source in keys if source not in wanted]
        adds = {s: (k, f) for s, (k, f) in built.items() if f is not None and wanted.get(s) == k and keys.get(s) != k}
        if not drops and not adds:
            return
        index = base.copy()
        for source in drops:
            index.drop(source)
            del keys[source]
        for source, (key, forms) in adds.items():
            index.add(source, forms)
            keys[source] = key
        index.compile()
        with self._lock:
            self.index, self.keys = index, keys
            self.version += 1
