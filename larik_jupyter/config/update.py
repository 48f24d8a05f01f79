"""Safe edits of personal config files: approvals, "always allow" rules and `/config` settings."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock
from pydantic import ValidationError

from larik_jupyter import paths
from larik_jupyter.config.layer_file import NotAnObject, read_json_object
from larik_jupyter.config.layers import (
    LoadedConfig,
    PendingApproval,
    load_config,
    private_settings_path,
    user_config_path,
)
from larik_jupyter.config.model import Config
from larik_jupyter.config.rules import parse_rule
from larik_jupyter.errors import LarikError

_LOCK_TIMEOUT = 30.0
_POLL_SECONDS = 0.005


class ConfigError(LarikError):
    """A config file cannot be edited as asked."""


def lock_path(path: str | os.PathLike[str]) -> Path:
    """The `.lock` sidecar that serializes read-edit-write of `path` across processes."""
    return Path(os.fspath(path) + ".lock")


def _read_object(path: Path) -> dict[str, Any]:
    try:
        return read_json_object(path)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid JSON (line {exc.lineno} column {exc.colno}); fix it by hand "
            "before larik_jupyter can update it."
        ) from None
    except NotAnObject:
        raise ConfigError(
            f"{path} does not hold a JSON object; fix it by hand before updating it."
        ) from None


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600  # personal files: approvals and rules are nobody else's business
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def update_json(path: str | os.PathLike[str], mutate: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Edit a JSON object file in place under its `.lock` sidecar and return the new content.

    `mutate` edits the parsed object (missing file: `{}`); keys it does not touch survive as
    they were. The result is written to a temporary file, fsynced and renamed over `path`, so
    readers see the old or the new file, never a mix. If `mutate` raises, nothing is written.
    """
    target = Path(os.fspath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    # filelock polls; its 50 ms default makes contended writers mostly sleep.
    with FileLock(lock_path(target), timeout=_LOCK_TIMEOUT).acquire(poll_interval=_POLL_SECONDS):
        data = _read_object(target)
        mutate(data)
        _write_atomic(target, data)
    return data


def _object_at(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: `{key}` is not an object; fix it by hand before updating it.")
    return value


def find_pending(loaded: LoadedConfig, name: str) -> PendingApproval:
    """The pending item called `name` (or `kind:name`); ConfigError when none or ambiguous."""
    matches = [p for p in loaded.pending if name in (p.name, p.key)]
    if not matches:
        waiting = ", ".join(p.key for p in loaded.pending) or "nothing"
        raise ConfigError(f"Nothing called {name!r} awaits approval here (pending: {waiting}).")
    if len({p.kind for p in matches}) > 1:
        choices = ", ".join(p.key for p in matches)
        raise ConfigError(f"{name!r} is ambiguous; approve one of {choices} by its full name.")
    # With the same name in two shared files, the later layer's definition is the one that applies.
    return matches[-1]


def approve(cwd: str | os.PathLike[str], name: str) -> PendingApproval:
    """Approve the pending MCP server, hook, allow rule or LSP server called `name` (or `kind:name`).

    The approval is pinned to the definition's hash in the private project file.
    """
    loaded = load_config(cwd)
    chosen = find_pending(loaded, name)
    path = private_settings_path(loaded.root)

    def pin(data: dict[str, Any]) -> None:
        _object_at(_object_at(data, "approvals", path), chosen.kind, path)[chosen.name] = chosen.hash

    update_json(path, pin)
    return chosen


def add_allow_rule(cwd: str | os.PathLike[str], rule: str) -> Path:
    """Store an "always allow" rule in the private project file of `cwd`'s project; returns
    that file."""
    parse_rule(rule)
    path = private_settings_path(paths.project_root(cwd))

    def add(data: dict[str, Any]) -> None:
        allow = _object_at(data, "permissions", path).setdefault("allow", [])
        if not isinstance(allow, list):
            raise ConfigError(f"{path}: `permissions.allow` is not a list; fix it by hand first.")
        if rule not in allow:
            allow.append(rule)

    update_json(path, add)
    return path


def parse_setting_value(text: str) -> Any:
    """A `/config KEY VALUE` value: JSON when it parses (`7`, `true`, `["a"]`), else the text."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def set_user_setting(key: str, value: Any) -> None:
    """Set a dotted key in `<config>/config.json` (None removes it), validating before writing."""
    parts = key.split(".")
    if not all(parts):
        raise ConfigError(f"Setting name {key!r} is malformed; use a dotted key such as `compaction.threshold`.")
    path = user_config_path()

    def assign(data: dict[str, Any]) -> None:
        node = data
        for part in parts[:-1]:
            node = _object_at(node, part, path)
        if value is None:
            node.pop(parts[-1], None)
        else:
            node[parts[-1]] = value
        try:
            Config.model_validate(data)
        except ValidationError as exc:
            # Problems elsewhere in the file are not this edit's business; load reports them.
            for problem in exc.errors():
                loc = [str(p) for p in problem["loc"]]
                if loc[: len(parts)] == parts or parts[: len(loc)] == loc:
                    where = ".".join(loc)
                    raise ConfigError(
                        f"Cannot set {key} to {json.dumps(value)}: `{where}`: {problem['msg']}."
                    ) from None

    update_json(path, assign)
