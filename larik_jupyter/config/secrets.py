"""The secrets a project's config knows of, for the one `Redactor` the trace and the exports share:
values under secret-named keys (an MCP server's `env.GITHUB_TOKEN`, a header's `Authorization`),
named by their dotted key, and the environment variables a `*_env` key names as holding a key
(`providers.<name>.api_key_env`), named by the variable."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from larik_jupyter import paths
from larik_jupyter.config.layer_file import read_json_object
from larik_jupyter.config.layers import config_layers, user_config_path
from larik_jupyter.redaction import MIN_SECRET, SECRET_NAME, Redactor, environment_secrets


def _walk(data: Any, where: str, found: dict[str, str], env_names: set[str]) -> None:
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        dotted = f"{where}.{key}" if where else str(key)
        if dotted == "approvals":
            continue  # hashes of approved definitions, named by what they approve
        if isinstance(value, dict):
            _walk(value, dotted, found, env_names)
        elif isinstance(value, str) and str(key).endswith("_env"):
            env_names.add(value)
        elif isinstance(value, str) and SECRET_NAME.search(str(key)) and len(value) >= MIN_SECRET:
            found.setdefault(dotted, value)


def _layer_files(cwd: str | os.PathLike[str] | None) -> list[Path]:
    """The personal config, and with `cwd` (when it is a directory) its project's layers too."""
    if cwd is None or not os.path.isdir(cwd):
        return [user_config_path()]
    return [layer.path for layer in config_layers(paths.project_root(cwd))]


def configured_secrets(cwd: str | os.PathLike[str] | None) -> tuple[dict[str, str], set[str]]:
    """The secret values the config layers of `cwd`'s project hold, by dotted key, and the
    environment variables they name as holding keys. Every layer counts, trusted or not: a
    secret is hidden wherever it was written. A layer that cannot be read is passed over."""
    found: dict[str, str] = {}
    env_names: set[str] = set()
    for path in _layer_files(cwd):
        try:
            _walk(read_json_object(path), "", found, env_names)
        except (OSError, ValueError):
            continue  # loading the config says what is wrong with it; here it only hides less
    return found, env_names


def redactor_for(cwd: str | os.PathLike[str] | None) -> Redactor:
    """The `Redactor` of `cwd`'s project (None: the personal config alone): the environment's
    secrets, those its config names, and the values its config holds."""
    found, env_names = configured_secrets(cwd)
    return Redactor(environment_secrets(env_names) | found)
