"""Exact writes over real notebooks (tests/corpus/notebooks, sources in SOURCES.json) and
generated variants of some (CRLF, byte-order mark, no final newline, one line, compact): a
replace, an in-cell patch, an insert and a delete through notebook_edit each change only the
bytes of the cell they touch (and the separator beside it), keep the notebook valid when it
was, add no cell ids, keep the nbformat minor, and undo puts the original bytes back."""

from __future__ import annotations

import json
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest

from larik_jupyter.checkpoint.store import CheckpointStore
from larik_jupyter.nbjson.cells import index_name
from larik_jupyter.tools import Env
from tests.agent_helpers import call

CORPUS = Path(__file__).parent / "corpus" / "notebooks"
BOM = b"\xef\xbb\xbf"
DECODER = json.JSONDecoder()


def _variant(raw: bytes, kind: str) -> bytes:
    if kind == "crlf":
        return raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    if kind == "bom":
        return BOM + raw
    if kind == "no-final-newline":
        return raw.rstrip(b"\r\n")
    data = json.loads(raw)
    if kind == "one-line":
        return json.dumps(data, ensure_ascii=False).encode()
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"  # compact


VARIANT_BASES = (
    "nbformat__tests_test4.5.ipynb",
    "nbdime__files_multi_cell_nb.ipynb",
    "colabtools__notebooks_How_to_Use_Slideshow_Mode.ipynb",
    "vscode-jupyter__notebook_withOutputNew.ipynb",
    "nbformat__tests_invalid.ipynb",
)
VARIANTS = ("crlf", "bom", "no-final-newline", "one-line", "compact")


def _is_v4(raw: bytes) -> bool:
    data = json.loads(raw.decode("utf-8-sig"))
    return isinstance(data, dict) and data.get("nbformat") == 4


@dataclass(frozen=True)
class Case:
    name: str
    raw: bytes


def _cases() -> list[Case]:
    cases = [
        Case(path.name, path.read_bytes())
        for path in sorted(CORPUS.glob("*.ipynb"))
        if _is_v4(path.read_bytes())
    ]
    for base in VARIANT_BASES:
        raw = (CORPUS / base).read_bytes()
        cases += [Case(f"{base}[{kind}]", _variant(raw, kind)) for kind in VARIANTS]
    return cases


CASES = _cases()


def _cell_spans(raw: bytes) -> tuple[list[tuple[int, int]], int, int]:
    """Byte spans of each cell in the file, and where the cells array's content starts and ends
    (after `[`, at `]`): found by walking the JSON here, apart from the code under test."""
    text = raw.decode("utf-8")
    offset = 1 if text.startswith("\ufeff") else 0
    pos = text.index("{", offset) + 1
    while True:
        pos = _skip(text, pos)
        key, pos = DECODER.raw_decode(text, pos)
        pos = _skip(text, pos) + 1  # the colon
        pos = _skip(text, pos)
        if key == "cells":
            break
        _, pos = DECODER.raw_decode(text, pos)
        pos = _skip(text, pos) + 1  # the comma
    open_at, spans = pos + 1, []
    pos = _skip(text, open_at)
    while text[pos] != "]":
        _, end = DECODER.raw_decode(text, pos)
        spans.append((pos, end))
        pos = _skip(text, end)
        if text[pos] == ",":
            pos = _skip(text, pos + 1)

    def at(i: int) -> int:
        return len(text[:i].encode("utf-8"))

    return [(at(s), at(e)) for s, e in spans], at(open_at), at(pos)


def _skip(text: str, pos: int) -> int:
    while text[pos] in " \t\r\n":
        pos += 1
    return pos


def _only_between(old: bytes, new: bytes, low: int, high: int) -> bool:
    """Whether `new` is `old` with only the bytes between `low` and `high` replaced."""
    tail = len(old) - high
    return len(new) - tail >= low and new[:low] == old[:low] and new[len(new) - tail:] == old[high:]


def _validates(raw: bytes) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nbformat.validate(json.loads(raw.decode("utf-8-sig")))
    except nbformat.ValidationError:
        return False
    return True


def _patchable(cells: list[Any]) -> tuple[int, str] | None:
    """A cell with a line that occurs once in its source (for an in-cell patch)."""
    for index, cell in enumerate(cells):
        source = cell.get("source", "") if isinstance(cell, dict) else ""
        text = "".join(source) if isinstance(source, list) else str(source)
        for line in text.splitlines():
            if len(line.strip()) > 2 and text.count(line) == 1:
                return index, line
    return None


def _newlines(raw: bytes) -> set[bytes]:
    crlf = raw.count(b"\r\n")
    return ({b"\r\n"} if crlf else set()) | ({b"\n"} if raw.count(b"\n") > crlf else set())


