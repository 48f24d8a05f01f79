"""The pieces under the LSP manager: message framing, server defaults, diagnostic text."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from larik_jupyter.config.model import Config, LspServer
from larik_jupyter.lsp.connection import encode_message, read_message
from larik_jupyter.lsp.diagnostic import format_block, parse_diagnostics
from larik_jupyter.lsp.servers import effective_servers, serves


def test_messages_round_trip_through_content_length_framing() -> None:
    stream = io.BytesIO(
        encode_message({"jsonrpc": "2.0", "id": 1, "result": {"é": [1, 2]}})
        + b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
        + encode_message({"jsonrpc": "2.0", "method": "x"})
    )
    assert read_message(stream) == {"jsonrpc": "2.0", "id": 1, "result": {"é": [1, 2]}}
    assert read_message(stream) == {"jsonrpc": "2.0", "method": "x"}
    assert read_message(stream) is None


def test_truncated_and_headerless_messages() -> None:
    assert read_message(io.BytesIO(b"Content-Length: 50\r\n\r\n{}")) is None
    with pytest.raises(ValueError):
        read_message(io.BytesIO(b"X-Other: 1\r\n\r\n{}"))


def fake_executable(folder: Path, name: str) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_python_default_only_when_a_server_is_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert effective_servers(Config()) == {}
    pyright = fake_executable(tmp_path / "bin", "pyright-langserver")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    [(name, spec)] = effective_servers(Config()).items()
    assert (name, spec.command, spec.args, spec.languages) == ("pyright", str(pyright), ["--stdio"], ["python"])
    pylsp = fake_executable(tmp_path / "bin", "pylsp")
    assert effective_servers(Config()) == {"pylsp": effective_servers(Config())["pylsp"]}
    assert effective_servers(Config())["pylsp"].command == str(pylsp)


def test_configured_python_server_replaces_the_default_and_enabled_false_turns_it_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_executable(tmp_path / "bin", "pylsp")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    mine = Config.model_validate({"lspServers": {"ruff": {"command": "ruff", "args": ["server"], "patterns": ["**/*.py"]}}})
    assert list(effective_servers(mine)) == ["ruff"]
    off = Config.model_validate({"lspServers": {"pylsp": {"command": "pylsp", "enabled": False}}})
    assert effective_servers(off) == {}


def test_diagnostic_text_orders_by_severity_then_position_and_skips_bad_entries() -> None:
    raw = [
        {"range": {"start": {"line": 9, "character": 0}}, "severity": 2, "message": "unused\n  import",
         "source": "pyflakes"},
        {"range": {"start": {"line": 4, "character": 2}}, "severity": 1, "message": "bad", "code": "E1"},
        {"message": "no range"},
        {"range": {"start": {"line": 0, "character": 0}}, "severity": 4, "message": "hint"},
    ]
    assert format_block("srv", "pkg/m.py", parse_diagnostics(raw)) == (
        "Diagnostics (srv): 1 error, 1 warning, 1 hint in pkg/m.py:\n"
        "  line 5, col 3: error: bad (E1)\n"
        "  line 10, col 1: warning: unused import (pyflakes)\n"
        "  line 1, col 1: hint: hint"
    )


def test_patterns_match_names_anywhere_or_whole_paths_with_double_star() -> None:
    spec = LspServer(command="ls", patterns=["*.ts", "src/**/*.py"])
    assert serves(spec, "web/app.ts", None) and serves(spec, "src/a.py", None)
    assert serves(spec, "src/pkg/deep/a.py", None)
    assert not serves(spec, "lib/a.py", None) and not serves(spec, "app.tsx", None)
    assert serves(LspServer(command="ls", languages=["python"]), "x.pyi", "python")
