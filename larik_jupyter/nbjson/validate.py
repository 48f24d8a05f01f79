"""Whether a notebook validates, and if not, each problem named by cell and field.

The verdict comes from nbformat's own schema for the notebook's version, compiled with
`fastjsonschema` (what `nbformat.validate` uses first), without importing nbformat: that import
loads jsonschema and its format checkers, seconds on a first call. Only a notebook that does not
validate pays it, for `nbformat`'s messages. As `nbformat.validate` does, a 4.5 cell without an
id is not a problem (nbformat fills one in on read). An edit of a valid notebook is checked by
what it changed: the notebook without its cells, and the cells that are new objects.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import threading
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from larik_jupyter.errors import exception_text
from larik_jupyter.nbjson.cells import cell_number

MAX_MESSAGE = 160

_compiled: dict[tuple[int, str], Any] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class Problem:
    """One validation error: where (`where`, for people) and what; `key` is what an edit does
    not change about it (the field within its cell, not the cell's index, which an insert
    shifts)."""

    where: str
    message: str
    key: tuple[Any, ...]

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def version(data: dict[str, Any]) -> tuple[Any, Any]:
    """The notebook's (nbformat, nbformat_minor), as nbformat reads them."""
    return data.get("nbformat", 1), data.get("nbformat_minor") or 0


