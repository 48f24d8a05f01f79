"""Widget outputs as static HTML for cells run headless (`jupyter nbconvert --execute`,
`jupyter execute`, papermill): nothing will ever render a widget view there, and nbconvert
prefers a widget view with stored state over the HTML next to it, leaving a blank output.

nbclient is recognised by its execute requests: it never allows stdin, while every front end
that renders widgets (JupyterLab, Notebook 7, VS Code, classic Notebook) does.
"""

from __future__ import annotations

from typing import Any


def headless(shell: Any) -> bool:
    """Whether the cell now running came from a client that cannot take input or show widgets."""
    get_parent = getattr(getattr(shell, "kernel", None), "get_parent", None)
    if get_parent is None:  # a plain InteractiveShell, terminal IPython
        return False
    request = get_parent()
    if request.get("header", {}).get("msg_type") != "execute_request":
        return False
    return request.get("content", {}).get("allow_stdin") is False


class StaticView:
    """A widget's static renderings, displayed instead of the widget."""

    def __init__(self, html: str, text: str) -> None:
        self.html = html
        self.text = text

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return {"text/html": self.html, "text/plain": self.text}
