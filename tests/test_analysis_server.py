"""`POST /larik/api/sessions/<id>/notebook`, the sidebar's "Open as notebook", through a real
jupyter_server: the branch as a new notebook in the listed directory, never over a file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest
from tornado.httpclient import HTTPClientError

from larik_jupyter.llm.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, user_text
from larik_jupyter.session.store import Session

pytest_plugins = ["pytest_jupyter.jupyter_server"]
API = ("larik", "api", "sessions")


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"larik_jupyter.server": True}}}


@pytest.fixture
def root(jp_root_dir: Path) -> Path:
    return Path(os.path.realpath(jp_root_dir))


def analysis(cwd: Path) -> Path:
    """Two prompts, each running one python call."""
    with Session.create(cwd, "scripted", "demo") as session:
        for n, code in enumerate(["x = 2\nprint(x)", "print(x * 21)"], 1):
            session.append_message(user_text(f"step {n}"))
            call = ToolUseBlock(id=f"toolu_{n}", name="python", input={"code": code})
            session.append_message(Message(role="assistant", content=[call]))
            out = "2" if n == 1 else "42"
            session.append_message(Message(role="user", content=[ToolResultBlock(tool_use_id=call.id, content=out)]))
            session.append_message(Message(role="assistant", content=[TextBlock(text=f"done {n}")]))
        return session.path


async def test_writes_the_branch_next_to_the_listing_and_answers_its_path(jp_fetch: Any, root: Path) -> None:
    (root / "sub").mkdir()
    path = analysis(root / "sub")
    response = await jp_fetch(*API, path.stem, "notebook", method="POST", body=json.dumps({"at": 1}),
                              params={"cwd": "sub"})
    assert json.loads(response.body) == {"path": f"sub/{path.stem}.ipynb"}
    nb = nbformat.read(root / "sub" / f"{path.stem}.ipynb", as_version=4)
    assert [c.source for c in nb.cells if c.cell_type == "code"] == ["x = 2\nprint(x)"]
    again = await jp_fetch(*API, path.stem, "notebook", method="POST", body="{}", params={"cwd": "sub"})
    assert json.loads(again.body) == {"path": f"sub/{path.stem}-2.ipynb"}
    whole = nbformat.read(root / "sub" / f"{path.stem}-2.ipynb", as_version=4)
    assert [c.source for c in whole.cells if c.cell_type == "code"] == ["x = 2\nprint(x)", "print(x * 21)"]


async def test_refuses_a_bad_prompt_number_and_a_bad_body(jp_fetch: Any, root: Path) -> None:
    path = analysis(root)
    for body, status, words in [('{"at": 9}', 400, "has 2 prompts"), ('{"path": "/etc/x"}', 400, "JSON body")]:
        with pytest.raises(HTTPClientError) as caught:
            await jp_fetch(*API, path.stem, "notebook", method="POST", body=body)
        assert caught.value.code == status
        assert words in json.loads(caught.value.response.body)["message"]
    assert not list(root.glob("*.ipynb"))
