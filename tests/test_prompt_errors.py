"""Every way a prompt can fail to reach a model ends in one sentence saying what to do, never a
traceback: in a cell that is only `%larik` (the async path), inside a larger cell, and headless."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell
from nbclient import NotebookClient

from larik_jupyter.frontends.notebook.async_cells import install_transformers
from larik_jupyter.frontends.notebook.magics import LarikMagics
from larik_jupyter.testing.server import ScriptedHTTPServer
from tests.agent_helpers import done

CELLS = {"own cell": "{magic}", "inside a larger cell": "x = 1\n{magic}\ny = 2"}


@pytest.fixture
def shell(project: Path) -> tuple[InteractiveShell, LarikMagics]:
    shell = InteractiveShell.instance()
    magics = LarikMagics(shell=shell)
    magics.cwd = project
    shell.register_magics(magics)
    install_transformers(shell)
    return shell, magics


def run(ip: InteractiveShell, magic: str, where: str, capsys: pytest.CaptureFixture[str]) -> str:
    ip.run_cell(CELLS[where].format(magic=magic))
    captured = capsys.readouterr()
    output = captured.out + captured.err
    assert "Traceback" not in output and 'File "' not in output and "---->" not in output
    return output


@pytest.mark.parametrize("where", CELLS)
@pytest.mark.parametrize(
    ("model", "sentence"),
    [
        ("nonsense:foo", "UsageError: Unknown model 'nonsense:foo': write it as provider:model"),
        ("anthropic:claude-sonnet-4-6", "UsageError: ANTHROPIC_API_KEY is not set; set it to"),
        ("openai:gpt-5", "UsageError: OPENAI_API_KEY is not set; set it to"),
    ],
)
def test_a_model_that_cannot_be_opened_is_one_usage_error(
    shell: tuple[InteractiveShell, LarikMagics],
    capsys: pytest.CaptureFixture[str],
    where: str,
    model: str,
    sentence: str,
) -> None:
    ip, magics = shell
    output = run(ip, f"%larik --model {model} hi?", where, capsys)
    assert sentence in output
    assert output.count("UsageError") == 1


@pytest.mark.parametrize("where", CELLS)
@pytest.mark.parametrize(
    ("key", "failure", "sentence"),
    [
        ("wrong", None, "Error: Anthropic rejected the API key (401 unauthorized); set ANTHROPIC_API_KEY"),
        ("good", 403, "Error: Anthropic refused access to model 'claude-x' (403 forbidden)"),
        ("good", 404, "does not know model 'claude-x' (404); check the model name in 'anthropic:claude-x'"),
    ],
)
def test_a_provider_refusing_the_call_ends_the_turn_with_its_sentence(
    shell: tuple[InteractiveShell, LarikMagics],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    where: str,
    key: str,
    failure: int | None,
    sentence: str,
) -> None:
    ip, magics = shell
    reply = {"error": {"status": failure}} if failure else {"content": done()}
    with ScriptedHTTPServer([reply], api_key="good") as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        output = run(ip, "%larik --model anthropic:claude-x hi", where, capsys)
    assert sentence in output
    assert "wrong" not in output  # the rejected key is never shown


def test_a_refused_connection_says_which_server_to_check(
    shell: tuple[InteractiveShell, LarikMagics],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ip, magics = shell
    with ScriptedHTTPServer([]) as server:
        url = server.anthropic_base_url  # a port that was just free and is closed again below
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    output = run(ip, "%larik --model anthropic:claude-x hi", "own cell", capsys)
    assert f"check the network and that the server at {url} is running." in output


@pytest.mark.timeout(120)
def test_headless_error_output_has_no_traceback_frames(tmp_path: Path, project: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext larik_jupyter"),
        nbformat.v4.new_code_cell("%larik --model anthropic:claude-sonnet-4-6 what is this?"),
        nbformat.v4.new_code_cell("x = 1\n%larik --model nonsense:foo hi"),
    ]
    NotebookClient(
        nb, kernel_name="python3", timeout=60, allow_errors=True,
        resources={"metadata": {"path": str(project)}},
    ).execute()
    for cell, sentence in zip(
        nb.cells[1:],
        ["ANTHROPIC_API_KEY is not set; set it to your Anthropic API key", "Unknown model 'nonsense:foo'"],
        strict=True,
    ):
        texts = []
        for out in cell.outputs:
            if out.output_type == "error":
                assert len(out.traceback) <= 1, out.traceback  # no frames, just the sentence
                texts += out.traceback
            texts.append(out.get("text", ""))
        joined = "\n".join(texts)
        assert sentence in joined
        assert "Traceback" not in joined and "File " not in joined
