"""The `/larik/api/` endpoints, driven through a real jupyter_server (pytest-jupyter fixtures)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
import session_helpers
from tornado.httpclient import HTTPClientError

from larik_jupyter.checkpoint.store import CheckpointStore
from larik_jupyter.llm.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, user_text
from larik_jupyter.paths import sessions_dir
from larik_jupyter.session.branch import TreeNode, fork
from larik_jupyter.session.store import Session
from larik_jupyter.textdiff import diff_html
from tests.test_numbers import MARKED, export_of, numbers_session

pytest_plugins = ["pytest_jupyter.jupyter_server"]

API = ("larik", "api", "sessions")


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"larik_jupyter.frontends.server": True}}}


@pytest.fixture
def root(jp_root_dir: Path) -> Path:
    return Path(os.path.realpath(jp_root_dir))


def make_session(cwd: Path, prompts: list[str], *, tool: bool = False) -> Path:
    """A closed session of `cwd` with one prompt/reply turn per prompt."""
    with Session.create(cwd, "scripted", "demo") as session:
        for n, prompt in enumerate(prompts):
            session.append_message(user_text(prompt))
            if tool:
                call = ToolUseBlock(id=f"call{n}", name="read", input={"path": "a.txt"})
                session.append_message(Message(role="assistant", content=[call]))
                result = ToolResultBlock(tool_use_id=f"call{n}", content="hello")
                session.append_message(Message(role="user", content=[result]))
            session.append_message(
                Message(role="assistant", content=[TextBlock(text=f"**done** {n}")])
            )
        return session.path


async def fetch_json(jp_fetch: Any, *parts: str, **kwargs: Any) -> Any:
    response = await jp_fetch(*API, *parts, **kwargs)
    return json.loads(response.body)


async def error_of(jp_fetch: Any, *parts: str, **kwargs: Any) -> tuple[int, str]:
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch(*API, *parts, **kwargs)
    body = json.loads(caught.value.response.body)
    return caught.value.code, body["message"]


async def test_lists_sessions_of_the_server_root_with_fork_tree(jp_fetch: Any, root: Path) -> None:
    parent = make_session(root, ["build the parser", "add tests"])
    child = fork(parent, 2)
    (root / "sub").mkdir()
    make_session(root / "sub", ["elsewhere"])

    listing = await fetch_json(jp_fetch)

    assert listing["cwd"] == ""
    by_id = {s["id"]: s for s in listing["sessions"]}
    assert set(by_id) == {parent.stem, child.stem}
    assert by_id[parent.stem]["first_prompt"] == "build the parser"
    assert by_id[parent.stem]["message_count"] == 4
    assert by_id[child.stem]["fork_of"] == parent.stem
    assert by_id[child.stem]["fork_at"] == 2
    assert by_id[child.stem]["fork_prompt"] == 1 and by_id[parent.stem]["fork_prompt"] is None
    [tree] = listing["tree"]
    assert tree["id"] == parent.stem
    assert [p["first_line"] for p in tree["prompts"]] == ["build the parser", "add tests"]
    assert [c["id"] for c in tree["children"]] == [child.stem]
    assert (tree["children"][0]["fork_prompt"], tree["children"][0]["parent_deleted"]) == (1, False)
    assert "path" not in tree
    # Each node is the one tree-node model (the sidebar's `TreeNode` type is generated from it).
    fields = set(TreeNode.model_fields) - {"path"}
    assert set(tree) == set(tree["children"][0]) == fields >= {"fork_at", "interrupted", "compactions", "error"}

    sub = await fetch_json(jp_fetch, params={"cwd": "sub"})
    assert sub["cwd"] == "sub"
    assert [s["first_prompt"] for s in sub["sessions"]] == ["elsewhere"]


async def test_transcript_is_paged(jp_fetch: Any, root: Path) -> None:
    path = make_session(root, [f"prompt {n}" for n in range(60)], tool=True)  # 241 entries

    first = await fetch_json(jp_fetch, path.stem, params={"limit": "100"})
    last = await fetch_json(jp_fetch, path.stem, params={"offset": "200", "limit": "100"})
    default = await fetch_json(jp_fetch, path.stem)

    assert first["total"] == last["total"] == 241
    assert len(first["entries"]) == 100
    assert first["entries"][0]["type"] == "meta"
    assert first["entries"][1]["message"]["content"][0]["text"] == "prompt 0"
    assert len(last["entries"]) == 41
    assert last["entries"][-1]["message"]["content"][0]["text"] == "**done** 59"
    assert len(default["entries"]) == 200
    beyond = await fetch_json(jp_fetch, path.stem, params={"offset": "5000"})
    assert beyond["entries"] == [] and beyond["total"] == 241


async def test_pages_list_the_numbers_nothing_the_model_saw_supports(
    jp_fetch: Any, root: Path, tmp_path: Path
) -> None:
    # The session of tests/test_numbers.py: numbers from the prompt, the code and an earlier
    # turn's output are found, one made-up number a turn is marked, and after `/clear` the
    # earlier output no longer supports the third turn's 1762.1; the export marks the same.
    path = numbers_session(root, tmp_path)
    # The emoji before the numbers makes Python's and JavaScript's string indexes differ.
    text = path.read_text().replace("The mean is 1762.1", "🙂 The mean is 1762.1")
    path.write_text(text)

    whole = await fetch_json(jp_fetch, path.stem)

    assert [[n["text"] for n in u["numbers"]] for u in whole["unfound"]] == MARKED
    first = whole["unfound"][0]
    block = whole["entries"][first["entry"]]["message"]["content"][first["block"]]["text"]
    assert block.startswith("🙂")
    (number,) = first["numbers"]
    utf16 = block.encode("utf-16-le")
    assert utf16[2 * number["start"]: 2 * number["end"]].decode("utf-16-le") == "4,321"
    line = "1 number not found in this turn's outputs"
    assert whole["unfound_counts"] == [
        {"entry": u["entry"], "count": 1, "text": line, "numbers": numbers}
        for u, numbers in zip(whole["unfound"], MARKED, strict=True)
    ]
    exported = export_of(path)
    assert re.findall(r'class="larik-unfound"[^>]*>([^<]*)<', exported) == [n for m in MARKED for n in m]

    # Pages of one entry trace each turn whole, with the context before it, so together they
    # say the same.
    pages = [
        await fetch_json(jp_fetch, path.stem, params={"offset": str(i), "limit": "1"})
        for i in range(whole["total"])
    ]
    assert [u for p in pages for u in p["unfound"]] == whole["unfound"]
    assert [c for p in pages for c in p["unfound_counts"]] == whole["unfound_counts"]


async def test_bad_paging_parameters_are_refused(jp_fetch: Any, root: Path) -> None:
    path = make_session(root, ["hi"])
    for params in [{"limit": "0"}, {"limit": "1001"}, {"offset": "-1"}, {"limit": "ten"}]:
        code, message = await error_of(jp_fetch, path.stem, params=params)
        assert code == 400
        assert next(iter(params)) in message


ENDPOINTS = [
    ("GET", ()),
    ("GET", ("{id}",)),
    ("GET", ("{id}", "checkpoints")),
    ("GET", ("{id}", "export")),
    ("DELETE", ("{id}",)),
    ("POST", ("{id}", "delete")),
]


def _call(
    method: str, parts: tuple[str, ...], sid: str, **extra: Any
) -> tuple[list[str], dict[str, Any]]:
    kwargs: dict[str, Any] = {"method": method, **extra}
    if method == "POST":
        kwargs["body"] = json.dumps({"token": "x"})
    return [p.format(id=sid) for p in parts], kwargs


@pytest.mark.parametrize(("method", "parts"), ENDPOINTS)
async def test_unauthenticated_requests_are_refused(
    jp_fetch: Any, root: Path, method: str, parts: tuple[str, ...]
) -> None:
    path = make_session(root, ["secret prompt"])
    args, kwargs = _call(method, parts, path.stem, headers={"Authorization": "token wrong"})
    code, _ = await error_of(jp_fetch, *args, **kwargs)
    assert code == 403
    assert path.is_file()


@pytest.mark.parametrize(("method", "parts"), ENDPOINTS)
async def test_paths_outside_the_root_are_refused(
    jp_fetch: Any, root: Path, method: str, parts: tuple[str, ...]
) -> None:
    path = make_session(root.parent, ["outside"])
    (root / "sub").mkdir()
    for cwd in ["..", "../..", "/etc", "sub/../../x", str(root.parent)]:
        args, kwargs = _call(method, parts, path.stem, params={"cwd": cwd})
        code, message = await error_of(jp_fetch, *args, **kwargs)
        assert code == 403, cwd
        assert "server root" in message
    assert path.is_file()


async def test_a_symlink_out_of_the_root_is_refused(
    jp_fetch: Any, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    make_session(outside, ["private"])
    (root / "link").symlink_to(outside)
    code, message = await error_of(jp_fetch, params={"cwd": "link"})
    assert code == 403
    assert "'link'" in message


async def test_missing_directory_is_not_found(jp_fetch: Any, root: Path) -> None:
    code, message = await error_of(jp_fetch, params={"cwd": "nope"})
    assert code == 404
    assert "'nope'" in message


async def test_bad_session_ids_are_refused(jp_fetch: Any, root: Path) -> None:
    make_session(root, ["hi"])
    for bad in ["nope", "20260101-1200-abc", "20260101-120000-ABCDEF", "..%2F..%2Fetc%2Fpasswd"]:
        for suffix in ((), ("export",), ("checkpoints",)):
            code, message = await error_of(jp_fetch, bad, *suffix)
            assert code == 400, bad
            assert "not a session id" in message


async def test_unknown_id_and_other_directories_sessions_are_not_found(
    jp_fetch: Any, root: Path
) -> None:
    code, message = await error_of(jp_fetch, "20200101-000000-abcdef")
    assert (code, "20200101-000000-abcdef" in message) == (404, True)
    (root / "sub").mkdir()
    elsewhere = make_session(root / "sub", ["in sub"])
    code, _ = await error_of(jp_fetch, elsewhere.stem)  # asked in the root's folder
    assert code == 404
    page = await fetch_json(jp_fetch, elsewhere.stem, params={"cwd": "sub"})
    assert page["total"] == 3


async def test_corrupt_session_is_a_clear_error(jp_fetch: Any, root: Path) -> None:
    path = make_session(root, ["one", "two"])
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b"{broken\n" + b"".join(lines[2:]))
    code, message = await error_of(jp_fetch, path.stem)
    assert code == 422
    assert f"{path.name}:2" in message
    listing = await fetch_json(jp_fetch)
    assert "2" in listing["sessions"][0]["error"]


async def test_export_matches_the_cli_byte_for_byte(jp_fetch: Any, root: Path) -> None:
    path = make_session(root, ["explain `x` ünïcode", "more"], tool=True)
    response = await jp_fetch(*API, path.stem, "export")

    subprocess.run(
        [sys.executable, "-m", "larik_jupyter", "export", path.stem, "cli.md"], cwd=root, check=True
    )
    assert response.body == (root / "cli.md").read_bytes()
    assert response.headers["Content-Disposition"] == f'attachment; filename="{path.stem}.md"'
    assert response.headers["Content-Type"].startswith("text/markdown")


async def test_checkpoint_turns_with_diffs_newest_first(jp_fetch: Any, root: Path) -> None:
    path = make_session(root, ["edit a", "edit a again and add b"])
    target = root / "a.txt"
    target.write_text("one\ntwo\n")
    store = CheckpointStore(path.stem, root)
    store.begin_turn()
    store.capture(target)
    target.write_text("one\nTWO\n")
    store.begin_turn()
    store.capture(target)
    store.capture(root / "b.txt")
    target.write_text("one\nTWO\nthree\n")
    (root / "b.txt").write_text("new\n")

    result = await fetch_json(jp_fetch, path.stem, "checkpoints")

    assert [t["turn"] for t in result["turns"]] == [2, 1]
    newest, oldest = result["turns"]
    files = {f["path"]: f for f in newest["files"]}
    assert "+three" in files["a.txt"]["diff"] and "-two" not in files["a.txt"]["diff"]
    # The one diff rendering every front end shows, escaped and coloured by the server.
    assert files["a.txt"]["diff_html"] == diff_html(files["a.txt"]["diff"])
    assert '<span class="larik-diff-add" style="color: var(--jp-success-color1, #2e7d32)">+three</span>' in files["a.txt"]["diff_html"]
    assert files["b.txt"]["existed"] is False
    assert "--- /dev/null" in files["b.txt"]["diff"] and "+new" in files["b.txt"]["diff"]
    [only] = oldest["files"]
    assert "-two" in only["diff"] and "+TWO" in only["diff"] and "three" not in only["diff"]


async def test_delete_needs_the_listed_token(jp_fetch: Any, root: Path) -> None:
    path = make_session(root, ["delete me"])
    [listed] = (await fetch_json(jp_fetch))["sessions"]

    code, message = await error_of(
        jp_fetch, path.stem, "delete", method="POST", body=json.dumps({"token": "0" * 32})
    )
    assert code == 409 and path.stem in message
    code, message = await error_of(jp_fetch, path.stem, "delete", method="POST", body="{}")
    assert code == 400 and "token" in message
    with open(path, "ab") as f:  # the session moved on after it was listed
        f.write(b"")
    os.utime(path, ns=(0, 0))
    code, _ = await error_of(
        jp_fetch,
        path.stem,
        "delete",
        method="POST",
        body=json.dumps({"token": listed["delete_token"]}),
    )
    assert code == 409
    assert path.is_file()

    [fresh] = (await fetch_json(jp_fetch))["sessions"]
    response = await jp_fetch(
        *API, path.stem, "delete", method="POST", body=json.dumps({"token": fresh["delete_token"]})
    )
    assert response.code == 204
    assert not path.exists()
    assert (await fetch_json(jp_fetch))["sessions"] == []


async def test_explicit_delete_removes_the_session_unless_it_is_open(
    jp_fetch: Any, root: Path
) -> None:
    done = make_session(root, ["finished"])
    response = await jp_fetch(*API, done.stem, method="DELETE")
    assert response.code == 204
    assert not done.exists()

    with Session.create(root, "scripted", "demo") as live:
        live.append_message(user_text("still running"))
        code, message = await error_of(jp_fetch, live.id, method="DELETE")
        assert code == 409 and live.id in message
        assert live.path.is_file()


async def test_reading_never_writes_session_files(jp_fetch: Any, root: Path) -> None:
    path = make_session(root, ["look only"], tool=True)
    with Session.open(path) as live:  # a kernel holds the writer lock meanwhile
        before = {
            p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sessions_dir(root).iterdir()
        }
        await fetch_json(jp_fetch)
        await fetch_json(jp_fetch, live.id)
        await fetch_json(jp_fetch, live.id, "checkpoints")
        await jp_fetch(*API, live.id, "export")
        after = {
            p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sessions_dir(root).iterdir()
        }
    assert after == before
    assert not (root / ".larik").exists()


# -- "Open as notebook" (issue 33) ---------------------------------------------------------


def python_session(cwd: Path) -> Path:
    return session_helpers.python_session(cwd, [("x = 2\nprint(x)", "2"), ("print(x * 21)", "42")])


async def test_writes_the_branch_next_to_the_listing_and_answers_its_path(jp_fetch: Any, root: Path) -> None:
    (root / "sub").mkdir()
    path = python_session(root / "sub")
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
    path = python_session(root)
    for body, words in [('{"at": 9}', "has 2 prompts"), ('{"path": "/etc/x"}', "JSON body")]:
        with pytest.raises(HTTPClientError) as caught:
            await jp_fetch(*API, path.stem, "notebook", method="POST", body=body)
        assert caught.value.code == 400
        assert words in json.loads(caught.value.response.body)["message"]
    assert not list(root.glob("*.ipynb"))


async def test_pages_summarize_tool_calls_with_cells_by_position(jp_fetch: Any, root: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Sales", id="title"), nbformat.v4.new_code_cell("x = 1", id="calc")]
    nbformat.write(nb, root / "work.ipynb")
    with Session.create(root, "scripted", "demo") as session:
        session.append_message(user_text("change calc"))
        calls = [
            ToolUseBlock(id="e", name="notebook_edit", input={"path": "work.ipynb", "cell_id": "calc", "new_source": "x = 2"}),
            ToolUseBlock(id="p", name="python", input={"code": "import pandas as pd\npd.read_csv('a.csv')"}),
            ToolUseBlock(id="r", name="notebook_run", input={"path": "../outside.ipynb", "cell_id": "calc"}),
        ]
        session.append_message(Message(role="assistant", content=calls))
    page = await fetch_json(jp_fetch, session.path.stem)
    blocks = page["entries"][-1]["message"]["content"]
    assert [b["summary"] for b in blocks] == [
        'notebook_edit: replace cell 2 of work.ipynb ("x = 2")',
        "python: import pandas as pd…",
        "notebook_run: run cell calc of outside.ipynb",  # a file outside the listing is not read
    ]
    assert [b.get("hint") for b in blocks] == ["cell id calc", None, "cell id calc"]


async def test_pages_send_a_result_that_is_a_diff_as_the_one_diff_html(jp_fetch: Any, root: Path) -> None:
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = '<2>'\n"
    with Session.create(root, "scripted", "demo") as session:
        session.append_message(user_text("edit"))
        session.append_message(Message(role="assistant", content=[
            ToolUseBlock(id="e", name="edit", input={"path": "x.py"}),
            ToolUseBlock(id="r", name="read", input={"path": "x.py"}),
        ]))
        session.append_message(Message(role="user", content=[
            ToolResultBlock(tool_use_id="e", content=diff),
            ToolResultBlock(tool_use_id="r", content="     1\ta = 1 -- not @@ a diff"),
        ]))
    page = await fetch_json(jp_fetch, session.path.stem)
    edited, read = page["entries"][-1]["message"]["content"]
    assert edited["diff_html"] == diff_html(diff) and "+a = &#x27;&lt;2&gt;&#x27;</span>" in edited["diff_html"]
    assert "diff_html" not in read


@pytest.mark.parametrize(
    ("jp_server_config", "backend"),
    [
        ({"ServerApp": {"jpserver_extensions": {"larik_jupyter.frontends.server": True}}}, None),
        (
            {"ServerApp": {"jpserver_extensions": {"larik_jupyter.frontends.server": True, "jupyter_server_ydoc": True}}},
            "jupyter-collaboration",
        ),
    ],
)
async def test_the_room_endpoint_without_a_path_names_the_servers_collaboration_backend(
    jp_fetch: Any, root: Path, backend: str | None
) -> None:
    """What a turn asks when it starts (`server_backend`): the backend alone, no notebook; a
    server without one (the made-false twin: with jupyter-collaboration's extension) says none."""
    pytest.importorskip("jupyter_server_ydoc", reason="needs jupyter-collaboration (the test extra)")
    response = await jp_fetch("larik", "api", "room")
    assert json.loads(response.body) == {"backend": backend, "open": False}
