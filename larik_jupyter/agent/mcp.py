"""MCP servers: started through the official `mcp` SDK, their tools offered as `mcp__<server>__<tool>`.

The SDK's sessions are async and long-lived, while agent turns run on short-lived event
loops (a fresh one per turn in the notebook, `asyncio.run` elsewhere). So an `McpManager`
owns one background thread with its own event loop that holds every server's session;
tool calls are handed to it with `run_coroutine_threadsafe` and awaited through
`wrap_future`. Every call has a timeout, and a server that crashes fails its calls with an
error result instead of hanging the turn. Each server's connection (transport, session, tool
listing, status) is `mcp_connection.py`'s; here are the manager, its calls and the tools it
offers. The SDK is imported on first use.

A manager outlives one session: the kernel hands it from session to session (new, fork,
rewind, resume) and `sync` reconciles it with the config then in effect, so unchanged
servers keep running and a server approved mid-session starts without a restart.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib
import threading
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from larik_jupyter.agent.mcp_connection import Connection, McpError, failure_reason, serve
from larik_jupyter.agent.mcp_status import (
    RemoteTool,
    ServerStatus,
    awaiting_notice,
    started_notice,
    tool_name,
)
from larik_jupyter.config.layers import LoadedConfig, PendingApproval
from larik_jupyter.config.model import McpServer
from larik_jupyter.session.call_summary import CellPosition
from larik_jupyter.tools.base import Tool, ToolResult
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.files import Snapshot, changes, take_snapshot

T = TypeVar("T")

STARTUP_TIMEOUT = 30.0
CALL_TIMEOUT = 120.0
PING_TIMEOUT = 3.0
MAX_LISTED = 50


class McpManager:
    """The MCP servers of one agent, on one background event-loop thread."""

    def __init__(
        self,
        servers: dict[str, McpServer],
        *,
        cwd: Path,
        pending: list[PendingApproval] | None = None,
        startup_timeout: float = STARTUP_TIMEOUT,
        call_timeout: float = CALL_TIMEOUT,
    ) -> None:
        self.cwd = cwd
        self.startup_timeout = startup_timeout
        self.call_timeout = call_timeout
        self._connections = {name: Connection.of(name, spec) for name, spec in servers.items()}
        self.awaiting = _awaiting(servers, pending or [])
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def from_config(cls, loaded: LoadedConfig, **kwargs: Any) -> McpManager:
        """The manager for a loaded config's approved servers (not started yet)."""
        return cls(dict(loaded.config.mcpServers), cwd=loaded.cwd, pending=loaded.pending, **kwargs)

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Start every server and wait (at most the startup timeout) until each runs or failed."""
        if self._thread is not None or not self._connections:
            return
        self._launch(list(self._connections.values()))

    def _launch(self, conns: list[Connection]) -> None:
        loop = self._loop
        if loop is None:
            # The SDK validates structured results with jsonschema, whose first import takes
            # seconds; doing it while the servers start keeps it off the first tool call.
            threading.Thread(target=_preload_validator, name="larik-mcp-preload", daemon=True).start()
            loop = self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=loop.run_forever, name="larik-mcp", daemon=True)
            self._thread.start()
        for conn in conns:
            conn.status.state = "starting"
            conn.future = asyncio.run_coroutine_threadsafe(serve(conn, self.cwd, self.startup_timeout), loop)
        for conn in conns:
            if not conn.ready.wait(self.startup_timeout + 5):
                conn.status.state, conn.status.reason = "failed", "did not start in time"

    def sync(self, loaded: LoadedConfig) -> list[ServerStatus]:
        """Make the servers match `loaded`: start added or changed ones, stop the rest of the
        old ones, keep unchanged ones running; returns the statuses of those it started."""
        servers = dict(loaded.config.mcpServers)
        self.awaiting = _awaiting(servers, loaded.pending)
        # A server that failed (crashed, or never started) gets another start, as on a restart.
        stale = [
            c for n, c in self._connections.items() if servers.get(n) != c.spec or c.status.state == "failed"
        ]
        for conn in stale:
            self._stop(conn)
            del self._connections[conn.name]
        fresh = [Connection.of(n, spec) for n, spec in servers.items() if n not in self._connections]
        self._connections.update((c.name, c) for c in fresh)
        if fresh:
            self._launch(fresh)
        return [c.status for c in fresh]

    def close(self) -> None:
        """Stop every server and the background thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        for conn in self._connections.values():
            self._stop(conn)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        if not thread.is_alive():
            loop.close()
        self._loop = self._thread = None

    def _stop(self, conn: Connection) -> None:
        if self._loop is None or conn.closing is None:
            return
        self._loop.call_soon_threadsafe(conn.closing.set)
        if conn.future is not None:
            with contextlib.suppress(Exception):
                conn.future.result(timeout=10)


    # -- what it offers -------------------------------------------------------------------

    def statuses(self) -> list[ServerStatus]:
        """Every configured server (and every one awaiting approval), for `/mcp`."""
        return [c.status for c in self._connections.values()] + list(self.awaiting)

    def check(self) -> list[ServerStatus]:
        """`statuses` after pinging each running server, so one that died while idle shows
        failed with its reason (a server too busy to answer in time stays running)."""
        running = [c for c in self._connections.values() if c.session is not None]
        if running:
            with contextlib.suppress(McpError):
                self._submit(self._ping_all(running)).result(PING_TIMEOUT + 5)
        return self.statuses()

    async def _ping_all(self, conns: list[Connection]) -> None:
        await asyncio.gather(*(self._ping(conn) for conn in conns))

    async def _ping(self, conn: Connection) -> None:
        session = conn.session
        if session is None:
            return
        try:
            await asyncio.wait_for(session.send_ping(), PING_TIMEOUT)
        except TimeoutError:
            return
        except Exception as exc:  # noqa: BLE001 - the SDK raises many kinds
            conn.lose(f"exited while idle ({failure_reason(exc, 'no answer')})")

    def tools(self) -> dict[str, Tool]:
        """The tools of every server that started, by their `mcp__<server>__<tool>` names."""
        found: dict[str, Tool] = {}
        for conn in self._connections.values():
            for remote in conn.status.tools:
                tool = make_tool(self, conn.name, remote)
                found[tool.name] = tool
        return found

    # -- calls ----------------------------------------------------------------------------

    async def acall(self, server: str, tool: str, args: dict[str, Any]) -> ToolResult:
        """Call `tool` on `server` from any event loop; failures come back as error results."""
        try:
            return await asyncio.wrap_future(self._submit(self._call(server, tool, args)))
        except McpError as exc:
            return ToolResult(str(exc), is_error=True)

    def call(self, server: str, tool: str, args: dict[str, Any]) -> ToolResult:
        """`acall` for synchronous callers."""
        try:
            return self._submit(self._call(server, tool, args)).result()
        except McpError as exc:
            return ToolResult(str(exc), is_error=True)

    def _submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if self._loop is None:
            coroutine.close()
            raise McpError("The MCP servers are not running (the agent was closed).")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    async def _call(self, server: str, tool: str, args: dict[str, Any]) -> ToolResult:
        conn = self._connections.get(server)
        if conn is None:
            raise McpError(f"There is no MCP server called {server!r}.")
        if conn.session is None:
            raise McpError(
                f"MCP server {server!r} is not running ({conn.status.state}"
                f"{': ' + conn.status.reason if conn.status.reason else ''}); "
                f"its log is {conn.status.log}."
            )
        try:
            result = await asyncio.wait_for(
                conn.session.call_tool(tool, args), self.call_timeout
            )
        except TimeoutError:
            raise McpError(
                f"MCP server {server!r} did not answer {tool} within {self.call_timeout:g} s; "
                "the call was abandoned."
            ) from None
        except Exception as exc:  # noqa: BLE001 - the SDK raises many kinds
            reason = failure_reason(exc, "the call failed")
            if "closed" in reason.lower():
                conn.lose(f"crashed ({reason})")
                raise McpError(
                    f"MCP server {server!r} crashed during {tool} ({reason}); its log is "
                    f"{conn.status.log}."
                ) from None
            raise McpError(f"MCP tool {tool} on {server!r} failed: {reason}.") from None
        return ToolResult(_result_text(result), is_error=bool(result.is_error))

