"""The REST API under hostile entries in a sessions folder (a FIFO, a directory, a link, empty
and torn files) and hostile ids: listings keep answering, reads and deletes refuse with one
sentence, the server stays responsive, and the data directory is never changed."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from session_helpers import tree_state
from test_server import API, error_of, fetch_json, make_session

from larik_jupyter import paths

# test_server also lends its fixtures (the server config and the root folder).
pytest_plugins = ["pytest_jupyter.jupyter_server", "test_server"]


BAD = {
    "fifo": "20260101-000000-aaaaaa",
    "directory": "20260101-000000-bbbbbb",
    "link": "20260101-000000-cccccc",
    "empty": "20260101-000000-dddddd",
    "torn": "20260101-000000-eeeeee",
}


def hostile_folder(root: Path) -> tuple[Path, Path]:
    """The root's sessions folder with one good session and one entry of each bad kind; the
    link points at a session of another folder."""
    good = make_session(root, ["the good one"])
    (root / "sub").mkdir()
    other = make_session(root / "sub", ["another folder"])
    folder = paths.sessions_dir(root)
    os.mkfifo(folder / f"{BAD['fifo']}.jsonl")
    (folder / f"{BAD['directory']}.jsonl").mkdir()
    (folder / f"{BAD['link']}.jsonl").symlink_to(other)
    (folder / f"{BAD['empty']}.jsonl").write_bytes(b"")
    (folder / f"{BAD['torn']}.jsonl").write_bytes(b'{"id": "x", "type": "me')
    return good, other


async def test_a_fifo_in_the_sessions_folder_blocks_neither_listing_nor_status(
    jp_fetch: Any, root: Path
) -> None:
    good, _ = hostile_folder(root)
    before = tree_state(paths.data_dir())

    listing, status = await asyncio.wait_for(
        asyncio.gather(fetch_json(jp_fetch), jp_fetch("api", "status")), timeout=5
    )

    assert status.code == 200
    by_id = {s["id"]: s for s in listing["sessions"]}
    assert by_id[good.stem]["error"] is None and by_id[good.stem]["first_prompt"] == "the good one"
    assert "a FIFO, not a regular file" in by_id[BAD["fifo"]]["error"]
    assert "a directory, not a regular file" in by_id[BAD["directory"]]["error"]
    assert "a symbolic link" in by_id[BAD["link"]]["error"]
    assert "no meta entry: the file is empty" in by_id[BAD["empty"]]["error"]
    assert "no meta entry: the file holds only a torn line" in by_id[BAD["torn"]]["error"]
    tree = {node["id"]: node for node in listing["tree"]}
    assert tree[good.stem]["prompts"][0]["first_line"] == "the good one"
    assert "FIFO" in tree[BAD["fifo"]]["error"]
    assert tree_state(paths.data_dir()) == before


@pytest.mark.parametrize("kind", list(BAD))
async def test_bad_entries_are_refused_by_every_endpoint_and_never_deleted(
    jp_fetch: Any, root: Path, kind: str
) -> None:
    hostile_folder(root)
    sid = BAD[kind]
    [listed] = [s for s in (await fetch_json(jp_fetch))["sessions"] if s["id"] == sid]
    before = tree_state(paths.data_dir())
    for parts, kwargs in [
        ((sid,), {}),
        ((sid, "export"), {}),
        ((sid,), {"method": "DELETE"}),
        ((sid, "delete"), {"method": "POST", "body": json.dumps({"token": listed["delete_token"]})}),
    ]:
        code, message = await asyncio.wait_for(error_of(jp_fetch, *parts, **kwargs), timeout=60)
        assert code == 422, (parts, message)
        assert sid in message and "\n" not in message
    assert tree_state(paths.data_dir()) == before


async def test_hostile_ids_are_refused_and_delete_nothing(jp_fetch: Any, root: Path) -> None:
    good, _ = hostile_folder(root)
    before = tree_state(paths.data_dir())
    for bad in [f"{good.stem}%0A", f"{good.stem}%0Ax", "..", "...", ".%2E", "..%2F..", "%2E%2E%2Fsessions", "%00"]:
        for kwargs in ({}, {"method": "DELETE"}):
            code, message = await error_of(jp_fetch, bad, **kwargs)
            assert code in (400, 404), bad
            assert "not a session id" in message or "No session" in message
    assert tree_state(paths.data_dir()) == before
    response = await jp_fetch(*API, good.stem, method="DELETE")  # the good one still can go
    assert response.code == 204 and not good.exists()
