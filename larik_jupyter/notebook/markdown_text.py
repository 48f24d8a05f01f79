"""Markdown every front end can show: rendered by notebooks, printed as its source by text-only
front ends (terminal IPython, jupyter console) instead of `<IPython.core.display.Markdown object>`."""

from __future__ import annotations

from typing import Any


class MarkdownText:
    """A Markdown output with a `text/plain` rendering of the same source."""

    def __init__(self, text: str) -> None:
        self.data = text

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return {"text/markdown": self.data, "text/plain": self.data}