def _awaiting(servers: dict[str, McpServer], pending: list[PendingApproval]) -> list[ServerStatus]:
    return [
        ServerStatus(
            p.name,
            "awaiting approval",
            f"declared in {p.layer}; run `larik-jupyter approve {p.name}` to start it",
        )
        for p in pending
        if p.kind == "mcp" and p.name not in servers
    ]


def open_servers(
    loaded: LoadedConfig, notices: list[str], reuse: McpManager | None = None
) -> McpManager | None:
    """The MCP servers of an agent opening on `loaded`: `reuse` (a previous session's manager
    in the same directory) brought in line with the config, or a new manager started. Adds a
    notice for each server that failed to start or awaits approval."""
    if reuse is not None and reuse.cwd != loaded.cwd:
        reuse.close()
        reuse = None
    if reuse is not None:
        reuse.sync(loaded)
        manager = reuse
    else:
        manager = McpManager.from_config(loaded)
        if not manager.statuses():
            return None
        manager.start()
    notices += [awaiting_notice(s) for s in manager.awaiting]
    notices += [started_notice(s) for s in manager.statuses() if s.state == "failed"]
    return manager


def _preload_validator() -> None:
    with contextlib.suppress(ImportError):
        importlib.import_module("jsonschema")


def _result_text(result: Any) -> str:
    parts: list[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource":
            resource = block.resource
            parts.append(getattr(resource, "text", None) or f"[resource {resource.uri}]")
        else:
            parts.append(f"[{kind} content]")
    if not parts and result.structured_content is not None:
        import json

        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts) or "(no output)"


