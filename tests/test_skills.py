"""Skills: SKILL.md folders, personal over repository, listed by name and description in the
system prompt, loaded by the `skill` tool, shown by `/skills`, `/history` and the export."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from IPython.utils.capture import capture_output

from larik_jupyter import Agent
from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.config.skills import load_skills, skills_prompt
from larik_jupyter.session.export import export_markdown
from larik_jupyter.testing import ScriptedHTTPServer
from tests.agent_helpers import done, results_of, scripted, tool
from tests.widget_helpers import larik, shell_with_magics

KEY = "sk-skills-test-0123456789abcdef"


def skill(base: Path, folder: str, text: str, **files: str) -> Path:
    """A skill folder `base/folder` with `text` as its SKILL.md and `files` beside it."""
    where = base / folder
    where.mkdir(parents=True)
    (where / "SKILL.md").write_text(text)
    for name, content in files.items():
        (where / name.replace("__", "/")).parent.mkdir(parents=True, exist_ok=True)
        (where / name.replace("__", "/")).write_text(content)
    return where


def load(name: str) -> dict[str, object]:
    """A `skill` tool_use block (`tool()` takes `name` itself)."""
    return {"type": "tool_use", "name": "skill", "input": {"name": name}}


def front(name: str, description: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}\n"


@pytest.fixture
def skills(project: Path, larik_dirs: dict[str, Path]) -> dict[str, Path]:
    """A personal and a repository `review` skill, a repository-only `deploy`, a broken one."""
    personal = larik_dirs["config"] / "skills"
    repo = project / ".larik" / "skills"
    out = {
        "personal": skill(personal, "review", front("review", "Review a change the personal way.",
                                                     "# Personal review\nRead checklist.md first."),
                          **{"checklist.md": "- tests\n", "scripts__lint.sh": "echo lint\n"}),
        "repo": skill(repo, "review", front("review", "Review the repository way.", "# Repository review")),
        "deploy": skill(repo, "deploy", front("deploy", "Deploy the app to staging.", "# Deploy\nRun make deploy.")),
        "broken": skill(repo, "nofront", "Just text, no front matter.\n"),
        "noname": skill(repo, "noname", "---\ndescription: Has no name.\n---\nbody\n"),
    }  # fmt: skip
    return out


def test_the_skill_tool_returns_the_personal_body_and_its_other_files(
    project: Path, tmp_path: Path, skills: dict[str, Path]
) -> None:
    os.symlink("/etc/passwd", skills["personal"] / "passwd")  # a symlink is never listed
    listed = skills["personal"].resolve()
    model = scripted(tmp_path, [load("review")],
                     [tool("read", path=str(listed / "checklist.md"))], done())  # fmt: skip
    agent = Agent(project, model=model)  # read-only: no approval needed
    outcome = agent.run("review my change")
    loaded, read = results_of(agent)
    assert outcome.status == "done" and not loaded.is_error
    assert "# Personal review\nRead checklist.md first." in loaded.content
    assert "Repository review" not in loaded.content and "description:" not in loaded.content
    assert f"- {listed / 'checklist.md'}\n- {listed / 'scripts/lint.sh'}" in loaded.content
    assert "passwd" not in loaded.content and "SKILL.md" not in loaded.content
    # The personal folder is outside the project, yet `read` may open the files it lists.
    assert not read.is_error and "- tests" in read.content
    agent.close()


def test_the_system_prompt_lists_names_and_descriptions_only(
    project: Path, skills: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    with ScriptedHTTPServer([{"content": [{"type": "text", "text": "ok"}]}], api_key=KEY) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        agent = Agent(project, model="anthropic:claude-sonnet-4-6")
        agent.run("hello")
        (request,) = server.requests
    agent.close()
    system = str(request.body["system"])
    assert "- review: Review a change the personal way." in system
    assert "- deploy: Deploy the app to staging." in system
    assert "Review the repository way." not in system  # the shadowed repository skill
    for body in ("Personal review", "checklist.md first", "Run make deploy", "nofront", "Has no name"):
        assert body not in system
    assert "skill" in [t["name"] for t in request.body["tools"]]


def test_skills_command_lists_sources_shadowed_and_broken(project: Path, tmp_path: Path, skills: dict[str, Path]) -> None:
    shell, magics = shell_with_magics(project, scripted(tmp_path, done()))
    with capture_output() as shown:
        larik(shell, "/skills")
    table = "\n".join(o.data.get("text/markdown", "") for o in shown.outputs)
    rows = {line.split(" | ")[0] + " | " + line.split(" | ")[1]: line for line in table.splitlines()[2:]}
    assert "Review a change the personal way." in rows["| review | personal"]
    assert "hidden by the personal skill" in rows["| review | repository"]
    assert "Deploy the app to staging." in rows["| deploy | repository"]
    assert "**broken**: SKILL.md has no YAML front matter" in rows["| nofront | repository"]
    assert "**broken**: the front matter of SKILL.md has no `name`" in rows["| noname | repository"]


def test_a_broken_skill_fails_its_call_and_never_the_turn(project: Path, tmp_path: Path, skills: dict[str, Path]) -> None:
    model = scripted(tmp_path, [load("nofront")], [load("absent")], done("Went on."))
    agent = Agent(project, model=model)
    outcome = agent.run("use the skills")
    broken, absent = results_of(agent)
    assert outcome.status == "done" and outcome.text == "Went on."
    assert broken.is_error and "The skill nofront" in broken.content and "no YAML front matter" in broken.content
    assert absent.is_error and "No skill is named 'absent'; the skills are: review, deploy." in absent.content
    agent.close()


def test_symlinked_skill_folders_are_broken_not_followed(project: Path, tmp_path: Path) -> None:
    elsewhere = skill(tmp_path, "outside", front("outside", "Lives elsewhere.", "secret body"))
    (project / ".larik" / "skills").mkdir(parents=True)
    os.symlink(elsewhere, project / ".larik" / "skills" / "outside")
    model = scripted(tmp_path, [load("outside")], done())
    agent = Agent(project, model=model)
    agent.run("load it")
    (result,) = results_of(agent)
    assert result.is_error and "symbolic link" in result.content and "secret body" not in result.content
    agent.close()


def test_history_and_export_show_loaded_skill(project: Path, tmp_path: Path, skills: dict[str, Path]) -> None:
    shell, magics = shell_with_magics(project, scripted(tmp_path, [load("deploy")], done()))
    larik(shell, "deploy it")
    with capture_output() as history:
        larik(shell, "/history")
    text = "\n".join(o.data.get("text/markdown", "") for o in history.outputs)
    assert "loaded skill deploy" in text and "Run make deploy." in text
    assert magics.agent is not None
    path = magics.agent.session_path
    magics.agent.close()
    exported = export_markdown(path, None, cwd=project, redactor=redactor_for(project)).read_text()
    assert "loaded skill deploy" in exported and "# Deploy\nRun make deploy." in exported


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("---\nname: x\n", "the front matter of SKILL.md is not closed by a `---` line"),
        ("---\nname: [x\n---\nbody\n", "the front matter of SKILL.md is not valid YAML"),
        ("---\n- a list\n---\nbody\n", "the front matter of SKILL.md is not a mapping"),
        ("---\nname: x\n---\nbody\n", "the front matter of SKILL.md has no `description`"),
        ("---\nname: two words\ndescription: d\n---\n", "the name 'two words' is not a skill name"),
    ],
)
def test_malformed_front_matter_is_broken_with_its_reason(project: Path, text: str, reason: str) -> None:
    skill(project / ".larik" / "skills", "odd", text)
    (found,) = load_skills(project)
    assert found.name == "odd" and found.error is not None and found.error.startswith(reason)
    assert skills_prompt([found]) == ""


def test_crlf_and_a_byte_order_mark_are_read(project: Path) -> None:
    skill(project / ".larik" / "skills", "win", "\ufeff---\r\nname: win\r\ndescription: From  Windows.\r\n---\r\nBody\r\n")
    (found,) = load_skills(project)
    assert found.usable and found.description == "From Windows."


def test_a_symlinked_skill_file_or_a_missing_one_is_broken(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "real.md"
    elsewhere.write_text(front("linked", "Linked.", "secret"))
    base = project / ".larik" / "skills"
    (base / "linked").mkdir(parents=True)
    os.symlink(elsewhere, base / "linked" / "SKILL.md")
    (base / "empty").mkdir()
    empty, linked = load_skills(project)
    assert empty.error == "it has no SKILL.md"
    assert linked.error is not None and "a symbolic link is refused" in linked.error


def test_skills_command_without_skills_says_where_to_put_them(
    project: Path, tmp_path: Path, larik_dirs: dict[str, Path]
) -> None:
    shell, _ = shell_with_magics(project, scripted(tmp_path, done()))
    with capture_output() as shown:
        larik(shell, "/skills")
    text = "\n".join(o.data.get("text/markdown", "") for o in shown.outputs)
    assert f"No skills found: put a folder with a `SKILL.md` in `{larik_dirs['config'] / 'skills'}/`" in text
