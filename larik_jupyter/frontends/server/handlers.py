"""Tornado handlers of `/larik/api/`: authenticated, confined to the server root, JSON errors."""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from pydantic import BaseModel, ValidationError
from tornado import web

from larik_jupyter.api import (
    CorruptSessionError,
    DeleteRefusedError,
    LarikError,
    SessionLockedError,
    UnknownSessionError,
    UnreadableFileError,
    is_session_id,
    sessions_dir,
)
from larik_jupyter.api import (
    delete_session as delete,
)
from larik_jupyter.api import (
    resolve_session as resolve,
)
from larik_jupyter.approval_wire import ApprovalAnswer, ApprovalPosted, PageApprovals
from larik_jupyter.frontends.server import rooms, views
from larik_jupyter.frontends.server.approvals import (
    PendingApprovals,
    UnknownApprovalError,
    kernels_of,
)
from larik_jupyter.frontends.server.confine import (
    MissingDirectoryError,
    OutsideRootError,
    confine,
    relative_to_root,
)
from larik_jupyter.frontends.server.schema import DeleteRequest, NotebookRequest, NotebookWritten
from larik_jupyter.frontends.server.tokens import DeleteTokens

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
_ID = r"([^/]+)"
_MAX_LIMIT = 1000
_DEFAULT_LIMIT = 200


class BadRequestError(LarikError):
    """A request whose parameters or body cannot be used as given."""


class StaleTokenError(LarikError):
    """A delete confirmation for a session that changed (or was never shown) since."""


# Most specific first: the first matching class decides the status code.
_STATUS: tuple[tuple[type[LarikError], int], ...] = (
    (OutsideRootError, 403),
    (MissingDirectoryError, 404),
    (UnknownSessionError, 404),
    (UnknownApprovalError, 404),
    (StaleTokenError, 409),
    (SessionLockedError, 409),
    (CorruptSessionError, 422),
    (UnreadableFileError, 422),
    (DeleteRefusedError, 422),
    (LarikError, 400),
)


def _json_errors(
    method: Callable[..., Awaitable[None]],
) -> Callable[..., Awaitable[None]]:
    """Answer a LarikError as a JSON error whose message is the error's sentence."""

    @functools.wraps(method)
    async def wrapper(self: _LarikHandler, *args: Any) -> None:
        try:
            await method(self, *args)
        except LarikError as exc:
            status = next(code for cls, code in _STATUS if isinstance(exc, cls))
            raise web.HTTPError(status, str(exc)) from exc

    return wrapper


async def off_loop(work: Callable[[], T]) -> T:
    """Run `work` (anything touching the disk) on a worker thread, so a slow or hostile file
    never stalls the server's event loop (and with it `/api/status` and shutdown)."""
    return await asyncio.to_thread(work)


def _endpoint(method: Callable[..., Awaitable[None]]) -> Callable[..., Any]:
    """Every `/larik/api/` method: logged in, authorized for the `larik` resource, JSON errors."""
    return web.authenticated(authorized(_json_errors(method)))


class _LarikHandler(APIHandler):
    auth_resource = "larik"

    def initialize(self, root_dir: str, tokens: DeleteTokens, approvals: PendingApprovals) -> None:
        self.root_dir = root_dir
        self.tokens = tokens
        self.approvals = approvals

    def cwd(self) -> Path:
        """The working directory the client asks about (`?cwd=`, default the server root)."""
        return confine(self.root_dir, self.get_argument("cwd", ""))

    def session_path(self, session_id: str) -> Path:
        """The transcript of `session_id` among the sessions of the requested directory."""
        if not is_session_id(session_id):
            raise BadRequestError(
                f"{session_id!r} is not a session id; ids look like 20260927-101500-a1b2c3."
            )
        cwd = self.cwd()
        path = resolve(session_id, cwd=cwd)
        if path.parent != sessions_dir(cwd):
            raise UnknownSessionError(
                f"No session {session_id} in this directory; list the sessions to see valid ids."
            )
        return path

    def int_argument(self, name: str, default: int, low: int, high: int) -> int:
        raw = self.get_argument(name, str(default))
        try:
            value = int(raw)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise BadRequestError(
                f"Parameter {name}={raw!r} must be an integer from {low} to {high}."
            )
        return value

    def body_as(self, model: type[M], what: str, usage: str) -> M:
        """The request's JSON body as `model`; the error names the request (`what`) and the
        body it takes (`usage`)."""
        try:
            return model.model_validate_json(self.request.body or b"{}")
        except ValidationError as exc:
            raise BadRequestError(f"The {what} takes a JSON body {usage}.") from exc

    def write_model(self, model: Any) -> None:
        self.finish(model.model_dump_json())

    async def delete_session(self, path: Path) -> None:
        """Remove the session at `path` (validated again by the one delete every front end
        uses) and answer 204 No Content."""
        await off_loop(lambda: delete(path))
        self.set_status(204)
        self.finish()


