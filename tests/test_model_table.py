"""The model table: every request parameter, the compaction window and the image budget come
from it; config overrides an entry; unknown models get what any server takes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from larik_jupyter import Agent
from larik_jupyter.config.model import Config
from larik_jupyter.llm.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    user_text,
)
from larik_jupyter.llm.models import MODELS, UNKNOWN, model_info
from larik_jupyter.llm.select import select_provider
from larik_jupyter.testing import ScriptedHTTPServer, collect, final
from tests.agent_helpers import personal, text

OK = {"content": [{"type": "text", "text": "ok"}]}


def sent_body(spec: str, config: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The request body one call of `spec` sends with `config`, through the real SDK."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with ScriptedHTTPServer([OK]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        provider, _ = select_provider(spec, Config.model_validate(config))
        end = final(collect(provider, [user_text("hi")]))
        assert end.stop_reason == "end_turn"  # the server accepted the request
        return server.requests[0].body


def anthropic(thinking_budget: int | None = None, max_tokens: int | None = None, **models: Any) -> dict[str, Any]:
    settings = {k: v for k, v in {"thinking_budget": thinking_budget, "max_tokens": max_tokens}.items() if v}
    return {"providers": {"anthropic": settings}, "models": models}


@pytest.mark.parametrize(
    ("model", "budget", "thinking", "max_tokens"),
    [
        # adaptive-thinking: Opus 4.7 takes only {"type": "adaptive"}; "enabled" is
        # deprecated on the 4.6 models.
        ("claude-opus-4-7", 2048, {"type": "adaptive"}, 16000),
        ("claude-sonnet-4-6", 8000, {"type": "adaptive"}, 16000),
        # extended-thinking: "The minimum budget is 1,024 tokens".
        ("claude-sonnet-4-5", 512, {"type": "enabled", "budget_tokens": 1024}, 16000),
        # Haiku 4.5's output limit is 64K: 100,000 + 4,096 would be refused.
        ("claude-haiku-4-5", 100_000, {"type": "enabled", "budget_tokens": 59_904}, 64_000),
        # Claude 3.5 Haiku has no extended thinking, and 8,192 output tokens at most.
        ("claude-3-5-haiku-20241022", 4096, None, 8192),
        # A Claude id nobody can vouch for gets no thinking and 4,096 tokens.
        ("claude-next-9", 4096, None, 4096),
    ],
)
def test_thinking_and_max_tokens_follow_the_model(
    model: str, budget: int, thinking: dict[str, Any] | None, max_tokens: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = sent_body(f"anthropic:{model}", anthropic(thinking_budget=budget), monkeypatch)
    assert body.get("thinking") == thinking
    assert body["max_tokens"] == max_tokens
    if thinking and thinking["type"] == "enabled":
        # extended-thinking: "budget_tokens must be set to a value less than max_tokens".
        assert thinking["budget_tokens"] < body["max_tokens"]


def test_a_budget_the_model_cannot_take_is_not_sent_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    _, notice = select_provider("anthropic:claude-next-9", Config.model_validate(anthropic(thinking_budget=4096)))
    assert notice is not None and "`providers.anthropic.thinking_budget` is not sent to claude-next-9" in notice
    _, none = select_provider("anthropic:claude-sonnet-4-5", Config.model_validate(anthropic(thinking_budget=4096)))
    assert none is None


def test_a_config_override_changes_what_the_request_carries(monkeypatch: pytest.MonkeyPatch) -> None:
    config = anthropic(2048, 30_000, **{"claude-sonnet-4-5": {"thinking": "adaptive", "max_output_tokens": 20_000}})
    body = sent_body("anthropic:claude-sonnet-4-5-20250929", config, monkeypatch)
    assert body["thinking"] == {"type": "adaptive"} and body["max_tokens"] == 20_000


@pytest.mark.parametrize(
    ("spec", "field", "value"),
    [
        # reasoning guide: reasoning models take max_completion_tokens, not max_tokens.
        ("openai:gpt-5", "max_completion_tokens", 1000),
        ("openai:o4-mini", "max_completion_tokens", 1000),
        ("openai:gpt-4o", "max_tokens", 1000),
        ("openai:gpt-4o-mini", "max_tokens", 1000),
    ],
)
def test_openai_token_limit_takes_the_models_parameter(
    spec: str, field: str, value: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = sent_body(spec, {"providers": {"openai": {"max_tokens": value}}}, monkeypatch)
    assert body[field] == value
    other = {"max_tokens", "max_completion_tokens"} - {field}
    assert not other & set(body) and "temperature" not in body and "top_p" not in body


def test_an_unknown_model_works_against_an_openai_compatible_server(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local server's model: no reasoning parameters, the classic `max_tokens`, no images."""
    with ScriptedHTTPServer([{"content": [text("Hello from a local model.")]}]) as server:
        personal({"providers": {"openai-compatible": {"base_url": server.openai_base_url, "max_tokens": 2000}}})
        agent = Agent(project, model="openai-compatible:qwen2.5-coder:7b")
        outcome = agent.run("hi")
        agent.close()
        body = server.requests[0].body
    assert outcome.status == "done" and outcome.text == "Hello from a local model."
    assert body["model"] == "qwen2.5-coder:7b" and body["max_tokens"] == 2000
    assert "max_completion_tokens" not in body and "reasoning_effort" not in body
    assert agent.loop.provider.info == UNKNOWN and not agent.loop.provider.vision


