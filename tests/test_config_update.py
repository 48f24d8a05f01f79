from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from larik_jupyter import paths
from larik_jupyter.config.decide import decide
from larik_jupyter.config.layers import load_config, private_settings_path
from larik_jupyter.config.rules import RuleError
from larik_jupyter.config.update import (
    ConfigError,
    add_allow_rule,
    lock_path,
    parse_setting_value,
    set_user_setting,
    update_json,
)
from tests.rule_calls import subject

_WORKER = """
import sys
from larik_jupyter.config.update import update_json

path, worker = sys.argv[1], int(sys.argv[2])
sys.stdin.readline()  # start together
for i in range(50):
    def add(data, key=f"w{worker}-k{i}"):
        data.setdefault("keys", {})[key] = i
    update_json(path, add)
"""


def test_concurrent_updates_lose_nothing(tmp_path: Path) -> None:
    target = tmp_path / "projects" / "p.json"
    target.parent.mkdir()
    target.write_text('{"handWritten": {"keep": [1, 2]}, "keys": {}}\n')
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(target), str(n)], stdin=subprocess.PIPE, text=True
        )
        for n in range(8)
    ]
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.flush()
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.close()
        assert worker.wait(timeout=120) == 0
    data = json.loads(target.read_text())
    assert len(data["keys"]) == 400
    assert data["keys"] == {f"w{w}-k{i}": i for w in range(8) for i in range(50)}
    assert data["handWritten"] == {"keep": [1, 2]}
    assert lock_path(target).exists()
    assert [p.name for p in target.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_update_keeps_unknown_keys_and_returns_the_result(tmp_path: Path) -> None:
    target = tmp_path / "c.json"
    target.write_text('{"zzz": {"deep": true}, "model": "a:b"}')

    def change(data: dict[str, Any]) -> None:
        data["model"] = "c:d"

    assert update_json(target, change) == {"zzz": {"deep": True}, "model": "c:d"}
    assert json.loads(target.read_text()) == {"zzz": {"deep": True}, "model": "c:d"}


def test_update_creates_missing_file_and_directories(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "new.json"
    update_json(target, lambda data: data.update(x=1))
    assert json.loads(target.read_text()) == {"x": 1}


def test_failed_mutation_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "c.json"
    target.write_text('{"a": 1}')

    def explode(data: dict[str, Any]) -> None:
        data["a"] = 2
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        update_json(target, explode)
    assert target.read_text() == '{"a": 1}'


def test_invalid_json_is_never_overwritten(tmp_path: Path) -> None:
    target = tmp_path / "c.json"
    target.write_text('{"a": 1,')
    with pytest.raises(ConfigError, match=r"c\.json is not valid JSON \(line 1"):
        update_json(target, lambda data: data.update(b=2))
    assert target.read_text() == '{"a": 1,'


def test_always_allow_goes_to_the_private_project_file(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    private = private_settings_path(repo)
    private.parent.mkdir(parents=True)
    private.write_text('{"note": "mine"}')
    (repo / "sub").mkdir()
    add_allow_rule(repo / "sub", "bash(make test)")
    add_allow_rule(repo, "bash(make test)")
    assert json.loads(private.read_text()) == {"note": "mine", "permissions": {"allow": ["bash(make test)"]}}
    loaded = load_config(repo)
    assert decide(loaded, subject("bash", {"command": "make test"})) == "allow"
    assert loaded.source_of("permissions.allow.0") == loaded.layers[3].label


def test_always_allow_refuses_a_malformed_rule(tmp_path: Path) -> None:
    with pytest.raises(RuleError, match="malformed"):
        add_allow_rule(tmp_path, "bash(")


def test_set_user_setting_validates_and_keeps_other_keys() -> None:
    user = paths.config_dir() / "config.json"
    user.parent.mkdir(parents=True)
    user.write_text('{"custom": 1}')
    set_user_setting("model", "anthropic:claude-sonnet-4-5")
    set_user_setting("compaction.threshold", parse_setting_value("0.5"))
    assert json.loads(user.read_text()) == {
        "custom": 1,
        "model": "anthropic:claude-sonnet-4-5",
        "compaction": {"threshold": 0.5},
    }
    before = user.read_text()
    with pytest.raises(ConfigError, match=r"Cannot set max_steps to \"lots\": `max_steps`"):
        set_user_setting("max_steps", "lots")
    assert user.read_text() == before
    set_user_setting("model", None)
    assert "model" not in json.loads(user.read_text())


def test_parse_setting_value() -> None:
    assert parse_setting_value("7") == 7
    assert parse_setting_value("true") is True
    assert parse_setting_value('["a"]') == ["a"]
    assert parse_setting_value("anthropic:claude-sonnet-4-5") == "anthropic:claude-sonnet-4-5"
