"""Scripted models: the demo, script files and scripted failures through the provider interface."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from larik_jupyter.llm.events import Retrying, TextDelta, ToolCallDelta, ToolCallEnd
from larik_jupyter.llm.messages import Message, TextBlock, ToolResultBlock, Usage, user_text
from larik_jupyter.llm.provider import ProviderError
from larik_jupyter.llm.retry import RetryPolicy
from larik_jupyter.llm.script import ScriptError
from larik_jupyter.llm.scripted import DEMO_FILE, demo_provider, file_provider
from larik_jupyter.llm.select import select_provider
from larik_jupyter.testing import collect, final

FAST = RetryPolicy(base_delay=0.001, max_delay=0.001)


def answer(reply: Message) -> Message:
    """A user message answering every tool call of `reply`."""
    return Message(
        role="user",
        content=[ToolResultBlock(tool_use_id=u.id, content="ok") for u in reply.tool_uses()],
    )


def run_demo(prompt: str, history: list[Message]) -> list[Message]:
    """Play one demo turn to the end the way the agent loop would; returns the new messages."""
    provider = demo_provider()
    turn = [user_text(prompt)]
    while True:
        reply = final(collect(provider, history + turn)).message
        turn.append(reply)
        if not reply.tool_uses():
            return turn
        turn.append(answer(reply))


def test_demo_writes_edits_runs_and_answers() -> None:
    turn = run_demo("show me", [])
    calls = [(u.name, u.input) for m in turn for u in m.tool_uses()]
    assert [name for name, _ in calls] == ["write", "edit", "bash"]
    write, edit, bash = (i for _, i in calls)
    assert write["path"] == DEMO_FILE and set(write) == {"path", "content"}
    assert (
        set(edit) == {"path", "old_string", "new_string"} and edit["old_string"] in write["content"]
    )
    assert bash == {"command": f"cat {DEMO_FILE}"}
    assert turn[-1].role == "assistant" and "[scripted demo]" in turn[-1].text()
    assert all("[scripted demo]" in m.text() for m in turn if m.role == "assistant")


def test_demo_replays_for_every_new_prompt() -> None:
    first = run_demo("one", [])
    second = run_demo("two", first)
    assert [u.name for m in second for u in m.tool_uses()] == ["write", "edit", "bash"]


def test_demo_streams_text_in_small_deltas_and_tool_json_in_fragments() -> None:
    provider, notice = select_provider("scripted:demo")
    events = collect(provider, [user_text("go")])
    assert provider.name == "scripted:demo" and notice is None
    assert len([e for e in events if isinstance(e, TextDelta)]) > 5
    assert len([e for e in events if isinstance(e, ToolCallDelta)]) > 2
    [end] = [e for e in events if isinstance(e, ToolCallEnd)]
    assert final(events).message.tool_uses()[0].id == end.id
    assert final(events).stop_reason == "tool_use"


def write_script(path: Path, responses: list[Any]) -> Path:
    path.write_text(json.dumps({"responses": responses}), encoding="utf-8")
    return path


def test_script_file_plays_responses_in_order_with_usage(tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "content": [
                    {"type": "thinking", "thinking": "hmm"},
                    {"type": "tool_use", "name": "read", "input": {"path": "x"}},
                ],
                "usage": {"input_tokens": 7, "output_tokens": 3},
            },
            {"content": [{"type": "text", "text": "All done."}]},
        ],
    )
    provider, _ = select_provider(f"scripted:{script}")
    assert provider.name == f"scripted:{script}"
    first = final(collect(provider, [user_text("go")]))
    [use] = first.message.tool_uses()
    assert use.name == "read" and use.input == {"path": "x"} and use.id.startswith("toolu_")
    assert first.usage == Usage(input_tokens=7, output_tokens=3)
    second = final(collect(provider, [user_text("go"), first.message, answer(first.message)]))
    assert second.message.content == [TextBlock(text="All done.")]
    assert second.stop_reason == "end_turn"


def test_exhausted_script_fails_clearly(tmp_path: Path) -> None:
    provider = file_provider(
        write_script(tmp_path / "one.json", [{"content": [{"type": "text", "text": "hi"}]}])
    )
    final(collect(provider, [user_text("a")]))
    with pytest.raises(
        ProviderError, match=r"one\.json has no response left for model call 2 \(it holds 1\)"
    ):
        collect(provider, [user_text("b")])


def test_scripted_429_is_retried_through_the_same_path(tmp_path: Path) -> None:
    path = write_script(
        tmp_path / "flaky.json",
        [
            {"error": {"status": 429, "retry_after": 0}},
            {"content": [{"type": "text", "text": "recovered"}]},
        ],
    )
    events = collect(file_provider(path, retry=FAST), [user_text("a")])
    [retry] = [e for e in events if isinstance(e, Retrying)]
    assert "429" in retry.reason and retry.wait_seconds == 0
    assert final(events).message.text() == "recovered"


def test_scripted_errors_end_in_one_clear_sentence(tmp_path: Path) -> None:
    path = write_script(
        tmp_path / "down.json", [{"error": {"status": 500}}] * 3 + [{"error": {"status": 401}}]
    )
    provider = file_provider(path, retry=FAST)
    with pytest.raises(ProviderError, match="failed after 3 attempts") as caught:
        collect(provider, [user_text("a")])
    assert caught.value.status == 500 and f"scripted:{path}" in str(caught.value)
    with pytest.raises(ProviderError, match="rejected the API key") as caught:
        collect(provider, [user_text("a")])
    assert caught.value.status == 401


def test_scripted_drop_returns_an_interrupted_partial_message(tmp_path: Path) -> None:
    path = write_script(
        tmp_path / "cut.json",
        [{"content": [{"type": "text", "text": "one two three four"}], "drop_after": 2}],
    )
    end = final(collect(file_provider(path), [user_text("a")]))
    assert end.stop_reason == "interrupted" and end.message.interrupted is True
    assert end.message.text() == "one two "
    assert end.error and "cut off" in end.error


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{", "not valid JSON at line 1"),
        ('{"responses": [{"content": [{"type": "txt", "text": "x"}]}]}', "invalid at responses.0"),
        ('{"responses": [{"content": [], "usage": {}, "extra": 1}]}', "invalid at responses.0"),
    ],
)
def test_bad_script_files_name_the_file_and_the_place(
    tmp_path: Path, content: str, expected: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ScriptError, match=expected) as caught:
        select_provider(f"scripted:{path}")
    assert str(path) in str(caught.value)


def test_missing_script_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="does not exist"):
        select_provider(f"scripted:{tmp_path / 'nope.json'}")


def play_demo(results: list[tuple[str, bool]]) -> list[Message]:
    """One demo turn whose three calls get `results` ((content, is_error) each, in order)."""
    provider = demo_provider()
    turn = [user_text("Create hello.py")]
    answers = iter(results)
    while True:
        reply = final(collect(provider, turn)).message
        turn.append(reply)
        if not reply.tool_uses():
            return turn
        content, is_error = next(answers)
        turn.append(
            Message(
                role="user",
                content=[
                    ToolResultBlock(tool_use_id=u.id, content=content, is_error=is_error)
                    for u in reply.tool_uses()
                ],
            )
        )


def test_demo_says_first_that_it_is_a_fixed_offline_script() -> None:
    first = play_demo([("ok", False)] * 3)[1]
    assert "fixed offline script, not a model" in first.text()
    assert "whatever the prompt says" in first.text()


def test_demo_reports_what_really_happened_to_its_calls() -> None:
    denied = "The user denied permission for write: larik_demo.txt."
    missing = "edit failed: larik_demo.txt does not exist."
    report = play_demo([(denied, True), (missing, True), ("cat: larik_demo.txt: No such file", True)])[-1].text()
    assert "writing larik_demo.txt: denied" in report
    assert "editing larik_demo.txt: failed (edit failed: larik_demo.txt does not exist.)" in report
    assert "`cat larik_demo.txt`: failed" in report
    assert "Nothing changed on disk" in report and "Done" not in report
    ok = play_demo([("Created", False), ("Edited", False), ("Hello", False)])[-1].text()
    assert "writing larik_demo.txt: done; editing larik_demo.txt: done; `cat larik_demo.txt`: done" in ok
    assert "/undo" in ok


def test_each_prompt_writes_a_different_file_content() -> None:
    first = run_demo("one", [])
    second = run_demo("two", first)
    contents = [u.input["content"] for m in first + second for u in m.tool_uses() if u.name == "write"]
    assert len(set(contents)) == 2
