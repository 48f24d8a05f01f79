"""What the session widgets share: the registry of shown widgets, their actions read and
dispatched (`actions.py`), fallbacks.

A widget keeps no truth of its own: `refresh()` recomputes its one JSON trait from the
files. The magics call `refresh_all()` after every turn and command, so a tree or panel
shown earlier in the notebook follows the session without its cell being re-run.
"""

from __future__ import annotations

import asyncio
import html
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import anywidget
import traitlets

from larik_jupyter.api import LarikError
from larik_jupyter.frontends.notebook.widgets import with_fallback
from larik_jupyter.frontends.notebook.widgets.actions import (
    Action,
    Ping,
    ShowError,
    Unreadable,
    note_data,
    read_action,
)

if TYPE_CHECKING:
    from larik_jupyter.frontends.notebook.kernel import KernelSession

_SHOWN: weakref.WeakSet[SessionWidget] = weakref.WeakSet()
_Data = TypeVar("_Data")


def refresh_all() -> None:
    """Recompute every shown session widget; equal inputs are computed once per call."""
    memo: dict[tuple[Any, ...], Any] = {}
    for widget in list(_SHOWN):
        if widget.comm is None:
            continue
        try:
            widget.refresh(memo)
        except LarikError as exc:  # a session deleted or damaged meanwhile: say so in place
            widget.error = str(exc)


def shown_widgets() -> list[SessionWidget]:
    """The session widgets shown in this kernel and not yet closed."""
    return list(_SHOWN)


def escape(text: object) -> str:
    return html.escape(str(text), quote=True)


class SessionWidget(anywidget.AnyWidget):
    """Base of the tree, undo panel and sessions browser.

    Parameters: `kernel` (the kernel's `KernelSession`: its working directory and agent).
    Each message from the page is read as one of the widget's `ACTIONS` and handed to `act`;
    a LarikError (an unreadable message too) becomes the `error` trait (one sentence), success
    clears it.
    """

    # What the page sends: a union of `Action`s, each widget's own and `Ping`.
    ACTIONS: ClassVar[Any] = Ping
    # What the widget is called in the sentence refusing a message it cannot read.
    NAME: ClassVar[str] = "widget"
    # Actions that may wait for the browser (undo restores cells of open notebooks through the
    # bridge): in a kernel they run on a worker thread, since the thread handling this click
    # is the one that delivers the browser's replies.
    off_main_thread_actions: ClassVar[tuple[type[Action], ...]] = ()

    # The command that shows the widget, offered again when its kernel has ended.
    COMMAND = ""

    command = traitlets.Unicode("", help="the command that shows this widget (`%larik /tree`)").tag(sync=True)
    status = traitlets.Unicode("", help="what the last action did, for the user").tag(sync=True)
    error = traitlets.Unicode("", help="why the last action failed").tag(sync=True)

    def __init__(self, kernel: KernelSession, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.command = f"%larik {self.COMMAND}"
        self.kernel = kernel
        self._tasks: set[asyncio.Task[None]] = set()
        self.on_msg(self._on_custom_msg)
        _SHOWN.add(self)
        self.refresh()

    # -- for subclasses --------------------------------------------------------------------

    def act(self, action: Action) -> object:
        """Do what `action` (one of `ACTIONS`, not `Ping`) asks."""
        raise NotImplementedError

    def refresh(self, memo: dict[tuple[Any, ...], Any] | None = None) -> None:
        """Recompute the widget's data from the files (`memo` shares work between widgets)."""
        raise NotImplementedError

    def static_html(self) -> str:
        """What a viewer without a kernel or widget manager sees."""
        raise NotImplementedError

    def static_text(self) -> str:
        """What a text-only front end (terminal IPython, jupyter console) prints."""
        raise NotImplementedError

    # -- shared ----------------------------------------------------------------------------

    def directory_data(
        self, memo: dict[tuple[Any, ...], Any] | None, compute: Callable[[Path, str | None], _Data]
    ) -> _Data:
        """`compute(cwd, current session)` for the kernel's working directory, computed once
        per `memo` for widgets showing the same directory and session."""
        key = (compute, str(self.kernel.cwd), self.current)
        memo = {} if memo is None else memo
        if key not in memo:
            memo[key] = compute(self.kernel.cwd, self.current)
        result: _Data = memo[key]
        return result

    @property
    def current(self) -> str | None:
        """The id of the session the kernel's agent is on, if any."""
        agent = self.kernel.agent
        return agent.session_id if agent is not None else None

    def _on_custom_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        try:
            action = read_action(content, self.ACTIONS, self.NAME)
        except Unreadable as exc:
            self._failed(exc)
            return
        if isinstance(action, Ping):
            return
        if isinstance(action, self.off_main_thread_actions):
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                pass  # no kernel loop (a test's click): nothing to keep free
            else:
                self._tasks.add(task := loop.create_task(asyncio.to_thread(self._act, action)))
                task.add_done_callback(self._tasks.discard)
                return
        self._act(action)

    def _act(self, action: Action) -> None:
        try:
            self.act(action)
        except LarikError as exc:
            self._failed(exc)
        else:
            self.error = ""

    def _failed(self, exc: LarikError) -> None:
        self.error = str(exc)
        self.send(note_data(ShowError(message=str(exc))))

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return with_fallback(
            super()._repr_mimebundle_(**kwargs), html=self.static_html(), text=self.static_text()
        )
