"""The kernel's end of `larik-jupyter mcp`: an outside agent's (an MCP client's) calls, run in
this kernel by the same larik the `%larik` magics load, each a turn of a session of its own.

The MCP server sends each call as a small silent execute request, `await call(request)`, and
reads the answer back with a user expression, `take(token)` (the JSON `call` left there): the
kernel runs it between the user's cells, as it runs a `%larik` cell, and its code never
appears in the notebook's history or in what the kernel saw run.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from larik_jupyter.agent.permissions import PermissionAnswer, PermissionRequest
from larik_jupyter.bridge_protocol import Get, ShowOutputs
from larik_jupyter.errors import LarikError
from larik_jupyter.notebook.interrupt import sigint_stops
from larik_jupyter.notebook.kernel import KernelSession

if TYPE_CHECKING:
    from larik_jupyter.api import Agent
    from larik_jupyter.llm.messages import ToolResultBlock

# The larik tools an outside agent may call; each runs as a turn, exactly as in a `%larik` turn.
CALLS = ("notebook_read", "notebook_edit", "notebook_run", "notebook_check", "python")
# What it may read of its own session (no turn), and `undo`.
VIEWS = ("variable_report", "undo_list", "transcript", "undo")

# An ask the server puts to the client (MCP elicitation): published under this type, answered
# by the server opening a comm to this target with `{"id", "decision", "message"}`.
ASK_TYPE = "application/vnd.larik.ask+json"
ANSWER_TARGET = "larik.outside.answer"

_results: dict[str, str] = {}
# The undo note each connection's own `undo` left: it read the report, so it is not told again.
_own_undo: dict[str, str | None] = {}
_asks: dict[str, asyncio.Future[PermissionAnswer | None]] = {}


def take(token: str) -> str:
    """The JSON answer of the call `token`, handed over once."""
    return _results.pop(token, "")


async def _kernel(page: bool) -> KernelSession:
    """The kernel's larik, loaded as `%load_ext larik_jupyter` loads it when it is not yet;
    `page`: a browser may show the notebook (the server attached through a Jupyter server)."""
    from IPython import get_ipython

    from larik_jupyter.notebook import extension

    kernel = extension.kernel_session()
    shell = get_ipython()
    if kernel is None and shell is not None:
        shell.extension_manager.load_extension("larik_jupyter")
        kernel = extension.kernel_session()
        bridge = extension.bridge()
        if bridge is not None and page:
            # Loaded from this request (which takes no input, so it looked headless): pages
            # showing this kernel are asked to connect, and given a moment to say hello.
            bridge.say_hello()
            for _ in range(40):
                if bridge.panels:
                    break
                await asyncio.sleep(0.05)
    if kernel is None:
        raise LarikError("larik could not load in this kernel; run `%load_ext larik_jupyter` in the notebook.")
    return kernel


async def call(request: str) -> None:
    """Run one call of an outside agent: `request` is JSON with `token`, `key` (the connection),
    `client` (its name), `tool`, `arguments` and `notebook` (the notebook it works in, or
    null). The answer, `{"content": [...], "is_error": bool}`, waits for `take(token)`."""
    data = json.loads(request)
    try:
        answer = await _answer(data)
    except LarikError as exc:
        answer = {"content": [{"type": "text", "text": str(exc)}], "is_error": True}
    _results[data["token"]] = json.dumps(answer)


def end(key: str) -> None:
    """The outside agent `key` disconnected: its session closes."""
    from larik_jupyter.notebook import extension

    kernel = extension.kernel_session()
    _own_undo.pop(key, None)
    if kernel is not None:
        kernel.close_outside(key)


async def _answer(data: dict[str, Any]) -> dict[str, Any]:
    kernel = await _kernel(bool(data.get("notebook")))
    agent = kernel.open_outside(str(data["key"]), str(data["client"]))
    tool, arguments = str(data["tool"]), dict(data.get("arguments") or {})
    if agent.running:
        raise LarikError("Another call of this session is still running; wait for its result, then call again.")
    if tool in VIEWS:
        said = _view(agent, tool, arguments)
        if tool == "undo":
            _own_undo[str(data["key"])] = agent.pending_note
        return to_client(agent, said, False)
    if tool not in CALLS:
        raise LarikError(f"Unknown tool `{tool}`; available: {', '.join(CALLS + VIEWS)}.")
    notebook = Path(data["notebook"]) if data.get("notebook") else kernel.own_notebook().path
    # What the person undid since (not the client's own undo): told with this result.
    note = agent.pending_note if agent.pending_note != _own_undo.pop(str(data["key"]), None) else None
    approver = PageApprover(kernel, notebook, elicit=bool(data.get("elicit")))
    # Jupyter's interrupt (the page's stop button, or the server when its client went away)
    # stops this call as it stops a `%larik` turn.
    with sigint_stops(agent.stop, reading_input=lambda: False):
        result = await agent.acall(tool, arguments, caller=agent.model.partition(":")[2],
                                   approver=approver.ask, notebook=notebook)
    blocks = _blocks(result)
    if note:
        blocks.insert(0, {"type": "text", "text": note})
    return to_client(agent, blocks, bool(result.is_error))


def to_client(agent: Agent, content: list[dict[str, Any]] | str, is_error: bool) -> dict[str, Any]:
    """Every answer an outside agent gets passes here, the one door out of this kernel to an
    MCP client: the egress policy applies (and its ledger records) at this point."""
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    return {"content": content, "is_error": is_error}


def _blocks(result: ToolResultBlock) -> list[dict[str, Any]]:
    """A tool result as MCP content: text, and images as base64 with their type."""
    if isinstance(result.content, str):
        return [{"type": "text", "text": result.content}]
    blocks: list[dict[str, Any]] = []
    for block in result.content:
        if block.type == "text":
            blocks.append({"type": "text", "text": block.text})
        elif block.type == "image":
            source = block.source
            blocks.append({"type": "image", "data": source.get("data", ""),
                           "mimeType": source.get("media_type", "image/png")})
    return blocks


def _view(agent: Agent, tool: str, arguments: dict[str, Any]) -> str:
    """The read-only views of the outside agent's own session, and `undo`."""
    if tool == "undo":
        report = agent.undo(
            prompt_number=arguments.get("to"), force=bool(arguments.get("force")),
            skip_changed=bool(arguments.get("skip_changed")),
        )
        return report.plain()
    if tool == "undo_list":
        turns = agent.checkpoints()
        if not turns:
            return "No call of this session changed files, cells or kernel variables; nothing to undo."
        lines = []
        for info in turns:
            what = [f.path for f in info.files] + [name for name, _ in info.variables]
            what += [f"cells of {n.path}" for n in info.notebooks]
            lines.append(f"{info.label}: {', '.join(what) or 'nothing recorded'}")
        return "\n".join(lines)
    if tool == "variable_report":
        prompts = [int(arguments["call"])] if arguments.get("call") else range(1, len(agent.records.turns) + 1)
        lines = []
        for number in prompts:
            changes = agent.variable_changes(number)
            if changes:
                lines.append(f"call {number}: " + " · ".join(c.text() for c in changes))
        return "\n".join(lines) or "No call of this session changed the kernel's variables."
    from larik_jupyter.config.secrets import redactor_for
    from larik_jupyter.session.export import render_markdown

    agent.sync()
    return render_markdown(agent.session_path, agent.entries, redactor=redactor_for(agent.cwd))


