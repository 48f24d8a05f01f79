"""What a user types reaches `%larik` unchanged: questions ending in `?` are prompts, not help."""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from larik_jupyter.frontends.notebook.async_cells import install_transformers
from larik_jupyter.frontends.notebook.magics import LarikMagics
from tests.widget_helpers import shell_with_magics, talkative


def prompts(magics: LarikMagics) -> list[str]:
    assert magics.agent is not None
    return [m.prompt_text() for m in magics.agent.loop.session.state.all if m.is_prompt()]


@pytest.fixture
def shell(project: Path, tmp_path: Path) -> tuple[InteractiveShell, LarikMagics]:
    shell, magics = shell_with_magics(project, talkative(tmp_path))
    install_transformers(shell)
    return shell, magics


@pytest.mark.parametrize(
    "source",
    ["%larik what does sales contain?", "%larik is this right??", "%larik --new why is x 3 ?"],
)
def test_a_question_in_its_own_cell_is_the_prompt(
    shell: tuple[InteractiveShell, LarikMagics], source: str
) -> None:
    ip, magics = shell
    result = ip.run_cell(source)
    assert result.success, result.error_in_exec
    expected = source.removeprefix("%larik ").removeprefix("--new ")
    assert prompts(magics) == [expected]


def test_a_question_inside_a_larger_cell_is_the_prompt(
    shell: tuple[InteractiveShell, LarikMagics],
) -> None:
    ip, magics = shell
    result = ip.run_cell("x = 3\nif x:\n    %larik what is x?\ny = x + 1\n")
    assert result.success, result.error_in_exec
    assert prompts(magics) == ["what is x?"]
    assert ip.user_ns["y"] == 4


def test_a_cell_magic_body_keeps_its_question_marks(
    shell: tuple[InteractiveShell, LarikMagics],
) -> None:
    ip, magics = shell
    result = ip.run_cell("%%larik\nWhat does sales contain?\n%larik is not a magic here?\n")
    assert result.success, result.error_in_exec
    assert prompts(magics) == ["What does sales contain?\n%larik is not a magic here?"]


@pytest.mark.parametrize("source", ["%larik?", "%larik??"])
def test_the_magic_alone_with_a_question_mark_is_still_help(
    shell: tuple[InteractiveShell, LarikMagics], source: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ip, magics = shell
    ip.run_cell(source)
    assert "Talk to the agent" in capsys.readouterr().out
    assert magics.agent is None