class SessionsHandler(_LarikHandler):
    """`GET /larik/api/sessions?cwd=`: sessions of a directory with their fork tree."""

    @_endpoint
    async def get(self) -> None:
        self.write_model(await off_loop(lambda: views.session_list(self.root_dir, self.cwd(), self.tokens)))


class SessionHandler(_LarikHandler):
    """`GET`: one page of a transcript (`?offset=&limit=`); `DELETE`: remove the session."""

    @_endpoint
    async def get(self, session_id: str) -> None:
        offset = self.int_argument("offset", 0, 0, 2**31)
        limit = self.int_argument("limit", _DEFAULT_LIMIT, 1, _MAX_LIMIT)
        self.write_model(
            await off_loop(lambda: views.transcript_page(session_id, self.session_path(session_id), offset, limit, self.cwd()))
        )

    @_endpoint
    async def delete(self, session_id: str) -> None:
        await self.delete_session(await off_loop(lambda: self.session_path(session_id)))


class ConfirmedDeleteHandler(_LarikHandler):
    """`POST /larik/api/sessions/<id>/delete` with `{"token": …}` from the listing."""

    @_endpoint
    async def post(self, session_id: str) -> None:
        path = await off_loop(lambda: self.session_path(session_id))
        try:
            request = DeleteRequest.model_validate_json(self.request.body or b"{}")
        except ValidationError as exc:
            raise BadRequestError(
                'The delete request needs a JSON body {"token": "…"} with the token from the session listing.'
            ) from exc
        if not await off_loop(lambda: self.tokens.matches(path, request.token)):
            raise StaleTokenError(
                f"Session {session_id} changed since it was listed, or the token is wrong; refresh and confirm again."
            )
        await self.delete_session(path)


class CheckpointsHandler(_LarikHandler):
    """`GET /larik/api/sessions/<id>/checkpoints`: undoable turns with per-file diffs."""

    @_endpoint
    async def get(self, session_id: str) -> None:
        def answer() -> Any:
            path = self.session_path(session_id)
            return views.checkpoints(session_id, self.cwd(), self.root_dir, path)

        self.write_model(await off_loop(answer))


class ExportHandler(_LarikHandler):
    """`GET /larik/api/sessions/<id>/export`: the Markdown export as a download."""

    @_endpoint
    async def get(self, session_id: str) -> None:
        body = await off_loop(lambda: views.export_bytes(self.session_path(session_id), self.cwd()))
        self.set_header("Content-Disposition", f'attachment; filename="{session_id}.md"')
        self.finish(body, set_content_type="text/markdown; charset=utf-8")


class RoomHandler(_LarikHandler):
    """`GET /larik/api/room?path=<notebook>`: whether a real-time collaboration room holds the
    notebook (`rooms.Room`); the kernel asks before it writes a notebook's file. Without `path`:
    the server's backend alone (the kernel asks when a turn starts)."""

    @_endpoint
    async def get(self) -> None:
        raw = self.get_argument("path", None)
        if raw is None:
            self.finish(msgspec.json.encode(rooms.backend_room(self.serverapp)))
            return
        target = Path(os.path.realpath(os.path.join(self.root_dir, raw)))
        root = Path(os.path.realpath(self.root_dir))
        if not raw or not target.is_relative_to(root):
            raise OutsideRootError(f"The path {raw!r} is outside the server root; give a path inside it.")
        room = await rooms.room_of(self.serverapp, target.relative_to(root).as_posix())
        self.finish(msgspec.json.encode(room))


