"""The fork tree, undo panel and sessions browser in a real JupyterLab with chromium."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
import pytest
from playwright.sync_api import Page, expect

from larik_jupyter.checkpoint.store import CheckpointStore
from larik_jupyter.llm.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, user_text
from larik_jupyter.session.branch import fork
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.store import Session

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

PROMPTS = ["Write the CSV parser", "Add tests for quoting", "Document the parser"]


@pytest.fixture
def scripted_kernel(larik_dirs: dict[str, Path]) -> Iterator[None]:
    """Kernels use the offline demo model (the personal config's model)."""
    larik_dirs["config"].mkdir(parents=True, exist_ok=True)
    (larik_dirs["config"] / "config.json").write_text(json.dumps({"model": "scripted:demo"}))
    yield


def three_prompt_session(cwd: Path) -> Path:
    with Session.create(cwd, "scripted", "demo") as session:
        for prompt in PROMPTS:
            session.append_message(user_text(prompt))
            session.append_message(Message(role="assistant", content=[TextBlock(text="Done.")]))
        return session.path


def edited_session(cwd: Path, *, ended: bool = False) -> Path:
    """A session whose one turn edited notes.txt, with the edit checkpointed (and, when the
    turn `ended`, what it left recorded)."""
    target = cwd / "notes.txt"
    target.write_text("alpha\nbeta\n")
    with Session.create(cwd, "scripted", "demo") as session:
        store = CheckpointStore(session.id, cwd)
        session.append_message(user_text("Fix the beta line"))
        store.begin_turn()
        call = ToolUseBlock(id="t1", name="edit", input={"path": "notes.txt"})
        session.append_message(Message(role="assistant", content=[call]))
        store.capture(target)
        target.write_text("alpha\nBETA\n")
        session.append_message(Message(role="user", content=[ToolResultBlock(tool_use_id="t1", content="ok")]))
        session.append_message(Message(role="assistant", content=[TextBlock(text="Fixed.")]))
        if ended:
            store.finish_turn()
        return session.path


def open_and_run(server: LabServer, page: Page, name: str, cells: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(nb, server.root / name)
    page.evaluate("async path => { await window.jupyterapp.commands.execute('docmanager:open', {path}); }", server.path(name))
    server.wait_for_idle_kernel()
    # Not awaited: the command's promise settles only when every cell has finished.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


def notebook_sources(page: Page) -> list[str]:
    return list(page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells.map(c => c.getSource())"
    ))


def test_tree_renders_two_forks_and_rewind_here_inserts_the_prompt_cell(
    scripted_kernel: None, lab_server: LabServer, lab_page: Page
) -> None:
    root = Path(os.path.realpath(lab_server.root))
    source = three_prompt_session(root)
    first = fork(source, 2)
    second = fork(source, 4)
    page = lab_page
    open_and_run(lab_server, page, "tree.ipynb", ["%load_ext larik_jupyter", "%larik /tree"])

    tree = page.locator(".larik-tree")
    expect(tree.locator(".larik-row-session")).to_have_count(3, timeout=60_000)
    for branch, under in ((first, 1), (second, 2)):
        expect(tree.locator(f'.larik-row-session[data-session-id="{branch.stem}"] .larik-branch')).to_have_text(
            f"↳ branched after prompt {under}"
        )
    expect(tree.locator(".larik-row-prompt")).to_have_count(3)
    assert float(tree.get_attribute("data-render-ms") or "inf") < 500

    # Search by prompt text, then keyboard: Down moves the selection.
    page.fill(".larik-tree .larik-search", "quoting")
    expect(tree.locator(".larik-row-prompt")).to_have_count(1)
    page.fill(".larik-tree .larik-search", "")
    expect(tree.locator(".larik-row-prompt")).to_have_count(3)

    prompt = tree.locator(f'.larik-row-prompt[data-session-id="{source.stem}"][data-prompt="2"]')
    prompt.click()
    expect(tree.locator(".larik-actions")).to_contain_text(f"Prompt 2 of {source.stem}")
    page.keyboard.press("ArrowDown")
    expect(tree.locator(".larik-actions")).to_contain_text("Session")
    prompt.click()
    tree.locator(".larik-rewind").click()

    expected = "%%larik\n" + PROMPTS[1]
    page.wait_for_function(
        "code => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells"
        ".some(c => c.getSource() === code)",
        arg=expected,
        timeout=30_000,
    )
    expect(tree.locator(".larik-status")).to_contain_text("before prompt 2")
    branches = [p for p in source.parent.glob("*.jsonl") if p not in (source, first, second)]
    assert len(branches) == 1
    meta = load_entries(branches[0]).entries[0].meta
    assert meta is not None and (meta.fork_of, meta.fork_at) == (source.stem, 2)
    # The tree followed by itself: the new branch is there and current.
    expect(tree.locator(f'.larik-row-session.larik-current[data-session-id="{branches[0].stem}"]')).to_be_visible()
    assert notebook_sources(page).count(expected) == 1


def test_undo_button_restores_the_file_on_disk(
    scripted_kernel: None, lab_server: LabServer, lab_page: Page
) -> None:
    root = Path(os.path.realpath(lab_server.root))
    session = edited_session(root)
    page = lab_page
    open_and_run(lab_server, page, "undo.ipynb", [
        "%load_ext larik_jupyter", f"%larik /resume {session.stem}", "%larik /checkpoints"
    ])
    panel = page.locator(".larik-undo")
    expect(panel.locator(".larik-diff-add")).to_have_text("+BETA\n", timeout=60_000)
    expect(panel.locator(".larik-diff-del")).to_have_text("-beta\n")
    panel.locator(".larik-undo-button").click()
    expect(panel.locator(".larik-restored")).to_have_text("restored notes.txt")
    expect(panel.locator(".larik-empty")).to_have_text(
        f"Nothing left to undo in session {session.stem}: no turn of it has changes to files, cells or kernel variables that are not undone already."
    )
    assert (root / "notes.txt").read_text() == "alpha\nbeta\n"


def test_undo_panel_asks_before_overwriting_a_file_changed_since_then_restores_anyway(
    scripted_kernel: None, lab_server: LabServer, lab_page: Page
) -> None:
    root = Path(os.path.realpath(lab_server.root))
    session = edited_session(root, ended=True)
    (root / "notes.txt").write_text("alpha\nBETA\nmine\n")  # the user's edit after the turn
    page = lab_page
    open_and_run(lab_server, page, "undo-changed.ipynb", [
        "%load_ext larik_jupyter", f"%larik /resume {session.stem}", "%larik /checkpoints"
    ])
    panel = page.locator(".larik-undo")
    expect(panel.locator(".larik-undo-button")).to_be_visible(timeout=60_000)
    panel.locator(".larik-undo-button").click()
    expect(panel.locator(".larik-changed li")).to_have_text("changed since: notes.txt")
    expect(panel.locator(".larik-outcome-head")).to_contain_text("was not undone: these files changed since that turn")
    assert (root / "notes.txt").read_text() == "alpha\nBETA\nmine\n"
    panel.locator(".larik-force-button").click()
    expect(panel.locator(".larik-restored")).to_have_text("restored notes.txt")
    assert (root / "notes.txt").read_text() == "alpha\nbeta\n"


def test_sessions_table_sorts_and_resumes_a_session(
    scripted_kernel: None, lab_server: LabServer, lab_page: Page
) -> None:
    root = Path(os.path.realpath(lab_server.root))
    older = three_prompt_session(root)
    newer = edited_session(root)
    page = lab_page
    open_and_run(lab_server, page, "sessions.ipynb", ["%load_ext larik_jupyter", "%larik /sessions"])
    table = page.locator(".larik-sessions")
    expect(table.locator("tbody tr")).to_have_count(2, timeout=60_000)
    table.locator('th[data-sort="messages"]').click()
    expect(table.locator("tbody tr").first).to_have_attribute("data-session-id", newer.stem)
    table.locator('th[data-sort="messages"]').click()
    expect(table.locator("tbody tr").first).to_have_attribute("data-session-id", older.stem)

    table.locator(f'tr[data-session-id="{older.stem}"] .larik-resume').click()
    expect(table.locator(".larik-status")).to_have_text(f"Resumed {older.stem}.", timeout=30_000)
    expect(table.locator(f'tr.larik-current[data-session-id="{older.stem}"]')).to_be_visible()
    # The open session cannot be deleted: refused before any confirmation.
    expect(table.locator(f'tr[data-session-id="{older.stem}"] .larik-delete')).to_be_disabled()

    # Delete asks first; cancel keeps the file.
    table.locator(f'tr[data-session-id="{newer.stem}"] .larik-delete').click()
    expect(table.locator(".larik-confirm")).to_contain_text(newer.stem)
    table.locator(".larik-confirm-cancel").click()
    assert newer.is_file()


def test_rewind_here_with_files_lists_the_files_asks_then_restores_them(
    scripted_kernel: None, lab_server: LabServer, lab_page: Page
) -> None:
    root = Path(os.path.realpath(lab_server.root))
    target = root / "notes.txt"
    target.write_text("alpha\n")
    with Session.create(root, "scripted", "demo") as session:
        store = CheckpointStore(session.id, root)
        session.append_message(user_text(PROMPTS[0]))
        session.append_message(Message(role="assistant", content=[TextBlock(text="Done.")]))
        session.append_message(user_text(PROMPTS[1]))
        store.begin_turn(2)
        store.capture(target)
        target.write_text("ALPHA\n")
        session.append_message(Message(role="assistant", content=[TextBlock(text="Shouted.")]))
        source = session.path
    page = lab_page
    open_and_run(lab_server, page, "files.ipynb", ["%load_ext larik_jupyter", "%larik /tree"])
    tree = page.locator(".larik-tree")
    prompt = tree.locator(f'.larik-row-prompt[data-session-id="{source.stem}"][data-prompt="2"]')
    prompt.click(timeout=60_000)
    tree.locator(".larik-rewind-files").click()
    expect(tree.locator(".larik-confirm-file")).to_have_text("notes.txt")
    assert target.read_text() == "ALPHA\n", "nothing changes before the user confirms"
    tree.locator(".larik-confirm-rewind").click()
    expect(tree.locator(".larik-status")).to_contain_text("restored its files", timeout=30_000)
    assert target.read_text() == "alpha\n"
    assert source.read_text().count(PROMPTS[1]) == 1  # the source transcript is untouched
    page.wait_for_function(
        "code => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells"
        ".some(c => c.getSource() === code)",
        arg="%%larik\n" + PROMPTS[1],
        timeout=30_000,
    )
