"""The comm between this kernel and the JupyterLab panels that show notebooks (`larik.bridge`).

Every open notebook panel whose kernel has the extension loaded connects: the panel opens a
comm when its kernel connects, and the kernel opens one when the extension loads, so panels
that were already open connect too. A panel says which notebook it shows (`hello`); requests
from the kernel (read the document, insert, replace, patch, delete a cell, set outputs or
metadata) are applied to the open notebook's model in the browser, never to the file, and each
gets a reply: success with the resulting cell ids, or a precise error. The messages are declared
once in `bridge_protocol`; a message from the page this kernel cannot read gets an `error` reply
(and fails the request it answers), never an exception. What replies say of the
cells is kept (`cells`, `tools/page_cells.py`), so an edit of a cell already read is one request.

Replies arrive on the kernel's main thread, where ipykernel dispatches comm messages (also
while an async `%larik` cell awaits). A request waits for its reply on a thread-safe future
from a worker thread (`request`); the main thread can never block on one, since it is the
thread that would deliver the reply.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

from larik_jupyter.api import CachedCells, CellChanged, NotLanded, PageCells, Refused
from larik_jupyter.bridge_protocol import (
    Answer,
    Bye,
    ErrorReply,
    Hello,
    Op,
    R,
    RefusalCode,
    RefusedReply,
    Request,
    Unreadable,
    read_page_message,
    reply_type,
    request_data,
)

TARGET = "larik.bridge"
REPLY_TIMEOUT = 10.0
# How long a page showing the notebook has to answer before a request goes to the next one.
HANDOVER = 3.0


@dataclass
class Panel:
    """What one connected page said about the notebook panel it shows."""

    path: str  # relative to the server's root, as JupyterLab names it
    root: Path | None  # the server's root directory, when the page knows it
    comm_id: str = ""  # the comm it last said hello on
    page: str = ""  # the page's id (requests name it in `to`), "" from a page that sends none
    client: str = ""  # the session id of the page's kernel connection (who ran a cell)

    @property
    def real(self) -> Path | None:
        if self.root is None:
            return None
        return Path(os.path.realpath(self.root / self.path))


@dataclass
class _Route:
    key: str
    comm: Any
    name: str  # the notebook's path as the page knows it
    page: str


class Bridge:
    """The kernel's end of `larik.bridge`: which notebooks the browser shows, and requests.

    Several pages may show one notebook (two collaborators, or one person with two tabs), and
    a comm the kernel opened reaches all of them. Each request is addressed to one page (`to`):
    the page that ran the latest `%larik` cell (`lead`), else the first that said hello for the
    notebook and is still there. One that does not answer
    within `HANDOVER` seconds (its tab closed without a word) goes to the back of the line and
    the request, with the same id, goes to the next page; requests are safe to apply twice, so
    a slow page that applies it late changes nothing once the other page's change has reached
    it (a page blocked for those seconds may still apply it at the same moment: rare, and not
    guarded against)."""

    def __init__(self, *, blocked: Callable[[], bool] = lambda: False) -> None:
        self.blocked = blocked
        self.comms: dict[str, Any] = {}
        self.panels: dict[str, Panel] = {}  # by page (its id, else its comm's), oldest first
        self.cells = PageCells()
        self.requests = 0  # how many requests the browser answered (tests and the bench count them)
        # Each request waiting for its reply: the reply it declares, and where the reply goes.
        self._pending: dict[int, tuple[type, concurrent.futures.Future[Answer]]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._main = threading.main_thread().ident
        self._leader = ""  # the kernel connection of the page that ran the latest `%larik` cell
        # Called with the key of every panel that says hello (a page connecting mid-turn).
        self.joined: list[Callable[[str], None]] = []

    # -- connection ------------------------------------------------------------------------

    def register(self, *, hello: bool = True) -> None:
        """Accept panels' comms, and (with `hello`) open one so panels already showing this
        kernel connect; a headless client (nbconvert) has no handler for it and would warn."""
        import comm

        comm.get_comm_manager().register_target(TARGET, self._opened)
        if hello:
            self.say_hello()

    def say_hello(self) -> None:
        """Open the kernel's own comm, so panels already showing this kernel connect."""
        import comm

        self._attach(comm.create_comm(target_name=TARGET, data=msgspec.to_builtins(Hello())))

    def _opened(self, comm: Any, msg: dict[str, Any]) -> None:
        self._attach(comm)
        self._on_msg(comm, msg)

    def _attach(self, comm: Any) -> None:
        self.comms[comm.comm_id] = comm
        comm.on_msg(lambda msg: self._on_msg(comm, msg))
        comm.on_close(lambda _msg: self._closed(comm.comm_id))

    def _closed(self, comm_id: str) -> None:
        self.comms.pop(comm_id, None)
        for key in [k for k, p in self.panels.items() if p.comm_id == comm_id]:
            self._drop(key)

    def _drop(self, key: str) -> None:
        with self._lock:
            panel = self.panels.pop(key, None)
        self._forget(panel)

    def _forget(self, panel: Panel | None) -> None:
        if panel is not None and panel.real is not None:
            self.cells.forget(panel.real)

    def _on_msg(self, comm: Any, msg: dict[str, Any]) -> None:
        message = read_page_message(_comm_data(msg))
        if isinstance(message, Hello):
            if message.path is not None:
                self._hello(comm.comm_id, message)
        elif isinstance(message, Bye):
            self._drop(message.page)
        elif isinstance(message, Unreadable):
            self._malformed(comm, message.reply)
        elif isinstance(message, ErrorReply):  # the page could not read a request
            self._answered(RefusedReply(id=message.id, code=message.code, error=message.error))
        elif not isinstance(message, (RefusedReply, self._expected(message.id))):
            tag = message.__struct_config__.tag
            wrong = f"malformed message: a {tag} reply to a request that gets another"
            self._malformed(comm, ErrorReply(error=wrong, id=message.id))
        else:
            self._answered(message)

    def _malformed(self, comm: Any, error: ErrorReply) -> None:
        """Tell the page its message was malformed; the request it answered fails."""
        comm.send(msgspec.to_builtins(error))
        self._answered(RefusedReply(id=error.id, code=error.code, error=error.error))

    def _expected(self, request_id: int) -> type:
        """The reply request `request_id` declares (any reply, when none waits under that id)."""
        with self._lock:
            pending = self._pending.get(request_id)
        return pending[0] if pending is not None else object

    def _hello(self, comm_id: str, hello: Hello) -> None:
        """A page says which notebook it shows: a page known already (a rename, a reload of
        the same tab, its second comm) keeps its place in line, a new one joins at the back."""
        root = Path(os.path.expanduser(hello.root)) if hello.root else None
        key = hello.page or comm_id
        panel = Panel(str(hello.path), root, comm_id, hello.page or "", hello.client or "")
        # A page that (re)connects or was renamed may show another state of the document.
        self._forget(self.panels.get(key))
        self._forget(panel)
        with self._lock:
            self.panels[key] = panel
        if panel.client and panel.client == self._leader:
            self.lead(panel.client)
        for listener in list(self.joined):
            listener(key)

    def lead(self, client: str) -> None:
        """The page whose kernel connection is `client` ran a `%larik` cell (or `%load_ext`):
        its requests go there first from now on, also when it says hello later."""
        if not client:
            return
        with self._lock:
            self._leader = client
            first = {k: p for k, p in self.panels.items() if p.client == client}
            if first:
                self.panels = first | {k: p for k, p in self.panels.items() if k not in first}

    def connection(self, key: str) -> str:
        """Which page on which comm `key` is now (a reloaded tab keeps its key, not its comm)."""
        panel = self.panels.get(key)
        return f"{key}@{panel.comm_id if panel is not None else ''}"

    def _answered(self, reply: Answer) -> None:
        with self._lock:
            pending = self._pending.pop(reply.id, None)
        if pending is not None and not pending[1].done():
            pending[1].set_result(reply)

    @property
    def notebook_path(self) -> Path | None:
        """The notebook a browser shows this kernel in (the first panel that said hello)."""
        for panel in list(self.panels.values()):
            if panel.real is not None:
                return panel.real
        return None

    def cached(self, path: Path, cell_ids: list[str]) -> CachedCells | None:
        """Those cells of the open notebook at `path` as the browser last sent them, or None
        when they are not all held or no browser shows it."""
        return self.cells.cached(path, cell_ids) if self._routes(path) else None

    def _routes(self, path: Path) -> list[_Route]:
        """The pages to ask about `path`, in the order to ask them: those showing it, oldest
        first; else the first page under whose root it lies (it answers `not_open`); none when
        `path` lies outside every page's root (it cannot be open)."""
        real = Path(os.path.realpath(path))
        showing: list[_Route] = []
        other: list[_Route] = []
        for key, panel in list(self.panels.items()):
            comm = self.comms.get(panel.comm_id)
            if comm is None or panel.root is None:
                continue
            root = Path(os.path.realpath(panel.root))
            if not real.is_relative_to(root):
                continue
            route = _Route(key, comm, PurePosixPath(*real.relative_to(root).parts).as_posix(), panel.page)
            (showing if panel.real == real else other).append(route)
        return showing or other[:1]

    def _to_back(self, key: str) -> None:
        """The page `key` did not answer in time: the next page showing its notebook leads."""
        with self._lock:
            panel = self.panels.pop(key, None)
            if panel is not None:
                self.panels[key] = panel

    # -- requests --------------------------------------------------------------------------

    def request(self, path: Path, op: Op[R], timeout: float = REPLY_TIMEOUT) -> R | None:
        """Send `op` for the notebook at `path` and wait for the browser's reply (from a worker
        thread), the reply `op` declares. None when no browser shows it (`not_open`): the caller uses
        the file. Raises `NotLanded` when the browser did not apply it."""
        what = _describe(op)
        if threading.get_ident() == self._main or self.blocked():
            if not self.panels:
                return None
            raise NotLanded(
                f"Not landed: {what} was not sent to the open notebook, because this kernel "
                "cannot hear its reply while a `%larik` line runs inside a larger cell; put "
                "the prompt in a cell of its own and ask again."
            )
        routes = self._routes(path)
        if not routes:
            return None
        future: concurrent.futures.Future[Answer] = concurrent.futures.Future()
        request_id = next(self._ids)
        with self._lock:
            self._pending[request_id] = (reply_type(op), future)
        try:
            reply = self._ask(routes, op, request_id, future, timeout)
        finally:
            with self._lock:
                self._pending.pop(request_id, None)
        if reply is None:
            raise NotLanded(
                f"Not landed: the open notebook did not confirm {what} within {timeout:g} s; it "
                "may have been closed. Read it again before retrying."
            )
        self.requests += 1
        self.cells.absorb(path, reply)
        if not isinstance(reply, RefusedReply):
            answer: R = reply  # type: ignore[assignment]  # `_on_msg` checked it is `op`'s
            return answer
        _refused(reply, what)
        return None

    def _ask(
        self, routes: list[_Route], op: Op[Any], request_id: int,
        future: concurrent.futures.Future[Answer], timeout: float,
    ) -> Answer | None:
        """Request `request_id` sent to each page in turn until one answers; None if none did."""
        for index, route in enumerate(routes):
            last = index == len(routes) - 1
            route.comm.send(request_data(op, request_id, route.name, route.page))
            try:
                return future.result(timeout if last else min(HANDOVER, timeout))
            except concurrent.futures.TimeoutError:
                if last:
                    return None
                self._to_back(route.key)
        return None

    def send_to(self, key: str, op: Request) -> None:
        """Send `op` without waiting to one page, about the notebook it shows."""
        panel = self.panels.get(key)
        comm = self.comms.get(panel.comm_id) if panel is not None else None
        if comm is not None and panel is not None:
            comm.send(request_data(op, 0, panel.path, panel.page))

    def post(self, path: Path, op: Request) -> None:
        """Send `op` without waiting (streamed outputs); a final `request` confirms them."""
        routes = self._routes(path)
        if routes:
            route = routes[0]
            route.comm.send(request_data(op, 0, route.name, route.page))


