from __future__ import annotations

from larik_jupyter.agent.permissions import PermissionAnswer, PermissionRequest
from larik_jupyter.frontends.notebook.widgets.approval import ApprovalWidget
from larik_jupyter.frontends.notebook.widgets.controls import TurnControls


def _request() -> PermissionRequest:
    return PermissionRequest(id="t1", tool="bash", input={"command": "ls"}, summary="bash: ls", detail="$ ls",
                             question="Run this shell command?")


def test_clicking_allow_resolves_the_ask_once() -> None:
    answers: list[PermissionAnswer] = []
    card = ApprovalWidget(_request(), answers.append)
    assert "Run this shell command?" in card.header.value and card.header.value.count("ls") == 1
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


def test_a_change_already_made_is_asked_as_keep_or_roll_back() -> None:
    request = PermissionRequest(
        id="t2", tool="python", input={"code": "f()"}, summary="the code changed df through f()",
        detail="# Protect mode: this call changed your existing variables:\n#   df: DataFrame 2×2, changed in place through f()",
        question="The code changed df through f(): keep or roll back?", ask="keep",
    )
    answers: list[PermissionAnswer] = []
    card = ApprovalWidget(request, answers.append)
    assert "The code changed df through f(): keep or roll back?" in card.header.value
    assert [b.description for b in card.children[1].children] == ["Keep", "Roll back"]
    card.deny_button.click()
    assert answers == [PermissionAnswer("deny")]
    assert "rolled back" in card.children[0].value
    kept: list[PermissionAnswer] = []
    ApprovalWidget(request, kept.append).allow_button.click()
    assert kept == [PermissionAnswer("allow")]


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
    from larik_jupyter.frontends.notebook.turn_ui import ApprovalArea

    for widget in (TurnControls(on_stop=lambda: None), ApprovalArea()):
        bundle = widget._repr_mimebundle_()
        bundle = bundle[0] if isinstance(bundle, tuple) else bundle
        assert bundle["text/plain"] == ""
        assert "application/vnd.jupyter.widget-view+json" in bundle


def test_the_footer_reads_as_turn_then_session() -> None:
    from larik_jupyter.agent import events as ae
    from larik_jupyter.frontends.notebook.view import TranscriptView
    from larik_jupyter.llm.messages import Usage

    view = TranscriptView()
    usage = Usage(input_tokens=12, output_tokens=30)
    view.handle(ae.UsageReported(turn_usage=usage, turn_cost=0.001, session_usage=usage, session_cost=0.001))
    assert view.footer == (
        '<sub class="tex2jax_ignore mathjax_ignore">this turn 12 in · 30 out tokens, &#36;0.0010 · session 42 tokens, &#36;0.0010</sub>'
    )
    assert "$" not in view.markdown()  # nothing a front end would typeset as a formula
    view.handle(ae.UsageReported(turn_usage=Usage(), turn_cost=None, session_usage=Usage(), session_cost=None))
    assert view.footer == (  # an unknown price is said, as every view says it
        '<sub class="tex2jax_ignore mathjax_ignore">this turn 0 in · 0 out tokens, price unknown · session 0 tokens, price unknown</sub>'
    )


def test_one_coloured_diff_rendering_in_approvals_and_the_transcript() -> None:
    from larik_jupyter.frontends.notebook.render import ToolPart, diff_html, render_tool

    diff = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    card = ApprovalWidget(PermissionRequest("1", "edit", {}, "edit: x.py", diff, "Make this edit to x.py?"), lambda a: None)
    shown = diff_html(diff)
    assert shown in card.header.value
    assert shown in render_tool(ToolPart(id="1", summary="edit: x.py", status="done", diff=diff))
    assert '<span class="larik-diff-add" style="color: var(--jp-success-color1, #2e7d32)">+x = 2</span>' in shown
    assert '<span class="larik-diff-del" style="color: var(--jp-error-color1, #c62828)">-x = 1</span>' in shown


def test_a_python_approval_shows_its_code_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from larik_jupyter.agent import events as ae
    from larik_jupyter.agent.preview import preview_change
    from larik_jupyter.frontends.notebook.view import TranscriptView
    from larik_jupyter.tools.calls import summarize_call
    from larik_jupyter.tools.kernel.python import PythonTool
    from tests.agent_helpers import make_env

    code = "total = sales['revenue'].sum()"
    call = {"code": code}
    summary = summarize_call("python", call)
    view = TranscriptView()
    view.handle(ae.ToolRequested("t1", "python", call, summary))
    view.handle(ae.PermissionAsked("t1", "python", summary))
    detail = preview_change(make_env(tmp_path), PythonTool(), call).text
    question, detail = PythonTool().approval_question(call, detail, {"sales": object()}, None)
    card = ApprovalWidget(PermissionRequest("t1", "python", call, summary, detail, question), lambda a: None)
    shown = view.markdown() + card.header.value
    assert shown.count("total = sales") == 1
    assert "Run this Python in your kernel? It may create total." in card.header.value
    assert "? <code>python</code>" in view.markdown() and "approval" not in view.markdown()  # the card asks, once
    card.allow_button.click()
    view.handle(ae.PermissionAnswered("t1", "allow"))
    view.handle(ae.ToolStarted("t1", "python", summary))
    assert "total = sales" in view.markdown()  # once answered, the row names the code again


def test_the_decision_sits_on_its_calls_row_and_python_code_is_one_click_away() -> None:
    from larik_jupyter.agent import events as ae
    from larik_jupyter.frontends.notebook.view import TranscriptView
    from larik_jupyter.tools.calls import summarize_call

    code = "import pandas as pd\nsales = pd.read_csv('sales.csv')\nsales.describe()"
    view = TranscriptView()
    for n, (decision, reason) in enumerate((("allow", "--yes"), ("always", ""), ("allow", ""))):
        call = {"code": code}
        view.handle(ae.ToolRequested(f"t{n}", "python", call, summarize_call("python", call)))
        view.handle(ae.PermissionAnswered(f"t{n}", decision, reason))
        view.handle(ae.ToolStarted(f"t{n}", "python", ""))
        view.handle(ae.ToolFinished(id=f"t{n}", name="python", summary="", content="ok", is_error=False, seconds=0.1))
    shown = view.markdown()
    rows = [line for line in shown.split("\n") if line.startswith("<details><summary>✓")]
    assert [r.split("</code>")[1].split(" · ")[1:-1] for r in rows] == [["allowed by --yes"], ["always allowed"], ["allowed once"]]
    assert "<code>python: import pandas as pd…</code>" in rows[0]
    assert shown.count("```python\n" + code + "\n```") == 3  # the whole code in each fold


def test_a_cancelled_approval_leaves_no_button_or_reason_box() -> None:
    card = ApprovalWidget(_request(), lambda a: None)
    card.cancel()
    assert card.children == (card.header,) and "cancelled" in card.header.value
