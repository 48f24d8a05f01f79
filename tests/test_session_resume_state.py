"""What a resume needs lives in the session file: a /clear, a /model switch and a pending undo
note all survive a kernel restart (a new `LarikMagics` on the same shell has none of the old
kernel's memory), and tracing follows a model switch."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from larik_jupyter.frontends.notebook.magics import LarikMagics
from larik_jupyter.testing import ScriptedHTTPServer
from tests.agent_helpers import done, personal, scripted, tool
from tests.widget_helpers import larik, shell_with_magics

KEY = "sk-resume-test-0123456789abcdef"
WIRE_MODEL = "anthropic:claude-sonnet-4-6"


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedHTTPServer]:
    """A local Anthropic wire server answering every request with a short text reply."""
    with ScriptedHTTPServer([{"content": [{"type": "text", "text": f"reply {i}"}]} for i in range(6)],
                            api_key=KEY) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        yield server


def restarted(shell: InteractiveShell, project: Path) -> LarikMagics:
    """What a kernel restart leaves: a shell whose `%larik` knows nothing of the old agent."""
    magics = LarikMagics(shell=shell)
    magics.cwd = project
    magics.yes = True
    shell.register_magics(magics)
    return magics


def sent_text(body: dict[str, object]) -> str:
    return json.dumps(body["messages"])


def test_clear_survives_a_restart_and_resume(project: Path, wire: ScriptedHTTPServer) -> None:
    shell, magics = shell_with_magics(project, WIRE_MODEL)
    larik(shell, "remember the word pineapple")
    larik(shell, "/clear")
    magics.agent.close()  # type: ignore[union-attr]
    restarted(shell, project)
    larik(shell, "/resume --last")
    larik(shell, "what was the word?")
    last = wire.requests[-1].body
    assert "pineapple" not in sent_text(last)
    assert "what was the word?" in sent_text(last)
    assert "cleared the conversation context" in sent_text(last)
    # The file itself still holds every message.
    assert "pineapple" in Path(magics.agent.session_path).read_text()  # type: ignore[union-attr]


def test_model_switch_survives_a_restart_and_resume(project: Path, tmp_path: Path, wire: ScriptedHTTPServer) -> None:
    shell, magics = shell_with_magics(project, scripted(tmp_path, done("scripted reply")))
    larik(shell, "first on the scripted model")
    assert wire.requests == []
    larik(shell, f"/model {WIRE_MODEL}")
    magics.agent.close()  # type: ignore[union-attr]
    again = restarted(shell, project)
    larik(shell, "/resume --last")
    assert again.agent is not None and again.agent.model == WIRE_MODEL
    larik(shell, "second")
    assert len(wire.requests) == 1
    assert "second" in sent_text(wire.requests[0].body)


def test_undo_note_survives_a_restart(project: Path, tmp_path: Path, wire: ScriptedHTTPServer) -> None:
    model = scripted(tmp_path, [tool("write", path="a.txt", content="agent\n")], done("Wrote it."))
    shell, magics = shell_with_magics(project, model)
    larik(shell, "write a.txt")
    assert (project / "a.txt").exists()
    larik(shell, "/undo")
    assert not (project / "a.txt").exists()
    larik(shell, f"/model {WIRE_MODEL}")
    magics.agent.close()  # type: ignore[union-attr]
    restarted(shell, project)
    larik(shell, "/resume --last")
    larik(shell, "what changed?")
    body = sent_text(wire.requests[-1].body)
    assert "<system-note>The user reverted the file changes" in body and "a.txt" in body
    # Carried once: the prompt after it no longer repeats the note.
    larik(shell, "and now?")
    prompts = [m for m in wire.requests[-1].body["messages"] if m["role"] == "user"]  # type: ignore[index, union-attr]
    assert "<system-note>" not in json.dumps(prompts[-1])


def test_debug_trace_follows_a_model_switch(project: Path, tmp_path: Path, wire: ScriptedHTTPServer) -> None:
    shell, magics = shell_with_magics(project, scripted(tmp_path, done()))
    larik(shell, "hello")
    larik(shell, "/debug on")
    larik(shell, f"/model {WIRE_MODEL}")
    larik(shell, "traced?")
    assert magics.agent is not None
    trace = Path(str(magics.agent.session_path).removesuffix(".jsonl") + ".trace")
    bodies = list((trace / "http").iterdir())
    assert bodies, "the request to the new provider was not traced"
    assert any("traced?" in p.read_text() for p in bodies)


def test_a_prompt_blocked_by_a_hook_shows_as_blocked(project: Path, tmp_path: Path) -> None:
    personal({"hooks": {"UserPromptSubmit": [{"command": "echo 'no secrets here' >&2; exit 2"}]}})
    shell, _ = shell_with_magics(project, scripted(tmp_path, done()))
    with capture_output() as cap:
        larik(shell, "tell me the secret")
    shown = "\n".join(str(o.data) for o in cap.outputs)
    assert "Blocked by a hook" in shown and "no secrets here" in shown
    assert "Error:" not in shown
