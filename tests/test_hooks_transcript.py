"""Hook output is part of the transcript: stored with the call or prompt, shown by `/history`
exactly as the live view showed it, and in the Markdown export."""

from __future__ import annotations

import json
from pathlib import Path

from IPython.utils.capture import capture_output

from larik_jupyter import Agent
from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.frontends.notebook.render import (
    parts_from_entries,
    parts_from_messages,
    render_parts,
)
from larik_jupyter.frontends.notebook.view import TranscriptView
from larik_jupyter.llm.anthropic_provider import request_messages as anthropic_messages
from larik_jupyter.llm.openai_provider import request_messages as openai_messages
from larik_jupyter.session.export import export_markdown
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.state import replay
from tests.agent_helpers import as_stored, done, personal, scripted, tool
from tests.widget_helpers import larik, shell_with_magics

HOOKS = {
    "hooks": {
        "UserPromptSubmit": [{"command": "echo prompt checked"}],
        "PreToolUse": [{"matcher": "bash", "command": "echo about to run bash"}],
        "PostToolUse": [{"matcher": "*", "command": "echo logged the call; echo second line >&2"}],
    }
}


def test_hook_notices_survive_a_reload_and_show_in_history_and_export(project: Path, tmp_path: Path) -> None:
    personal(HOOKS)
    agent = Agent(project, model=scripted(tmp_path, [tool("bash", command="echo hi")], done()), yes=True)
    view = TranscriptView()
    agent.subscribe(view.handle)
    agent.run("run something")
    path = agent.session_path
    agent.close()

    stored = replay(load_entries(path).entries).all
    prompt, _, results, _ = stored
    assert prompt.hooks == ["UserPromptSubmit hook `echo prompt checked`: prompt checked"]
    (result,) = results.tool_results()
    assert result.hooks == [
        "PreToolUse hook `echo about to run bash`: about to run bash",
        "PostToolUse hook `echo logged the call; echo second line >&2`: logged the call\nsecond line",
    ]
    # The live view and the history from disk draw the same picture, notices included.
    live = render_parts(view.parts)
    assert "> PostToolUse hook" in live and "> UserPromptSubmit hook" in live
    assert render_parts(parts_from_messages(list(stored), include_prompts=False)) == as_stored(live)
    # Never sent to a model.
    assert "about to run bash" not in json.dumps(anthropic_messages(list(stored)))
    assert "prompt checked" not in json.dumps(openai_messages("", list(stored)))

    exported = export_markdown(path, None, cwd=project, redactor=redactor_for(project)).read_text()
    assert "> *Hook:* UserPromptSubmit hook `echo prompt checked`: prompt checked" in exported
    assert "> *Hook:* PostToolUse hook `echo logged the call; echo second line >&2`: logged the call\n> second line" in exported


def test_history_in_the_notebook_shows_hook_notices_after_a_resume(project: Path, tmp_path: Path) -> None:
    personal(HOOKS)
    shell, magics = shell_with_magics(project, scripted(tmp_path, [tool("bash", command="echo hi")], done()))
    larik(shell, "run something")
    session_id = magics.agent.session_id  # type: ignore[union-attr]
    larik(shell, "/new")
    with capture_output() as shown:
        larik(shell, f"/resume {session_id}")
    history = "\n".join(o.data.get("text/markdown", "") for o in shown.outputs)
    assert "**You:** run something\n\n> UserPromptSubmit hook `echo prompt checked`: prompt checked" in history
    assert "> PreToolUse hook `echo about to run bash`: about to run bash" in history
    magics.agent.close()  # type: ignore[union-attr]


def test_stop_hook_notices_are_kept_on_the_turns_usage_entry(project: Path, tmp_path: Path) -> None:
    personal({"hooks": {"Stop": [{"command": "echo turn is over"}]}})
    agent = Agent(project, model=scripted(tmp_path, done()), yes=True)
    view = TranscriptView()
    agent.subscribe(view.handle)
    agent.run("hello")
    path = agent.session_path
    agent.close()

    entries = load_entries(path).entries
    closing = entries[-1]
    assert closing.type == "usage" and closing.hooks == ["Stop hook `echo turn is over`: turn is over"]
    live = render_parts(view.parts)
    assert render_parts(parts_from_entries(list(entries), include_prompts=False)) == as_stored(live)
    exported = export_markdown(path, None, cwd=project, redactor=redactor_for(project)).read_text()
    assert "> *Hook:* Stop hook `echo turn is over`: turn is over" in exported
