"""Widget outputs as static HTML for cells run headless (`jupyter nbconvert --execute`,
`jupyter execute`, papermill): nothing will ever render a widget view there, and nbconvert
prefers a widget view with stored state over the HTML next to it, leaving a blank output.

nbclient is recognised by its execute requests: it never allows stdin, while every front end
that renders widgets (JupyterLab, Notebook 7, VS Code, classic Notebook) does.
"""

from __future__ import annotations

from typing import Any

from IPython.core.formatters import format_display_data

from larik_jupyter.frontends.notebook.running_request import running_request

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def headless(shell: Any) -> bool:
    """Whether the cell now running came from a client that cannot take input or show widgets."""
    request = running_request(shell)
    return request.header.msg_type == "execute_request" and request.content.allow_stdin is False


def static_bundle(value: object) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A widget's display data without its widget view (its static renderings stay); None for
    anything that is not shown as a widget."""
    data, metadata = format_display_data(value)
    if WIDGET_VIEW not in data:
        return None
    data.pop(WIDGET_VIEW)
    metadata.pop(WIDGET_VIEW, None)
    return data, metadata
