"""Requests the real APIs accept, over long scripted sessions through the real SDKs.

Each session runs the agent against `ScriptedHTTPServer`, which refuses (400) what the real
Anthropic and OpenAI APIs refuse (`larik_jupyter/testing/anthropic_rules.py`, `openai_rules.py`); the tests then check
the captured request bodies against the published rule each names in a comment.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from larik_jupyter import Agent
from larik_jupyter.llm.messages import ImageBlock, TextBlock
from larik_jupyter.testing import ScriptedHTTPServer
from larik_jupyter.testing.anthropic_rules import MAX_BREAKPOINTS, anthropic_problem
from larik_jupyter.testing.api_rules import without_breakpoints as uncached
from larik_jupyter.testing.openai_rules import openai_problem
from tests.agent_helpers import personal, text, tool, wire_model

KEY = "sk-conformance-0123456789"
SIGNED = {"type": "thinking", "thinking": "Look at every file first.", "signature": "Sig+1=="}
FIGURES_PER_READ = 8
READS = 13  # 13 x 8 = 104 images: over the 100 a request may carry


def png(colour: str) -> str:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (24, 16), colour).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


def figures_notebook(root: Path) -> None:
    """A notebook whose cells each show one PNG figure (as `python` calls drawing them would)."""
    nb = nbformat.v4.new_notebook()
    for i in range(FIGURES_PER_READ):
        cell = nbformat.v4.new_code_cell(f"plot({i})")
        cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": png("red")})]
        nb.cells.append(cell)
    nbformat.write(nb, root / "figs.ipynb")


def long_session(project: Path, kind: str) -> list[Any]:
    """The scripted replies of a long session: a wide parallel step after thinking and a
    blank text block, 13 reads of 8 figures, a denial, a reply cut midway, a compaction, a
    fork, a resume and a subagent."""
    for i in range(12):
        (project / f"f{i}.txt").write_text(f"file {i}\n")
    figures_notebook(project)
    personal({"permissions": {"deny": ["bash(rm:*)"]}})
    thinking = [SIGNED] if kind == "anthropic" else []
    return [
        # Claude models emit "\n\n" between thinking and a tool call.
        {"content": [*thinking, text("\n\n"), *(tool("read", path=f"f{i}.txt") for i in range(12))]},
        {"content": [text("Twelve files read.")]},
        *({"content": [tool("notebook_read", path="figs.ipynb")]} for _ in range(READS)),
        {"content": [text("Every figure is red.")]},
        {"content": [tool("bash", command="rm -rf build")]},
        {"content": [text("Not allowed, fine.")]},
        {"content": [text("A reply that is cut off midway")], "drop_after": 2},
        {"content": [text("SUMMARY: files read, figures red, rm denied.")]},
        {"content": [text("After the compaction.")]},
        {"content": [text("On the fork.")]},
        {"content": [text("Resumed.")]},
        {"content": [tool("task", description="count files", prompt="Count the .txt files.")]},
        {"content": [text("\n"), text("There are 12.")]},  # the subagent's own call
        {"content": [text("The subagent counted 12.")]},
    ]


def play(project: Path, kind: str, server: ScriptedHTTPServer, model: str) -> Agent:
    agent = Agent(project, model=model, yes=True)
    outcomes = [
        agent.run("read every file"),
        agent.run("read the figures notebook 13 times"),
        agent.run("clean the build"),
        agent.run("explain at length"),
    ]
    agent.compact()
    outcomes.append(agent.run("go on"))
    agent.fork()
    outcomes.append(agent.run("on the fork"))
    session = agent.session_id
    agent.close()
    agent = Agent(project, model=model, yes=True, session=session)
    outcomes.append(agent.run("after a restart"))
    outcomes.append(agent.run("delegate the count"))
    # The cut reply is the one interrupted turn; no request was refused.
    statuses = [(o.status, o.error) for o in outcomes]
    assert [s for s, _ in statuses] == ["done", "done", "done", "interrupted", "done", "done", "done", "done"], statuses
    assert server.remaining == 0
    return agent


def bodies(server: ScriptedHTTPServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests]


def anthropic_images(body: dict[str, Any]) -> int:
    return json.dumps(body).count('"type": "image"')


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_a_long_session_sends_only_requests_the_api_accepts(
    kind: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ScriptedHTTPServer(long_session(project, kind), api_key=KEY) as server:
        model = wire_model(kind, server, KEY, monkeypatch)
        agent = play(project, kind, server, model)
        sent = bodies(server)
    agent.close()
    check = anthropic_problem if kind == "anthropic" else openai_problem
    assert [check(body) for body in sent] == [None] * len(sent)
    transcript = agent.loop.session.state.all
    # The transcript keeps every block as streamed: the blank text and all 104 images.
    stored = [
        b for m in transcript for r in m.tool_results() if not isinstance(r.content, str)
        for b in r.content if isinstance(b, ImageBlock)
    ]
    assert len(stored) == READS * FIGURES_PER_READ
    assert any(isinstance(b, TextBlock) and b.text == "\n\n" for m in transcript for b in m.content)
    if kind == "anthropic":
        # https://docs.anthropic.com/en/docs/build-with-claude/vision: "up to 100 images per
        # request"; the oldest are replaced by a note saying where they came from.
        assert max(anthropic_images(b) for b in sent) <= 100
        assert any("image omitted" in json.dumps(b) and "notebook_read call" in json.dumps(b) for b in sent)
        # https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching: "You can define
        # up to 4 cache breakpoints".
        assert all(json.dumps(b).count("cache_control") <= MAX_BREAKPOINTS for b in sent)
        # extended-thinking: thinking blocks are passed back unmodified, signature included.
        replayed = [
            block for b in sent[1:] for m in b["messages"] for block in m["content"]
            if block["type"] == "thinking"
        ]
        assert replayed and all(block == SIGNED for block in replayed)
    else:
        # Chat completions: images only in user messages, a tool message holds text.
        tool_messages = [m for b in sent for m in b["messages"] if m["role"] == "tool"]
        assert tool_messages and all(isinstance(m["content"], str) for m in tool_messages)
        assert max(json.dumps(b).count('"image_url"') // 2 for b in sent) <= 100
        # https://platform.openai.com/docs/api-reference/chat/create: `stream_options`
        # {"include_usage": true} sends the usage chunk.
        assert all(b["stream_options"] == {"include_usage": True} for b in sent)
    assert cache_misses(kind, sent) == [16]


def cache_misses(kind: str, sent: list[dict[str, Any]]) -> list[int]:
    """The calls (1-based) whose request does not start with the previous request of the same
    conversation (a subagent's is its own).

    Prompt caching pays only if every call starts with the previous call's request byte for
    byte (tools first, in one order). The model context has to change in one place: the call
    where the images pass 100 (the oldest 25 become notes). After the compaction the summary
    starts a new conversation, as a subagent does."""
    def first_prompt(body: dict[str, Any]) -> Any:
        return uncached(next(m for m in body["messages"] if m["role"] == "user"))

    misses = []
    for n, after in enumerate(sent):
        same = [b for b in sent[:n] if first_prompt(b) == first_prompt(after)]
        if not same:
            continue
        before = same[-1]
        prefix = uncached(after["messages"][: len(before["messages"])])
        same_tools = uncached(before.get("tools")) == uncached(after.get("tools"))
        if not same_tools or prefix != uncached(before["messages"]):
            misses.append(n + 1)
            continue
        if kind == "anthropic":
            # The previous request's end carries a breakpoint, so its cached prefix is read
            # however many blocks the last step added (prompt-caching: the lookback is 20 blocks).
            end = after["messages"][len(before["messages"]) - 1]["content"][-1]
            assert "cache_control" in end, n + 1
    return misses


def test_blank_text_stays_in_the_transcript_and_out_of_the_request(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # https://docs.anthropic.com/en/api/messages: "text content blocks must contain
    # non-whitespace text".
    (project / "a.txt").write_text("a\n")
    script = [
        {"content": [SIGNED, text("\n\n"), tool("read", path="a.txt")]},
        {"content": [text("  \n")]},
        {"content": [text("Fine.")]},
    ]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        model = wire_model("anthropic", server, KEY, monkeypatch)
        agent = Agent(project, model=model, yes=True)
        assert agent.run("read a").status == "done"
        assert agent.run("again").status == "done"
        sent = bodies(server)
        agent.close()
    for body in sent:
        blocks = [b for m in body["messages"] for b in m["content"]]
        assert all(b["text"].strip() for b in blocks if b["type"] == "text")
    # The reply that was only blank text is sent as a placeholder, so the roles alternate.
    assert [m["role"] for m in sent[2]["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    assert sent[2]["messages"][3]["content"] == [{"type": "text", "text": "(no reply)"}]


def test_the_wire_server_refuses_what_the_real_api_refuses() -> None:
    """The end-to-end tests fail as a user would: each of these is a 400 from the real API."""
    import anthropic
    import openai

    ok = {"content": [text("ok")]}
    hi = [{"role": "user", "content": "hi"}]
    with ScriptedHTTPServer([ok]) as server:
        claude = anthropic.Anthropic(api_key="k", base_url=server.anthropic_base_url, max_retries=0)
        gpt = openai.OpenAI(api_key="k", base_url=server.openai_base_url, max_retries=0)
        refused = [
            # api/messages: "text content blocks must contain non-whitespace text"
            lambda: claude.messages.create(
                model="claude-sonnet-4-5", max_tokens=10, stream=True,
                messages=[{"role": "user", "content": [{"type": "text", "text": "\n\n"}]}],
            ),
            # vision: "up to 100 images per request"
            lambda: claude.messages.create(
                model="claude-haiku-4-5", max_tokens=10, stream=True,
                messages=[{"role": "user", "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png("red")}}
                ] * 101}],
            ),
            # adaptive-thinking: Opus 4.7 "only support[s] adaptive thinking"
            lambda: claude.messages.create(
                model="claude-opus-4-7", max_tokens=20000, messages=hi, stream=True,
                thinking={"type": "enabled", "budget_tokens": 2048},
            ),
            # extended-thinking: "The minimum budget is 1,024 tokens"
            lambda: claude.messages.create(
                model="claude-sonnet-4-5", max_tokens=20000, messages=hi, stream=True,
                thinking={"type": "enabled", "budget_tokens": 512},
            ),
            # models overview: Haiku 4.5's max output is 64K
            lambda: claude.messages.create(
                model="claude-haiku-4-5", max_tokens=66_096, messages=hi, stream=True
            ),
            # reasoning guide: reasoning models take max_completion_tokens, not max_tokens
            lambda: gpt.chat.completions.create(model="gpt-5", max_tokens=100, messages=hi),
            lambda: gpt.chat.completions.create(model="o3", temperature=0.2, messages=hi),
        ]
        for call in refused:
            with pytest.raises((anthropic.BadRequestError, openai.BadRequestError)):
                call()
        assert server.remaining == 1


def test_a_400_says_what_to_do_is_traced_and_does_not_doom_the_next_prompt(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    too_long = "prompt is too long: 201000 tokens > 200000 maximum"
    script = [{"error": {"status": 400, "message": too_long}}, {"content": [text("Fine now.")]}]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        model = wire_model("anthropic", server, KEY, monkeypatch)
        agent = Agent(project, model=model, yes=True)
        trace = agent.trace(True)
        failed = agent.run("a long question")
        after = agent.run("again")
        agent.trace(False)
        agent.close()
    # The API's own message in one sentence, and the command that helps.
    assert failed.status == "error" and failed.error is not None
    assert failed.error.startswith(f"Anthropic rejected the request (400): {too_long}; run `/compact`")
    assert failed.error.count(". ") == 0 and failed.error.endswith(".")
    assert trace is not None
    first = json.loads((trace / "http" / "0001-request.json").read_text())
    assert "a long question" in json.dumps(first)
    assert after.status == "done" and after.text == "Fine now."


def test_images_a_request_was_refused_over_are_not_sent_again(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figures_notebook(project)
    refusal = "messages.2.content.1.image.source.base64: image exceeds 5 MB maximum"
    script = [
        {"content": [tool("notebook_read", path="figs.ipynb")]},
        {"error": {"status": 400, "message": refusal}},
        {"content": [text("Without the figures, then.")]},
    ]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        model = wire_model("anthropic", server, KEY, monkeypatch)
        agent = Agent(project, model=model, yes=True)
        failed = agent.run("look at the figures")
        after = agent.run("try again")
        sent = bodies(server)
        agent.close()
    assert failed.status == "error" and "send the prompt again" in (failed.error or "")
    assert anthropic_images(sent[1]) == FIGURES_PER_READ
    assert after.status == "done" and anthropic_images(sent[2]) == 0
    assert json.dumps(sent[2]).count("image omitted") == FIGURES_PER_READ
    # The transcript keeps the figures.
    kept = [b for m in agent.loop.session.state.all for r in m.tool_results() for b in r.content if isinstance(b, ImageBlock)]
    assert len(kept) == FIGURES_PER_READ


def test_a_compaction_call_reads_the_conversation_from_the_cache(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary is asked for after the request the next step would send, so its prefix
    is read from the cache; when the model calls a tool instead, the flattened fallback
    writes no cache (no later call repeats it)."""
    (project / "a.txt").write_text("a\n")
    script = [
        {"content": [tool("read", path="a.txt")]},
        {"content": [text("Read.")]},
        {"content": [tool("read", path="a.txt")]},
        {"content": [text("SUMMARY: a was read.")]},
    ]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        model = wire_model("anthropic", server, KEY, monkeypatch)
        agent = Agent(project, model=model, yes=True)
        agent.run("read a")
        assert agent.compact() == "SUMMARY: a was read."
        agent.close()
        _, last, asked, flat = bodies(server)
    assert uncached(asked["tools"]) == uncached(last["tools"]) and asked["system"] == last["system"]
    assert uncached(asked["messages"][:3]) == uncached(last["messages"])
    # The previous call's end is a breakpoint: the whole conversation is read, not written.
    assert "cache_control" in asked["messages"][2]["content"][-1]
    assert "Summarise the conversation" in asked["messages"][-1]["content"][-1]["text"]
    assert "cache_control" not in json.dumps(flat) and "tools" not in flat
