"""One telling of each call (issue 39, point 7): the live view, `/history`, the server's
transcript page, the export and the API's records name every call with the same words, from
session/call_summary.py: a cell by its position (its id on hover, never cut), `answer` in words."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.frontends.notebook.render import ToolPart, parts_from_entries
from larik_jupyter.frontends.notebook.view import TranscriptView
from larik_jupyter.frontends.server.page_entries import ShownCall
from larik_jupyter.frontends.server.views import transcript_page
from larik_jupyter.session.call_summary import cell_label
from larik_jupyter.session.export import render_markdown
from tests.agent_helpers import done, scripted, tool
from tests.widget_helpers import larik, shell_with_magics


def test_every_view_names_each_call_the_same_way(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Sales", id="title"),
                nbformat.v4.new_code_cell("total = 1", id="summary-table")]
    nbformat.write(nb, root / "work.ipynb")
    model = scripted(
        tmp_path,
        [tool("notebook_edit", path="work.ipynb", cell_id="summary-table", new_source="total = 2")],
        [tool("python", code="total = 1 + 1\nprint(total)")],
        [{"type": "tool_use", "name": "answer", "input": {"name": "total"}}],
        [tool("notebook_read", path="work.ipynb", cell_ids=["title", "summary-table"])],
        done("Handed back."),
    )
    shell, magics = shell_with_magics(root, model)
    agent = magics.kernel.ensure()
    view = TranscriptView()
    agent.subscribe(view.handle)
    larik(shell, "hand back the total")
    assert shell.user_ns.get("total") == 2

    expected = [
        'notebook_edit: replace cell 2 of work.ipynb ("total = 2")',
        "python: total = 1 + 1…",
        "answer: hand back total as the turn's value",
        "notebook_read: cells 1, 2 of work.ipynb",
    ]
    live = [p.summary for p in view.parts if isinstance(p, ToolPart)]
    history = [p.summary for p in parts_from_entries(agent.history.entries, position=agent.history.cell_position())
               if isinstance(p, ToolPart)]
    page = transcript_page(agent.session_id, agent.session_path, 0, 1000, root)
    server = [b.summary for e in page.entries if e.message for b in e.message.content if isinstance(b, ShownCall)]
    exported = render_markdown(agent.session_path, agent.history.entries, redactor=redactor_for(None))
    export = re.findall(r"\*\*Tool call\*\* `([^`]*)`", exported)
    records = [c.summary for c in agent.records.tool_calls]
    assert live == history == server == export == records == expected
    hints = {p.summary: p.hint for p in view.parts if isinstance(p, ToolPart)}
    assert hints[expected[0]] == "cell id summary-table"  # the id, on hover

    # The position is the cell's: moved in the file, every view from disk follows it.
    moved = nbformat.read(root / "work.ipynb", 4)
    moved.cells.insert(0, nbformat.v4.new_markdown_cell("# Intro", id="intro"))
    nbformat.write(moved, root / "work.ipynb")
    again = transcript_page(agent.session_id, agent.session_path, 0, 1000, root)
    first = next(b for e in again.entries if e.message for b in e.message.content if isinstance(b, ShownCall))
    assert first.summary == 'notebook_edit: replace cell 3 of work.ipynb ("total = 2")'


def test_a_cell_no_view_can_place_is_named_by_its_whole_id_when_short() -> None:
    assert cell_label("summary-table") == "cell summary-table"  # never "cell summary-"
    assert cell_label("cell-5") == "cell 5"
    uuid = "2363e7e8-4a6f-4c4e-9d5b-0f1e2d3c4b5a"
    assert cell_label(uuid) == "cell 2363e7e8…"  # cut, and says so


def test_every_approval_asks_a_full_question(tmp_path: Path) -> None:
    """What each asking tool's card says above its detail, from its own preview; the same
    words the terminal prints."""
    from larik_jupyter.agent.preview import preview_change
    from larik_jupyter.tools.files import WriteTool
    from larik_jupyter.tools.kernel import PythonTool
    from larik_jupyter.tools.registry import BUILTIN_TOOLS
    from tests.agent_helpers import make_env

    env = make_env(tmp_path)
    (tmp_path / "app.py").write_text("x = 1\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("df.dropna(inplace=True)\nkept = len(df)", id="calc")]
    nbformat.write(nb, tmp_path / "work.ipynb")
    namespace = {"df": object()}
    calls = {
        "write": {"path": "new.py", "content": "y = 2\n"},
        "edit": {"path": "app.py", "old_string": "1", "new_string": "2"},
        "multi_edit": {"path": "app.py", "edits": [{"old_string": "x", "new_string": "z"},
                                                    {"old_string": "1", "new_string": "3"}]},
        "bash": {"command": "ls"},
        "notebook_edit": {"path": "work.ipynb", "cell_id": "calc", "new_source": "kept = 0"},
        "python": {"code": "df['b'] = 1\ntotal = 2"},
        "notebook_run": {"path": "work.ipynb", "cell_id": "calc"},
        "notebook_check": {"path": "work.ipynb"},
    }
    asked = {}
    for cls in BUILTIN_TOOLS:
        if cls.default_permission != "ask":
            continue
        args = calls[cls.name]  # every asking tool is in the table
        preview = preview_change(env, cls(), args).text
        asked[cls.name], _ = cls().approval_question(args, preview, namespace, None)
    assert asked == {
        "write": "Create new.py with this content?",
        "edit": "Make this edit to app.py?",
        "multi_edit": "Make these 2 edits to app.py?",
        "bash": "Run this shell command?",
        "notebook_edit": "Replace the source of cell 1 (calc) of work.ipynb?",
        "python": "Run this Python in your kernel? It may change df (an item set) and create total.",
        "notebook_run": "Run cell calc of work.ipynb in your kernel? It may change df (in place: dropna) and create kept.",
        "notebook_check": "Run work.ipynb top to bottom in a scratch kernel, on a copy (your kernel, the notebook "
                          "and your files stay as they are)?",
    }
    overwrite, _ = WriteTool().approval_question(
        {"path": "app.py"}, preview_change(env, WriteTool(), {"path": "app.py", "content": "x = 2\n"}).text, {}, None
    )
    assert overwrite == "Overwrite app.py with this content?"
    # The python question follows the kernel: with df gone, the code would create it.
    assert PythonTool().approval_question(calls["python"], "", {}, None)[0] == (
        "Run this Python in your kernel? It may create total."
    )


def test_a_notebook_file_that_cannot_be_read_has_no_positions_and_never_blocks(tmp_path: Path) -> None:
    import os
    import threading

    from larik_jupyter.session.call_summary import positions_in_files

    os.mkfifo(tmp_path / "fifo.ipynb")  # reading it would wait for a writer forever
    (tmp_path / "deep.ipynb").write_text("[" * 100_000 + "]" * 100_000)  # past the JSON parser's depth
    (tmp_path / "ok.ipynb").write_text('{"cells": [{"id": "a"}, {"id": "b"}]}')
    position = positions_in_files(tmp_path)
    found: list[object] = []
    reader = threading.Thread(target=lambda: found.extend(position(n, "b") for n in ("fifo.ipynb", "deep.ipynb", "ok.ipynb")), daemon=True)
    reader.start()
    reader.join(10)
    assert found == [None, None, 1]


def test_a_stored_call_is_said_by_its_own_tool_with_no_agent_at_hand() -> None:
    """Each tool says its calls from their input alone (`Tool.summary`, a class method); a call
    of a tool larik does not know (an MCP server's) by its input. A read's `start` counts cells
    from 1, as the tool reads it."""
    from larik_jupyter.tools.calls import summarize_call

    assert summarize_call("notebook_read", {"path": "nb/a.ipynb", "start": 5, "limit": 10}) == (
        "notebook_read: cells 5–14 of a.ipynb"
    )
    assert summarize_call("notebook_read", {}) == "notebook_read: cells 1–50 of this notebook"
    plan = {"todos": [{"content": "load", "status": "completed"}, {"content": "plot", "status": "pending"}]}
    assert summarize_call("todo_write", plan) == "todo_write: 1/2 done"
    assert summarize_call("python", {"code": "total = df.revenue.sum()\nprint(total)"}) == (
        "python: total = df.revenue.sum()…"
    )
    assert summarize_call("mcp__db__query", {"sql": "select 1"}) == 'mcp__db__query: {"sql": "select 1"}'
