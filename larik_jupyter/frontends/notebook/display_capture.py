"""What the code of a `python` call displays, kept for the call instead of the running cell.

`display(df)`, `display(fig)` and `plt.show()` under the inline backend (which calls `display`
for each open figure) all go through IPython's display publisher; while the call runs the shell
gets one that keeps them, with the figure a display came from (told by the display formatter,
the step before the publisher). A widget (a progress bar) still shows in the cell, and updates
of displays made before the call (the turn's own transcript) pass through.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from IPython.core.displaypub import CapturingDisplayPublisher

from larik_jupyter.api import Displayed, is_figure

WIDGET = "application/vnd.jupyter.widget-view+json"


class _Keeper(CapturingDisplayPublisher):
    """Keeps displays in `shown`; `figure` is the figure the next one shows, if any."""

    def __init__(self, outer: Any, shown: list[Displayed]) -> None:
        super().__init__()
        self._outer, self._shown = outer, shown
        self._ids: dict[str, int] = {}  # display ids made during the call: their place in `shown`
        self.figure: object | None = None

    def publish(self, data: Any, metadata: Any = None, source: Any = None, *, transient: Any = None,
                update: bool = False, **kwargs: Any) -> None:
        figure, self.figure = self.figure, None
        display_id = (transient or {}).get("display_id")
        if WIDGET in data or (update and display_id not in self._ids):
            self._outer.publish(data, metadata, transient=transient, update=update)
            return
        if update and display_id is not None:
            self._shown[self._ids[display_id]] = Displayed(dict(data), figure)
            return
        if display_id is not None:
            self._ids[display_id] = len(self._shown)
        self._shown.append(Displayed(dict(data), figure))

    def clear_output(self, wait: bool = False) -> None:
        # An animation loop clears and draws again: the call keeps what was shown last.
        self._shown.clear()
        self._ids.clear()


@contextmanager
def captured_displays(shell: Any) -> Iterator[list[Displayed]]:
    """Keep what is displayed in `shell` while inside, in order."""
    shown: list[Displayed] = []
    keeper = _Keeper(shell.display_pub, shown)
    formatter = shell.display_formatter
    formats = formatter.format

    def format(obj: Any, include: Any = None, exclude: Any = None) -> Any:
        result = formats(obj, include=include, exclude=exclude)
        keeper.figure = obj if is_figure(obj) and result[0] else None
        return result

    saved = shell.display_pub
    own = "format" in vars(formatter)  # another wrapper already there, put back as it was
    shell.display_pub = keeper
    formatter.format = format  # an instance attribute over the method `display()` looks up
    try:
        yield shown
    finally:
        shell.display_pub = saved
        if own:
            formatter.format = formats
        else:
            del formatter.format
