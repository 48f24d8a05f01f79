"""The values of a session's restricted variables and files, kept indexed (`egress/values.py`)
for the door's search of untagged text: re-indexed only for what changed since last (a
variable's object, shape or length; a file's modification time or size, or whether it is
`never`, whose lines are indexed too). A variable changed in
place keeps its object, so what it holds is looked at too (its content key: the kernel's
fingerprint, which the variable watch takes anyway): for every restricted variable once a turn
(the person's cells may have run since), and for those a call says it changed (`stale`).

What is out of date is indexed in the background (`egress/builder.py`); a source of at most
`INLINE_VALUES` values (the budget shared by a refresh's sources) in the request itself.
`unfinished` names the restricted sources the index taken by the last refresh does not hold."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from larik_jupyter.egress.builder import IndexBuilder
from larik_jupyter.egress.policy import PolicySet
from larik_jupyter.egress.value_forms import MIN_ROWS, VALUES_PER_SOURCE, file_forms, value_forms
from larik_jupyter.egress.values import ValueIndex
from larik_jupyter.frames import frame_of
from larik_jupyter.frames.schema import shape

_NOT_YET = object()  # no turn checked yet

# Restricted files whose values are indexed, and how much of each is read.
MAX_FILES = 200
MAX_FILE_BYTES = 8 * 1024 * 1024
# Folders never searched for restricted files: tools' and environments' own.
_SKIPPED = frozenset({"node_modules", "__pycache__", "site-packages", "venv", "env"})
MAX_WALKED = 50_000
# Values a request indexes itself (a few ms); larger sources are built in the background.
INLINE_VALUES = 2_000


class RestrictedValues:
    """The index of the restricted values of the kernel's user variables (`variables`, None: no
    kernel) and of the project's files under `root`; `version` counts its changes."""

    def __init__(
        self,
        root: Path,
        variables: Callable[[], Iterable[tuple[str, object]]] | None = None,
        content_key: Callable[[str, object], object] | None = None,
    ) -> None:
        self.root = root
        self.variables = variables
        self.content_key = content_key
        self.builder = IndexBuilder(_forms)
        self.index = ValueIndex()  # the builder's published index when last taken
        self.unfinished: tuple[str, ...] = ()  # the restricted sources it did not hold then
        self.version = 0
        self._indexed: dict[str, tuple[object, ...]] = {}
        self._checked_turn: object = _NOT_YET
        self._stale: set[str] = set()
        self._files_key: tuple[int | None, int] | None = None
        self._files: list[tuple[str, Path]] = []
        self._refreshing = threading.RLock()
        self._pid = os.getpid()

    def stale(self, names: Iterable[str]) -> None:
        """Variables a call changed: what they hold is looked at again at the next refresh."""
        self._stale.update(f"variable:{name}" for name in names)

    def refresh(self, policies: PolicySet, turn: int | None) -> None:
        """Index the values of the variables and files `policies` restrict that changed since
        last (the project is walked once per `turn` and rules' version). One caller at a time:
        a rule set in the notebook (`/egress`) may meet a running turn's request."""
        if self._pid != os.getpid():  # forked: a lock another thread held there is not held here
            self._pid, self._refreshing = os.getpid(), threading.RLock()
        with self._refreshing:
            self._refresh(policies, turn)

    def _refresh(self, policies: PolicySet, turn: int | None) -> None:
        if not policies.restricts_anything():
            # Nothing to look for (what an earlier rule indexed is no longer restricted).
            if self.unfinished:
                self.unfinished = ()
                self.version += 1
            return
        recheck = turn != self._checked_turn
        self._checked_turn = turn
        stale, self._stale = self._stale, set()
        wanted: dict[str, tuple[object, ...]] = {}
        values: dict[str, object] = {}
        if self.variables is not None:
            for name, value in self.variables():
                source = f"variable:{name}"
                if policies.for_variable(name).policy.restricted:
                    wanted[source] = self._key(name, value, recheck or source in stale)
                    values[source] = value
        for rel, path in self._restricted_files(policies, turn):
            try:
                stat = path.stat()
            except OSError:
                continue
            # A `never` file is indexed line by line too: a new policy may call for that.
            never = policies.for_file(rel).policy.kind == "never"
            wanted[f"file:{rel}"] = (stat.st_mtime_ns, stat.st_size, never)
            values[f"file:{rel}"] = (path, never)
        small: dict[str, tuple[tuple[object, ...], object]] = {}
        budget = INLINE_VALUES
        for source in sorted(wanted):
            if self.builder.keys.get(source) != wanted[source]:
                size = _size(source, values[source])
                if size <= budget:
                    budget -= size
                    small[source] = (wanted[source], values[source])
        self._indexed = wanted
        self.builder.want({s: (wanted[s], values[s]) for s in wanted}, now=small)
        if small:
            self.builder.index_now(small)
        self._take()

    def _take(self) -> None:
        """Take the builder's published index and what it does not hold yet: `version` counts
        the changes of either."""
        index, names = self.builder.snapshot()
        unfinished = tuple(sorted(names))
        if index is not self.index or unfinished != self.unfinished:
            self.index, self.unfinished = index, unfinished
            self.version += 1

    def settle(self, timeout: float) -> bool:
        """Wait until the index holds every wanted source (or `timeout` seconds: False); the
        next `refresh` takes it."""
        return self.builder.settle(timeout)

    def _key(self, name: str, value: object, look: bool) -> tuple[object, ...]:
        """What says variable `name` changed since it was indexed: its identity, and what it
        holds where that is looked at (`look`, or it is new or another object); a value whose
        content key cannot be had counts as changed when looked at."""
        identity = _identity(value)
        old = self._indexed.get(f"variable:{name}")
        if old is not None and old[:3] == identity and not look:
            return old
        key = self.content_key
        # A value whose look-ups raise is known by its identity alone.
        content = _asked(lambda: key(name, value)) if key is not None else None
        return (*identity, object() if content is None else content)

    def _restricted_files(self, policies: PolicySet, turn: int | None) -> list[tuple[str, Path]]:
        """The project's files some rule or the default restricts (at most `MAX_FILES`), from
        one walk of the project a turn (hidden folders and virtual environments left out)."""
        key = (turn, policies.version)
        if self._files_key != key:
            self._files_key = key
            self._files = []
            # No rule can restrict a file: the project is not walked (a large one takes tens of ms).
            walk = _project_files(self.root) if policies.restricts_files() else ()
            for rel, path in walk:
                if policies.for_file(rel).policy.restricted:
                    self._files.append((rel, path))
                    if len(self._files) >= MAX_FILES:
                        break
        return self._files


