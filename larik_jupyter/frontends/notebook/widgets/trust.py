"""The approval card for what a shared config file declares: MCP servers, hooks, allow rules
and LSP servers from `.mcp.json` or `.larik/settings.json` do nothing until approved here."""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from larik_jupyter.api import LarikError, PendingApproval, find_pending, load_config
from larik_jupyter.frontends.notebook.widgets import with_fallback

if TYPE_CHECKING:
    from larik_jupyter.frontends.notebook.kernel import KernelSession

KIND_LABELS = {"mcp": "MCP server", "hook": "hook", "allow-rule": "allow rule", "lsp": "LSP server"}


def describe(item: PendingApproval) -> str:
    """`MCP server `tiny` from .mcp.json`: what the item is and where it was declared."""
    return f"{KIND_LABELS.get(item.kind, item.kind)} `{item.name}` from {item.layer}"


def approve_item(kernel: KernelSession, item: PendingApproval) -> list[str]:
    """Approve `item` as shown (pinned to that definition's hash) and apply it to the kernel's
    agent at once; returns what happened, one line each."""
    current = find_pending(load_config(kernel.cwd), item.key)
    if current.hash != item.hash:
        raise LarikError(
            f"The definition of {item.key} changed since this card was shown; "
            "run `%larik /mcp` to see the new one and approve that."
        )
    return kernel.approve(item.key)


class TrustWidget(widgets.VBox):
    """One row per pending item with its definition, "Approve" and "Not now".

    Parameters: `kernel` (the kernel's `KernelSession`), `pending` (the items to show). Clicking a
    button (or calling its `click()`) settles that row; later clicks on it do nothing.
    """

    def __init__(self, kernel: KernelSession, pending: list[PendingApproval], **kwargs: Any) -> None:
        self.kernel = kernel
        self.pending = list(pending)
        self.settled: dict[str, str] = {}
        self.rows: dict[str, widgets.VBox] = {}
        self.approve_buttons: dict[str, widgets.Button] = {}
        self.later_buttons: dict[str, widgets.Button] = {}
        for item in self.pending:
            approve_button = widgets.Button(description="Approve", button_style="success")
            later_button = widgets.Button(description="Not now")
            approve_button.on_click(lambda _, item=item: self._approve(item))
            later_button.on_click(lambda _, item=item: self._later(item))
            self.approve_buttons[item.key] = approve_button
            self.later_buttons[item.key] = later_button
            self.rows[item.key] = widgets.VBox(
                [widgets.HTML(_item_html(item)), widgets.HBox([approve_button, later_button])]
            )
        header = widgets.HTML(
            "<b>The project's shared config declares these; they do nothing until you approve "
            "them.</b> An approval holds while the definition stays exactly as shown."
        )
        super().__init__([header, *self.rows.values()], **kwargs)
        self.add_class("larik-approval")

    def _approve(self, item: PendingApproval) -> None:
        if item.key in self.settled:
            return
        try:
            lines = approve_item(self.kernel, item)
        except LarikError as exc:
            # The row stays open: the user can fix the file and look again.
            self._show(item, f"! {exc}", settle=False)
            return
        self._show(item, "✓ " + " ".join(lines))

    def _later(self, item: PendingApproval) -> None:
        if item.key not in self.settled:
            self._show(item, "Not approved for now; `%larik /mcp` shows it again.")

    def _show(self, item: PendingApproval, text: str, *, settle: bool = True) -> None:
        if settle:
            self.settled[item.key] = text
            self.approve_buttons[item.key].disabled = True
            self.later_buttons[item.key].disabled = True
            self.rows[item.key].children = (widgets.HTML(f"<i>{_inline(describe(item))}: {_inline(text)}</i>"),)
        else:
            self.rows[item.key].children = (*self.rows[item.key].children[:2], widgets.HTML(_inline(text)))

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return with_fallback(super()._repr_mimebundle_(**kwargs), html=static_html(self.pending))


def static_html(pending: list[PendingApproval]) -> str:
    """What a page without the widget manager shows: each item and how to approve it."""
    items = "".join(
        f"<li>{_inline(describe(p))}: <code>larik-jupyter approve {html.escape(p.key)}</code></li>"
        for p in pending
    )
    return f"<p><i>Awaiting your approval:</i></p><ul>{items}</ul>"


def _item_html(item: PendingApproval) -> str:
    definition = json.dumps(item.definition, indent=2, ensure_ascii=False)
    return (
        f"<b>{_inline(describe(item))}</b>"
        f"<pre style='max-height:12em;overflow:auto'>{html.escape(definition)}</pre>"
    )


def _inline(text: str) -> str:
    """Escaped text with `code` spans kept."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))
