"""One undo report (`UndoReport`): the magic, the undo panel (what its JS is fed), `Agent` and
the CLI tell the same undo in the same words, and the CLI's undo reaches the model as the
`<system-note>` of the session's next prompt, through the real SDK over HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from IPython.utils.capture import capture_output

from larik_jupyter import Agent, UndoReport
from larik_jupyter.frontends.notebook.widgets.session_widget import shown_widgets
from larik_jupyter.frontends.notebook.widgets.undo import UndoPanel
from larik_jupyter.session.catalog import list_sessions
from larik_jupyter.testing import ScriptedHTTPServer
from tests.agent_helpers import done, scripted, tool
from tests.widget_helpers import larik, shell_with_magics

CLI = [sys.executable, "-m", "larik_jupyter"]
KEY = "sk-ant-undo-report-test"


def a_turn(tmp_path: Path, name: str) -> tuple[Path, str]:
    """A project whose prompt 1 created `made/new.txt` and overwrote `f.txt`, and the scripted
    model that does it."""
    project = tmp_path / name
    project.mkdir()
    (project / "f.txt").write_text("before\n")
    model = scripted(
        tmp_path / name, [tool("write", path="made/new.txt", content="new\n"), tool("write", path="f.txt", content="after\n")],
        done("Wrote both."),
    )
    return project, model


def sabotage(project: Path) -> None:
    """Make f.txt a symbolic link, which undo refuses to write through: a partial undo, so
    every kind of line (restored, not restored, a removed directory, what to do) is told."""
    (project / "f.txt").unlink()
    (project / "f.txt").symlink_to(project / "elsewhere.txt")


def html_lines(outcome: str) -> list[str]:
    """The lines a reader sees in the panel's outcome HTML: paragraphs, and items as `- …`."""
    page = BeautifulSoup(outcome, "html.parser")
    return [
        ("- " if tag.name == "li" else "") + tag.get_text()
        for tag in page.find_all(["p", "li"])
    ]


# What a partial undo of prompt 1 says, `<again>` standing for the command each front end
# repeats it with.
EXPECTED = [
    "Prompt 1 was only partly undone:",
    "- restored made/new.txt",
    "- not restored f.txt: is a symbolic link",
    "- removed made/ (created by the turn)",
    "The snapshot was kept: fix the files not restored, then run <again> again.",
]


def test_the_magic_the_panel_agent_and_the_cli_tell_one_undo_in_the_same_words(
    project: Path, tmp_path: Path
) -> None:
    # Agent: the undo API returns the report.
    root, model = a_turn(tmp_path, "api")
    agent = Agent(root, model=model, yes=True)
    agent.run("write them")
    sabotage(root)
    report = agent.undo()
    assert isinstance(report, UndoReport) and not report.ok and [r.prompt for r in report] == [1]
    api_lines = report.plain().replace("%larik /undo", "<again>").splitlines()
    agent.close()

    # The magic, and the panel it shows: its text for text-only front ends and the HTML its JS
    # puts on the page as it is.
    root, model = a_turn(tmp_path, "magic")
    shell, magics = shell_with_magics(root, model)
    larik(shell, "write them")
    sabotage(root)
    with capture_output() as shown:
        larik(shell, "/undo")
    (output,) = shown.outputs
    magic_lines = output.data["text/plain"].replace("%larik /undo", "<again>").splitlines()
    panel = [w for w in shown_widgets() if isinstance(w, UndoPanel) and w.kernel is magics.kernel][-1]
    js_lines = [line.replace("%larik /undo", "<again>") for line in html_lines(panel.outcome)]

    # The CLI, on a session closed after its turn.
    root, model = a_turn(tmp_path, "cli")
    agent = Agent(root, model=model, yes=True)
    agent.run("write them")
    session_id = agent.session_id
    agent.close()
    sabotage(root)
    undone = subprocess.run([*CLI, "undo", session_id], capture_output=True, text=True, timeout=120)
    assert undone.returncode == 1 and undone.stderr == ""
    header, *cli_lines = undone.stdout.replace(f"larik-jupyter undo {session_id}", "<again>").splitlines()
    assert header == f"Session {session_id} in {root}:"

    assert api_lines == EXPECTED
    assert magic_lines[: len(EXPECTED)] == EXPECTED  # then the turns left to undo
    assert cli_lines == EXPECTED
    assert js_lines == EXPECTED
    assert panel.status == "Prompt 1 was only partly undone; see the files not restored."


def test_the_clis_undo_reaches_the_next_prompt_of_the_session_as_a_system_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, model = a_turn(tmp_path, "p")
    run = [*CLI, "run", "--cwd", str(project)]
    made = subprocess.run([*run, "--yes", "--model", model, "write them"], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    (info,) = list_sessions(project)
    undone = subprocess.run([*CLI, "undo", info.id], capture_output=True, text=True, timeout=120)
    assert undone.returncode == 0, undone.stderr
    assert undone.stdout.splitlines()[1:] == [
        "Undid prompt 1.", "- restored f.txt", "- restored made/new.txt", "- removed made/ (created by the turn)"
    ]
    assert (project / "f.txt").read_text() == "before\n" and not (project / "made").exists()

    # The next prompt, from the CLI on a real model's API, carries the note once.
    replies = [{"content": [{"type": "text", "text": f"reply {i}"}]} for i in range(2)]
    with ScriptedHTTPServer(replies, api_key=KEY) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        for prompt in ("what changed?", "and now?"):
            asked = subprocess.run(
                [*run, "--session", info.id, "--model", "anthropic:claude-sonnet-4-6", prompt],
                capture_output=True, text=True, timeout=120,
            )
            assert asked.returncode == 0, asked.stderr
        first, second = (request.body["messages"][-1] for request in server.requests)  # type: ignore[index]
    assert first["role"] == "user" and json.dumps(first).count("<system-note>") == 1
    (note,) = [block["text"] for block in first["content"] if "<system-note>" in block["text"]]
    assert note == (
        "<system-note>The user reverted the file changes of prompt 1; these files are back to their "
        "state before that turn: f.txt, made/new.txt. Re-read them before relying on their "
        "content.</system-note>"
    )
    assert "what changed?" in json.dumps(first)
    assert "<system-note>" not in json.dumps(second) and "and now?" in json.dumps(second)


def test_nothing_left_to_undo_is_one_sentence_in_every_front_end(tmp_path: Path) -> None:
    from larik_jupyter.checkpoint.errors import NothingToUndoError
    from larik_jupyter.frontends.notebook.widgets.undo import undo_data
    from larik_jupyter.frontends.server.turn_diffs import checkpoints

    project, model = a_turn(tmp_path, "p")
    agent = Agent(project, model=model, yes=True)
    agent.run("write them")
    agent.undo()
    said = UndoReport().nothing_left(agent.session_id)
    assert said.startswith(f"Nothing left to undo in session {agent.session_id}: ")
    with pytest.raises(NothingToUndoError) as raised:
        agent.undo()
    assert str(raised.value) == said
    assert undo_data(agent).empty == said  # the undo panel, when it lists no turn
    assert checkpoints(agent.session_id, project, str(project)).empty == said  # the sidebar's
    with pytest.raises(NothingToUndoError) as raised:
        agent.undo(prompt_number=1)
    assert str(raised.value) == UndoReport(prompt_number=1).nothing_left(agent.session_id)
    assert "from prompt 1 on" in str(raised.value)
    agent.close()
    cli = subprocess.run([*CLI, "undo", str(agent.session_path)], capture_output=True, text=True, cwd=project)
    assert cli.returncode != 0 and said in cli.stderr and "Traceback" not in cli.stderr
