"""Each `/command` and prompt option through `%larik` in a real IPython shell, asserting what the
user sees (the cell's output) or what reaches the model (the local wire server's requests)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from traitlets.config import Config

from larik_jupyter import Agent
from larik_jupyter.config.layers import user_config_path
from larik_jupyter.frontends.notebook.magics import LarikMagics
from larik_jupyter.session.catalog import list_sessions
from larik_jupyter.testing import ScriptedHTTPServer
from tests.agent_helpers import done, personal, scripted, tool
from tests.widget_helpers import larik, shell_with_magics

KEY = "sk-commands-test-0123456789abcdef"
WIRE_MODEL = "anthropic:claude-sonnet-4-6"


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedHTTPServer]:
    """A local Anthropic wire server answering each request with `reply N` (N from 0)."""
    replies = [{"content": [{"type": "text", "text": f"reply {i}"}],
                "usage": {"input_tokens": 1000, "output_tokens": 100}} for i in range(8)]
    with ScriptedHTTPServer(replies, api_key=KEY) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        yield server


def shown(line: str, shell: InteractiveShell) -> str:
    """Everything `%larik LINE` displayed, as text (Markdown sources and plain reprs)."""
    with capture_output() as cap:
        larik(shell, line)
    parts = [cap.stdout]
    for output in cap.outputs:
        parts.append(output.data.get("text/markdown") or output.data.get("text/plain", ""))
    return "\n".join(parts)


def sent(server: ScriptedHTTPServer) -> str:
    return json.dumps(server.requests[-1].body["messages"])


def test_help_lists_every_command_with_its_usage(project: Path, tmp_path: Path) -> None:
    shell, _ = shell_with_magics(project, scripted(tmp_path, done()))
    text = shown("/help", shell)
    for usage in ("/new [--model M]", "/resume [ID | --last]", "/rewind N", "/undo", "/clear",
                  "/model [PROVIDER:MODEL]", "/usage", "/config [KEY [VALUE]]", "/stop", "/agents",
                  "/debug [on | off]", "/compact [instructions]"):
        assert f"%larik {usage}" in text, usage


def test_new_option_starts_a_new_session_and_resume_last_comes_back(project: Path, tmp_path: Path) -> None:
    shell, magics = shell_with_magics(project, scripted(tmp_path, done("one"), done("two"), done("three")))
    larik(shell, "first")
    assert magics.agent is not None
    first = magics.agent.session_id
    larik(shell, "--new second")
    second = magics.agent.session_id
    assert second != first
    assert [t.prompt for t in magics.agent.records.turns] == ["second"]
    larik(shell, "/new")
    assert magics.agent.session_id not in (first, second)
    text = shown("/resume --last", shell)
    # The latest session with a prompt is the --new one; the empty /new session is skipped or latest.
    assert magics.agent.session_id in (second, list_sessions(project)[0].id)
    assert "Resumed session" in text
    once = shown(f"/resume {first}", shell)
    assert f"Resumed session `{first}` (1 turn, " in once  # not "1 turns"


def test_expand_only_with_the_option(project: Path, wire: ScriptedHTTPServer) -> None:
    shell, _ = shell_with_magics(project, WIRE_MODEL)
    shell.user_ns["word"] = "banana"
    larik(shell, "say {word}")
    assert "say {word}" in sent(wire) and "banana" not in sent(wire)
    larik(shell, "--expand say {word}")
    assert "say banana" in sent(wire)


def test_stop_with_no_turn_running_says_so(project: Path, tmp_path: Path) -> None:
    shell, _ = shell_with_magics(project, scripted(tmp_path, done()))
    assert "No turn is running." in shown("/stop", shell)


def test_agents_lists_no_worktrees_in_a_fresh_project(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    shell, _ = shell_with_magics(project, scripted(tmp_path, done()))
    assert "No subagent worktrees in this project." in shown("/agents", shell)
    with pytest.raises(UsageError, match="Name one worktree to discard"):
        larik(shell, "/agents discard")


def test_debug_on_off_writes_a_trace(project: Path, tmp_path: Path) -> None:
    shell, magics = shell_with_magics(project, scripted(tmp_path, done("untraced reply"), done("traced reply")))
    larik(shell, "hello")
    assert "Debug trace off" in shown("/debug", shell)
    text = shown("/debug on", shell)
    assert "Debug trace on: writing" in text
    larik(shell, "again")
    assert "Debug trace off; it is in" in shown("/debug off", shell)
    assert magics.agent is not None
    events = Path(str(magics.agent.session_path).removesuffix(".jsonl") + ".trace") / "events.jsonl"
    assert "traced reply" in events.read_text() and "untraced reply" not in events.read_text()


def test_config_key_value_sets_a_personal_value(project: Path, tmp_path: Path) -> None:
    shell, _ = shell_with_magics(project, scripted(tmp_path, done()))
    assert "Set `max_steps` = `7` in your personal config." in shown("/config max_steps 7", shell)
    assert json.loads(user_config_path().read_text())["max_steps"] == 7
    assert "7" in shown("/config max_steps", shell)


def test_compact_sends_the_instructions_and_shows_the_summary(project: Path, wire: ScriptedHTTPServer) -> None:
    shell, _ = shell_with_magics(project, WIRE_MODEL)
    larik(shell, "remember the number 42")
    text = shown("/compact keep only the number", shell)
    assert "keep only the number" in json.dumps(wire.requests[-1].body)
    assert "Compacted the conversation. Summary:" in text and "> reply 1" in text
    larik(shell, "what number?")
    assert "reply 1" in sent(wire) and "remember the number 42" not in sent(wire)


def test_usage_shows_the_priced_totals(project: Path, wire: ScriptedHTTPServer) -> None:
    shell, magics = shell_with_magics(project, WIRE_MODEL)
    larik(shell, "hi")
    assert magics.agent is not None
    text = shown("/usage", shell)
    # 1,000 in and 100 out at $3 / $15 per million tokens.
    assert (f"Session `{magics.agent.session_id}`: 1,000 input, 100 output, 0 cache read, "
            "0 cache write tokens, $0.0045.") in text


def test_magics_traits_win_over_the_config_files(project: Path, tmp_path: Path, wire: ScriptedHTTPServer) -> None:
    personal({"model": scripted(tmp_path, done("from the config file"))})
    shell = InteractiveShell.instance()
    config = Config()
    config.LarikMagics.model = WIRE_MODEL
    config.LarikMagics.yes = True
    shell.config = config
    magics = LarikMagics(shell=shell)
    magics.cwd = project
    shell.register_magics(magics)
    try:
        larik(shell, "which model?")
        assert magics.agent is not None and magics.agent.model == WIRE_MODEL
        assert len(wire.requests) == 1
    finally:
        shell.config = Config()


def test_to_dataframe_turns(project: Path, tmp_path: Path) -> None:
    agent = Agent(project, model=scripted(tmp_path, [tool("write", path="a.txt", content="a")], done("ok")),
                  yes=True)
    agent.run("write a")
    frame = agent.records.to_dataframe("turns")
    assert list(frame["prompt"]) == ["write a"]
    assert list(frame["files_changed"]) == [["a.txt"]]
    agent.close()


def test_approve_starts_applying_a_shared_allow_rule(project: Path, tmp_path: Path) -> None:
    (project / ".larik").mkdir()
    (project / ".larik" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["bash(echo:*)"]}}))
    model = scripted(tmp_path, [tool("bash", command="echo one")], done(), [tool("bash", command="echo two")], done())
    agent = Agent(project, model=model)
    agent.run("echo one")
    first = [b for m in agent.loop.session.state.all for b in m.tool_results()][-1]
    assert first.is_error and "Permission denied" in str(first.content)
    notices = agent.config.approve("bash(echo:*)")
    assert isinstance(notices, list)
    agent.run("echo two")
    second = [b for m in agent.loop.session.state.all for b in m.tool_results()][-1]
    assert not second.is_error and "two" in str(second.content)
    agent.close()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "larik_jupyter", *args], capture_output=True,
                          text=True, timeout=60)


def test_run_session_id_continues_that_session(project: Path, tmp_path: Path) -> None:
    model = scripted(tmp_path, done("an answer"))
    first = _cli("run", "--cwd", str(project), "--model", model, "first")
    assert first.returncode == 0, first.stderr
    session_id = first.stderr.strip().splitlines()[-1].split()[1]
    second = _cli("run", "--cwd", str(project), "--session", session_id, "second")
    assert second.returncode == 0, second.stderr
    assert f"session {session_id} (" in second.stderr
    (info,) = list_sessions(project)
    assert info.id == session_id
    agent = Agent(project, session=session_id)
    assert [t.prompt for t in agent.records.turns] == ["first", "second"]
    agent.close()


def test_provider_base_url_from_a_real_config_file_reaches_the_request(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replies: list[dict[str, Any]] = [{"content": [{"type": "text", "text": "via the config"}]}]
    with ScriptedHTTPServer(replies, api_key=KEY) as server:
        monkeypatch.setenv("MY_TEAM_KEY", KEY)
        personal({"providers": {"openai-compatible": {"base_url": server.openai_base_url,
                                                       "api_key_env": "MY_TEAM_KEY"}}})
        shell, magics = shell_with_magics(project, "openai-compatible:local-model")
        larik(shell, "through the configured server")
        assert len(server.requests) == 1
        body = server.requests[0].body
    assert body["model"] == "local-model"
    assert "through the configured server" in json.dumps(body["messages"])
    assert magics.agent is not None and magics.agent.records.turns[0].prompt == "through the configured server"


def test_lsp_lists_a_configured_server_as_not_started(project: Path, tmp_path: Path) -> None:
    personal({"lspServers": {"fake": {"command": "fake-language-server", "languages": ["python"]}}})
    shell, _ = shell_with_magics(project, scripted(tmp_path, done()))
    text = shown("/lsp", shell)
    assert "| server | state | pid | starts | open files | command | log |" in text
    assert "| fake | not started |  | 0 | 0 | `fake-language-server` |" in text


def test_fix_with_larik_on_the_offline_demo_says_it_cannot_fix_and_how_to_set_a_key(project: Path) -> None:
    shell, magics = shell_with_magics(project, "")
    magics.model = None  # no model and no key: the offline demo answers
    with pytest.raises(UsageError) as raised:
        shell.run_cell_magic("larik", "", "Fix the error in cell boom of this notebook (ZeroDivisionError: division by zero).")
    assert "offline demo model (scripted:demo)" in str(raised.value) and "cannot fix anything" in str(raised.value)
    assert "ANTHROPIC_API_KEY or OPENAI_API_KEY" in str(raised.value)
    assert not (project / "larik_demo.txt").exists()
