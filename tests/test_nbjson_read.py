"""Every notebook file the package reads goes through one reader (`nbjson.read`) that takes it
as hostile: a FIFO, a directory or a symlink is refused without blocking, bytes that are not
UTF-8 and JSON nested past `MAX_DEPTH` get one sentence; each reader of notebooks (the tools,
undo in a closed notebook, summaries' cell numbers, a branch's steps) tells or skips it alike."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from larik_jupyter.checkpoint.cells import CellsNotRestored, restore_in_file, sources_in_file
from larik_jupyter.checkpoint.manifest import CellRecord, NotebookRecord
from larik_jupyter.nbjson.read import (
    MAX_DEPTH,
    NotebookUnreadable,
    cell_list,
    parse_notebook,
    read_notebook,
)
from larik_jupyter.session.call_summary import positions_in_files
from tests.agent_helpers import call, make_env

GOOD = {"cells": [{"cell_type": "code", "id": "a", "metadata": {}, "outputs": [], "source": "x = 1",
                   "execution_count": None}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def nested(depth: int) -> str:
    """A notebook whose first cell's metadata nests lists so the whole is `depth` deep."""
    inner = "[" * (depth - 4) + "]" * (depth - 4)
    return json.dumps(GOOD).replace('"metadata": {}', f'"metadata": {{"deep": {inner}}}', 1)


def in_time(work: Callable[[], Any], seconds: float = 10) -> Any:
    """`work()`'s value (or what it raised), failing when it does not end in time (a read
    blocked on a FIFO)."""
    found: list[Any] = []

    def run() -> None:
        try:
            found.append(("value", work()))
        except Exception as exc:
            found.append(("raised", exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert found, "blocked"
    how, value = found[0]
    if how == "raised":
        raise value
    return value


def test_a_regular_notebook_reads_with_its_bom_text_and_cells(tmp_path: Path) -> None:
    (tmp_path / "nb.ipynb").write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD).encode())
    read = read_notebook(tmp_path / "nb.ipynb", "nb.ipynb")
    assert read.bom == "\ufeff" and read.text == json.dumps(GOOD) and cell_list(read.data) == GOOD["cells"]
    assert cell_list([1, 2]) is None and cell_list({"cells": "x"}) is None


def test_the_depth_limit_is_the_readers_not_the_stacks() -> None:
    assert parse_notebook(nested(MAX_DEPTH).encode(), "ok.ipynb").data["cells"][0]["id"] == "a"
    for depth in (MAX_DEPTH + 1, 100_000):  # just past the limit, and past the parser's own
        with pytest.raises(NotebookUnreadable) as exc:
            parse_notebook(nested(depth).encode(), "deep.ipynb")
        assert str(exc.value) == f"deep.ipynb nests its JSON deeper than {MAX_DEPTH} levels, which no notebook does"


@pytest.mark.parametrize(("make", "said"), [
    (lambda p: os.mkfifo(p), "nb.ipynb is a FIFO, not a regular file"),
    (lambda p: p.mkdir(), "nb.ipynb is a directory, not a regular file"),
    (lambda p: p.write_bytes(b'{"cells": ["\xff"]}'), "nb.ipynb is not UTF-8 text (invalid start byte at byte 12)"),
    (lambda p: p.write_text('{"cells": ['), "nb.ipynb does not parse as a notebook (Expecting value: line 1 column 12 (char 11))"),
])
def test_what_is_not_a_notebook_file_is_one_sentence_and_never_blocks(
    tmp_path: Path, make: Callable[[Path], None], said: str
) -> None:
    make(tmp_path / "nb.ipynb")
    with pytest.raises(NotebookUnreadable) as exc:
        in_time(lambda: read_notebook(tmp_path / "nb.ipynb", "nb.ipynb"))
    assert str(exc.value) == said


def test_a_symlink_is_not_followed_by_the_reader(tmp_path: Path) -> None:
    (tmp_path / "real.ipynb").write_text(json.dumps(GOOD))
    (tmp_path / "nb.ipynb").symlink_to(tmp_path / "real.ipynb")
    with pytest.raises(NotebookUnreadable, match="nb.ipynb is a symbolic link, not a regular file"):
        read_notebook(tmp_path / "nb.ipynb", "nb.ipynb")


def test_each_reader_of_notebooks_refuses_alike(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.ipynb")
    (tmp_path / "deep.ipynb").write_text(nested(MAX_DEPTH + 1))
    (tmp_path / "latin.ipynb").write_bytes(json.dumps(GOOD).replace("x = 1", "x = 'é'").encode("latin-1"))
    (tmp_path / "ok.ipynb").write_text(json.dumps(GOOD))
    names = ("fifo.ipynb", "deep.ipynb", "latin.ipynb", "ok.ipynb")
    # The notebook tools: one sentence each, the file left as it was.
    env = make_env(tmp_path)
    results = in_time(lambda: [call(env, "notebook_read", path=name) for name in names])
    assert [r.content for r in results[:3]] == [
        "fifo.ipynb is a FIFO, not a regular file; it was left unchanged.",
        f"deep.ipynb nests its JSON deeper than {MAX_DEPTH} levels, which no notebook does; it was left unchanged.",
        "latin.ipynb is not UTF-8 text (invalid continuation byte at byte 91); it was left unchanged.",
    ]
    assert not results[3].is_error
    # Summaries' cell numbers: none from a notebook that cannot be read.
    position = positions_in_files(tmp_path)
    assert in_time(lambda: [position(name, "a") for name in names]) == [None, None, None, 0]
    # Undo in a closed notebook: cannot tell what changed (None), and says why it restored nothing.
    record = NotebookRecord(path="deep.ipynb", cells=[CellRecord(id="a", existed=True, position=0, cell=GOOD["cells"][0])])
    assert sources_in_file(tmp_path, record) is None
    assert sources_in_file(tmp_path, record.model_copy(update={"path": "ok.ipynb"})) == {"a": "x = 1"}
    for name, why in (("deep.ipynb", f"nests its JSON deeper than {MAX_DEPTH} levels"), ("latin.ipynb", "is not UTF-8 text")):
        before = (tmp_path / name).read_bytes()
        with pytest.raises(CellsNotRestored, match=f"its cells could not be restored in the file: it {why}"):
            restore_in_file(tmp_path, record.model_copy(update={"path": name}))
        assert (tmp_path / name).read_bytes() == before