class McpTool(Tool):
    """One tool of an MCP server; its input is checked by the server, not here."""

    server: ClassVar[str]
    remote: ClassVar[str]
    manager: ClassVar[McpManager]

    def approval_question(
        self, args: Mapping[str, Any], preview: str, namespace: Mapping[str, Any] | None,
        position: CellPosition | None,
    ) -> tuple[str, str]:
        named = self.name.removeprefix("mcp__").replace("__", " → ", 1)
        return f"Call the MCP tool {named} with these arguments?", preview

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        return self.manager.call(self.server, self.remote, args)

    def run(self, env: Env, args: dict[str, Any]) -> ToolResult:
        before = _snapshot(env)
        return _with_changes(self.execute(env, args), before, _snapshot(env))

    async def arun(self, env: Env, args: dict[str, Any]) -> ToolResult:
        before = await asyncio.to_thread(_snapshot, env)
        result = await self.manager.acall(self.server, self.remote, args)
        return _with_changes(result, before, await asyncio.to_thread(_snapshot, env))


def make_tool(manager: McpManager, server: str, remote: RemoteTool) -> McpTool:
    """The agent tool for one remote tool (a class per tool, as built-in tools are)."""
    name = tool_name(server, remote.name)
    description = (
        f"[MCP server {server}] {remote.description}".strip()
        + " Files it changes are not captured by checkpoints and cannot be undone."
    )
    schema = remote.input_schema or {"type": "object", "properties": {}}
    cls = type(
        f"McpTool_{name}",
        (McpTool,),
        {
            "name": name,
            "description": description,
            "input_schema": schema,
            "server": server,
            "remote": remote.name,
            "manager": manager,
        },
    )
    tool: McpTool = cls()
    return tool


def _snapshot(env: Env) -> Snapshot:
    return take_snapshot(env.root)


def _with_changes(result: ToolResult, before: Snapshot, after: Snapshot) -> ToolResult:
    """Say which project files the call changed: MCP changes are never undoable."""
    found = changes(before, after)
    if not found:
        return result
    lines = [f"  {change}: {path}" for path, change in found[:MAX_LISTED]]
    if len(found) > MAX_LISTED:
        lines.append(f"  … and {len(found) - MAX_LISTED} more")
    note = "Files the MCP tool changed, not captured by checkpoints, not undoable:\n" + "\n".join(lines)
    result.content = f"{result.content}\n{note}"
    result.uncaptured = list(found)
    return result
