"""No dead ends (issue 38): each state a session can reach leads to a request the real APIs
accept. Every test drives `Agent` through the real SDKs against `ScriptedHTTPServer`, whose
`api_rules` refuse (400) what the real APIs refuse, each rule citing its source."""

from __future__ import annotations

import base64
import io
import json
import random
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from larik_jupyter import Agent
from larik_jupyter.agent import events as ae
from larik_jupyter.agent.mcp_status import status_table
from larik_jupyter.agent.textlog import TextLog
from larik_jupyter.api import PromptExtras
from larik_jupyter.config.layers import user_config_path
from larik_jupyter.llm.messages import ImageBlock
from larik_jupyter.testing import ScriptedHTTPServer
from larik_jupyter.testing.anthropic_rules import anthropic_problem, anthropic_too_long
from larik_jupyter.testing.openai_rules import openai_problem, openai_too_long
from tests.agent_helpers import personal, results_of, text, tool

KEY = "sk-dead-ends-0123456789"
SIGNED = {"type": "thinking", "thinking": "Look at every file first.", "signature": "Sig+1=="}


def wire(server: ScriptedHTTPServer, monkeypatch: pytest.MonkeyPatch, **providers: Any) -> None:
    """Point both SDKs and the compatible server at `server`; `providers` is personal config."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    compatible = {"base_url": server.openai_base_url, "api_key_env": "OPENAI_API_KEY"}
    personal({"providers": {"openai-compatible": compatible, **providers}})


def bodies(server: ScriptedHTTPServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests]


def accepted(server: ScriptedHTTPServer) -> None:
    for r in server.requests:
        check = anthropic_problem if r.path == "/v1/messages" else openai_problem
        assert check(r.body) is None, r.body


THINKING = {"anthropic": {"thinking_budget": 2048}}


def call_ids(body: dict[str, Any]) -> set[str]:
    """Every tool-call id a request body names (calls and results, both APIs)."""
    ids: set[str] = set()
    for m in body["messages"]:
        for b in m["content"] if isinstance(m["content"], list) else []:
            ids |= {b[k] for k in ("id", "tool_use_id") if b.get("type", "").startswith("tool_") and k in b}
        ids |= {c["id"] for c in m.get("tool_calls") or []}
        ids |= {m["tool_call_id"]} if m.get("tool_call_id") else set()
    return ids


def test_a_reply_stopped_right_after_its_thinking_does_not_block_the_next_prompt(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The thinking text streams in 5 deltas and its signature in one: cut after the signature.
    script = [
        {"content": [SIGNED, text("Here is a long answer.")], "drop_after": 6},
        {"content": [SIGNED, text("Fine.")]},
    ]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        wire(server, monkeypatch, **THINKING)
        agent = Agent(project, model="anthropic:claude-sonnet-4-5", yes=True)
        cut = agent.run("explain")
        after = agent.run("again")
        agent.close()
    assert cut.status == "interrupted"
    stored = agent.loop.session.state.all[1]
    assert [b.type for b in stored.content] == ["thinking"] and stored.interrupted
    assert after.status == "done" and after.text == "Fine.", after.error
    # The stopped reply goes as a placeholder: "The final block in an assistant message
    # cannot be `thinking`."
    assert bodies(server)[1]["messages"][1]["content"] == [{"type": "text", "text": "(no reply)"}]
    accepted(server)


@pytest.mark.parametrize(
    ("call_id", "target"),
    [("functions.read:0", "anthropic:claude-sonnet-4-6"), ("chatcmpl-tool-" + "a1b2" * 8, "openai:gpt-5")],
)
def test_tool_call_ids_from_another_server_are_mapped_for_the_next_provider(
    call_id: str, target: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "a.txt").write_text("a\n")
    script = [
        {"content": [{**tool("read", path="a.txt"), "id": call_id}]},
        {"content": [text("Read.")]},
        {"content": [text("Switched.")]},
        {"content": [text("Still fine.")]},
    ]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        wire(server, monkeypatch)
        agent = Agent(project, model="openai-compatible:kimi-k2", yes=True)
        assert agent.run("read a").status == "done"
        agent.switch_model(target)
        outcomes = [agent.run("go on"), agent.run("and on")]
        agent.close()
        sent = bodies(server)
    assert [o.status for o in outcomes] == ["done", "done"], [o.error for o in outcomes]
    # The transcript keeps the server's id, which goes back to that server as it is; the
    # requests to the other provider carry one mapping, the same each time.
    assert results_of(agent)[0].tool_use_id == call_id and call_id in call_ids(sent[1])
    ids = [call_ids(body) for body in sent[2:]]
    assert ids[0] == ids[1] and call_id not in ids[0] and len(ids[0]) == 1
    accepted(server)


def test_a_refused_turn_is_not_sent_again_and_does_not_end_as_done(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [
        {"content": [text("Sure.")]},
        {"content": [text("I can't")], "stop_reason": "refusal"},
        {"content": [text("Happy to help with that.")]},
    ]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        wire(server, monkeypatch)
        agent = Agent(project, model="anthropic:claude-sonnet-4-6", yes=True)
        agent.run("hello")
        refused = agent.run("something the classifier stops")
        after = agent.run("something else")
        agent.close()
        sent = bodies(server)
    assert refused.status == "error" and "refusal" in (refused.error or "")
    assert "rephrase the prompt" in (refused.error or "")
    # The server refuses any request that still carries the refused turn (as the real API
    # does), so this reply is the scripted one only because the turn was left out.
    assert after.status == "done" and after.text == "Happy to help with that."
    assert "classifier" not in json.dumps(sent[2]) and "hello" in json.dumps(sent[2])
    stored = [m for m in agent.loop.session.state.all if m.refused]
    assert len(stored) == 1 and stored[0].text() == "I can't"
    accepted(server)


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_a_tool_call_cut_by_the_output_limit_is_not_run_and_both_sides_are_told(
    kind: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [
        # The wire cuts the last call's JSON halfway, as the APIs do at max_tokens.
        {"content": [tool("write", path="big.txt", content="x" * 400)], "stop_reason": "max_tokens"},
        {"content": [tool("write", path="big.txt", content="x")]},
        {"content": [text("Written in parts.")]},
    ]
    seen: list[ae.AgentEvent] = []
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        wire(server, monkeypatch)
        agent = Agent(project, model="anthropic:claude-sonnet-4-6" if kind == "anthropic" else "openai:gpt-5", yes=True)
        outcome = agent.run("write a big file", listener=seen.append)
        agent.close()
    assert outcome.status == "done" and outcome.text == "Written in parts."
    first = results_of(agent)[0]
    assert first.is_error and "output limit (max_tokens)" in str(first.content)
    assert "missing" not in str(first.content)
    assert (project / "big.txt").read_text() == "x"  # only the second, complete call ran
    notices = [e.text for e in seen if isinstance(e, ae.Notice)]
    assert any("output limit (max_tokens) in the middle of a `write` call" in n for n in notices)
    accepted(server)


def test_an_interrupted_openai_tool_call_then_anthropic_with_thinking(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [
        {"content": [tool("bash", command="sleep 20")]},
        {"content": [SIGNED, text("Carrying on.")]},
    ]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        wire(server, monkeypatch, **THINKING)
        agent = Agent(project, model="openai:gpt-5", yes=True)

        def stop_on_start(event: ae.AgentEvent) -> None:
            if isinstance(event, ae.ToolStarted):
                agent.stop()

        assert agent.run("sleep", listener=stop_on_start).status == "interrupted"
        agent.switch_model("anthropic:claude-sonnet-4-5")
        after = agent.run("go on")
        agent.close()
        sent = bodies(server)
    assert after.status == "done" and after.text == "Carrying on.", after.error
    # The interrupted turn is closed by a placeholder reply, so the new prompt starts a turn.
    roles = [m["role"] for m in sent[1]["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    accepted(server)


def test_deepseek_gets_its_reasoning_back_on_tool_call_turns(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "a.txt").write_text("a\n")
    thought = {"type": "thinking", "thinking": "I should read a.txt."}
    script = [
        {"content": [thought, tool("read", path="a.txt")]},
        {"content": [{"type": "thinking", "thinking": "Done."}, text("It says a.")]},
        {"content": [text("Next.")]},
    ]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        wire(server, monkeypatch)
        agent = Agent(project, model="openai-compatible:deepseek-v4-pro", yes=True)
        outcomes = [agent.run("read a"), agent.run("next")]
        agent.close()
        sent = bodies(server)
    assert [o.status for o in outcomes] == ["done", "done"], [o.error for o in outcomes]
    calls = [m for m in sent[2]["messages"] if m.get("tool_calls")]
    assert [m["reasoning_content"] for m in calls] == ["I should read a.txt."]
    # Not on turns without tool calls, where DeepSeek ignores it.
    assert all("reasoning_content" not in m for m in sent[2]["messages"] if not m.get("tool_calls"))
    accepted(server)


def noise_png(seed: int, side: int = 40) -> str:
    from PIL import Image

    rng = random.Random(seed)
    raw = bytes(rng.randrange(256) for _ in range(side * side * 3))
    out = io.BytesIO()
    Image.frombytes("RGB", (side, side), raw).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


def test_the_image_budget_drops_only_the_oldest_images_it_must(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figures = [noise_png(i) for i in range(8)]
    nb = nbformat.v4.new_notebook()
    for i, data in enumerate(figures):
        cell = nbformat.v4.new_code_cell(f"plot({i})")
        cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": data})]
        nb.cells.append(cell)
    nbformat.write(nb, project / "figs.ipynb")
    size = len(figures[0])
    attached = ImageBlock(source={"type": "base64", "media_type": "image/png", "data": noise_png(99)})
    script = [
        *({"content": [tool("notebook_read", path="figs.ipynb")]} for _ in range(3)),
        {"content": [text("Seen them all.")]},
    ]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        wire(server, monkeypatch)
        # 25 images (24 figures and the attachment) just over a budget of 23.5.
        models = {"claude-sonnet-4-6": {"max_image_bytes": int(23.5 * size)}}
        compatible = {"base_url": server.openai_base_url}
        personal({"providers": {"openai-compatible": compatible}, "models": models})
        agent = Agent(project, model="anthropic:claude-sonnet-4-6", yes=True)
        outcome = agent.run("look", PromptExtras(after=[attached]))
        agent.close()
        last = json.dumps(bodies(server)[-1])
    assert outcome.status == "done"
    assert last.count("image omitted") == 3  # a step of an eighth of the budget: 3 images
    assert attached.source["data"] in last
    newest = bodies(server)[-1]["messages"][-1]["content"][0]["content"]
    assert sum(b["type"] == "image" for b in newest) == 8
    accepted(server)


def test_an_api_error_names_the_cause_the_api_named(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    final = "messages.1: The final block in an assistant message cannot be `thinking`."
    script = [{"error": {"status": 400, "message": final}}]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        wire(server, monkeypatch, **THINKING)
        agent = Agent(project, model="anthropic:claude-sonnet-4-5", yes=True)
        failed = agent.run("hi")
        agent.close()
    assert failed.status == "error"
    assert "a message of the conversation (messages.1), not a setting" in (failed.error or "")
    assert "thinking_budget" not in (failed.error or "")


ODD = Path(__file__).parent / "mcp_servers" / "odd_schemas_server.py"


@pytest.mark.parametrize("model", ["openai:gpt-5", "anthropic:claude-sonnet-4-6"])
def test_mcp_tool_schemas_are_made_valid_and_a_hopeless_one_is_left_out_alone(
    model: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [
        {"content": [tool("mcp__odd__untyped", text="hi")]},
        {"content": [tool("mcp__odd__bare_array", paths=["a", "b"])]},
        {"content": [text("Both answered.")]},
    ]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        wire(server, monkeypatch)
        settings = json.loads(user_config_path().read_text())
        personal({**settings, "mcpServers": {"odd": {"command": sys.executable, "args": [str(ODD)]}}})
        agent = Agent(project, model=model, yes=True)
        try:
            outcome = agent.run("use the odd tools")
            table = status_table(agent.servers.mcp())
        finally:
            agent.close()
        sent = bodies(server)
    # One tool no API takes is left out, and /mcp says so; the rest of its server runs.
    assert "| `odd` | running |" in table and "`mcp__odd__wordy`" in table
    assert "left out" in table and "`hopeless`: its input is a string, not an object" in table
    assert outcome.status == "done" and outcome.text == "Both answered.", outcome.error
    untyped, bare = results_of(agent)
    assert json.loads(str(untyped.content)) == {"text": "hi"} and not bare.is_error
    names = [t.get("name") or t["function"]["name"] for t in sent[0]["tools"]]
    assert "mcp__odd__hopeless" not in names and "mcp__odd__untyped" in names
    if model.startswith("openai"):
        wordy = next(t["function"] for t in sent[0]["tools"] if t["function"]["name"] == "mcp__odd__wordy")
        assert len(wordy["description"]) == 1024 and wordy["description"].endswith("…")
    accepted(server)


def big_files(project: Path, count: int) -> None:
    """`count` files of about 100,000 characters (what one `read` returns at most)."""
    for n in range(count):
        (project / f"f{n}.txt").write_text("".join(f"{n}:{i:05d} " + "x" * 90 + "\n" for i in range(1000)))


def test_a_turn_outgrowing_the_window_is_compacted_between_its_steps(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big_files(project, 9)
    script = [
        {"content": [tool("read", path=f"f{n}.txt") for n in range(5)]},
        {"content": [text("SUMMARY: read f0 to f4, all lines of x.")]},
        {"content": [tool("read", path=f"f{n}.txt") for n in range(5, 9)]},
        {"content": [text("All nine read.")]},
    ]
    seen: list[ae.AgentEvent] = []
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        wire(server, monkeypatch)
        agent = Agent(project, model="anthropic:claude-sonnet-4-6", yes=True)
        outcome = agent.run("read all nine files", listener=seen.append)
        agent.close()
        sent = bodies(server)
    # Without the compaction between the steps, the third request would carry all nine files
    # (about 225k tokens) and be refused: "prompt is too long".
    assert outcome.status == "done" and outcome.text == "All nine read.", outcome.error
    assert any(isinstance(e, ae.Notice) and "compacting" in e.text for e in seen)
    assert agent.loop.session.state.compactions and "Summarise the conversation" in json.dumps(sent[1])
    assert "SUMMARY: read f0 to f4" in json.dumps(sent[2]) and "f0:00000" not in json.dumps(sent[2])
    accepted(server)


SMALL = {"small": {"context_window": 60_000}}
WINDOW_32K = 32_000


def test_a_switch_to_a_smaller_window_compacts_with_a_request_that_fits_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big_files(project, 3)
    script = [
        {"content": [tool("read", path=f"f{n}.txt") for n in range(3)]},
        {"content": [text("Read.")]},
        {"content": [text("SUMMARY: three files of x.")]},
        {"content": [text("Continuing on the small model.")]},
    ]
    seen: list[ae.AgentEvent] = []
    with ScriptedHTTPServer(script, api_key=KEY, context_window=60_000) as server:
        wire(server, monkeypatch)
        settings = json.loads(user_config_path().read_text())
        personal({**settings, "models": SMALL})
        agent = Agent(project, model="anthropic:claude-sonnet-4-6", yes=True)
        assert agent.run("read three files").status == "done"
        agent.switch_model("openai-compatible:small")
        outcome = agent.run("go on", listener=seen.append)
        agent.close()
        summary_request = bodies(server)[2]
    assert outcome.status == "done" and outcome.text == "Continuing on the small model.", outcome.error
    # The history (about 75k tokens) is over the small model's window: its long tool results
    # were cut to fit, and both the user and the summary say so.
    notices = [e.text for e in seen if isinstance(e, ae.Notice)]
    assert any("3 long tool results were cut to their first 2,000 characters" in n for n in notices)
    assert "more characters left out" in json.dumps(summary_request) and "tools" not in summary_request
    summary = agent.loop.session.state.summary
    assert summary is not None and "were cut to their first 2,000 characters" in summary.text()
    accepted(server)


def test_a_history_too_long_even_shortened_is_summarised_in_parts_oldest_first(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pasted = ["".join(f"paste {n} line {i} " + "y" * 80 + "\n" for i in range(1000)) for n in range(3)]
    script = [
        *({"content": [text(f"Noted {n}.")]} for n in range(3)),
        *({"content": [text(f"SUMMARY part {n}: pastes noted.")]} for n in range(1, 4)),
        {"content": [text("Still here.")]},
    ]
    seen: list[ae.AgentEvent] = []
    with ScriptedHTTPServer(script, api_key=KEY, context_window=60_000) as server:
        wire(server, monkeypatch)
        settings = json.loads(user_config_path().read_text())
        personal({**settings, "models": SMALL})
        agent = Agent(project, model="anthropic:claude-sonnet-4-6", yes=True)
        for n in range(3):
            assert agent.run(f"keep this:\n{pasted[n]}").status == "done"
        agent.switch_model("openai-compatible:small")
        outcome = agent.run("go on", listener=seen.append)
        agent.close()
        parts = bodies(server)[3:6]
    assert outcome.status == "done" and outcome.text == "Still here.", outcome.error
    assert any("summarised in 3 parts, oldest first" in e.text for e in seen if isinstance(e, ae.Notice))
    # Oldest first, each part with the summary so far.
    assert "paste 0 line 0" in json.dumps(parts[0]) and "paste 2" not in json.dumps(parts[0])
    assert "SUMMARY part 1" in json.dumps(parts[1]) and "paste 1 line 0" in json.dumps(parts[1])
    assert "SUMMARY part 2" in json.dumps(parts[2]) and "paste 2 line 0" in json.dumps(parts[2])
    summary = agent.loop.session.state.summary
    assert summary is not None and summary.text().startswith("SUMMARY part 3")
    accepted(server)


def test_a_server_without_usage_still_compacts_and_usage_says_it_estimated(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from larik_jupyter.frontends.notebook import commands
    from larik_jupyter.frontends.notebook.kernel import KernelSession

    window = 32_000
    with ScriptedHTTPServer([{"content": [text("ok")]}] * 30, api_key=KEY, context_window=window, send_usage=False) as server:
        wire(server, monkeypatch)
        settings = json.loads(user_config_path().read_text())
        personal({**settings, "models": {"local": {"context_window": window}}})
        kernel = KernelSession(project, model="openai-compatible:local", yes=True)
        agent = kernel.ensure()
        outcomes = [agent.run(f"note {n}: " + "z" * 12_000) for n in range(12)]
        printed = io.StringIO()
        outcomes.append(agent.run("one more", listener=TextLog(printed)))
        shown: list[Any] = []
        commands.run(kernel, commands.parse_command("/usage"), commands.Output(shown.append))
        kernel.close()
    assert [o.status for o in outcomes] == ["done"] * 13, [o.error for o in outcomes]
    assert "out (estimated, price unknown)" in printed.getvalue()
    # Twelve prompts of about 3k tokens are over the 32k window: compaction fired on estimates.
    assert agent.loop.session.state.compactions
    usage = "\n".join(getattr(i, "data", "") for i in shown)
    assert "(tokens estimated, price unknown)" in usage and "about " in usage
    assert " 0 input" not in usage and "$0.0000" not in usage
    assert all(o.cost is None and o.usage.estimated and o.usage.input_tokens for o in outcomes)
    accepted(server)


def test_a_prompt_over_the_window_by_itself_is_summarised_before_it_is_sent(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [{"content": [text(f"SUMMARY part {n}.")]} for n in range(1, 4)] + [{"content": [text("On it.")]}]
    seen: list[ae.AgentEvent] = []
    with ScriptedHTTPServer(script, api_key=KEY, context_window=WINDOW_32K) as server:
        wire(server, monkeypatch)
        settings = json.loads(user_config_path().read_text())
        personal({**settings, "models": {"local": {"context_window": WINDOW_32K}}})
        agent = Agent(project, model="openai-compatible:local", yes=True)
        outcome = agent.run("look at this:\n" + "".join(f"row {i} " + "q" * 60 + "\n" for i in range(2000)), listener=seen.append)
        agent.close()
    # About 35k tokens of paste in a 32k window: summarised in parts, then answered.
    assert outcome.status == "done" and outcome.text == "On it.", outcome.error
    assert any("summarised in" in e.text for e in seen if isinstance(e, ae.Notice))
    accepted(server)


def test_the_newest_images_go_only_when_alone_over_the_limit_and_the_user_is_told(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    attached = [
        ImageBlock(source={"type": "base64", "media_type": "image/png", "data": noise_png(i, 6)})
        for i in range(104)
    ]
    seen: list[ae.AgentEvent] = []
    with ScriptedHTTPServer([{"content": [text("Seen.")]}], api_key=KEY) as server:
        wire(server, monkeypatch)
        agent = Agent(project, model="anthropic:claude-sonnet-4-6", yes=True)
        outcome = agent.run("look at all of them", PromptExtras(after=attached), listener=seen.append)
        agent.close()
        last = json.dumps(bodies(server)[-1])
    # "up to 100 images per request": a prompt with 104 loses its 4 oldest, and says so.
    assert outcome.status == "done", outcome.error
    assert last.count('"type": "image"') == 100 and last.count("image omitted") == 4
    notices = [e.text for e in seen if isinstance(e, ae.Notice)]
    assert any(n.startswith("4 images of the latest prompt or tool results were left out") for n in notices)
    accepted(server)


def test_a_reply_of_thinking_and_blank_text_does_not_end_in_thinking(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [{"content": [SIGNED, text("  \n")]}, {"content": [SIGNED, text("Fine.")]}]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        wire(server, monkeypatch, **THINKING)
        agent = Agent(project, model="anthropic:claude-sonnet-4-5", yes=True)
        outcomes = [agent.run("think"), agent.run("again")]
        agent.close()
    assert [o.status for o in outcomes] == ["done", "done"], [o.error for o in outcomes]
    accepted(server)


def test_the_fakes_refuse_each_dead_end_the_real_apis_refuse() -> None:
    """Each rule issue 38 added to `api_rules`, met by a request that breaks it and one that
    does not: the fakes fail a test the way the real API would fail a user."""
    hi = {"role": "user", "content": "hi"}
    call = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}
    answer = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"}]}
    claude = {"model": "claude-sonnet-4-5", "max_tokens": 8000}
    thinking = {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    refused = {
        "The final block in an assistant message cannot be `thinking`": {
            **claude, "messages": [hi, {"role": "assistant", "content": [SIGNED]}, hi]},
        "tool_use.id: String should match pattern": {
            **claude, "messages": [hi, {"role": "assistant", "content": [{**call, "id": "functions.read:0"}]},
                                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "functions.read:0"}]}]},
        "a final `assistant` message must start with a thinking block": {
            **claude, **thinking, "messages": [hi, {"role": "assistant", "content": [call]}, answer]},
        "unexpected `tool_use_id` found in `tool_result` blocks": {
            **claude, "messages": [hi, {"role": "assistant", "content": [{"type": "text", "text": "x"}]}, answer]},
        "prompt is too long": {**claude, "messages": [{"role": "user", "content": "word " * 170_000}]},
    }
    for words, body in refused.items():
        assert words in (anthropic_problem(body) or anthropic_too_long(body) or ""), words
    fine = {**claude, **thinking, "messages": [hi, {"role": "assistant", "content": [SIGNED, call]}, answer]}
    assert anthropic_problem(fine) is None and anthropic_too_long(fine) is None

    def function(description: str = "d", **schema: Any) -> dict[str, Any]:
        return {"type": "function", "function": {"name": "f", "description": description, "parameters": schema}}

    gpt = {"model": "gpt-5", "messages": [hi]}
    long_id = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "chatcmpl-tool-" + "a" * 32, "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    refused = {
        "string too long. Expected a string with maximum length 40": {**gpt, "messages": [hi, long_id]},
        "function.description': string too long": {
            **gpt, "tools": [function("d" * 1025, type="object", properties={})]},
        "object schema missing properties": {**gpt, "tools": [function(type="object")]},
        "array schema missing items": {**gpt, "tools": [function(type="object", properties={"p": {"type": "array"}})]},
        "schema must be a JSON Schema of 'type: \"object\"'": {**gpt, "tools": [function(properties={})]},
        "reasoning_content` in the thinking mode must be passed back": {"model": "deepseek-v4-pro", "messages": [hi, long_id]},
        "maximum context length is 400000 tokens": {**gpt, "messages": [{"role": "user", "content": "word " * 330_000}]},
    }
    for words, body in refused.items():
        assert words in (openai_problem(body) or openai_too_long(body) or ""), words
    # A compatible server's own long ids are its business.
    assert openai_problem({"model": "kimi-k2", "messages": [hi, long_id]}) is None


def test_compact_after_a_refusal_leaves_the_refused_turn_out_of_every_request(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "a.txt").write_text("a\n")
    script = [
        {"content": [text("Sure.")]},
        {"content": [text("I can't")], "stop_reason": "refusal"},
        {"content": [tool("read", path="a.txt")]},  # no summary: the flattened request follows
        {"content": [text("SUMMARY: said hello.")]},
    ]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        wire(server, monkeypatch)
        agent = Agent(project, model="anthropic:claude-sonnet-4-6", yes=True)
        agent.run("hello")
        agent.run("something the classifier stops")
        assert agent.compact() == "SUMMARY: said hello."
        agent.close()
        cached, flat = bodies(server)[2:]
    assert "classifier" not in json.dumps(cached) and "classifier" not in json.dumps(flat)
    assert "hello" in json.dumps(flat) and "tools" not in flat
    accepted(server)


def test_reported_usage_near_the_window_compacts_before_the_next_step(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "a.txt").write_text("a\n")
    near = {"input_tokens": 165_000, "output_tokens": 100}  # 80% of 200k is 160k
    script = [
        {"content": [tool("read", path="a.txt")], "usage": near},
        {"content": [text("SUMMARY: a was read.")]},
        {"content": [text("Done.")], "usage": {"input_tokens": 3_000, "output_tokens": 10}},
    ]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        wire(server, monkeypatch)
        agent = Agent(project, model="anthropic:claude-sonnet-4-6", yes=True)
        outcome = agent.run("read a")
        agent.close()
        sent = bodies(server)
    assert outcome.status == "done" and outcome.text == "Done.", outcome.error
    assert "Summarise the conversation" in json.dumps(sent[1])
    assert json.dumps(sent[2]["messages"]).count("SUMMARY: a was read.") == 1
    accepted(server)
