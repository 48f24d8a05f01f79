"""The MCP server's line to the kernel: each call a silent execute request that awaits larik's
`frontends/mcp/kernel_end.call` in the kernel, its answer read back with a user expression. Silent: the
call is not in the notebook's history, its execution count or what the kernel saw run. What
crosses is `mcp_link`'s messages; what Jupyter's messaging protocol answers is read through the
few fields declared here (`_ExecuteReply`, `_Published`)."""

from __future__ import annotations

import ast
import asyncio
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import msgspec

from larik_jupyter.api import LarikError
from larik_jupyter.mcp_link import (
    ANSWER_TARGET,
    ASK_TYPE,
    Answer,
    Ask,
    AskAnswer,
    Call,
    End,
    answer_expression,
    call_code,
    decode,
    end_code,
)

# What asks the client's user, given the kernel's ask: the decision ("allow" or "deny") and
# the user's reason.
Asker = Callable[[Ask], Awaitable[tuple[Literal["allow", "deny"], str]]]
_T = TypeVar("_T")
# How long a stopped call may take to end in the kernel before the server gives up on it.
STOP_GRACE_SECONDS = 10.0
# How often a long call checks that the kernel is still alive (its heartbeat).
HEARTBEAT_SECONDS = 2.0


class KernelLink:
    """A client of the kernel whose connection file is `connection_file`."""

    def __init__(self, connection_file: Path) -> None:
        from jupyter_client.asynchronous import AsyncKernelClient

        self.client = AsyncKernelClient()
        try:
            self.client.load_connection_file(str(connection_file))
        except (OSError, ValueError, KeyError) as exc:
            raise LarikError(f"{connection_file} is not a kernel connection file ({exc}); pass the file a running kernel wrote.") from None
        self.client.start_channels()
        self._sent: set[str] = set()  # our execute requests not answered yet
        self._started: set[str] = set()  # those the kernel has begun
        self._askers: dict[str, Asker] = {}  # who answers the asks of each request
        self._watch: asyncio.Task[None] | None = None
        self._reading = asyncio.Lock()  # one reader of the shell channel at a time
        self._replies: dict[str, dict[str, Any]] = {}  # read for a waiter not reading now

    async def ready(self, timeout: float = 30.0) -> None:
        """Wait until the kernel answers (and its broadcasts reach us), or say it does not."""
        try:
            await self.client.wait_for_ready(timeout=timeout)
        except RuntimeError as exc:
            raise LarikError(f"The kernel did not answer ({exc}); is it still running? Start the server again once it is.") from None
        self._watch = asyncio.create_task(self._watch_iopub())

    async def call(self, key: str, client: str, tool: str, arguments: dict[str, Any], notebook: str | None, *,
                   asker: Asker | None = None, timeout: float | None = None) -> Answer:
        """Run one outside call in the kernel and return its answer (an MCP tool result);
        `asker` answers what the call asks where no page can (`elicit` is sent with it).
        Cancelled (the client went away), the call is stopped in the kernel first."""
        call = Call(token=secrets.token_hex(8), key=key, client=client, tool=tool, arguments=arguments,
                    notebook=notebook, elicit=asker is not None)
        expressions = {"answer": answer_expression(call.token)}
        read = _read(await self._execute(call_code(call), expressions, asker=asker, timeout=timeout), _ExecuteReply)
        reply = read.content if read is not None else None
        if reply is None or reply.status != "ok":
            raise LarikError(_kernel_error(reply))
        answer = reply.user_expressions.answer if reply.user_expressions is not None else None
        if answer is None or answer.status != "ok":
            raise LarikError(_kernel_error(answer))
        text = ast.literal_eval(answer.data["text/plain"]) if "text/plain" in answer.data else ""
        if not text:
            raise LarikError("The kernel ran the call but kept no answer (was it restarted meanwhile?); call again.")
        try:
            return decode(text, Answer)
        except ValueError as exc:
            raise LarikError(f"{exc} Is the kernel's larik_jupyter the server's version?") from None

    async def end(self, key: str) -> None:
        """Tell the kernel that connection `key` ended (its session closes); bounded."""
        code = end_code(End(key))
        try:
            await self._execute(code, {}, timeout=STOP_GRACE_SECONDS)
        except (LarikError, TimeoutError):
            pass  # the kernel is busy or gone: the session stays valid as it is

    async def _execute(self, code: str, expressions: dict[str, str], *, asker: Asker | None = None,
                       timeout: float | None) -> dict[str, Any]:
        msg_id = self.client.execute(code, silent=True, store_history=False, user_expressions=expressions,
                                     allow_stdin=False, stop_on_error=False)
        self._sent.add(msg_id)
        if asker is not None:
            self._askers[msg_id] = asker
        try:
            return await self._reply(msg_id, timeout)
        except asyncio.CancelledError:
            await asyncio.shield(self._stop(msg_id))
            raise
        finally:
            self._askers.pop(msg_id, None)

    async def _reply(self, msg_id: str, timeout: float | None) -> dict[str, Any]:
        """The kernel's reply to `msg_id`. One waiter reads the shell channel at a time (a
        call being stopped and the connection's end may both wait: a reply read between
        another reader's poll and its read would leave that one waiting forever), and a reply
        read for another waiter is kept for it."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            if msg_id in self._replies:
                self._sent.discard(msg_id)
                self._started.discard(msg_id)
                return self._replies.pop(msg_id)
            left = HEARTBEAT_SECONDS if deadline is None else min(HEARTBEAT_SECONDS, max(0.0, deadline - loop.time()))
            try:
                async with self._reading:
                    if msg_id in self._replies:
                        continue
                    reply: dict[str, Any] = await self.client.get_shell_msg(timeout=left)
            except Exception:  # queue.Empty: no reply yet
                if deadline is not None and loop.time() >= deadline:
                    raise TimeoutError("The kernel did not answer in time.") from None
                if not await self.client.is_alive():
                    raise LarikError(
                        "The kernel stopped answering during the call (it died or was restarted); "
                        "the call's session keeps what was stored. Restart the server once the kernel runs."
                    ) from None
                continue
            parent = _parent(reply)
            if parent in self._sent:
                self._replies[parent] = reply

    async def _stop(self, msg_id: str) -> None:
        """Interrupt the kernel once it runs `msg_id` (larik turns that into the call's stop),
        and wait for the call to end, so the kernel is free and the session file whole."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STOP_GRACE_SECONDS
        while msg_id not in self._started and loop.time() < deadline:
            await asyncio.sleep(0.02)
        if msg_id in self._started:
            self.client.control_channel.send(self.client.session.msg("interrupt_request", {}))
        try:
            await self._reply(msg_id, max(0.0, deadline - loop.time()) + STOP_GRACE_SECONDS)
        except (TimeoutError, LarikError):
            pass  # still running or gone: the server leaves it be

    async def _watch_iopub(self) -> None:
        """Note which of our requests the kernel has begun (its `busy` status for them), and
        hand their asks to their askers."""
        asks: set[asyncio.Task[None]] = set()
        while True:
            msg = await self.client.get_iopub_msg()
            parent = _parent(msg)
            if parent not in self._sent:
                continue
            published = _read(msg, _Published)
            if published is None:
                continue
            if published.content.execution_state == "busy":
                self._started.add(parent)
            ask = _ask(published)
            asker = self._askers.get(parent)
            if ask is not None and asker is not None:
                task = asyncio.create_task(self._answer(asker, ask))
                asks.add(task)  # held until done: the loop keeps only weak references
                task.add_done_callback(asks.discard)

    async def _answer(self, asker: Asker, ask: Ask) -> None:
        """Put the kernel's ask to the client's user; the answer goes back as a comm the kernel
        reads while the call awaits it (nobody answering, or failing: denied)."""
        decision: Literal["allow", "deny"]
        try:
            decision, message = await asker(ask)
        except Exception as exc:  # noqa: BLE001 - the client could not ask: that is a denial
            decision, message = "deny", f"the client could not ask ({exc})"
        data = msgspec.to_builtins(AskAnswer(id=ask.id, decision=decision, message=message))
        self.client.shell_channel.send(self.client.session.msg(
            "comm_open", {"comm_id": secrets.token_hex(16), "target_name": ANSWER_TARGET, "data": data}))

    def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        self.client.stop_channels()


class _Failure(msgspec.Struct):
    """How the kernel says something failed (Jupyter's `status`, `ename`, `evalue`)."""

    status: str = ""
    ename: str = "Error"
    evalue: str = ""


class _Expression(_Failure):
    """A user expression's value: its MIME bundle (ours is `text/plain`, a `str`'s repr)."""

    data: dict[str, Any] = {}


class _Expressions(msgspec.Struct):
    answer: _Expression | None = None


class _ExecuteContent(_Failure):
    user_expressions: _Expressions | None = None


class _ExecuteReply(msgspec.Struct):
    """What larik reads of an `execute_reply`."""

    content: _ExecuteContent


class _PublishedContent(msgspec.Struct):
    execution_state: str = ""  # `status` messages
    data: dict[str, Any] = {}  # `display_data` messages


class _Published(msgspec.Struct):
    """What larik reads of an iopub message about one of its requests."""

    msg_type: str
    content: _PublishedContent


class _Header(msgspec.Struct):
    msg_id: str = ""


class _Parent(msgspec.Struct):
    parent_header: _Header


def _read(msg: dict[str, Any], kind: type[_T]) -> _T | None:
    """The fields `kind` declares of a message jupyter_client handed over; None when it has not them."""
    try:
        return msgspec.convert(msg, kind)
    except msgspec.ValidationError:
        return None


def _parent(msg: dict[str, Any]) -> str:
    """The id of the request `msg` answers ("" when none)."""
    parent = _read(msg, _Parent)
    return parent.parent_header.msg_id if parent is not None else ""


def _ask(published: _Published) -> Ask | None:
    """The kernel's ask, where `published` is one."""
    if published.msg_type != "display_data" or ASK_TYPE not in published.content.data:
        return None
    try:
        return msgspec.convert(published.content.data[ASK_TYPE], Ask)
    except msgspec.ValidationError:
        return None


def _kernel_error(failure: _Failure | None) -> str:
    """What went wrong in the kernel, in one sentence."""
    failure = failure or _Failure()
    name, value = failure.ename, failure.evalue
    if name == "ModuleNotFoundError" and "larik_jupyter" in value:
        return ("larik_jupyter is not installed in the kernel's environment; install it there "
                "(`pip install larik_jupyter` with that kernel's Python), then call again.")
    return f"larik failed in the kernel ({name}: {value}); the kernel is still usable, call again."