@pytest.fixture(scope="module")
def validity() -> dict[str, bool]:
    return {case.name: _validates(case.raw) for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_edits_change_only_the_cells_they_touch(case: Case, tmp_path: Path, validity: dict[str, bool]) -> None:
    root = tmp_path / "project"
    root.mkdir()
    path = root / "nb.ipynb"
    path.write_bytes(case.raw)
    data = json.loads(case.raw.decode("utf-8-sig"))
    cells = data["cells"]
    spans, open_at, close_at = _cell_spans(case.raw)
    assert len(spans) == len(cells)
    had_ids = any(isinstance(c, dict) and "id" in c for c in cells)
    store = CheckpointStore("20260101-000000-abcdef", root)
    env = Env(cwd=root, root=root, checkpoints=store)
    ids = [call(env, "notebook_read", path="nb.ipynb", limit=10_000)]
    assert not ids[0].is_error, ids[0].content

    def cell_id(index: int) -> str:
        cell = cells[index]
        return str(cell["id"]) if had_ids and data.get("nbformat_minor", 0) >= 5 and "id" in cell else index_name(index)

    middle = len(cells) // 2
    edits: list[tuple[str, dict[str, Any], int, int]] = []  # what, args, allowed region
    if cells:
        start, end = spans[middle]
        edits.append(("replace", {"cell_id": cell_id(middle), "new_source": "print('replaced')\n"}, start, end))
        before = spans[middle - 1][1] if middle else open_at
        after = spans[middle + 1][0] if middle + 1 < len(cells) else close_at
        edits.append(("delete", {"cell_id": cell_id(middle), "edit_mode": "delete"}, before, after))
        next_start = spans[middle + 1][0] if middle + 1 < len(cells) else close_at
        edits.append(("insert", {"cell_id": cell_id(middle), "edit_mode": "insert", "cell_type": "code",
                                 "new_source": "x = 1\ny = 2"}, end, next_start))
    else:
        edits.append(("insert", {"edit_mode": "insert", "cell_type": "markdown", "new_source": "# New"},
                      open_at, close_at))
    found = _patchable(cells)
    if found is not None:
        index, line = found
        start, end = spans[index]
        edits.append(("patch", {"cell_id": cell_id(index), "old_string": line,
                                "new_string": line + " # patched"}, start, end))
    for what, args, low, high in edits:
        store.begin_turn()
        result = call(env, "notebook_edit", path="nb.ipynb", **args)
        assert not result.is_error, f"{what}: {result.content}"
        assert "written again" not in result.content, f"{what}: the file was rewritten whole"
        new = path.read_bytes()
        assert new != case.raw, what
        assert _only_between(case.raw, new, low, high), (
            f"{what} changed bytes outside {low}-{high}: {case.raw[low:high][:300]!r} became "
            f"{new[low:len(new) - (len(case.raw) - high)][:300]!r}"
        )
        assert _newlines(new) <= _newlines(case.raw) or not _newlines(case.raw), what
        assert new.startswith(BOM) == case.raw.startswith(BOM)
        result_data = json.loads(new.decode("utf-8-sig"))
        assert result_data.get("nbformat_minor") == data.get("nbformat_minor"), what
        if not had_ids:
            assert all("id" not in c for c in result_data["cells"] if isinstance(c, dict)), what
        if validity[case.name]:
            assert _validates(new), f"{what} left a notebook nbformat does not validate"
        store.undo()
        assert path.read_bytes() == case.raw, f"undo of {what} did not restore the original bytes"


def test_the_corpus_is_recorded_and_small() -> None:
    sources = {s["file"]: s for s in json.loads((CORPUS / "SOURCES.json").read_text())}
    files = sorted(p.name for p in CORPUS.glob("*.ipynb"))
    assert files == sorted(sources)
    for name in files:
        assert {"repository", "path", "commit", "licence"} <= sources[name].keys()
        assert len(sources[name]["commit"]) == 40
    assert sum((CORPUS / f).stat().st_size for f in files) < 10_000_000


def test_old_formats_name_their_version_and_how_to_convert(tmp_path: Path) -> None:
    old = [p for p in sorted(CORPUS.glob("*.ipynb")) if not _is_v4(p.read_bytes())]
    assert {json.loads(p.read_bytes())["nbformat"] for p in old} == {2, 3}
    env = Env(cwd=tmp_path, root=tmp_path)
    for source in old:
        shutil.copy(source, tmp_path / source.name)
        version = json.loads(source.read_bytes())["nbformat"]
        for tool, args in (("notebook_read", {}), ("notebook_edit", {"cell_id": "cell-1", "new_source": "x"})):
            result = call(env, tool, path=source.name, **args)
            assert result.is_error
            assert f"is an nbformat {version} notebook" in result.content
            assert "open" in result.content and "jupyter nbconvert --to notebook" in result.content
        assert (tmp_path / source.name).read_bytes() == source.read_bytes()