def _project_files(root: Path) -> Iterable[tuple[str, Path]]:
    """The regular files under `root` (no link followed), relative POSIX path and path, at most
    `MAX_WALKED` entries looked at."""
    walked = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED)
        for name in sorted(files):
            walked += 1
            if walked > MAX_WALKED:
                return
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                yield path.relative_to(root).as_posix(), path


def _identity(value: object) -> tuple[object, ...]:
    """The object, its shape and its length as text (each None where asking raises): text, so
    comparing two identities never runs a value's own `__eq__` (a Dask scalar's is lazy). A
    lazy frame's are never asked (they are computations)."""
    frame = frame_of(value)
    if frame is not None:
        return (id(value), _asked(lambda: shape(frame) and str(shape(frame))), None)
    return (
        id(value),
        _asked(lambda: str(getattr(value, "shape", None))),
        _asked(lambda: str(len(value))),  # type: ignore[arg-type]
    )


def _asked(question: Callable[[], object]) -> object:
    try:
        return question()
    except Exception:
        return None


def _forms(source: str, value: object) -> Iterable[tuple[str, str]]:
    kind, _, name = source.partition(":")
    if kind == "file" and isinstance(value, tuple):
        path, never = value
        try:
            with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as handle:
                text = handle.read(MAX_FILE_BYTES).decode("utf-8", errors="replace")
        except OSError:
            return []
        return list(file_forms(name, text, lines=never))
    try:
        return list(value_forms(name, value))
    except Exception:  # a value that cannot be walked is still covered by its tags
        return []


def _size(source: str, value: object) -> int:
    """About how many values indexing `source`'s `value` (a file's: (path, never)) looks at; a
    value that cannot be asked counts as large (it is indexed in the background)."""
    try:
        return _counted(source, value)
    except Exception:
        return VALUES_PER_SOURCE


def _counted(source: str, value: object) -> int:
    if source.startswith("file:") and isinstance(value, tuple):
        return min(value[0].stat().st_size, MAX_FILE_BYTES) // 16
    frame = frame_of(value)
    if frame is not None:
        found = shape(frame)
        if found is None:
            return 1  # lazy: nothing of it is read
        if len(found) == 2:
            rows, columns = found[0], min(found[1], 500)
            return min(rows, max(MIN_ROWS, VALUES_PER_SOURCE // max(columns, 1))) * columns
        return min(found[0], VALUES_PER_SOURCE)
    if isinstance(value, dict):
        return min(2 * len(value), 2 * VALUES_PER_SOURCE)
    return min(len(value), VALUES_PER_SOURCE) if hasattr(value, "__len__") else 1