class PageApprover:
    """Asks the person in the open notebook: an approval card shown under a cell of the open
    notebook (the cell the call names, else the last code cell), as a `%larik` turn shows one
    in its own cell; where the notebook is not open, the client's user through MCP
    elicitation (`elicit`: the client supports it); else None (the call is denied)."""

    def __init__(self, kernel: KernelSession, notebook: Path | None, *, elicit: bool = False) -> None:
        self.kernel = kernel
        self.notebook = notebook
        self.elicit = elicit

    async def ask(self, request: PermissionRequest) -> PermissionAnswer | None:
        shown = await self._in_page(request)
        if shown is not None:
            return await shown
        return await _elicit(request) if self.elicit else None

    async def _in_page(self, request: PermissionRequest) -> asyncio.Future[PermissionAnswer] | None:
        """The card's answer to come, or None when the notebook is not open."""
        from IPython.core.formatters import format_display_data

        from larik_jupyter.notebook.widgets.approval import ApprovalWidget

        bridge = self.kernel.host.bridge if self.kernel.host is not None else None
        if bridge is None or self.notebook is None:
            return None
        try:
            reply = await asyncio.to_thread(bridge.request, self.notebook, Get())
        except LarikError:
            return None
        cells = reply.notebook.cells if reply is not None and reply.notebook is not None else []
        cell = _cell_for(cells, request.input.get("cell_id"))
        if cell is None:
            return None
        loop = asyncio.get_running_loop()
        future: asyncio.Future[PermissionAnswer] = loop.create_future()

        def answered(answer: PermissionAnswer) -> None:
            def resolve() -> None:
                if not future.done():
                    future.set_result(answer)

            loop.call_soon_threadsafe(resolve)

        card = ApprovalWidget(request, answered)
        # Stopped before an answer: the card says so, its buttons go.
        future.add_done_callback(lambda _future: card.cancel())
        data, metadata = format_display_data(card)
        shown = [*cell.get("outputs", []), {"output_type": "display_data", "data": data, "metadata": metadata}]
        bridge.post(self.notebook, ShowOutputs(cell_id=cell["id"], outputs=shown))
        return future


async def _elicit(request: PermissionRequest) -> PermissionAnswer | None:
    """Ask the client's user (the server turns this into an MCP elicitation) and wait."""
    import secrets

    import comm
    from IPython.display import publish_display_data

    manager = comm.get_comm_manager()
    if ANSWER_TARGET not in manager.targets:
        manager.register_target(ANSWER_TARGET, _answered)
    ask_id = secrets.token_hex(8)
    future: asyncio.Future[PermissionAnswer | None] = asyncio.get_running_loop().create_future()
    _asks[ask_id] = future
    publish_display_data({ASK_TYPE: {"id": ask_id, "question": request.question, "detail": request.detail,
                                     "ask": request.ask}})
    try:
        return await future
    finally:
        _asks.pop(ask_id, None)


def _answered(channel: Any, msg: dict[str, Any]) -> None:
    """The server's answer to an ask (a comm it opens and that ends here)."""
    data = msg.get("content", {}).get("data") or {}
    future = _asks.get(str(data.get("id")))
    if future is not None and not future.done():
        decision = data.get("decision")
        answer = PermissionAnswer(decision=decision, message=str(data.get("message") or "")) if decision in (
            "allow", "deny") else None
        future.set_result(answer)
    channel.close()


def _cell_for(cells: list[dict[str, Any]], cell_id: Any) -> dict[str, Any] | None:
    """The code cell a call names, else the notebook's last code cell."""
    code = [c for c in cells if isinstance(c, dict) and c.get("cell_type") == "code" and c.get("id")]
    named = [c for c in code if c.get("id") == cell_id]
    chosen = named or code[-1:]
    return chosen[0] if chosen else None
