"""Transcript pages from the offset index: the same entries as a full read, kept current."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from larik_jupyter.errors import LarikError
from larik_jupyter.session.corrupt import CorruptSessionError
from larik_jupyter.session.page_index import page_entries
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.store import Session
from tests.session_helpers import add_turn, make_session


def page(path: Path, offset: int, limit: int) -> tuple[int, list[dict[str, object]]]:
    """A page as the server sends it (entries as stored)."""
    total, entries = page_entries(path, offset, limit)
    return total, [e.to_json() for e in entries]


def full(path: Path) -> list[dict[str, object]]:
    return [e.to_json() for e in load_entries(path).entries]


def test_every_page_matches_the_full_read(project: Path) -> None:
    path = make_session(project, prompts=20)
    everything = full(path)
    for offset, limit in [(0, 1), (0, 7), (3, 10), (len(everything) - 2, 50), (len(everything), 5)]:
        total, entries = page(path, offset, limit)
        assert total == len(everything)
        assert entries == everything[offset : offset + limit]


def test_appends_extend_the_index(project: Path) -> None:
    path = make_session(project, prompts=2)
    total, _ = page(path, 0, 1)
    with Session.open(path) as session:
        add_turn(session, "a later prompt", 9)
    grown, tail = page(path, total, 100)
    assert grown == len(full(path)) > total
    assert tail == full(path)[total:]
    assert any("a later prompt" in str(e) for e in tail)


def test_a_torn_last_line_is_left_out_until_it_is_complete(project: Path) -> None:
    path = make_session(project, prompts=1)
    total, _ = page(path, 0, 1)
    line = path.read_bytes().splitlines(keepends=True)[-1]
    with path.open("ab") as f:
        f.write(line[:10])  # a writer caught mid-line
    assert page(path, 0, 1000)[0] == total


def test_damage_in_an_append_is_named_by_line(project: Path) -> None:
    path = make_session(project, prompts=1)
    total, _ = page(path, 0, 1)
    with path.open("ab") as f:
        f.write(b'{"not": "an entry"}\n')
    with pytest.raises(CorruptSessionError) as err:
        page(path, 0, 1)
    assert f":{total + 1}:" in str(err.value)


def test_a_replaced_file_is_indexed_again(project: Path) -> None:
    path = make_session(project, prompts=3)
    page(path, 0, 1)
    other = make_session(project, prompts=1)
    os.replace(other, path)
    total, entries = page(path, 0, 1000)
    assert total == len(full(path)) and entries == full(path)


def test_a_symlink_or_fifo_is_refused(project: Path, tmp_path: Path) -> None:
    path = make_session(project, prompts=1)
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    with pytest.raises(LarikError, match="symbolic link"):
        page(link, 0, 1)
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(LarikError, match="not a regular file"):
        page(fifo, 0, 1)
