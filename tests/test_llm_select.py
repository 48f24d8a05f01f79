"""Model selection order, provider prefixes, base URLs and keys."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from larik_jupyter.llm.messages import user_text
from larik_jupyter.llm.provider import ProviderError
from larik_jupyter.llm.select import select_provider
from larik_jupyter.testing import ScriptedHTTPServer, collect, final


@dataclass
class Settings:
    base_url: str | None = None
    api_key_env: str | None = None


@dataclass
class Config:
    model: str | None = None
    providers: dict[str, Settings] = field(default_factory=dict)


def test_nothing_configured_falls_back_to_the_demo_with_a_notice() -> None:
    provider, notice = select_provider(None, None)
    assert provider.name == "scripted:demo"
    assert (
        notice
        and "ANTHROPIC_API_KEY" in notice
        and "provider:model" in notice
        and "\n" not in notice
    )


def test_explicit_spec_beats_config_which_beats_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LARIK_MODEL", "openai:gpt-env")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-y")
    config = Config(model="anthropic:claude-config")
    assert select_provider("scripted:demo", config)[0].name == "scripted:demo"
    assert select_provider(None, config)[0].name == "anthropic:claude-config"
    assert select_provider(None, Config())[0].name == "openai:gpt-env"


def test_keys_in_the_environment_pick_the_vendor_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    provider, notice = select_provider()
    assert provider.name.startswith("openai:") and notice is None
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-y")
    assert select_provider()[0].name.startswith("anthropic:claude-")


def test_unknown_prefix_lists_the_valid_ones() -> None:
    with pytest.raises(ProviderError) as caught:
        select_provider("gemini:pro")
    for name in ("anthropic", "openai", "ollama", "openai-compatible", "scripted"):
        assert name in str(caught.value)
    with pytest.raises(ProviderError, match="provider:model"):
        select_provider("claude-sonnet-4-5")


def test_missing_key_names_the_variable_from_config() -> None:
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY is not set"):
        select_provider("anthropic:claude-x")
    config = Config(providers={"openai": Settings(api_key_env="WORK_OPENAI_KEY")})
    with pytest.raises(ProviderError, match="WORK_OPENAI_KEY is not set"):
        select_provider("openai:gpt-x", config)


def test_openai_compatible_needs_a_base_url_from_config() -> None:
    with pytest.raises(ProviderError, match="base_url"):
        select_provider("openai-compatible:llama")


def reply_ok() -> ScriptedHTTPServer:
    return ScriptedHTTPServer([{"content": [{"type": "text", "text": "ok"}]}])


def test_base_url_variables_are_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-a")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-o")
    with reply_ok() as anthropic_server, reply_ok() as openai_server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.anthropic_base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", openai_server.openai_base_url)
        assert (
            final(collect(select_provider("anthropic:c")[0], [user_text("hi")])).message.text()
            == "ok"
        )
        assert (
            final(collect(select_provider("openai:g")[0], [user_text("hi")])).message.text() == "ok"
        )
        assert anthropic_server.requests[0].path == "/v1/messages"
        assert openai_server.requests[0].path == "/v1/chat/completions"


def test_config_base_url_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-o")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    with reply_ok() as server:
        config = Config(providers={"openai": Settings(base_url=server.openai_base_url)})
        assert (
            final(collect(select_provider("openai:g", config)[0], [user_text("hi")])).message.text()
            == "ok"
        )


def test_local_servers_need_no_key() -> None:
    with reply_ok() as ollama, reply_ok() as vllm:
        config = Config(
            providers={
                "ollama": Settings(base_url=ollama.openai_base_url),
                "openai-compatible": Settings(base_url=vllm.openai_base_url),
            }
        )
        for spec in ("ollama:llama3.2", "openai-compatible:qwen"):
            provider, _ = select_provider(spec, config)
            assert provider.name == spec
            assert final(collect(provider, [user_text("hi")])).message.text() == "ok"
        assert ollama.requests[0].body["model"] == "llama3.2"


def test_ollama_defaults_to_its_local_port() -> None:
    provider, _ = select_provider("ollama:llama3.2")
    assert "localhost:11434/v1" in repr(provider)


@dataclass
class TunedSettings(Settings):
    max_tokens: int | None = None
    thinking_budget: int | None = None


def test_config_tuning_reaches_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-a")
    with reply_ok() as server:
        settings = TunedSettings(
            base_url=server.anthropic_base_url, max_tokens=3000, thinking_budget=1024
        )
        provider, _ = select_provider(
            "anthropic:claude-sonnet-4-5", Config(providers={"anthropic": settings})
        )
        final(collect(provider, [user_text("hi")]))
        body = server.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body["max_tokens"] == 5120
