"""The fork tree widget: its data, and rewind/fork/resume changing files exactly like the magics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from larik_jupyter.frontends.notebook.widgets.session_widget import refresh_all, shown_widgets
from larik_jupyter.frontends.notebook.widgets.tree import ForkTreeWidget, tree_data
from larik_jupyter.llm.messages import Message, TextBlock, Usage, user_text
from larik_jupyter.session.catalog import delete, list_sessions
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.store import Session
from tests.widget_helpers import click, larik, shape, shell_with_magics, talkative


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    return root


def three_prompts(project: Path, tmp_path: Path) -> tuple[Any, Any, str]:
    shell, magics = shell_with_magics(project, talkative(tmp_path))
    for prompt in ("write the parser", "add tests\nwith fixtures", "document it"):
        larik(shell, prompt)
    assert magics.agent is not None
    return shell, magics, magics.agent.session_id


def sent_messages(widget: ForkTreeWidget) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    widget.send = sent.append  # type: ignore[method-assign]  # the comm transport, not the widget
    return sent


def test_tree_shows_two_forks_under_the_prompts_they_branched_at(project: Path, tmp_path: Path) -> None:
    shell, magics, source = three_prompts(project, tmp_path)
    widget = ForkTreeWidget(magics.kernel)
    after_one = widget.fork_here(source, 1)
    sent = sent_messages(widget)
    code = widget.rewind_here(source, 3)
    assert code == "%%larik\ndocument it"
    assert sent == [{"type": "insert_cell", "code": code}]
    rewound = magics.agent.session_id  # type: ignore[union-attr]

    (root,) = widget.tree["roots"]
    assert widget.tree["current"] == rewound
    assert [(p["n"], p["text"]) for p in root["items"]] == [
        (1, "write the parser"), (2, "add tests"), (3, "document it")
    ]
    first, second, third = root["items"]
    assert [c["id"] for c in first["children"]] == [after_one.stem]
    assert [c["id"] for c in second["children"]] == [rewound]
    assert third["children"] == [] and root["children"] == []
    assert first["children"][0]["branch"] == "branched after prompt 1"
    assert second["children"][0]["items"] == []  # the copied prompts show once, in the source
    assert widget.tree["count"] == 6
    html = widget.static_html()
    assert "document it" in html and f"<code>{rewound}</code>" in html and "(current)" in html


def test_rewind_here_writes_what_resume_then_rewind_writes(project: Path, tmp_path: Path) -> None:
    shell, magics, source = three_prompts(project, tmp_path)
    widget = ForkTreeWidget(magics.kernel)
    sent = sent_messages(widget)
    click(widget, type="rewind", session=source, prompt=2)
    by_widget = magics.agent.session_path  # type: ignore[union-attr]
    assert sent == [{"type": "insert_cell", "code": "%%larik\nadd tests\nwith fixtures"}]
    assert widget.error == "" and "before prompt 2" in widget.status

    larik(shell, f"/resume {source}")
    larik(shell, "/rewind 2")
    by_magic = magics.agent.session_path  # type: ignore[union-attr]
    assert by_magic != by_widget and shape(by_magic) == shape(by_widget)
    assert shell.rl_next_input == "%%larik\nadd tests\nwith fixtures"


def test_fork_here_matches_fork_at_the_end_and_rewind_to_the_next_prompt(
    project: Path, tmp_path: Path
) -> None:
    shell, magics, source = three_prompts(project, tmp_path)
    widget = ForkTreeWidget(magics.kernel)
    at_end = widget.fork_here(source, 3)
    larik(shell, f"/resume {source}")
    larik(shell, "/fork")
    assert shape(at_end) == shape(magics.agent.session_path)  # type: ignore[union-attr]

    middle = widget.fork_here(source, 1)
    larik(shell, f"/resume {source}")
    larik(shell, "/rewind 2")
    assert shape(middle) == shape(magics.agent.session_path)  # type: ignore[union-attr]
    assert len(list_sessions(project)) == 5


def test_resume_continues_the_clicked_session(project: Path, tmp_path: Path) -> None:
    shell, magics, source = three_prompts(project, tmp_path)
    widget = ForkTreeWidget(magics.kernel)
    widget.fork_here(source)
    assert magics.agent.session_id != source  # type: ignore[union-attr]
    click(widget, type="resume", session=source)
    assert magics.agent.session_id == source  # type: ignore[union-attr]
    assert widget.tree["current"] == source
    larik(shell, "one more")
    assert [p["text"] for p in widget.tree["roots"][0]["items"]][-1] == "one more"


def test_tree_follows_new_turns_and_forks_without_rerunning(project: Path, tmp_path: Path) -> None:
    shell, magics, source = three_prompts(project, tmp_path)
    widget = ForkTreeWidget(magics.kernel)
    assert widget in shown_widgets()
    larik(shell, "fourth prompt")
    assert widget.tree["roots"][0]["items"][-1]["text"] == "fourth prompt"
    larik(shell, "/fork")
    last = widget.tree["roots"][0]["items"][-1]
    assert [c["id"] for c in last["children"]] == [magics.agent.session_id]  # type: ignore[union-attr]
    assert widget.tree["current"] == magics.agent.session_id  # type: ignore[union-attr]


def test_a_bad_click_reports_one_sentence_and_changes_nothing(project: Path, tmp_path: Path) -> None:
    shell, magics, source = three_prompts(project, tmp_path)
    widget = ForkTreeWidget(magics.kernel)
    sent = sent_messages(widget)
    click(widget, type="rewind", session=source, prompt=9)
    assert "has 3 prompts" in widget.error
    assert sent == [{"type": "error", "message": widget.error}]
    assert len(list_sessions(project)) == 1
    click(widget, type="resume", session="20200101-000000-abcdef")
    assert "No session with id 20200101-000000-abcdef" in widget.error


def test_prompt_nodes_carry_time_cost_interruptions_and_compactions(project: Path) -> None:
    with Session.create(project, "anthropic", "claude-sonnet-4-5") as session:
        session.append_message(user_text("first"))
        session.append_message(Message(role="assistant", content=[TextBlock(text="ok")]))
        session.append(Entry(type="usage", usage=Usage(input_tokens=1_000_000)))
        session.append(Entry(type="compaction", summary="we talked"))
        session.append_message(user_text("second"))
        session.append_message(Message(role="assistant", content=[TextBlock(text="par")], interrupted=True))
        session.append_message(user_text("third"))
        session.append(Entry(type="usage", model="mystery-model", usage=Usage(output_tokens=5)))
        sid = session.id
    data = msgspec.to_builtins(tree_data(project, sid))
    (root,) = data["roots"]
    kinds = [(i["kind"], i.get("text")) for i in root["items"]]
    assert kinds == [("prompt", "first"), ("compaction", None), ("prompt", "second"), ("prompt", "third")]
    first, _, second, third = root["items"]
    assert first["cost"] == pytest.approx(3.0) and first["time"]
    assert second["cost"] == 0.0 and second["interrupted"] and not first["interrupted"]
    assert third["cost"] is None and root["cost"] is None  # an unknown model's price
    # The model the session uses now (its last turn's), as /sessions shows it, not its first.
    assert root["model"] == "anthropic:mystery-model" == list_sessions(project)[0].model


def test_a_damaged_session_is_marked_not_hidden(project: Path, tmp_path: Path) -> None:
    shell, magics, source = three_prompts(project, tmp_path)
    path = Path(list_sessions(project)[0].path)
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(lines[:3] + [b"{broken"] + lines[3:]))
    data = msgspec.to_builtins(tree_data(project))
    (root,) = data["roots"]
    assert ".jsonl:4: bad JSON" in root["error"] and [p["text"] for p in root["items"]] == ["write the parser"]


def test_refresh_all_computes_each_tree_once(project: Path, tmp_path: Path) -> None:
    shell, magics, source = three_prompts(project, tmp_path)
    one, two = ForkTreeWidget(magics.kernel), ForkTreeWidget(magics.kernel)
    larik(shell, "another")
    assert one.data is two.data  # the same computed data, shared
    refresh_all()
    assert one.tree["roots"][0]["items"][-1]["text"] == "another"


def test_widget_bundle_has_the_view_and_a_static_fallback(project: Path, tmp_path: Path) -> None:
    shell, magics, source = three_prompts(project, tmp_path)
    data, _ = ForkTreeWidget(magics.kernel)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert "write the parser" in data["text/html"]


def test_rewind_here_with_files_lists_them_first_then_restores_them(project: Path, tmp_path: Path) -> None:
    from tests.agent_helpers import done, scripted, tool

    model = scripted(
        tmp_path,
        [tool("write", path="a.txt", content="one\n")], done(),
        [tool("write", path="b.txt", content="b\n"), tool("python", code="y = 1")], done(),
        done("third"),
    )
    shell, magics = shell_with_magics(project, model)
    for prompt in ("first", "second", "third"):
        larik(shell, prompt)
    source = magics.agent.session_id
    tree = ForkTreeWidget(magics.kernel)
    sent = sent_messages(tree)
    click(tree, type="plan_rewind", session=source, prompt=2)
    assert tree.confirm == {
        "session": source, "prompt": 2, "turns": [2], "files": ["b.txt"], "variables": ["y"], "cells": [], "stop": None,
    }
    assert (project / "b.txt").exists() and magics.agent.session_id == source  # nothing happened yet
    click(tree, type="cancel_rewind")
    assert tree.confirm == {}
    click(tree, type="rewind", session=source, prompt=2, files=True, turns=[7])
    assert "changed since you confirmed" in tree.error and (project / "b.txt").exists()
    click(tree, type="rewind", session=source, prompt=2, files=True, turns=[2])
    assert tree.error == "" and not (project / "b.txt").exists() and (project / "a.txt").exists()
    assert "y" not in shell.user_ns and magics.agent.session_id != source
    assert sent[-1] == {"type": "insert_cell", "code": "%%larik\nsecond"}
    assert "restored its files" in tree.status


def test_tree_names_empty_branches_and_branches_whose_source_was_deleted(project: Path, tmp_path: Path) -> None:
    shell, magics, source = three_prompts(project, tmp_path)
    widget = ForkTreeWidget(magics.kernel)
    after_two = widget.fork_here(source, 2).stem
    widget.rewind_here(source, 1)  # before the first prompt: a branch with no prompt yet
    at_start = magics.agent.session_id  # type: ignore[union-attr]
    text = widget.static_text()
    assert f"{after_two} branched after prompt 2 (no prompt yet)" in text
    assert f"{at_start} branched at the start (no prompt yet) (current)" in text
    assert f"{source} (no prompt yet)" not in text and "message" not in text

    delete(source, project)
    refresh_all()
    roots = {root["id"]: root for root in widget.tree["roots"]}
    assert set(roots) == {after_two, at_start}
    assert roots[after_two]["parent_deleted"] and roots[after_two]["fork_prompt"] == 2
    assert roots[after_two]["branch"] == f"branched after prompt 2 of {source}, which was deleted"
    assert f"<i>branched at the start of {source}, which was deleted</i> <i>(no prompt yet)</i>" in widget.static_html()


def test_jump_to_cells_finding_nothing_says_why_once(project: Path, tmp_path: Path) -> None:
    """The page finds no open cell of the prompt; the kernel says why: the notebook it edited
    is not open (named), its cell changes were undone, or it changed no cells."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1", id="calc")])
    nbformat.write(nb, project / "work.ipynb")
    from tests.agent_helpers import done, scripted, tool

    model = scripted(
        tmp_path,
        [tool("notebook_edit", path="work.ipynb", cell_id="calc", new_source="x = 2", edit_mode="replace")],
        done("Edited."),
        done("Talked."),
    )
    shell, magics = shell_with_magics(project, model)
    larik(shell, "change the cell")
    larik(shell, "just talk")
    source = magics.agent.session_id  # type: ignore[union-attr]
    widget = ForkTreeWidget(magics.kernel)

    click(widget, type="no_cells", session=source, prompt=1)
    assert widget.error == ""
    assert widget.status == (
        f"Prompt 1 of {source} changed cells of work.ipynb, which no open notebook shows; open it to jump to them."
    )
    click(widget, type="no_cells", session=source, prompt=2)
    assert widget.status == f"Prompt 2 of {source} changed no cells."

    larik(shell, "/undo")
    assert "x = 1" in (project / "work.ipynb").read_text()
    click(widget, type="no_cells", session=source, prompt=1)
    assert widget.status == f"Prompt 1 of {source} changed cells, and those changes were undone."
