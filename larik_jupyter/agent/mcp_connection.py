"""One MCP server's connection, as it runs on the `McpManager`'s event-loop thread: its
transport (a command over stdio, its stderr in `logs/mcp-<name>.log`, or a URL over streamable
HTTP), its SDK session from start to close, the tolerant listing of its tools, and its status
(`ServerStatus`: starting, running, failed with the reason, stopped). The SDK is imported on
first use."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from larik_jupyter.agent.mcp_status import RemoteTool, ServerStatus, log_path
from larik_jupyter.config.model import McpServer
from larik_jupyter.errors import first_problem


class McpError(Exception):
    """An MCP server or call that failed; its text is the status's reason or the error result
    the model reads."""


@dataclass
class Connection:
    """One configured server: its spec, its status, and while it runs its SDK session."""

    name: str
    spec: McpServer
    status: ServerStatus
    session: Any = None
    ready: threading.Event = field(default_factory=threading.Event)
    closing: asyncio.Event | None = None
    future: concurrent.futures.Future[None] | None = None

    @classmethod
    def of(cls, name: str, spec: McpServer) -> Connection:
        """The connection of server `name`, not started yet."""
        return cls(name, spec, ServerStatus(name, "not started", log=log_path(name)))

    def lose(self, reason: str) -> None:
        """Mark a server whose connection ended as failed and let its task reap the process."""
        self.session = None
        self.status.state, self.status.reason = "failed", reason
        if self.closing is not None:
            self.closing.set()


async def serve(conn: Connection, cwd: Path, startup_timeout: float) -> None:
    """Start `conn`'s server in `cwd`, list its tools, and hold its session until `closing` is
    set; `ready` is set once it runs or failed (the reason in its status)."""
    conn.closing = asyncio.Event()
    status = conn.status
    try:
        from mcp import ClientSession

        log = status.log
        assert log is not None
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as errlog:
            async with contextlib.AsyncExitStack() as stack:
                streams = await stack.enter_async_context(_transport(conn.spec, cwd, errlog))
                session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
                await asyncio.wait_for(session.initialize(), startup_timeout)
                listed = await asyncio.wait_for(_list_tools(session, status), startup_timeout)
                status.tools = [
                    RemoteTool(t.name, t.description or "", dict(t.input_schema or {}))
                    for t in listed
                ]
                conn.session = session
                status.state = "running"
                conn.ready.set()
                await conn.closing.wait()
                conn.session = None
                if status.state == "running":
                    status.state = "stopped"
    except BaseException as exc:  # noqa: BLE001 - any failure is the server's status
        conn.session = None
        if status.state != "failed":
            status.state = "failed"
            status.reason = failure_reason(exc, "could not start")
    finally:
        conn.ready.set()


def _transport(spec: McpServer, cwd: Path, errlog: Any) -> contextlib.AbstractAsyncContextManager[Any]:
    if spec.url:
        from mcp.client.streamable_http import streamable_http_client

        return streamable_http_client(spec.url)
    if not spec.command:
        raise McpError("it has neither `command` nor `url`")
    from mcp import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=spec.command, args=list(spec.args), env=dict(spec.env) or None, cwd=cwd
    )
    return stdio_client(params, errlog=errlog)


async def _list_tools(session: Any, status: ServerStatus) -> list[Any]:
    """The server's tools. The SDK refuses a whole listing when one tool's input schema breaks
    the MCP schema (a root `type` other than "object", or none), which would take the server
    down; then the listing is read again as sent and each tool checked on its own: a schema
    with object keywords but no `type` gets `"type": "object"`, and a tool that still does not
    pass is left out and named in `status.left_out` (shown by `/mcp`)."""
    from mcp import types
    from pydantic import ValidationError

    status.left_out = []
    try:
        return list((await session.list_tools()).tools)
    except ValidationError:
        pass
    # The raw listing: the SDK has no public way to read a result it would refuse.
    raw = await session._dispatcher.send_raw_request("tools/list", None, {})
    tools = []
    for item in raw.get("tools") or []:
        if not isinstance(item, dict):
            continue
        schema = item.get("inputSchema")
        if isinstance(schema, dict) and "type" not in schema:
            schema = item["inputSchema"] = {"type": "object", **schema}
        if not isinstance(schema, dict) or schema.get("type") != "object":
            kind = schema.get("type") if isinstance(schema, dict) else type(schema).__name__
            status.left_out.append(f"`{item.get('name')}`: its input is a {kind}, not an object")
            continue
        try:
            tools.append(types.Tool.model_validate(item, by_name=False))
        except ValidationError as exc:
            where, what = first_problem(exc, "the tool")
            status.left_out.append(f"`{item.get('name')}`: {where}: {what}")
    # So calls find the tools' output schemas without listing (and failing) again.
    session._absorb_tool_listing(types.ListToolsResult(tools=tools), complete=True)
    return tools


def failure_reason(exc: BaseException, fallback: str) -> str:
    """What went wrong, in one line: each exception of a group, each with its type."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(failure_reason(e, fallback) for e in exc.exceptions)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__ or fallback
