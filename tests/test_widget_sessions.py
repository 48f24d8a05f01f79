"""The sessions browser: its table, and resume/fork/export/delete doing what the magics do."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from session_helpers import tree_state

from larik_jupyter import paths
from larik_jupyter.frontends.notebook.widgets.session_widget import shown_widgets
from larik_jupyter.frontends.notebook.widgets.sessions import SessionsBrowser, sessions_data
from larik_jupyter.llm.messages import Message, TextBlock, Usage, user_text
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.store import Session
from tests.widget_helpers import click, larik, shape, shell_with_magics, talkative


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    return root


def two_sessions(project: Path, tmp_path: Path) -> tuple[Any, Any, str, str]:
    shell, magics = shell_with_magics(project, talkative(tmp_path))
    larik(shell, "first session\nsecond line")
    first = magics.agent.session_id
    larik(shell, "/new")
    larik(shell, "second session")
    return shell, magics, first, magics.agent.session_id


def test_table_rows_carry_time_prompt_messages_tokens_cost_and_fork(project: Path) -> None:
    with Session.create(project, "anthropic", "claude-sonnet-4-5") as session:
        session.append_message(user_text("count the tokens"))
        session.append_message(Message(role="assistant", content=[TextBlock(text="ok")]))
        session.append(Entry(type="usage", usage=Usage(input_tokens=1000, output_tokens=200, cache_read_tokens=50)))
    (row,) = sessions_data(project).rows
    assert row.first_prompt == "count the tokens" and row.messages == 2
    assert (row.input_tokens, row.output_tokens) == (1050, 200)
    assert row.cost == pytest.approx((1000 * 3 + 200 * 15 + 50 * 0.3) / 1e6)
    assert row.time and row.fork_of is None


def test_resume_and_fork_match_the_magics(project: Path, tmp_path: Path) -> None:
    shell, magics, first, second = two_sessions(project, tmp_path)
    browser = SessionsBrowser(magics.kernel)
    assert {r["id"] for r in browser.sessions["rows"]} == {first, second}
    assert browser.sessions["current"] == second
    click(browser, type="resume", session=first)
    assert magics.agent.session_id == first and browser.sessions["current"] == first
    click(browser, type="fork", session=second)
    by_widget = magics.agent.session_path
    larik(shell, f"/resume {second}")
    larik(shell, "/fork")
    assert shape(by_widget) == shape(magics.agent.session_path)
    forks = [r for r in browser.sessions["rows"] if r["fork_of"] == second]
    assert len(forks) == 2


def test_export_writes_what_the_magic_writes(project: Path, tmp_path: Path) -> None:
    shell, magics, first, second = two_sessions(project, tmp_path)
    browser = SessionsBrowser(magics.kernel)
    out = browser.export(second)
    assert out == project / ".larik" / "exports" / f"{second}.md"
    larik(shell, "/export")
    again = project / ".larik" / "exports" / f"{second}-2.md"
    assert again.read_bytes() == out.read_bytes()
    assert str(out) in browser.status


def test_delete_needs_confirmation_and_removes_everything(project: Path, tmp_path: Path) -> None:
    shell, magics, first, second = two_sessions(project, tmp_path)
    path = paths.sessions_dir(project) / f"{first}.jsonl"
    extras = [path.with_name(f"{first}-agents"), path.with_name(f"{first}.trace"), paths.checkpoints_dir(first)]
    for extra in extras:
        extra.mkdir(parents=True, exist_ok=True)
    browser = SessionsBrowser(magics.kernel)
    click(browser, type="delete", session=first)
    assert "needs confirmation" in browser.error and path.is_file()
    click(browser, type="delete", session=first, confirm=True)
    assert not path.exists() and not any(e.exists() for e in extras)
    assert [r["id"] for r in browser.sessions["rows"]] == [second]
    click(browser, type="delete", session=second, confirm=True)
    assert "That is the open session" in browser.error
    assert (paths.sessions_dir(project) / f"{second}.jsonl").is_file()


def test_sessions_magic_shows_the_browser_with_a_static_fallback(project: Path, tmp_path: Path) -> None:
    shell, magics, first, second = two_sessions(project, tmp_path)
    larik(shell, "/sessions")
    browser = [w for w in shown_widgets() if isinstance(w, SessionsBrowser) and w.kernel is magics.kernel][-1]
    data, _ = browser._repr_mimebundle_()
    assert "first session" in data["text/html"] and "application/vnd.jupyter.widget-view+json" in data
    larik(shell, "a third prompt")
    assert next(r for r in browser.sessions["rows"] if r["id"] == second)["messages"] == 4


def test_delete_magic_and_button_refuse_what_is_not_a_session(project: Path, tmp_path: Path) -> None:
    shell, magics, first, second = two_sessions(project, tmp_path)
    folder = paths.sessions_dir(project)
    outside = tmp_path / "notes.txt"
    outside.write_text("mine\n")
    fifo = folder / "20260101-000000-aaaaaa.jsonl"
    os.mkfifo(fifo)
    link = folder / "20260101-000000-bbbbbb.jsonl"
    link.symlink_to(folder / f"{first}.jsonl")
    before = tree_state(paths.data_dir()), tree_state(tmp_path)
    for target in (str(outside), fifo.stem, link.stem, "..", str(folder)):
        with pytest.raises(UsageError) as refused:
            larik(shell, f"/delete {target}")
        assert "\n" not in str(refused.value) and ("Refusing to delete" in str(refused.value) or "not a regular file" in str(refused.value))
    browser = SessionsBrowser(magics.kernel)
    click(browser, type="delete", session=link.stem, confirm=True)
    assert "Refusing to delete" in browser.error and "symbolic link" in browser.error
    assert (tree_state(paths.data_dir()), tree_state(tmp_path)) == before