def _schema_dir() -> Path:
    spec = importlib.util.find_spec("nbformat")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("nbformat is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "v4"


def _relaxed(node: Any) -> Any:
    """nbformat's schema for a notebook from a later minor: extra keys, cell and output types
    allowed."""
    if isinstance(node, dict):
        return {k: True if k == "additionalProperties" else _relaxed(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_relaxed(v) for v in node]
    return node


def _validator(minor: int, part: str = "notebook") -> Any:
    """The compiled schema of nbformat 4.`minor` (the latest, relaxed, past 4.5), of a whole
    notebook or (`part` "cell") of one cell."""
    import fastjsonschema

    key = (min(minor, 6), part)
    with _lock:
        if key not in _compiled:
            name = f"nbformat.v4.{key[0]}.schema.json" if key[0] <= 5 else "nbformat.v4.schema.json"
            schema = json.loads((_schema_dir() / name).read_text(encoding="utf-8"))
            if key[0] > 5:
                schema = _relaxed(schema)
                definitions = schema["definitions"]
                definitions["cell"]["oneOf"].append({"$ref": "#/definitions/unrecognized_cell"})
                definitions["output"]["oneOf"].append({"$ref": "#/definitions/unrecognized_output"})
            if part == "cell":
                schema = {"definitions": schema["definitions"], "$ref": "#/definitions/cell"}
            _compiled[key] = fastjsonschema.compile(schema)
        return _compiled[key]


def warm() -> None:
    """Compile the schemas of today's notebooks ahead of the first notebook call."""
    _validator(5)
    _validator(5, "cell")


def _with_ids(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with a placeholder id in each 4.5+ cell that has none (a shallow copy; `data` is
    left alone), as `nbformat.validate` fills them in."""
    cells = data.get("cells")
    if version(data) < (4, 5) or not isinstance(cells, list):
        return data
    if all(not isinstance(c, dict) or "id" in c for c in cells):
        return data
    return {**data, "cells": [{**c, "id": "filled-in"} if isinstance(c, dict) and "id" not in c else c for c in cells]}


def is_valid(data: dict[str, Any]) -> bool:
    """Whether nbformat would validate `data` (an nbformat 4 notebook)."""
    import fastjsonschema

    major, minor = version(data)
    if major != 4 or not isinstance(minor, int) or minor < 0:
        return False
    try:
        _validator(minor)(_with_ids(data))
    except (fastjsonschema.JsonSchemaException, RecursionError):
        return False
    except Exception:  # noqa: BLE001 - JSON the generated validator did not expect: not valid
        return False
    return True


def problems(data: dict[str, Any]) -> list[Problem]:
    """Every validation problem of `data`, named by cell and field (empty when it validates)."""
    if is_valid(data):
        return []
    major, minor = version(data)
    if major != 4 or not isinstance(minor, int) or minor < 0:
        return [Problem("the notebook", f"nbformat {major!r}.{minor!r} has no schema (these tools read 4.x)",
                        ("version", repr(major), repr(minor)))]
    from nbformat.validator import ValidationError, iter_validate

    found: list[Problem] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            errors = list(iter_validate(copy.deepcopy(_with_ids(data))))
    except (ValidationError, RecursionError) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return [Problem("the notebook", _short(message), ("notebook", message))]
    except Exception as exc:  # noqa: BLE001 - nbformat's own failures on JSON it did not expect
        message = f"nbformat could not validate it ({exception_text(exc)})"
        return [Problem("the notebook", _short(message), ("notebook", message))]
    for error in errors:
        message, instance = str(error.message), repr(error.instance)
        if message.startswith(instance):  # "{…the whole cell…} is not valid under …"
            message = _named(error.instance) + message[len(instance):]
        found.append(_problem(data, list(error.relative_path), message))
    if not found:  # only fastjsonschema objects (a format it checks more strictly, say)
        found.append(Problem("the notebook", "it does not match nbformat's schema", ("schema",)))
    return found


def _named(value: Any) -> str:
    """What a message says instead of printing the whole value it is about."""
    if isinstance(value, dict) and isinstance(value.get("cell_type"), str):
        return f"a {value['cell_type']!r} cell"
    if isinstance(value, dict) and isinstance(value.get("output_type"), str):
        return f"an output of type {value['output_type']!r}"
    return "the value"


def _short(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE] + "…"


def _problem(data: dict[str, Any], path: list[Any], message: str) -> Problem:
    cells = data.get("cells")
    if len(path) >= 2 and path[0] == "cells" and isinstance(cells, list) and isinstance(path[1], int):
        index, rest = path[1], path[2:]
        cell = cells[index] if index < len(cells) else None
        name = cell_number(index)
        if isinstance(cell, dict) and isinstance(cell.get("id"), str):
            name += f" (id {cell['id']})"
        where = name + (f", field {_dotted(rest)}" if rest else "")
        return Problem(where, _short(message), ("cell", tuple(rest), message))
    where = f"field {_dotted(path)}" if path else "the notebook"
    return Problem(where, _short(message), ("notebook", tuple(path), message))


def _dotted(path: list[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _still_valid(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether `new` validates, `old` (valid, of the same version) being what it was made
    from: only what changed is checked (the notebook without its cells, and each cell that is
    not one of `old`'s own objects), so an edit of one cell costs one cell's check."""
    import fastjsonschema

    major, minor = version(new)
    if version(old) != (major, minor) or not isinstance(new.get("cells"), list):
        return is_valid(new)
    kept = {id(cell) for cell in old["cells"]}
    try:
        _validator(minor)({**new, "cells": []})
        check = _validator(minor, "cell")
        for cell in _with_ids(new)["cells"]:
            if id(cell) not in kept:
                check(cell)
    except (fastjsonschema.JsonSchemaException, RecursionError):
        return False
    return True


def new_problems(before: list[Problem], after: dict[str, Any], old: dict[str, Any] | None = None) -> list[Problem]:
    """The problems `after` has that the notebook did not have `before` an edit (by kind and
    count: an edit that keeps an invalid cell as it was adds nothing); `old`, the notebook
    `after` was made from, makes the check of a valid one cost only what changed."""
    if (old is not None and not before and _still_valid(old, after)) or is_valid(after):
        return []
    known = Counter(p.key for p in before)
    added = []
    for problem in problems(after):
        if known[problem.key] > 0:
            known[problem.key] -= 1
        else:
            added.append(problem)
    return added
