"""Choosing the model: an explicit `provider:model`, else config, else the environment.

The order is: the `spec` given, the `model` config value, `$LARIK_MODEL`, Anthropic's
default model when `ANTHROPIC_API_KEY` is set, OpenAI's when `OPENAI_API_KEY` is set,
and finally the offline `scripted:demo` with a notice saying how to configure a real
model. Provider modules (and their SDKs) are imported only once chosen.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from larik_jupyter.llm.models import ModelInfo, model_info
from larik_jupyter.llm.provider import Provider, ProviderError

PROVIDERS = ("anthropic", "openai", "ollama", "openai-compatible", "scripted", "mcp")
OLLAMA_BASE_URL = "http://localhost:11434/v1"
# The backends spoken to through the OpenAI SDK: prefix to (title, key variable, base URL);
# a None key variable means the server needs no key; a None URL, `OPENAI_BASE_URL` or OpenAI's.
_OPENAI_BACKENDS: dict[str, tuple[str, str | None, str | None]] = {
    "openai": ("OpenAI", "OPENAI_API_KEY", None),
    "ollama": ("Ollama", None, OLLAMA_BASE_URL),
    "openai-compatible": ("The OpenAI-compatible server", None, None),
}
# Kept here rather than imported so choosing a model loads no provider module.
ANTHROPIC_DEFAULT = "claude-sonnet-4-6"
OPENAI_DEFAULT = "gpt-5"
DEMO_NOTICE = (
    "No model is configured, so the offline scripted demo (scripted:demo) is answering; "
    "set ANTHROPIC_API_KEY or OPENAI_API_KEY, or choose a model as provider:model "
    "(e.g. anthropic:claude-sonnet-4-6) or with the `model` config value."
)


def _settings(config: Any, provider: str) -> Any:
    """The config entry for `provider` (`.base_url`, `.api_key_env`, optional tuning), or None."""
    providers = getattr(config, "providers", None) or {}
    return providers.get(provider) if isinstance(providers, dict) else None


def _positive_int(entry: Any, name: str) -> int | None:
    """An optional tuning value (`max_tokens`, `thinking_budget`) from a config entry."""
    value = getattr(entry, name, None)
    return value if isinstance(value, int) and value > 0 else None


def model_facts(spec: str, config: Any = None) -> ModelInfo:
    """The model table's entry for `provider:model` with the config's `models` overrides and
    the provider entry's `vision` (which wins, as it did before the table existed)."""
    info = model_info(spec, getattr(config, "models", None) or None)
    vision = getattr(_settings(config, spec.partition(":")[0]), "vision", None)
    return dataclasses.replace(info, vision=vision) if isinstance(vision, bool) else info


def choose_spec(spec: str | None, config: Any = None) -> tuple[str, str | None]:
    """The `provider:model` string to use and the notice to show (only for the demo fallback)."""
    for candidate in (spec, getattr(config, "model", None), os.environ.get("LARIK_MODEL")):
        if candidate and candidate.strip():
            return candidate.strip(), None
    if os.environ.get("ANTHROPIC_API_KEY"):
        return f"anthropic:{ANTHROPIC_DEFAULT}", None
    if os.environ.get("OPENAI_API_KEY"):
        return f"openai:{OPENAI_DEFAULT}", None
    return "scripted:demo", DEMO_NOTICE


def make_provider(spec: str, config: Any = None) -> Provider:
    """The provider for `provider:model`; raises `ProviderError` naming what to fix."""
    prefix, sep, model = spec.partition(":")
    if not sep or prefix not in PROVIDERS:
        raise ProviderError(
            f"Unknown model '{spec}': write it as provider:model with provider one of "
            f"{', '.join(PROVIDERS)} (e.g. anthropic:{ANTHROPIC_DEFAULT})."
        )
    if not model:
        default = {"anthropic": ANTHROPIC_DEFAULT, "openai": OPENAI_DEFAULT}.get(prefix)
        if default is None:
            raise ProviderError(f"Model '{spec}' names no model; write it as {prefix}:<model>.")
        model = default
    entry = _settings(config, prefix)
    base_url, key_env = getattr(entry, "base_url", None), getattr(entry, "api_key_env", None)
    if prefix == "mcp":
        from larik_jupyter.llm.outside import OutsideProvider

        return OutsideProvider(model)
    if prefix == "scripted":
        from larik_jupyter.llm import scripted

        return scripted.demo_provider() if model == "demo" else scripted.file_provider(Path(model))
    if prefix == "anthropic":
        from larik_jupyter.llm.anthropic_provider import AnthropicProvider

        return AnthropicProvider(
            model,
            key_env=key_env or "ANTHROPIC_API_KEY",
            base_url=base_url,
            max_tokens=_positive_int(entry, "max_tokens"),
            thinking_budget=_positive_int(entry, "thinking_budget"),
            info=model_facts(f"{prefix}:{model}", config),
        )

    title, default_key_env, default_base_url = _OPENAI_BACKENDS[prefix]
    base_url = base_url or default_base_url
    if not base_url and prefix == "openai-compatible":
        raise ProviderError(
            f'Model \'{spec}\' needs the server\'s URL: set "providers": {{"openai-compatible": '
            '{"base_url": "http://host:port/v1"}} in your config.json.'
        )
    from larik_jupyter.llm.openai_provider import OpenAIProvider

    return OpenAIProvider(
        model,
        prefix=prefix,
        title=title,
        key_env=key_env or default_key_env,
        base_url=base_url,
        max_tokens=_positive_int(entry, "max_tokens"),
        info=model_facts(f"{prefix}:{model}", config),
    )


def select_provider(spec: str | None = None, config: Any = None) -> tuple[Provider, str | None]:
    """The provider to use and an optional one-line notice for the user.

    `config` is duck-typed: `.model` and `.providers` (name to an object with `.base_url`
    and `.api_key_env`, and optionally `.max_tokens` and, for anthropic,
    `.thinking_budget`); None means no config. A base URL in config wins over
    `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL`, which win over the vendors' defaults.
    """
    chosen, notice = choose_spec(spec, config)
    provider = make_provider(chosen, config)
    return provider, notice or _unsent_thinking(provider, config)


def _unsent_thinking(provider: Provider, config: Any) -> str | None:
    """A notice when `providers.anthropic.thinking_budget` is set for a model the model table
    does not know to take extended thinking (so it is not sent)."""
    prefix = provider.name.partition(":")[0]
    if prefix != "anthropic" or not _positive_int(_settings(config, prefix), "thinking_budget"):
        return None
    if provider.info.thinking != "none":
        return None
    return (
        f"`providers.anthropic.thinking_budget` is not sent to {provider.model}: the model table "
        f'does not know it to take extended thinking; if it does, set "models": '
        f'{{"{provider.model}": {{"thinking": "budget"}}}} (or "adaptive") in your config.'
    )
