from __future__ import annotations

import json
from pathlib import Path

import pytest

from larik_jupyter.config.layers import load_config, private_settings_path
from larik_jupyter.frontends.cli import main


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / ".larik").mkdir()
    (root / ".larik" / "settings.json").write_text(
        json.dumps(
            {
                "model": "anthropic:claude-sonnet-4-5",
                "max_steps": "many",
                "mcpServers": {"github": {"command": "gh-mcp", "args": ["serve"]}},
            }
        )
    )
    return root


def test_config_shows_values_sources_errors_and_pending(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--cwd", str(repo)]) == 0
    out = capsys.readouterr().out
    assert 'model = "anthropic:claude-sonnet-4-5"  (from .larik/settings.json)' in out
    assert "checkpoint_retention_days = 7  (default)" in out
    assert "`max_steps`: expected a valid integer" in out
    assert "awaiting approval" in out
    assert 'mcp:github  (from .larik/settings.json): {"command": "gh-mcp", "args": ["serve"]}' in out


def test_approve_refuses_without_a_terminal(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["approve", "--cwd", str(repo), "github"]) == 2
    captured = capsys.readouterr()
    assert '"command": "gh-mcp"' in captured.out
    assert "rerun with --yes" in captured.err
    assert not private_settings_path(repo).exists()
    assert load_config(repo).config.mcpServers == {}


def test_approve_with_yes_pins_the_definition(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["approve", "--cwd", str(repo), "--yes", "github"]) == 0
    assert "Approved mcp:github" in capsys.readouterr().out
    assert load_config(repo).config.mcpServers["github"].command == "gh-mcp"
    main(["config", "--cwd", str(repo)])
    out = capsys.readouterr().out
    assert 'mcpServers.github.command = "gh-mcp"  (from .larik/settings.json)' in out
    assert "awaiting approval" not in out


def test_approve_unknown_name_fails_with_one_line(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["approve", "--cwd", str(repo), "--yes", "gitlab"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Nothing called 'gitlab'" in err and "mcp:github" in err
