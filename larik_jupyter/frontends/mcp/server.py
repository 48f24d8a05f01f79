"""The MCP server an outside agent talks to over stdio: larik's kernel tools (the same tool code a
`%larik` turn runs, in the kernel) and read-only views of its own session.

One stdio connection is one larik session, named after the client (`clientInfo`); each tool
call is a turn of it (see docs/architecture.md, "Outside agents").
"""

from __future__ import annotations

import secrets
from typing import Any, Literal

import mcp_types as types
import msgspec
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from larik_jupyter import __version__
from larik_jupyter.api import LarikError
from larik_jupyter.frontends.mcp.attach import Target
from larik_jupyter.frontends.mcp.link import Asker, KernelLink
from larik_jupyter.mcp_link import VIEWS, Ask, Image, Text, input_schema

DEFAULT_CLIENT = "mcp-client"
INSTRUCTIONS = (
    "These tools work in a live Jupyter kernel through larik: every call is recorded as a turn of "
    "a larik session of your own, which the person can browse and undo from the notebook; calls "
    "that would change their variables or files may ask them first (protect mode, approvals). "
    "Use `undo` to revert your last call and `variable_report` to see what your calls changed. "
    "Data the person may not send to a model comes back as `[withheld: NAME — policy P; …]` with "
    "what its policy allows (a schema, statistics, a sample): work with that or ask the person."
)
# The views of the session (no turn) and `undo`: their descriptions here, their arguments in
# `mcp_link.VIEWS` (what the kernel reads them as); the tools' from larik.
VIEW_TOOLS: dict[str, tuple[str, bool]] = {
    "variable_report": (
        "What your calls did to the kernel's variables: each call's created, changed, rebound and "
        "deleted variables with their shapes, and the receipts of its joins, filters, groups and "
        "concats (rows in and out, keys that fanned out or matched nothing). `call`: only that call "
        "(1-based), else all.",
        True,
    ),
    "undo_list": (
        "Your calls that changed files, notebook cells or kernel variables, oldest first: what `undo` can revert.",
        True,
    ),
    "transcript": (
        "Your session's transcript as Markdown: every call with its result, as the person sees it.",
        True,
    ),
    "undo": (
        "Revert your newest call that changed files, cells or kernel variables (with `to`: every call "
        "from the newest down to call `to`). A file or cell the person changed since is left as it is "
        "unless `force` (their change is lost) or `skip_changed` (keep it, undo the rest).",
        False,
    ),
}


def tool_list() -> list[types.Tool]:
    """The tools offered: larik's kernel tools with their own descriptions and schemas, then the views."""
    from larik_jupyter.api import kernel_tools

    tools = []
    for cls in kernel_tools():
        tools.append(types.Tool(
            name=cls.name, description=cls.description, input_schema=cls.input_schema,
            annotations=types.ToolAnnotations(read_only_hint=cls.read_only()),
        ))
    for name, (description, read_only) in VIEW_TOOLS.items():
        tools.append(types.Tool(name=name, description=description, input_schema=input_schema(VIEWS[name]),
                                annotations=types.ToolAnnotations(read_only_hint=read_only)))
    return tools


class OutsideServer:
    """The MCP server for one connection, attached to the kernel of `target`."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.key = secrets.token_hex(6)  # this connection, as the kernel knows it
        self.link: KernelLink | None = None
        self.server: Server[Any] = Server(
            "larik-jupyter",
            version=__version__,
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    async def _list_tools(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list())

    async def _call_tool(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        assert self.link is not None
        notebook = str(self.target.notebook) if self.target.notebook else None
        asker = _elicitation(ctx) if _can_elicit(ctx) else None
        try:
            answer = await self.link.call(self.key, _client_name(ctx), params.name, params.arguments or {}, notebook,
                                          asker=asker)
        except (LarikError, TimeoutError) as exc:
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(exc))], is_error=True)
        return types.CallToolResult(content=[_content(c) for c in answer.content], is_error=answer.is_error)

    async def run(self) -> None:
        """Serve stdio until the client goes; then the kernel closes this connection's session."""
        self.link = KernelLink(self.target.connection_file)
        try:
            await self.link.ready()
            async with stdio_server() as (read, write):
                await self.server.run(read, write, self.server.create_initialization_options())
        finally:
            await self.link.end(self.key)
            self.link.close()


def _client_name(ctx: ServerRequestContext[Any]) -> str:
    """The client's name from its `clientInfo`, made safe to be a model label."""
    params = ctx.session.client_params
    name = params.client_info.name if params is not None and params.client_info is not None else ""
    cleaned = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name.strip())[:64]
    return cleaned or DEFAULT_CLIENT


def _can_elicit(ctx: ServerRequestContext[Any]) -> bool:
    wanted = types.ClientCapabilities(elicitation=types.ElicitationCapability())
    return bool(ctx.session.check_client_capability(wanted))


def _elicitation(ctx: ServerRequestContext[Any]) -> Asker:
    """Asks the client's user through MCP elicitation (a form: allow or deny, and a reason)."""

    async def ask(kernel_ask: Ask) -> tuple[Literal["allow", "deny"], str]:
        keep = kernel_ask.ask == "keep"
        choices = ["keep", "roll back"] if keep else ["allow", "deny"]
        schema: dict[str, Any] = {"type": "object", "properties": {
            "decision": {"type": "string", "enum": choices, "title": "Your answer"},
            "reason": {"type": "string", "title": "Reason (told to the agent)"},
        }, "required": ["decision"]}
        message = f"{kernel_ask.question}\n\n{kernel_ask.detail}".strip()
        result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        if result.action != "accept" or not result.content:
            return "deny", ""
        try:
            said = msgspec.convert(result.content, _Elicited)
        except msgspec.ValidationError:
            return "deny", ""
        return ("allow" if said.decision in ("allow", "keep") else "deny"), said.reason or ""

    return ask


class _Elicited(msgspec.Struct):
    """The form the client's user filled in (`_elicitation`'s schema)."""

    decision: str
    reason: str | None = None


def _content(block: Text | Image) -> types.TextContent | types.ImageContent:
    if isinstance(block, Image):
        return types.ImageContent(type="image", data=block.data, mime_type=block.mime_type)
    return types.TextContent(type="text", text=block.text)
