"""Markdown every front end can show: rendered by notebooks, printed as its source by text-only
front ends (terminal IPython, jupyter console) instead of `<IPython.core.display.Markdown object>`."""

from __future__ import annotations

import html
from typing import Any

# Inline, since a static page (nbconvert's HTML) sets no monospace font for a Markdown <pre>.
PRE_STYLE = "font-family: var(--jp-code-font-family, monospace); white-space: pre; overflow: auto"


class MarkdownText:
    """A Markdown output with a `text/plain` rendering of the same source."""

    def __init__(self, text: str) -> None:
        self.data = text

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return {"text/markdown": self.data, "text/plain": self.data}


class Preformatted:
    """Text whose columns matter (`/config`): a monospace block everywhere."""

    def __init__(self, text: str) -> None:
        self.data = text

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return {
            "text/html": f'<pre style="{PRE_STYLE}">{html.escape(self.data, quote=False)}</pre>',
            "text/markdown": "```text\n" + self.data + "\n```",
            "text/plain": self.data,
        }
