"""The "Larik sessions" sidebar in a real JupyterLab, driven by Playwright and Debian's chromium."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from playwright.sync_api import Page, expect

from larik_jupyter.checkpoint.store import CheckpointStore
from larik_jupyter.llm.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, user_text
from larik_jupyter.session.branch import fork
from larik_jupyter.session.store import Session

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer


def scripted_session(cwd: Path) -> Path:
    """A two-turn session that reads and edits a file, with the edit checkpointed."""
    target = cwd / "notes.txt"
    target.write_text("alpha\nbeta\n")
    with Session.create(cwd, "scripted", "demo") as session:
        store = CheckpointStore(session.id, cwd)
        session.append_message(user_text("Fix the beta line in notes.txt"))
        store.begin_turn(prompt_number=1)
        call = ToolUseBlock(id="t1", name="edit", input={"path": "notes.txt"})
        session.append_message(
            Message(role="assistant", content=[TextBlock(text="Editing."), call])
        )
        store.capture(target)
        target.write_text("alpha\nBETA\n")
        session.append_message(
            Message(role="user", content=[ToolResultBlock(tool_use_id="t1", content="edited")])
        )
        session.append_message(
            Message(role="assistant", content=[TextBlock(text="Changed **beta** to `BETA`.")])
        )
        session.append_message(user_text("Now summarise the file"))
        session.append_message(Message(role="assistant", content=[TextBlock(text="Two lines.")]))
        return session.path


def node(page: Page, session_id: str) -> str:
    return f'.jp-larik-node[data-session-id="{session_id}"]'


def test_sidebar_lists_tree_transcript_and_acts_on_a_session(
    lab_server: LabServer, lab_page: Page
) -> None:
    root = Path(os.path.realpath(lab_server.root))
    parent = scripted_session(root)
    page = lab_page

    page.click('li[data-id="larik-sessions"]')
    expect(page.locator(node(page, parent.stem))).to_be_visible()

    # A branch made while the sidebar is open shows up by itself (polling), under its parent.
    child = fork(parent, 4)
    expect(
        page.locator(f"{node(page, parent.stem)} .jp-larik-children {node(page, child.stem)}")
    ).to_be_visible(timeout=20_000)
    # It reads by prompt number, and says it has no prompt of its own yet.
    branch_row = page.locator(f"{node(page, child.stem)} > .jp-larik-row")
    expect(branch_row.locator(".jp-larik-no-prompt")).to_have_text("No prompt yet")
    expect(branch_row.locator(".jp-larik-meta")).to_have_text(f"{child.stem} · branched after prompt 1")
    expect(page.locator(f"{node(page, parent.stem)} > .jp-larik-row .jp-larik-meta")).to_have_text(
        f"{parent.stem} · 2 prompts"
    )

    # Search by prompt text.
    page.fill(".jp-larik-search", "SUMMARISE")  # a later prompt, only in the parent (fork at 4)
    expect(page.locator(".jp-larik-node")).to_have_count(1)
    expect(page.locator(".jp-larik-node")).to_have_attribute("data-session-id", parent.stem)
    page.fill(".jp-larik-search", "beta line")
    expect(page.locator(".jp-larik-node")).to_have_count(2)
    page.fill(".jp-larik-search", "no such prompt")
    expect(page.locator(".jp-larik-node")).to_have_count(0)
    page.fill(".jp-larik-search", "")

    # Transcript: rendered Markdown, tool calls collapsed; undoable turn with a coloured diff.
    page.click(f"{node(page, parent.stem)} > .jp-larik-row")
    transcript = page.locator(".jp-larik-transcript")
    expect(transcript.locator("strong", has_text="beta")).to_be_visible()
    expect(transcript.locator("code", has_text="BETA")).to_be_visible()
    tool = transcript.locator("details.jp-larik-tool").first
    expect(tool).to_contain_text("edit: notes.txt")
    assert tool.get_attribute("open") is None
    expect(page.locator(".jp-larik-turn summary")).to_have_text("Prompt 1: notes.txt")
    # The one diff rendering (textdiff.diff_html, sent by the server): the notebook's classes.
    expect(page.locator(".jp-larik-turn .larik-diff-add")).to_have_text("+BETA")
    expect(page.locator(".jp-larik-turn .larik-diff-del")).to_have_text("-beta")

    # The hook for the notebook widgets refuses politely without a notebook.
    assert page.evaluate("window.larikJupyter.insertCellBelow('x = 1')") is False

    # "Open in notebook" with no notebook open creates one holding the resume cell.
    page.click('.jp-larik-action[data-command="larik:open-in-notebook"]')
    resume = f"%larik /resume {parent.stem}"
    page.wait_for_function(
        "code => { const w = window.jupyterapp.shell.currentWidget;"
        " const cells = w && w.content && w.content.model && w.content.model.sharedModel"
        " && w.content.model.sharedModel.cells;"
        " return !!(cells && cells.some(c => c.getSource() === code)); }",
        arg=resume,
    )
    # With a notebook open, it goes below the active cell and is selected; so does the hook.
    page.click('.jp-larik-action[data-command="larik:open-in-notebook"]')
    assert page.evaluate("window.larikJupyter.insertCellBelow('x = 1')") is True
    cells = page.evaluate(
        "() => { const nb = window.jupyterapp.shell.currentWidget.content;"
        " return { sources: nb.model.sharedModel.cells.map(c => c.getSource()),"
        " types: nb.model.sharedModel.cells.map(c => c.cell_type), active: nb.activeCellIndex }; }"
    )
    assert cells["sources"] == [resume, resume, "x = 1"]
    assert cells["types"] == ["code", "code", "code"]
    assert cells["active"] == 2

    # Export downloads exactly what the CLI writes.
    page.click(f"{node(page, parent.stem)} > .jp-larik-row")
    with page.expect_download() as download:
        page.click('.jp-larik-action[data-command="larik:export-session"]')
    assert download.value.suggested_filename == f"{parent.stem}.md"
    subprocess.run(
        [sys.executable, "-m", "larik_jupyter", "export", parent.stem, "cli.md"],
        cwd=root,
        check=True,
    )
    assert Path(download.value.path()).read_bytes() == (root / "cli.md").read_bytes()

    # Delete asks first; cancelling keeps the session, confirming removes it.
    page.click(f"{node(page, child.stem)} > .jp-larik-row")
    page.click('.jp-larik-action[data-command="larik:delete-session"]')
    page.click(".jp-Dialog .jp-mod-reject")
    assert child.is_file()
    page.click('.jp-larik-action[data-command="larik:delete-session"]')
    expect(page.locator(".jp-Dialog")).to_contain_text(child.stem)
    page.click(".jp-Dialog .jp-mod-accept")
    expect(page.locator(node(page, child.stem))).to_have_count(0)
    assert not child.exists()
    assert parent.is_file()

    # A branch whose source is deleted becomes a root that says so, by prompt number.
    orphan = fork(parent)
    expect(page.locator(node(page, orphan.stem))).to_be_visible(timeout=20_000)
    page.click(f"{node(page, parent.stem)} > .jp-larik-row")
    page.click('.jp-larik-action[data-command="larik:delete-session"]')
    page.click(".jp-Dialog .jp-mod-accept")
    expect(page.locator(node(page, parent.stem))).to_have_count(0)
    expect(page.locator(f".jp-larik-tree > {node(page, orphan.stem)} > .jp-larik-row .jp-larik-meta")).to_have_text(
        f"{orphan.stem} · branched after prompt 2 of {parent.stem}, which was deleted"
    )


def test_sidebar_marks_numbers_no_output_of_the_turn_shows(lab_server: LabServer, lab_page: Page) -> None:
    root = Path(os.path.realpath(lab_server.root))
    with Session.create(root, "scripted", "demo") as session:
        session.append_message(user_text("What is the mean?"))
        call = ToolUseBlock(id="p1", name="python", input={"code": "print(12335 / 7)"})
        session.append_message(Message(role="assistant", content=[call]))
        session.append_message(
            Message(role="user", content=[ToolResultBlock(tool_use_id="p1", content="1762.142857142857\n")])
        )
        reply = "The mean is **1762.1** per row, and about 4,321 rows were dropped."
        session.append_message(Message(role="assistant", content=[TextBlock(text=reply)]))
    page = lab_page

    page.click('li[data-id="larik-sessions"]')
    page.click(f"{node(page, session.id)} > .jp-larik-row")
    transcript = page.locator(".jp-larik-transcript")
    expect(transcript.locator("strong", has_text="1762.1")).to_be_visible()
    marked = transcript.locator("span.larik-unfound")
    expect(marked).to_have_count(1)
    expect(marked).to_have_text("4,321")
    expect(marked).to_be_visible()
    expect(marked).to_have_attribute("title", "not found in any output of this turn")
    assert "dotted" in marked.evaluate("node => getComputedStyle(node).textDecorationStyle")
    expect(transcript.locator(".jp-larik-unfound-count")).to_have_text("1 number not found in this turn's outputs")
    # The count line closes the turn: it follows the reply.
    assert transcript.locator(".jp-larik-entry").last.evaluate(
        "node => node.nextElementSibling.className"
    ) == "jp-larik-unfound-count"
