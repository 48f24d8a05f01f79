"""The smaller items of issue 39: one cost label in every view, a prompt searched as a whole,
branches hung where they forked, a rule named on the call it allowed, the end of a turn said
above its footer, an expanded call's code apart from its output, and a `/help` that wraps."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from larik_jupyter import Agent
from larik_jupyter.agent import events as ae
from larik_jupyter.config.decide import allowed_by
from larik_jupyter.config.layers import load_config
from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.frontends.cli import main
from larik_jupyter.frontends.notebook.commands import HELP_WIDTH, HelpTable, help_text
from larik_jupyter.frontends.notebook.render import (
    CODE_CAPTION,
    OUTPUT_CAPTION,
    ToolPart,
    render_tool,
)
from larik_jupyter.frontends.notebook.view import TranscriptView
from larik_jupyter.frontends.notebook.widgets.sessions import sessions_data
from larik_jupyter.frontends.notebook.widgets.tree import _static_text, tree_data
from larik_jupyter.frontends.server.tokens import DeleteTokens
from larik_jupyter.frontends.server.views import session_list
from larik_jupyter.llm.messages import Message, TextBlock, Usage, user_text
from larik_jupyter.llm.pricing import cost_label
from larik_jupyter.session.branch import fork, fork_tree, rewind
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.export import render_markdown
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.store import Session
from tests.agent_helpers import personal, scripted, text, tool
from tests.rule_calls import subject
from tests.session_helpers import make_session


@pytest.mark.parametrize(
    ("cost", "label"),
    [
        (None, "price unknown"),
        (0.0, "$0.00"),
        (0.00004, "<$0.0001"),
        (0.0045, "$0.0045"),
        (0.00994, "$0.0099"),
        (0.00996, "$0.01"),
        (3.0, "$3.00"),
        (1234.5, "$1,234.50"),
    ],
)
def test_one_cost_label(cost: float | None, label: str) -> None:
    assert cost_label(cost) == label


def _priced_session(project: Path, model: str, input_tokens: int) -> Path:
    with Session.create(project, "anthropic", model) as session:
        session.append_message(user_text("what does it cost"))
        session.append_message(Message(role="assistant", content=[TextBlock(text="ok")]))
        session.append(Entry(type="usage", usage=Usage(input_tokens=input_tokens)))
        return session.path


@pytest.mark.parametrize(
    ("model", "label"),
    [("claude-sonnet-4-5", "$3.00"), ("mystery-model", "price unknown")],
)
def test_every_view_says_the_same_cost(
    project: Path, capsys: pytest.CaptureFixture[str], model: str, label: str
) -> None:
    path = _priced_session(project, model, 1_000_000)  # $3 a million input tokens, when known
    (root,) = msgspec.to_builtins(tree_data(project))["roots"]
    assert root["cost_label"] == root["items"][0]["cost_label"] == label
    assert sessions_data(project).rows[0].cost_label == label
    assert session_list(str(project), project, DeleteTokens()).sessions[0].cost_label == label
    assert f"- Cost: {label}\n" in render_markdown(path, load_entries(path).entries, redactor=redactor_for(project))
    assert main(["ls", "--cwd", str(project)]) == 0
    assert f"  {label}  " in capsys.readouterr().out


def test_the_live_footer_and_usage_say_the_cost_as_the_tree_does() -> None:
    view = TranscriptView()
    usage = Usage(input_tokens=1_000_000)
    view.handle(ae.UsageReported(turn_usage=usage, turn_cost=3.0, session_usage=usage, session_cost=None))
    assert "tokens, &#36;3.00 · session 1,000,000 tokens, price unknown" in view.footer


def test_search_sees_every_line_of_a_prompt(project: Path) -> None:
    with Session.create(project, "anthropic", "claude-sonnet-4-5") as session:
        session.append_message(user_text("load the sales data\nthen plot revenue by region"))
        session.append_message(Message(role="assistant", content=[TextBlock(text="ok")]))
    (node,) = fork_tree(project)
    # The sidebar's data: the row shows the first line, the search matches the whole text.
    assert node.prompts[0].first_line == "load the sales data"
    assert "revenue by region" in node.prompts[0].text
    tree = session_list(str(project), project, DeleteTokens()).tree
    assert "revenue by region" in tree[0].prompts[0].text
    # The /tree widget's data, likewise.
    (item,) = msgspec.to_builtins(tree_data(project))["roots"][0]["items"]
    assert item["text"] == "load the sales data" and "revenue by region" in item["prompt_text"]


def test_a_rewind_before_prompt_1_of_a_branch_hangs_beside_it(project: Path) -> None:
    source = make_session(project, 3)  # prompts at messages 0, 4, 8
    branch, _ = rewind(source, 3)  # shares prompts 1 and 2: under prompt 2 of the source
    start, _ = rewind(branch, 1)  # shares nothing: an alternative to the source's prompt 1
    after_one = fork(branch, 4)  # shares prompt 1: under the source's prompt 1
    (root,) = msgspec.to_builtins(tree_data(project))["roots"]
    first, second, _third = root["items"]
    assert [c["id"] for c in second["children"]] == [branch.stem]
    assert [c["id"] for c in first["children"]] == [after_one.stem]
    assert [c["id"] for c in root["children"]] == [start.stem]
    # Listed beside its source, a branch names it.
    assert root["children"][0]["branch"] == f"branched at the start of {branch.stem}"
    assert first["children"][0]["branch"] == f"branched after prompt 1 of {branch.stem}"
    assert second["children"][0]["branch"] == "branched after prompt 2"
    assert second["children"][0]["children"] == [] and second["children"][0]["items"] == []
    # Drawn before the first prompt it is an alternative to.
    rows = [line.strip() for line in _static_text(tree_data(project)).splitlines()]
    drawn = next(i for i, row in enumerate(rows) if row.startswith(f"{start.stem} branched at the start of {branch.stem}"))
    assert drawn < rows.index("1. prompt 1")


def test_a_call_allowed_by_a_saved_rule_names_the_rule(project: Path, tmp_path: Path) -> None:
    personal({"permissions": {"allow": ["bash(echo:*)"]}})
    spec = scripted(tmp_path, [tool("bash", command="echo hi")], [text("ok")], [tool("bash", command="echo hi")], [text("ok")])
    view = TranscriptView()
    agent = Agent(project, model=spec)
    agent.subscribe(view.handle)
    agent.run("say hi")
    agent.close()
    assert "· allowed by rule bash(echo:*)" in render_tool(next(p for p in view.parts if isinstance(p, ToolPart)))
    # Without the rule the call is not allowed by it (here: --yes allows it, and says so).
    personal({})
    view = TranscriptView()
    agent = Agent(project, model=spec, yes=True)
    agent.subscribe(view.handle)
    agent.run("say hi")
    agent.close()
    row = render_tool(next(p for p in view.parts if isinstance(p, ToolPart)))
    assert "allowed by --yes" in row and "rule" not in row


def test_a_turn_ended_before_an_answer_says_so_above_its_footer() -> None:
    view = TranscriptView()
    view.handle(ae.ToolRequested("t1", "python", {"code": "df = df.dropna()"}, "python: df = df.dropna()"))
    view.handle(ae.PermissionAsked("t1", "python", "python: df = df.dropna()"))
    view.handle(ae.UsageReported(turn_usage=Usage(), turn_cost=0.0, session_usage=Usage(), session_cost=0.0))
    view.handle(ae.TurnEnded(turn=1, status="interrupted"))
    shown = view.markdown()
    said = shown.index("python: df = df.dropna()</code>: cancelled, the turn ended before an answer")
    assert said < shown.index("*Interrupted.*") < shown.index("this turn 0 in")
    assert shown.count("python: df = df.dropna()") == 1  # the call is told once, not as interrupted too


def test_an_expanded_calls_code_and_output_are_captioned_apart() -> None:
    part = ToolPart(id="t", summary="python: x", name="python", status="done", output="42", code="print(6 * 7)")
    row = render_tool(part)
    code, output = row.index("```python\nprint(6 * 7)\n```"), row.index("```\n42\n```")
    assert row.index(CODE_CAPTION) < code < row.index(OUTPUT_CAPTION) < output
    # A call without code (a shell command) shows its output alone.
    assert CODE_CAPTION not in render_tool(ToolPart(id="b", summary="bash: ls", name="bash", status="done", output="a.py"))


def test_help_wraps_within_its_width_and_as_a_table() -> None:
    text_help = help_text()
    assert max(len(line) for line in text_help.splitlines()) <= HELP_WIDTH
    # Every word of a long line survives the wrap, in order.
    rewind = re.sub(r"\s+", " ", text_help.split("%larik /rewind ")[1].split("%larik /undo")[0])
    assert "--files also undoes the turns from prompt N on (files and kernel variables)" in rewind
    html = HelpTable()._repr_mimebundle_()["text/html"]
    assert html.startswith('<table class="larik-help">') and "<pre" not in html
    assert '<code style="white-space: nowrap">%larik /rewind N [--files [--force | --skip-changed]]</code>' in html


def test_a_chain_names_every_rule_that_covers_it(project: Path) -> None:
    personal({"permissions": {"allow": ["bash(git status:*)", "bash(echo:*)", "read(*.py)"]}})
    loaded = load_config(project)
    assert allowed_by(loaded, subject("bash", {"command": "git status && echo done"})) == ["bash(git status:*)", "bash(echo:*)"]
    assert allowed_by(loaded, subject("bash", {"command": "echo a; echo b"})) == ["bash(echo:*)"]
    assert allowed_by(loaded, subject("bash", {"command": "git status && rm -rf x"})) == []  # not covered
    assert allowed_by(loaded, subject("read", {"path": "a.py"})) == ["read(*.py)"]
    assert allowed_by(loaded, subject("read", {"path": "a.txt"})) == []


def test_a_calls_streamed_output_stays_open_when_the_call_ends() -> None:
    view = TranscriptView()
    for call, streamed in (("t1", True), ("t2", False)):
        view.handle(ae.ToolRequested(call, "python", {"code": "slow()"}, "python: slow()"))
        view.handle(ae.ToolStarted(call, "python", "python: slow()"))
        if streamed:
            view.handle(ae.ToolOutput(call, "row 1\n"))
        view.handle(ae.ToolFinished(call, "python", "python: slow()", "row 1\nrow 2\n", False, 61.0))
    rows = [render_tool(p) for p in view.parts if isinstance(p, ToolPart)]
    assert rows[0].startswith("<details open><summary>✓") and "row 2" in rows[0]  # what the person was reading
    assert rows[1].startswith("<details><summary>✓")  # made false: a call that streamed nothing folds as before
