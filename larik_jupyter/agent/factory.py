"""Opening an agent: pick the model, then create, resume or continue a session."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from larik_jupyter.agent.loop import AgentLoop
from larik_jupyter.agent.mcp import open_servers
from larik_jupyter.agent.options import AgentOptions
from larik_jupyter.agent.trace import start_trace
from larik_jupyter.config.layers import load_config
from larik_jupyter.llm import events as ev
from larik_jupyter.llm.messages import Message
from larik_jupyter.llm.models import ModelInfo, model_info
from larik_jupyter.llm.outside import PREFIX as OUTSIDE_PREFIX
from larik_jupyter.llm.provider import ProviderError, RequestDoor, ToolSchema
from larik_jupyter.llm.select import choose_spec, select_provider
from larik_jupyter.session import branch
from larik_jupyter.session.catalog import latest, resolve
from larik_jupyter.session.corrupt import session_id_of
from larik_jupyter.session.store import Session, SessionLockedError
from larik_jupyter.session.summary import current_model


@dataclass
class Opened:
    """The agent's turn loop and the one-line notices the front end should show before the
    first turn."""

    loop: AgentLoop
    notices: list[str] = field(default_factory=list)
    branched_from: str | None = None


def open_agent(options: AgentOptions, *, session: str | None = None, continue_latest: bool = False) -> Opened:
    """Open an agent configured by `options` on a new session, a given one (id or path) or the
    latest one of its directory.

    `options.mcp`: the MCP servers a previous session of the same kernel ran; they are reused
    (and brought in line with the config) instead of restarted. `options.for_turns` False opens
    the session to act on it (undo, rewind) rather than to run turns: a session another process
    holds is refused (`SessionLockedError`) instead of branched, no MCP server or debug trace
    starts, and a model that cannot be set up (no API key) says so only when a turn runs."""
    cwd_path, model, for_turns, mcp = options.cwd, options.model, options.for_turns, options.mcp
    loaded = load_config(cwd_path)
    notices = [*loaded.errors, *loaded.notices]
    path: Path | None = None
    if session is not None:
        path = resolve(session, cwd_path)
    elif continue_latest:
        info = latest(cwd_path)
        path = Path(info.path) if info else None
        if info is None:
            notices.append("No earlier session in this directory; starting a new one.")
    branched_from: str | None = None
    if path is not None:
        opened, branched_from = _open_or_branch(path, notices) if for_turns else (Session.open(path), None)
        spec = model or _session_model(opened)
    else:
        spec = model
        opened = None
    try:
        provider, notice = select_provider(spec, loaded.config)
    except ProviderError as exc:
        if for_turns:
            raise
        provider, notice = NoModel(choose_spec(spec, loaded.config)[0], str(exc)), None
    if notice:
        notices.append(notice)
    if opened is None:
        prefix, _, name = provider.name.partition(":")
        opened = Session.create(cwd_path, provider=prefix, model=name)
    if opened.state.interrupted:
        notices.append(f"The last turn of this session was interrupted: {opened.state.interrupted}")
    if for_turns:
        mcp = open_servers(loaded, notices, reuse=mcp)
    loop = AgentLoop(opened, provider, dataclasses.replace(options, mcp=mcp), loaded=loaded)
    if loaded.config.debug and for_turns:
        start_trace(loop)
    return Opened(loop=loop, notices=notices, branched_from=branched_from)


def _open_or_branch(path: Path, notices: list[str]) -> tuple[Session, str | None]:
    """Open session `path` for appending; one another kernel or process holds is branched at
    its end (a fork only reads its source) and the branch opened instead, with a notice.
    Returns the session and, when it is such a branch, the held source's id."""
    try:
        return Session.open(path), None
    except SessionLockedError:
        copy = branch.fork(path)
        source = session_id_of(path)
        notices.append(f"Session {source} is open in another kernel; continuing on a new branch {copy.stem} of it.")
        return Session.open(copy), source


def _session_model(session: Session) -> str | None:
    """The model the session last recorded (a `/model` switch or a turn), else its meta's; the
    configured one (None) for an outside agent's session (`mcp:<client>`), whose record no model
    answers: prompting there after `/resume` goes on with a model."""
    spec = current_model(session.state.model, session.state.meta)
    return None if spec is not None and spec.startswith(f"{OUTSIDE_PREFIX}:") else spec


class NoModel:
    """The model of an agent opened to act on its session when it cannot be set up (a missing
    API key): opening works, and a turn fails with the reason."""

    http_client_factory: Callable[[], Any] | None = None
    door: RequestDoor | None = None

    def __init__(self, name: str, reason: str) -> None:
        self.name, self.reason = name, reason
        self.model = name.partition(":")[2]
        self.info: ModelInfo = model_info(self.model)

    async def stream(
        self, system: str, messages: list[Message], tools: list[ToolSchema], *, cache: bool = True
    ) -> AsyncIterator[ev.StreamEvent]:
        raise ProviderError(self.reason)
        yield  # an async generator, as `Provider.stream` is
