"""Exports carry no secrets: a token, an API key and a bearer token printed by the agent's `python`
call come out as `[redacted: NAME]` in the Markdown export, the branch as a notebook and replay's
report, as the debug trace has them; a value nothing names as secret is left as it is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from agent_helpers import done, personal, scripted, tool

from larik_jupyter import Agent, KernelHost
from larik_jupyter.config.secrets import redactor_for

TOKEN = "tok-9f8e7d6c5b4a3210"
API_KEY = "sk-ant-api03-Q2x7Yq9Lm4Kp8Zr1Tn6Vb3Wc5"
BEARER = "eyJhbGciOiJIUzI1NiJ9.cGF5bG9hZA.c2lnbmF0dXJl"
CODE = (
    "import os\n"
    'print(os.environ.get("MY_SERVICE_TOKEN"), os.environ.get("ANTHROPIC_API_KEY"), open("data.txt").read().strip())\n'
    'print(open("auth.txt").read().strip(), open("data.txt").read().strip())'
)


@pytest.fixture
def recorded(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Agent:
    """A session whose python call printed the token, the key and an Authorization header, and
    whose reply repeats the token."""
    monkeypatch.setenv("MY_SERVICE_TOKEN", TOKEN)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    (project / "data.txt").write_text("v1\n")
    (project / "auth.txt").write_text(f"Authorization: Bearer {BEARER}\n")
    monkeypatch.chdir(project)
    model = scripted(
        tmp_path, [tool("python", code=CODE)], done(f"The token is {TOKEN}."), [tool("python", code=CODE)], done("Again."),
    )
    agent = Agent(project, model=model, yes=True, host=KernelHost({}))
    outcome = agent.run("print the credentials")
    assert TOKEN in outcome.text  # the secret did flow through the session
    agent.sync()
    return agent


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    run = subprocess.run([sys.executable, "-m", "larik_jupyter", *args], cwd=cwd, capture_output=True,
                         text=True, timeout=120, env=env if env is not None else dict(os.environ))
    assert run.returncode == 0, run.stderr
    return run.stdout


def _assert_redacted(text: str) -> None:
    assert TOKEN not in text and API_KEY not in text and BEARER not in text
    assert "[redacted: MY_SERVICE_TOKEN] [redacted: ANTHROPIC_API_KEY] v1" in text
    assert "Authorization: Bearer [redacted: bearer token] v1" in text


def test_the_markdown_export_and_the_notebook_redact_the_token_and_the_key(recorded: Agent, project: Path) -> None:
    session = recorded.session_id
    stored = recorded.session_path.read_text()
    assert TOKEN in stored and API_KEY in stored  # the session file keeps the truth; exports do not
    _cli("export", session, "out.md", cwd=project)
    markdown = (project / "out.md").read_text()
    _assert_redacted(markdown)
    assert "The token is [redacted: MY_SERVICE_TOKEN]." in markdown
    _cli("notebook", session, "out.ipynb", cwd=project)
    raw = (project / "out.ipynb").read_text()
    assert TOKEN not in raw and API_KEY not in raw and BEARER not in raw
    notebook = nbformat.reads(raw, as_version=4)
    nbformat.validate(notebook)
    [code] = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code.source == CODE  # the code as it ran: no secret in it, nothing redacted
    _assert_redacted(code.outputs[0].text)


def test_replay_redacts_its_table_and_diffs(recorded: Agent, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "data.txt").write_text("v2\n")  # the replayed line differs, so the diff shows it
    report = recorded.replay()
    table = report.table()
    assert "changed" in table and "+ [redacted: MY_SERVICE_TOKEN] [redacted: ANTHROPIC_API_KEY] v2" in table
    assert "+ Authorization: Bearer [redacted: bearer token] v2" in table
    _assert_redacted(table)
    # Nothing names the token as a secret any more: the same report shows it.
    monkeypatch.delenv("MY_SERVICE_TOKEN")
    assert f"- {TOKEN} [redacted: ANTHROPIC_API_KEY] v1" in report.table()


def test_diff_redacts_the_outputs_it_shows_side_by_side(recorded: Agent, project: Path) -> None:
    first = recorded.session_id
    recorded.fork()
    (project / "data.txt").write_text("v2\n")
    recorded.run("print them again")
    shown = recorded.diff(first).render()
    assert "[redacted: MY_SERVICE_TOKEN]" in shown and "Bearer [redacted: bearer" in shown
    assert TOKEN not in shown and API_KEY not in shown and BEARER not in shown


def test_a_value_nothing_names_as_secret_is_left_and_the_config_can_name_it(
    recorded: Agent, project: Path
) -> None:
    session = recorded.session_id
    env = {k: v for k, v in os.environ.items() if k not in ("MY_SERVICE_TOKEN", "ANTHROPIC_API_KEY")}
    _cli("export", session, "plain.md", cwd=project, env=env)
    plain = (project / "plain.md").read_text()
    # The token has no known shape; the key still has one, and says so.
    assert f"{TOKEN} [redacted: Anthropic API key] v1" in plain
    # The same value under a name that says nothing, which the config names as a provider's key.
    personal({"providers": {"internal": {"api_key_env": "SVC_ACCESS"}}})
    _cli("export", session, "named.md", cwd=project, env={**env, "SVC_ACCESS": TOKEN})
    named = (project / "named.md").read_text()
    assert TOKEN not in named and "The token is [redacted: SVC_ACCESS]." in named


def test_values_the_config_holds_are_named_by_their_key(project: Path) -> None:
    personal({"mcpServers": {"gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghx-0123456789abcdef"}}}})
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"db": {"command": "db", "env": {"DB_PASSWORD": "hunter2-hunter2"}}}}))
    text = redactor_for(project).text("gh ghx-0123456789abcdef db hunter2-hunter2")
    assert text == "gh [redacted: mcpServers.gh.env.GITHUB_TOKEN] db [redacted: mcpServers.db.env.DB_PASSWORD]"


def test_values_known_by_their_shape_are_named_and_base64_data_is_left() -> None:
    redactor = redactor_for(None)
    shapes = {
        "sk-ant-api03-" + "a1" * 12: "Anthropic API key",
        "sk-proj-" + "b2" * 12: "OpenAI API key",
        "ghp_" + "c3" * 18: "GitHub token",
        "github_pat_" + "d4" * 16: "GitHub token",
        "glpat-" + "e5" * 10: "GitLab token",
        "hf_" + "f6" * 16: "Hugging Face token",
        "xoxb-1234567890-abcdef": "Slack token",
        "AIza" + "g7" * 17 + "h": "Google API key",
        "AKIA" + "Z9" * 8: "AWS access key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----": "private key",
    }
    for value, name in shapes.items():
        assert redactor.text(f"got {value}.") == f"got [redacted: {name}]."
    assert redactor.text("curl -H 'authorization: bearer abc.def-123'") == "curl -H 'authorization: bearer [redacted: bearer token]'"
    # Inside a longer token (an image's base64, a longer word) no shape is seen.
    image = "data:image/png;base64,iVBORw0KGgoAAAIza" + "x" * 35 + "AKIA" + "Q" * 16 + "rest"
    assert redactor.text(image) == image
    assert redactor.text("mask-" + "a" * 30) == "mask-" + "a" * 30