class ApprovalsHandler(_LarikHandler):
    """`GET ?path=<notebook>`: the approvals the kernels running that notebook wait for (the
    page's cards, under jupyter-server-documents); `POST`: a kernel publishes one it waits for."""

    @_endpoint
    async def get(self) -> None:
        path = self.get_argument("path", "")
        live = rooms.backend_room(self.serverapp).backend == rooms.SERVER_DOCUMENTS
        kernels = kernels_of(await self.session_manager.list_sessions(), path) if live else set()
        self.write_model(PageApprovals(live=live, approvals=self.approvals.of(kernels)))

    @_endpoint
    async def post(self) -> None:
        posted = self.body_as(ApprovalPosted, "approval a kernel publishes", "describing the approval (larik's kernel sends it)")
        self.approvals.publish(posted)
        self.set_status(204)
        self.finish()


class ApprovalHandler(_LarikHandler):
    """One approval: `POST` the page's answer; `GET ?wait=S` the kernel waits up to S seconds
    for it; `DELETE` the kernel withdraws it (its turn ended)."""

    @_endpoint
    async def post(self, approval_id: str) -> None:
        answer = self.body_as(ApprovalAnswer, "answer to an approval", '{"decision": "allow" | "always" | "deny", "message": "…"}')
        self.approvals.answer(approval_id, answer)
        self.set_status(204)
        self.finish()

    @_endpoint
    async def get(self, approval_id: str) -> None:
        seconds = self.int_argument("wait", 0, 0, 60)
        self.write_model(await self.approvals.wait(approval_id, seconds))

    @_endpoint
    async def delete(self, approval_id: str) -> None:
        self.approvals.withdraw(approval_id)
        self.set_status(204)
        self.finish()


class NotebookHandler(_LarikHandler):
    """`POST /larik/api/sessions/<id>/notebook` with `{"at": N}`: the branch as a new notebook
    in the requested directory (`<id>.ipynb`, `<id>-2.ipynb`, …), its path in the answer."""

    @_endpoint
    async def post(self, session_id: str) -> None:
        from larik_jupyter.api import write_notebook

        request = self.body_as(NotebookRequest, "notebook request", '{"at": N} (N a prompt number, or null)')

        def answer() -> NotebookWritten:
            cwd = self.cwd()
            written = write_notebook(self.session_path(session_id), prompt_number=request.at, cwd=cwd, folder=cwd)
            return NotebookWritten(path="/".join(filter(None, (relative_to_root(self.root_dir, cwd), written.name))))

        self.write_model(await off_loop(answer))


def setup_handlers(web_app: Any, root_dir: str) -> None:
    """Register the `/larik/api/` routes on the server's tornado application."""
    base = url_path_join(web_app.settings["base_url"], "larik", "api", "sessions")
    init = {"root_dir": root_dir, "tokens": DeleteTokens(), "approvals": PendingApprovals()}
    api = url_path_join(web_app.settings["base_url"], "larik", "api")
    web_app.add_handlers(
        ".*$",
        [
            (base, SessionsHandler, init),
            (url_path_join(base, _ID), SessionHandler, init),
            (url_path_join(base, _ID, "delete"), ConfirmedDeleteHandler, init),
            (url_path_join(base, _ID, "checkpoints"), CheckpointsHandler, init),
            (url_path_join(base, _ID, "export"), ExportHandler, init),
            (url_path_join(base, _ID, "notebook"), NotebookHandler, init),
            (url_path_join(api, "room"), RoomHandler, init),
            (url_path_join(api, "approvals"), ApprovalsHandler, init),
            (url_path_join(api, "approvals", _ID), ApprovalHandler, init),
        ],
    )
