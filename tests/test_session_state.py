"""Replay into State: model context after compaction, the full transcript, usage, cost, interruptions."""

from __future__ import annotations

from pathlib import Path

import pytest
from session_helpers import add_turn, make_session

from larik_jupyter.llm.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    user_text,
)
from larik_jupyter.llm.pricing import cost
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.state import INTERRUPTED_TOOL_RESULT, replay
from larik_jupyter.session.store import Session


def test_replay_counts_messages_prompts_usage_and_cost(tmp_path: Path) -> None:
    path = make_session(tmp_path, 3)
    state = replay(load_entries(path).entries)
    assert state.meta.cwd == str(tmp_path)
    assert len(state.all) == 12 and len(state.messages) == 12
    assert state.prompt_positions == [0, 4, 8]
    assert state.usage == Usage(input_tokens=300, output_tokens=30)
    assert state.cost == pytest.approx(cost("claude-sonnet-4-5", state.usage))
    assert state.interrupted is None


def test_compaction_shrinks_the_model_context_but_never_all(tmp_path: Path) -> None:
    with Session.create(tmp_path, "anthropic", "claude-sonnet-4-5") as session:
        add_turn(session, "one", 1)
        session.append(Entry(type="compaction", summary="We read f1.py."), sync=True)
        add_turn(session, "two", 2, tool=False)
        live = session.state
        assert len(live.all) == 6
        assert [m.text() for m in live.messages] == ["We read f1.py.", "two", "Done with two."]
        path = session.path
    state = replay(load_entries(path).entries)
    assert [m.text() for m in state.messages] == ["We read f1.py.", "two", "Done with two."]
    assert state.messages[0].role == "user"
    assert len(state.all) == 6 and state.compactions == [4]


def test_unknown_model_price_gives_no_cost(tmp_path: Path) -> None:
    with Session.create(tmp_path, "openai", "llama3:8b") as session:
        session.append(Entry(type="usage", usage=Usage(input_tokens=5)))
        assert session.state.cost is None


def test_trailing_tool_call_is_interrupted_and_answered_for_the_model(tmp_path: Path) -> None:
    with Session.create(tmp_path) as session:
        session.append_message(user_text("go"))
        call = ToolUseBlock(id="t1", name="bash", input={"command": "make"})
        session.append_message(Message(role="assistant", content=[call]))
        path = session.path
    state = replay(load_entries(path).entries)
    assert state.interrupted is not None and "bash (t1)" in state.interrupted
    context = state.context_for_model()
    assert len(context) == 3
    answer = context[-1].tool_results()[0]
    assert answer.tool_use_id == "t1" and answer.is_error and answer.content == INTERRUPTED_TOOL_RESULT
    assert len(state.all) == 2  # the transcript itself is not changed


def test_interrupted_reply_is_reported_and_cleaned_for_the_model(tmp_path: Path) -> None:
    with Session.create(tmp_path) as session:
        session.append_message(user_text("explain"))
        partial = Message(
            role="assistant",
            content=[ThinkingBlock(thinking="hmm"), TextBlock(text="The answer is")],
            interrupted=True,
        )
        session.append_message(partial, sync=True)
        state = session.state
        assert state.interrupted == "the last assistant reply was interrupted"
        assert state.all[-1].content[0] == ThinkingBlock(thinking="hmm")  # kept in the transcript
        assert state.context_for_model()[-1].content == [TextBlock(text="The answer is")]
        session.append_message(user_text("go on"))
        assert session.state.interrupted is None


def test_call_left_unanswered_mid_history_is_answered_in_the_next_message(tmp_path: Path) -> None:
    with Session.create(tmp_path) as session:
        session.append_message(user_text("go"))
        session.append_message(
            Message(role="assistant", content=[ToolUseBlock(id="a", name="read"), ToolUseBlock(id="b", name="read")])
        )
        session.append_message(Message(role="user", content=[ToolResultBlock(tool_use_id="a", content="ok")]))
        session.append_message(Message(role="assistant", content=[TextBlock(text="done")]))
        context = session.state.context_for_model()
    results = context[2].tool_results()
    assert {r.tool_use_id for r in results} == {"a", "b"}
    assert [r.is_error for r in results if r.tool_use_id == "b"] == [True]


def test_replay_accepts_a_plain_list_of_entries(tmp_path: Path) -> None:
    path = make_session(tmp_path, 1)
    entries = list(load_entries(path).entries)
    state = replay(entries)
    assert [m.role for m in state.all] == ["user", "assistant", "user", "assistant"]
