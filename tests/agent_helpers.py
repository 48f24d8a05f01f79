"""Builders shared by the agent tests: scripted models, content blocks, personal config, results."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from larik_jupyter import Agent
from larik_jupyter.config.layers import user_config_path
from larik_jupyter.testing import ScriptedHTTPServer
from larik_jupyter.tools import Env, ToolResult, default_tools
from larik_jupyter.tools.env import NoCheckpoints


def tool(name: str, **kwargs: Any) -> dict[str, Any]:
    """A tool_use content block calling `name` with `kwargs`."""
    return {"type": "tool_use", "name": name, "input": kwargs}


def text(t: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": t}


def done(t: str = "Done.") -> list[dict[str, Any]]:
    """A reply that only says `t`, ending the turn."""
    return [text(t)]


def scripted(tmp_path: Path, *replies: dict[str, Any] | list[dict[str, Any]]) -> str:
    """A `scripted:` model playing `replies` in order in a new script file under `tmp_path`.

    A list is a reply's content blocks; a dict with `content` or `error` is a whole step.
    """
    items = [r if isinstance(r, dict) and ("error" in r or "content" in r) else {"content": r} for r in replies]
    path = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.json"
    path.write_text(json.dumps({"responses": items}))
    return f"scripted:{path}"


def personal(config: dict[str, Any]) -> None:
    """Write `config` as the user's personal config file."""
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config))


def results_of(agent: Agent) -> list[Any]:
    """Every tool result in the agent's session, oldest first."""
    return [b for m in agent.loop.session.state.all for b in m.tool_results()]


#: The environment that picks a model or its key: no test sees the developer's
#: (tests/conftest.py takes them away; `wire_model` sets two of them).
MODEL_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LARIK_MODEL", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")


def wire_model(kind: str, server: ScriptedHTTPServer, key: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point the `kind` SDK ("anthropic" or "openai") at `server` with `key`; returns its model."""
    if kind == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        return "anthropic:claude-sonnet-4-6"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    return "openai:gpt-5"


@dataclass
class Hooks(NoCheckpoints):
    """A checkpointer that hands each file capture to `file` and each command's to `paths`."""

    file: Callable[[Path], None] = lambda path: None
    paths: Callable[[list[Path]], None] = lambda paths: None

    def capture(self, path: Path) -> None:
        self.file(path)

    def capture_paths(self, paths: list[Path]) -> None:
        self.paths(paths)


def make_env(root: Path, captured: list[Path] | None = None, **kw: Any) -> Env:
    """A tool environment confined to `root`; captured paths go to `captured`."""
    log = captured if captured is not None else []
    return Env(cwd=root, root=root, checkpoints=Hooks(log.append, log.extend), **kw)


def call(env: Env, tool: str, **args: Any) -> ToolResult:
    """Run tool `tool` with `args` in `env`."""
    return default_tools(env)[tool].run(env, args)


def as_stored(live: str) -> str:
    """A live transcript without what only a live view can show: how each call was allowed
    (`· allowed by --yes`), a decision never stored, so `/history` renders everything else."""
    return live.replace(" · allowed by --yes", "")


class Hostile:
    """A variable whose every look-up, comparison, length and repr raises."""

    def __getattribute__(self, name: str) -> Any:
        raise RuntimeError("no attributes")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no comparing")

    def __len__(self) -> int:
        raise RuntimeError("no length")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    __hash__ = object.__hash__
