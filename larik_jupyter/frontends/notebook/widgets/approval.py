"""The approval card shown when a tool call asks: allow once, always allow, or deny with a reason;
or, after a call changed the user's variables in protect mode, keep or roll back."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from larik_jupyter.api import PermissionAnswer, PermissionRequest, detail_html
from larik_jupyter.frontends.notebook.widgets import with_fallback


class ApprovalWidget(widgets.VBox):
    """A pending ask. Parameters: `request` (what the tool would do), `on_answer` (called once).

    Clicking a button (or calling its `click()`) answers; later clicks do nothing, and so do
    clicks after `cancel()` (the turn ended unanswered).
    """

    def __init__(
        self, request: PermissionRequest, on_answer: Callable[[PermissionAnswer], None], **kwargs: Any
    ) -> None:
        self.request = request
        self.answer: PermissionAnswer | None = None
        self.cancelled = False
        self._on_answer = on_answer
        keep = request.ask == "keep"
        self.header = widgets.HTML(f"<b>{html.escape(request.question)}</b>{detail_html(request.detail)}")
        self.allow_button = widgets.Button(description="Keep" if keep else "Allow once", button_style="success")
        self.always_button = widgets.Button(description="Always allow", button_style="info")
        self.deny_button = widgets.Button(description="Roll back" if keep else "Deny", button_style="danger")
        self.reason = widgets.Text(placeholder="optional reason for the model (deny)")
        self.allow_button.on_click(lambda _: self._answer("allow"))
        self.always_button.on_click(lambda _: self._answer("always"))
        self.deny_button.on_click(lambda _: self._answer("deny"))
        shown = [self.allow_button, self.deny_button] if keep else [
            self.allow_button, self.always_button, self.deny_button, self.reason
        ]
        buttons = widgets.HBox(shown)
        super().__init__([self.header, buttons], **kwargs)
        self.add_class("larik-approval")

    def _disable(self) -> None:
        for control in (self.allow_button, self.always_button, self.deny_button, self.reason):
            control.disabled = True

    def cancel(self) -> None:
        """The turn ended (Stop, interrupt, error) before an answer: show the ask as cancelled,
        its buttons disabled."""
        if self.answer is not None or self.cancelled:
            return
        self.cancelled = True
        self._disable()
        self.header.value = (
            f"<i>{html.escape(self.request.summary)}: cancelled, the turn ended before an answer</i>"
        )
        self.children = (self.header,)  # no button or reason box stays behind

    def _answer(self, decision: str) -> None:
        if self.answer is not None or self.cancelled:
            return
        message = self.reason.value.strip() if decision == "deny" else ""
        self.answer = PermissionAnswer(decision=decision, message=message)  # type: ignore[arg-type]
        self._disable()
        labels = {"allow": "allowed once", "always": "always allowed", "deny": "denied"}
        if self.request.ask == "keep":
            labels = {"allow": "kept", "always": "kept", "deny": "rolled back"}
        label = labels[decision]
        self.children = (
            widgets.HTML(f"<i>{html.escape(self.request.summary)}: {label}"
                         + (f" ({html.escape(message)})" if message else "") + "</i>"),
        )
        self._on_answer(self.answer)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return with_fallback(
            super()._repr_mimebundle_(**kwargs),
            html=f"<p><i>Approval asked: {html.escape(self.request.summary)}</i></p>",
        )
