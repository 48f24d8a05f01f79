"""Builders shared by the agent tests: scripted models, content blocks, personal config, results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from larik_jupyter import Agent
from larik_jupyter.config.layers import user_config_path


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
