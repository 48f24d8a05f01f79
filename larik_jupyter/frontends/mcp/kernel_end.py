"""The kernel's end of `larik-jupyter mcp`: an outside agent's (an MCP client's) calls, run in
this kernel by the same larik the `%larik` magics load, each a turn of a session of its own.

The MCP server sends each call as a small silent execute request, `await call(raw)`, and
reads the answer back with a user expression, `take(token)` (the JSON `call` left there): the
kernel runs it between the user's cells, as it runs a `%larik` cell, and its code never
appears in the notebook's history or in what the kernel saw run. Every message is one of
`mcp_link`'s, the declaration both ends import.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from larik_jupyter.api import (
    OUTSIDE_PREFIX,
    ContentBlock,
    Destination,
    ImageBlock,
    LarikError,
    PermissionAnswer,
    PermissionRequest,
    TextBlock,
    ToolResultBlock,
    kernel_tools,
)
from larik_jupyter.bridge_protocol import Get, ReadReply, ShowOutputs
from larik_jupyter.frontends.notebook.interrupt import sigint_stops
from larik_jupyter.frontends.notebook.kernel import KernelSession
from larik_jupyter.mcp_link import (
    ANSWER_TARGET,
    ASK_TYPE,
    VIEWS,
    Answer,
    Ask,
    AskAnswer,
    Call,
    End,
    Image,
    Text,
    UndoArguments,
    VariableReportArguments,
    decode,
)

if TYPE_CHECKING:
    from larik_jupyter.api import Agent, OpenNotebooks, Withheld

# The larik tools an outside agent may call (`Tool.kernel_tool`); each runs as a turn, exactly
# as in a `%larik` turn. What it may read of its own session (no turn), and `undo`, are
# `mcp_link.VIEWS`.
CALLS = tuple(cls.name for cls in kernel_tools())

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

    from larik_jupyter.frontends.notebook import extension

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


async def call(raw: bytes) -> None:
    """Run one call of an outside agent (`raw`: a `Call`). Its `Answer`, an MCP tool result,
    waits for `take(token)`."""
    data = decode(raw, Call)
    try:
        kernel = await _kernel(bool(data.notebook))
    except LarikError as exc:
        answer = Answer([Text(str(exc))], True)
    else:
        agent = kernel.sessions.outside.open(data.key, data.client)
        # Where answers go: the client, whatever model the person may switch its session to.
        client = Destination(f"{OUTSIDE_PREFIX}:{data.client}", None)
        try:
            answer = await _answer(kernel, agent, client, data)
        except LarikError as exc:
            answer = to_client(agent, client, [("error message", TextBlock(text=str(exc)))], True)
        except Exception as exc:  # a fault of larik's: said in one sentence, still through the door
            said = f"larik failed in the kernel ({type(exc).__name__}: {exc}); the kernel is still usable, call again."
            answer = to_client(agent, client, [("error message", TextBlock(text=said))], True)
    _results[data.token] = msgspec.json.encode(answer).decode()


def end(raw: bytes) -> None:
    """The outside agent of an `End` (`raw`) disconnected: its session closes."""
    from larik_jupyter.frontends.notebook import extension

    key = decode(raw, End).key
    kernel = extension.kernel_session()
    _own_undo.pop(key, None)
    if kernel is not None:
        kernel.sessions.outside.close(key)


async def _answer(kernel: KernelSession, agent: Agent, client: Destination, data: Call) -> Answer:
    tool, arguments = data.tool, data.arguments
    if agent.running:
        raise LarikError("Another call of this session is still running; wait for its result, then call again.")
    # What the person set since the client's last call holds from this call on: protect mode,
    # allow and deny rules (the config's files), and the kernel's egress rules (shared with
    # this session, taken by its door before the answer leaves).
    agent.protect = kernel.protect
    agent.config.follow()
    if tool in VIEWS:
        try:
            view_arguments = msgspec.convert(arguments, VIEWS[tool], strict=False)
        except msgspec.ValidationError as exc:
            raise LarikError(f"`{tool}` takes {', '.join(VIEWS[tool].__struct_fields__) or 'no arguments'}; {exc}.") from None
        said, withheld = _view(agent, client, tool, view_arguments)
        if tool == "undo":
            _own_undo[data.key] = agent.history.pending_note
        return to_client(agent, client, [(tool, TextBlock(text=said))], False, withheld)
    if tool not in CALLS:
        raise LarikError(f"Unknown tool `{tool}`; available: {', '.join((*CALLS, *VIEWS))}.")
    notebook = Path(data.notebook) if data.notebook else kernel.own_notebook().path
    # What the person undid since (not the client's own undo): told with this result.
    note = agent.history.pending_note if agent.history.pending_note != _own_undo.pop(data.key, None) else None
    approver = PageApprover(kernel, notebook, data.client, client=(agent, client) if data.elicit else None)
    # Jupyter's interrupt (the page's stop button, or the server when its client went away)
    # stops this call as it stops a `%larik` turn.
    with sigint_stops(agent.stop, reading_input=lambda: False):
        result = await agent.acall(tool, arguments, caller=agent.model.partition(":")[2],
                                   approver=approver.ask, notebook=notebook)
    pieces: list[tuple[str, ContentBlock]] = [(f"result of call {result.tool_use_id} ({tool})", result)]
    if note:
        pieces.insert(0, ("system notes", TextBlock(text=note)))
    return to_client(agent, client, pieces, bool(result.is_error))


def to_client(
    agent: Agent, client: Destination, pieces: list[tuple[str, ContentBlock]], is_error: bool,
    withheld: Sequence[Withheld] = (),
) -> Answer:
    """Every answer an outside agent gets passes here, the one door out of this kernel to an
    MCP client: the session's egress door (`EgressDoor.pass_answer`) withholds what the policy
    keeps from the client (`mcp:<client>`, a model provider that is not local) and appends the
    answer's ledger line. `pieces`: the ledger's name of each part and its block (a tool result
    as stored, with its tag, or a text); `withheld`: what was kept out of a piece before."""

    def build(blocks: list[ContentBlock]) -> Answer:
        return Answer([item for block in blocks for item in _content(block)], is_error)

    return agent.egress.door.pass_answer(client, pieces, build, withheld)


def _content(block: ContentBlock) -> list[Text | Image]:
    """A block as MCP content: text, and images as base64 with their type (a tool result: its own)."""
    if isinstance(block, ToolResultBlock):
        if isinstance(block.content, str):
            return [Text(block.content)]
        return [item for inner in block.content for item in _content(inner)]
    if isinstance(block, TextBlock):
        return [Text(block.text)]
    if isinstance(block, ImageBlock):
        source = block.source
        return [Image(str(source.get("data", "")), str(source.get("media_type", "image/png")))]
    return []


def _view(agent: Agent, client: Destination, tool: str, arguments: msgspec.Struct) -> tuple[str, list[Withheld]]:
    """The read-only views of the outside agent's own session, and `undo`, with their
    arguments (`mcp_link.VIEWS`); with what the door kept out of what the view was made from
    (the transcript's stored results)."""
    if isinstance(arguments, UndoArguments):
        to = arguments.to if arguments.to is not msgspec.UNSET else None
        report = agent.undo(prompt_number=to, force=arguments.force, skip_changed=arguments.skip_changed)
        return report.plain(), []
    if tool == "undo_list":
        return agent.history.undo_list().plain(), []  # the list every view renders
    if isinstance(arguments, VariableReportArguments):
        call = arguments.call
        prompts = [call] if call is not msgspec.UNSET else range(1, len(agent.records.turns) + 1)
        return agent.history.variable_report(prompts), []
    return _transcript(agent, client)


def _transcript(agent: Agent, client: Destination) -> tuple[str, list[Withheld]]:
    """The session as Markdown, made from its messages as the door lets them out to the client
    (a stored result made from a restricted source is its marker here too)."""
    from larik_jupyter.api import EntryList, redactor_for, render_markdown

    agent.sync()
    entries = agent.history.entries
    stored = [entry.message for entry in entries if entry.message is not None]
    let_out, withheld = agent.egress.door.filter_messages(client, stored)
    sent = iter(let_out)
    shown = EntryList.of([
        entry if entry.message is None else entry.model_copy(update={"message": next(sent)}) for entry in entries
    ])
    for item in withheld:
        item.where = f"transcript: {item.where}"
    return render_markdown(agent.session_path, shown, redactor=redactor_for(agent.options.cwd)), withheld


class PageApprover:
    """Asks the person in the open notebook: an approval card shown under a cell of the open
    notebook (the cell the call names, else the last code cell), as a `%larik` turn shows one
    in its own cell; where the notebook is not open, the client's user through MCP
    elicitation (`client`: the outside agent's session and its client, when the client supports
    it; the ask passes the session's egress door); else None (the call is denied). Either way
    the question names the client (`caller`), so the person knows who asks."""

    def __init__(
        self, kernel: KernelSession, notebook: Path | None, caller: str, *,
        client: tuple[Agent, Destination] | None = None,
    ) -> None:
        self.kernel = kernel
        self.notebook = notebook
        self.caller = caller
        self.client = client

    async def ask(self, request: PermissionRequest) -> PermissionAnswer | None:
        asked = f"The outside agent `{self.caller}` (over MCP) asks: {request.question}"
        request = dataclasses.replace(request, question=asked)
        shown = await self._in_page(request)
        if shown is not None:
            return await shown
        if self.client is None:
            return None
        return await _elicit(_let_out(*self.client, request))

    async def _in_page(self, request: PermissionRequest) -> asyncio.Future[PermissionAnswer] | None:
        """The card's answer to come, or None when the notebook is not open."""
        from IPython.core.formatters import format_display_data

        from larik_jupyter.frontends.notebook.widgets.approval import ApprovalWidget

        bridge = self.kernel.host.bridge if self.kernel.host is not None else None
        if bridge is None or self.notebook is None:
            return None
        try:
            reply = await asyncio.to_thread(bridge.request, self.notebook, Get())
        except LarikError:
            return None
        cell = _cell_for(_cells(reply), request.input.get("cell_id"))
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
        notebook, cell_id, before = self.notebook, cell.id, cell.outputs

        def ended(_future: object) -> None:
            # Answered, denied, timed out or the client gone: the card's lines leave the cell.
            card.cancel()
            threading.Thread(
                target=_take_down, args=(bridge, notebook, cell_id, before, card), name="larik-mcp-card", daemon=True
            ).start()

        future.add_done_callback(ended)
        data, metadata = format_display_data(card)
        shown = [*before, {"output_type": "display_data", "data": data, "metadata": metadata}]
        bridge.post(self.notebook, ShowOutputs(cell_id=cell_id, outputs=shown))
        return future


def _take_down(bridge: OpenNotebooks, notebook: Path, cell_id: str, before: list[Any], card: Any) -> None:
    """Show cell `cell_id` with its outputs as the notebook holds them now (`before`, those it
    had under the card, where the page does not answer), the card gone, and close the card."""
    outputs = before
    try:
        reply = bridge.request(notebook, Get())
    except Exception:  # the page did not answer (closed, reloaded): the outputs it had
        reply = None
    now = next((c for c in _cells(reply) if c.id == cell_id), None)
    if now is not None:
        outputs = now.outputs
    bridge.post(notebook, ShowOutputs(cell_id=cell_id, outputs=outputs))
    card.close()


def _let_out(agent: Agent, client: Destination, request: PermissionRequest) -> PermissionRequest:
    """The ask as the egress door lets it out to the client's user: its question and what the
    call would do (code, a cell's diff: a cell's old source may hold a restricted value) are
    decided as an answer's parts are, and recorded in the ledger as an answer."""

    def build(blocks: list[ContentBlock]) -> dict[str, Any]:
        return {"question": _text(blocks[0]), "detail": _text(blocks[1])}

    pieces: list[tuple[str, ContentBlock]] = [
        ("approval question", TextBlock(text=request.question)),
        ("approval detail", TextBlock(text=request.detail)),
    ]
    said = agent.egress.door.pass_answer(client, pieces, build)
    return dataclasses.replace(request, question=said["question"], detail=said["detail"])


def _text(block: ContentBlock) -> str:
    return block.text if isinstance(block, TextBlock) else ""


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
    ask = Ask(id=ask_id, question=request.question, detail=request.detail, ask=request.ask)
    publish_display_data({ASK_TYPE: msgspec.to_builtins(ask)})
    try:
        return await future
    finally:
        _asks.pop(ask_id, None)


def _answered(channel: Any, msg: dict[str, Any]) -> None:
    """The server's `AskAnswer` (the data of a comm it opens and that ends here)."""
    try:
        said = msgspec.convert(msg["content"]["data"], AskAnswer)
    except (KeyError, TypeError, msgspec.ValidationError):
        said = None  # not an answer of ours: nothing waits for it
    future = _asks.get(said.id) if said is not None else None
    if said is not None and future is not None and not future.done():
        answer = PermissionAnswer(decision=said.decision, message=said.message) if said.decision else None
        future.set_result(answer)
    channel.close()


class _Cell(msgspec.Struct):
    """What the card reads of a cell the page sent (nbformat's fields)."""

    cell_type: str = ""
    id: str = ""
    outputs: list[Any] = []


def _cells(reply: ReadReply | None) -> list[_Cell]:
    """The cells of the page's reply to `Get` (none when it did not answer)."""
    if reply is None:
        return []
    try:
        return msgspec.convert(reply.notebook.cells, list[_Cell])
    except msgspec.ValidationError:
        return []  # not nbformat cells: no card


def _cell_for(cells: list[_Cell], cell_id: object) -> _Cell | None:
    """The code cell a call names, else the notebook's last code cell."""
    code = [c for c in cells if c.cell_type == "code" and c.id]
    named = [c for c in code if c.id == cell_id]
    chosen = named or code[-1:]
    return chosen[0] if chosen else None
