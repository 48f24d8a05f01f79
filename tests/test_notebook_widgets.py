from __future__ import annotations

from larik_jupyter.agent.permissions import PermissionAnswer, PermissionRequest
from larik_jupyter.notebook.widgets.approval import ApprovalWidget
from larik_jupyter.notebook.widgets.controls import TurnControls


def _request() -> PermissionRequest:
    return PermissionRequest(id="t1", tool="bash", input={"command": "ls"}, summary="bash: ls", detail="$ ls")


def test_clicking_allow_resolves_the_ask_once() -> None:
    answers: list[PermissionAnswer] = []
    card = ApprovalWidget(_request(), answers.append)
    assert "bash: ls" in card.header.value and "$ ls" in card.header.value
    card.allow_button.click()
    card.deny_button.click()
    assert answers == [PermissionAnswer("allow")]
    assert card.answer == PermissionAnswer("allow")


def test_deny_carries_the_reason_and_always_allow_is_distinct() -> None:
    answers: list[PermissionAnswer] = []
    card = ApprovalWidget(_request(), answers.append)
    card.reason.value = "use git instead"
    card.deny_button.click()
    assert answers == [PermissionAnswer("deny", "use git instead")]
    other: list[PermissionAnswer] = []
    ApprovalWidget(_request(), other.append).always_button.click()
    assert other == [PermissionAnswer("always")]


def test_approval_has_a_static_fallback() -> None:
    bundle = ApprovalWidget(_request(), lambda a: None)._repr_mimebundle_()
    assert "bash: ls" in bundle["text/html"]
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_stop_control_calls_back_only_while_running() -> None:
    calls: list[int] = []
    controls = TurnControls(on_stop=lambda: calls.append(1))
    controls._on_custom_msg(controls, {"type": "stop"}, [])
    controls.running = False
    controls.stop()
    assert calls == [1]


def test_turn_widgets_stay_silent_in_static_renderers() -> None:
    from larik_jupyter.notebook.view import ApprovalArea

    for widget in (TurnControls(on_stop=lambda: None), ApprovalArea()):
        bundle = widget._repr_mimebundle_()
        bundle = bundle[0] if isinstance(bundle, tuple) else bundle
        assert bundle["text/plain"] == ""
        assert "application/vnd.jupyter.widget-view+json" in bundle