@pytest.mark.parametrize("layer", ["personal", "repository"])
def test_compaction_fires_at_the_tables_window(
    layer: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = {"content": [text("long answer")], "usage": {"input_tokens": 900, "output_tokens": 10}}
    script = [big, {"content": [text("SUMMARY: short.")]}, OK]
    with ScriptedHTTPServer(script) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        override = {"models": {"claude-haiku-4-5": {"context_window": 1000}}}
        if layer == "personal":
            personal(override)
        else:
            (project / ".larik").mkdir()
            (project / ".larik" / "settings.json").write_text(json.dumps(override))
        agent = Agent(project, model="anthropic:claude-haiku-4-5")
        agent.run("first")
        agent.run("second")
        agent.close()
        last = server.requests[-1].body
    assert agent.loop.provider.info.context_window == 1000
    assert "SUMMARY: short." in str(last["messages"][0]) and "long answer" not in str(last)


def image_result(call: str) -> list[Message]:
    source = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
    return [
        Message(role="assistant", content=[ToolUseBlock(id=call, name="python", input={})]),
        Message(
            role="user",
            content=[ToolResultBlock(tool_use_id=call, content=[TextBlock(text="plot"), ImageBlock(source=source)])],
        ),
    ]


def test_the_image_budget_comes_from_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    history = [user_text("draw")] + [m for n in range(10) for m in image_result(f"toolu_{n}")]
    with ScriptedHTTPServer([OK]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        config = Config.model_validate({"models": {"claude-sonnet-4-5": {"max_images": 4}}})
        provider, _ = select_provider("anthropic:claude-sonnet-4-5", config)
        final(collect(provider, history))
        body = str(server.requests[0].body)
    # 10 images over a limit of 4: the oldest 6 become notes naming their call.
    assert body.count("'type': 'image'") == 4
    assert body.count("it came from the python call toolu_") == 6
    assert "it came from the python call toolu_0]" in body


def test_every_table_entry_is_sane() -> None:
    for name, info in MODELS.items():
        assert info.max_output_tokens <= info.context_window, name
        assert info.price is not None and info.vision, name
        assert (info.thinking != "none") <= name.startswith("claude"), name
        assert info.reasoning <= (not name.startswith("claude")), name
    assert model_info("ollama:gpt-4o") == UNKNOWN  # a local server's gpt-4o is not OpenAI's
