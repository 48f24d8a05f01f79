"""Property: whatever JSON sits in a `.ipynb` and whatever text a model sends as tool input
(lone surrogates included), every notebook_read / notebook_edit call through a real turn
returns a result, the file changes only when an edit succeeded (and then stays a valid
notebook), and the session file stays valid."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from larik_jupyter import Agent
from larik_jupyter.session.reader import load_entries
from larik_jupyter.tools import default_tools
from tests.agent_helpers import done, make_env, scripted, tool


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`good` about nine times in ten, else `bad`."""
    return st.sampled_from([True] * 9 + [False]).flatmap(lambda ok: good if ok else bad)


# Any code point, surrogates too (hypothesis leaves them out unless told).
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=12)
JSON_SCALARS = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | ANY_TEXT
)
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=12,
)
SOURCE = ANY_TEXT | st.lists(ANY_TEXT, max_size=3)
CELL = st.fixed_dictionaries(
    {"cell_type": st.sampled_from(["code", "markdown", "raw"]) | JSON, "source": SOURCE | JSON},
    optional={
        "id": st.sampled_from(["a", "b", "a"]) | ANY_TEXT | JSON,
        "metadata": st.just({}) | JSON,
        "outputs": st.just([]) | st.lists(st.dictionaries(ANY_TEXT, JSON, max_size=3), max_size=2),
        "execution_count": st.none() | st.integers(0, 9) | JSON,
        "extra": JSON,
    },
)
OUTPUT = st.fixed_dictionaries(
    {"output_type": st.just("stream"), "name": st.sampled_from(["stdout", "stderr"]), "text": SOURCE}
) | st.fixed_dictionaries(
    {"output_type": st.just("execute_result"), "execution_count": st.integers(1, 9),
     "metadata": st.just({}), "data": st.fixed_dictionaries({"text/plain": SOURCE})}
)
VALID_CELL = st.builds(
    lambda kind, cell_id, source, outputs: (
        {"cell_type": kind, "id": cell_id, "metadata": {}, "source": source}
        | ({"execution_count": None, "outputs": outputs} if kind == "code" else {})
    ),
    st.sampled_from(["code", "markdown", "raw"]),
    st.sampled_from(["a", "b", "c", "a-1"]),
    SOURCE,
    st.lists(OUTPUT, max_size=2),
)
# Mostly shaped like a notebook (so the calls get past the first checks), else any JSON.
NOTEBOOK = st.fixed_dictionaries(
    {
        "nbformat": mostly(st.just(4), st.sampled_from([3, 5, "4"]) | JSON),
        "nbformat_minor": mostly(st.just(5), st.just(4) | JSON),
        "metadata": mostly(st.just({}), JSON),
        "cells": st.lists(mostly(VALID_CELL, CELL | JSON), min_size=1, max_size=4),
    }
)
DOCUMENT = mostly(NOTEBOOK, JSON)
CELL_ID = mostly(st.sampled_from(["a", "b", "cell-0", "cell-1", "cell-9"]), ANY_TEXT)
EDIT = mostly(st.fixed_dictionaries(
    {"path": st.just("nb.ipynb"), "cell_id": CELL_ID,
     "edit_mode": st.sampled_from(["replace", "insert", "delete"]), "new_source": ANY_TEXT},
    optional={
        "old_string": ANY_TEXT,
        "new_string": ANY_TEXT,
        "cell_type": st.sampled_from(["code", "markdown", "raw"]) | ANY_TEXT,
    },
), st.dictionaries(st.sampled_from(["path", "cell_id", "edit_mode", "new_source"]), JSON))
READ = st.fixed_dictionaries(
    {"path": st.just("nb.ipynb")},
    optional={
        "cell_ids": st.lists(CELL_ID, max_size=2),
        "start": st.integers(0, 5),
        "limit": st.integers(1, 5),
        "source_offset": st.integers(1, 3),
    },
)
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def write_document(path: Path, document: Any) -> bytes:
    """`document` as a `.ipynb` file: JSON text (lone surrogates as `\\uXXXX` escapes)."""
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    return path.read_bytes()


def _validates(data: Any) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nbformat's notes on ids it repairs in its own copy
            nbformat.validate(data)
    except Exception:  # noqa: BLE001 - any failure of nbformat's validator: not valid
        return False
    return True


def still_a_notebook(path: Path, before: bytes) -> None:
    """The file validates after an edit if it did before (an edit of a notebook that does not
    validate lands when it adds no problem, issue 30), and is a notebook either way."""
    with path.open(encoding="utf-8") as f:
        data = json.load(f)
    assert isinstance(data, dict) and isinstance(data.get("cells"), list)
    if _validates(json.loads(before)):
        assert _validates(data)


@pytest.mark.timeout(600)
def test_notebook_tools_through_turns_always_answer_and_leave_the_file_alone(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    notebook = project / "nb.ipynb"
    agent = Agent(project, model=scripted(tmp_path, done()), yes=True)

    @SETTINGS
    @given(document=DOCUMENT, read=READ, edit=EDIT, text=ANY_TEXT)
    # Found by this test: an argument past 64 bits failed the session file's write.
    @example(document=None, read={"path": "nb.ipynb"}, edit={"path": -(1 << 63) - 1}, text="")
    @example(document=None, read={"path": "nb.ipynb"}, edit={"path": 10**400}, text="")
    def one_turn(document: Any, read: dict[str, Any], edit: dict[str, Any], text: str) -> None:
        before = write_document(notebook, document)
        calls = [tool("notebook_read", **read), tool("notebook_edit", **edit),
                 tool("write", path="t.txt", content=text)]
        agent.switch_model(scripted(tmp_path, calls, done()))
        outcome = agent.run(text or "go")
        assert outcome.status == "done"
        entries = load_entries(agent.session_path).entries  # raises on any invalid line
        last_calls = [m for m in (e.message for e in entries) if m is not None][-3]
        results = [m for m in (e.message for e in entries) if m is not None][-2].tool_results()
        assert [r.tool_use_id for r in results] == [c.id for c in last_calls.tool_uses()]
        assert all(isinstance(r.text(""), str) and r.text("") for r in results)
        edited = results[1]
        if edited.is_error:
            assert notebook.read_bytes() == before, edited.text("")
        else:
            still_a_notebook(notebook, before)
        assert "Traceback" not in "".join(r.text("") for r in results)

    try:
        one_turn()
    finally:
        agent.close()


@given(document=DOCUMENT, read=READ, edit=EDIT)
@SETTINGS
def test_notebook_tools_called_directly_with_raw_surrogates(
    tmp_path: Path, document: Any, read: dict[str, Any], edit: dict[str, Any]
) -> None:
    # Without a turn nothing cleans the input first: the tools themselves must answer.
    notebook = tmp_path / "nb.ipynb"
    before = write_document(notebook, document)
    env = make_env(tmp_path)
    tools = default_tools(env)
    read_result = tools["notebook_read"].run(env, read)
    edit_result = tools["notebook_edit"].run(env, edit)
    assert read_result.content and edit_result.content
    if edit_result.is_error:
        assert notebook.read_bytes() == before, edit_result.content
    else:
        still_a_notebook(notebook, before)
    assert "Traceback" not in read_result.content + edit_result.content
