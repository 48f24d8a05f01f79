"""One config file read as a layer: its JSON object (a missing or blank file is empty), each
value the config model refuses reported in one sentence and dropped alone (one hook, rule or
entry), the rest kept; a file that cannot be read or is not a JSON object is reported and
ignored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from larik_jupyter.config.model import Config, flatten_hooks

_MAX_FIX_PASSES = 50


class NotAnObject(ValueError):
    """A JSON file whose top level is not an object."""


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in `path`; {} when the file is missing or blank.

    Raises `json.JSONDecodeError` for bad JSON, `NotAnObject` for any other top level, and
    `OSError` / `UnicodeDecodeError` when the file cannot be read; each caller words these.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not text.strip():
        return {}
    data = json.loads(text)
    if not isinstance(data, dict):
        raise NotAnObject(path)
    return data


def read_layer(path: Path, label: str, errors: list[str]) -> dict[str, Any]:
    """The valid keys of the config file at `path` (shown as `label`); each problem is added to
    `errors` and only the bad part is dropped."""
    try:
        data = read_json_object(path)
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(f"{label}: could not be read ({exc}); fix or remove the file.")
        return {}
    except json.JSONDecodeError as exc:
        errors.append(
            f"{label}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            "the file was ignored until it is fixed."
        )
        return {}
    except NotAnObject:
        errors.append(f"{label}: expected a JSON object at the top level; the file was ignored.")
        return {}
    if "hooks" in data:
        data["hooks"] = flatten_hooks(data["hooks"])
    return _drop_invalid(data, label, errors)


def _drop_path(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """How much to drop for an error at `loc`: one hook or rule, else one entry of the key."""
    return loc[: 3 if loc[0] in ("hooks", "permissions") else 2]


def _describe(error: Any) -> str:
    msg = str(error["msg"]).removeprefix("Value error, ").rstrip(".")
    if error["type"] == "missing":
        return "expected this required key"
    if error["type"] == "value_error":
        return msg[:1].lower() + msg[1:]
    msg = "expected " + msg.removeprefix("Input should be ")
    got = json.dumps(error["input"], default=str)
    return f"{msg}, got {got if len(got) <= 60 else got[:57] + '...'}"


def _drop_invalid(data: dict[str, Any], label: str, errors: list[str]) -> dict[str, Any]:
    for _ in range(_MAX_FIX_PASSES):
        try:
            Config.model_validate(data)
            return data
        except ValidationError as exc:
            drops: set[tuple[int | str, ...]] = set()
            for error in exc.errors():
                loc = tuple(error["loc"])
                dotted = ".".join(str(part) for part in loc)
                errors.append(f"{label}: `{dotted}`: {_describe(error)}; that value was ignored.")
                drops.add(_drop_path(loc))
            # Deepest and highest list indices first so earlier deletions do not shift later ones.
            ordered = sorted(drops, key=lambda p: (len(p), p[-1] if isinstance(p[-1], int) else 0), reverse=True)
            if not [path for path in ordered if _delete(data, path)]:
                break
    errors.append(f"{label}: its invalid values could not be separated from the rest; the file was ignored.")
    return {}


def _delete(data: Any, path: tuple[int | str, ...]) -> bool:
    """Remove the value at `path`; False when there was nothing to remove."""
    for part in path[:-1]:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return False
    try:
        del data[path[-1]]
    except (KeyError, IndexError, TypeError):
        return False
    return True
