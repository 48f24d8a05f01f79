"""Approvals answered in the page through larik's server extension (jupyter-server-documents):
the kernel's approver publishes the ask to a real jupyter_server and waits; an authenticated
answer ends the wait, an unauthenticated one is refused, and a turn stopped mid-wait withdraws
the ask."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from larik_jupyter.agent.permissions import PermissionAnswer, PermissionRequest
from larik_jupyter.frontends.notebook.page_approvals import PageApprover
from larik_jupyter.server_link import JupyterServer

pytest_plugins = ["pytest_jupyter.jupyter_server"]

REQUEST = PermissionRequest(
    id="toolu_1", tool="notebook_edit", input={}, summary="notebook_edit: replace cell 1",
    detail="--- a/n.ipynb\n+++ b/n.ipynb\n@@ -1 +1 @@\n-a\n+b", question="Replace the source of cell 1?",
)


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"larik_jupyter.frontends.server": True}}}


@pytest.fixture
def approver(jp_serverapp: Any, jp_http_port: int, jp_base_url: str) -> PageApprover:
    """The kernel's approver, reaching the test server as a kernel reaches its own."""
    server = JupyterServer(url=f"http://localhost:{jp_http_port}{jp_base_url}", root_dir="", token=jp_serverapp.identity_provider.token)
    return PageApprover(server, kernel="k1")


async def state(jp_fetch: Any) -> dict[str, Any]:
    response = await jp_fetch("larik", "api", "approvals", REQUEST.id, params={"wait": "0"})
    return dict(json.loads(response.body))


async def published(jp_fetch: Any) -> None:
    for _ in range(400):  # the approver posts from a worker thread
        if (await state(jp_fetch))["pending"]:
            return
        await asyncio.sleep(0.025)
    raise AssertionError("the approver never published its ask")


async def answer(jp_fetch: Any, body: dict[str, str], **kwargs: Any) -> Any:
    return await jp_fetch("larik", "api", "approvals", REQUEST.id, method="POST", body=json.dumps(body), **kwargs)


async def test_the_pages_answer_ends_the_kernels_wait(jp_fetch: Any, approver: PageApprover) -> None:
    waiting = asyncio.create_task(approver(REQUEST))
    await published(jp_fetch)
    await answer(jp_fetch, {"decision": "deny", "message": "not that one"})
    assert await asyncio.wait_for(waiting, 30) == PermissionAnswer("deny", "not that one")
    assert await state(jp_fetch) == {"pending": False, "answer": None}  # answered asks go


async def test_only_an_authenticated_request_answers(jp_fetch: Any, approver: PageApprover) -> None:
    waiting = asyncio.create_task(approver(REQUEST))
    await published(jp_fetch)
    with pytest.raises(HTTPClientError) as refused:
        await answer(jp_fetch, {"decision": "allow"}, headers={"Authorization": "token wrong"})
    assert refused.value.code == 403
    assert (await state(jp_fetch))["pending"] and not waiting.done()
    await answer(jp_fetch, {"decision": "allow"})
    assert await asyncio.wait_for(waiting, 30) == PermissionAnswer("allow")
    with pytest.raises(HTTPClientError) as again:  # the first answer counts
        await answer(jp_fetch, {"decision": "deny"})
    assert again.value.code == 404 and "No approval toolu_1 is waiting" in json.loads(again.value.response.body)["message"]


async def test_a_stopped_turn_withdraws_its_ask(jp_fetch: Any, approver: PageApprover) -> None:
    waiting = asyncio.create_task(approver(REQUEST))
    await published(jp_fetch)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert await state(jp_fetch) == {"pending": False, "answer": None}


async def test_without_server_documents_the_page_is_told_to_stop_asking(jp_fetch: Any) -> None:
    response = await jp_fetch("larik", "api", "approvals", params={"path": "n.ipynb"})
    assert json.loads(response.body) == {"live": False, "approvals": []}