def _comm_data(msg: Any) -> Any:
    """The `data` of a comm message (None when it has none)."""
    content = msg["content"] if isinstance(msg, dict) and "content" in msg else None
    return content["data"] if isinstance(content, dict) and "data" in content else None


def _describe(op: Op[Any]) -> str:
    cell_id = getattr(op, "cell_id", "")
    cell = f" of cell {cell_id}" if cell_id else ""
    name = str(op.__struct_config__.tag)
    return {
        "get": "reading the notebook",
        "insert": "inserting a cell",
        "replace": f"replacing the source{cell}",
        "patch": f"editing{cell}",
        "delete": f"deleting{cell.replace(' of', '')}",
        "set_outputs": f"setting the outputs{cell}",
        "set_metadata": f"setting the metadata{cell}",
        "restore": "restoring cells",
        "focus": f"showing{cell.replace(' of', '')}",
    }.get(name, name)


def _refused(reply: RefusedReply, what: str) -> None:
    """Raises why the page did not apply a request, unless it does not show the notebook (the
    caller then uses the file)."""
    if reply.code is RefusalCode.NOT_OPEN:
        return
    if reply.code is RefusalCode.STALE:
        raise CellChanged(f"Not landed: {what} was refused: {reply.error}; read the cell again.")
    raise Refused(f"Not landed: {what} failed in the open notebook: {reply.error}.")
