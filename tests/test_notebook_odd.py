"""Notebooks as JupyterLab reads them: invalid ones read with their problems named (cell and
field) and edited when nothing new breaks; broken image data reported as such; cells put back
by undo in a closed notebook's file change only those cells' bytes, whatever the layout."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from larik_jupyter.checkpoint.cells import CellsNotRestored, restore_in_file
from larik_jupyter.checkpoint.manifest import CellRecord, NotebookRecord
from tests.agent_helpers import call, make_env

CORPUS = Path(__file__).parent / "corpus" / "notebooks"


def code(cell_id: str | None, source: str, outputs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": "code", "execution_count": None, "metadata": {},
                            "outputs": outputs or [], "source": source}
    if cell_id is not None:
        cell["id"] = cell_id
    return cell


def notebook(cells: list[dict[str, Any]], minor: int = 5) -> dict[str, Any]:
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": minor}


@pytest.mark.parametrize(("name", "named"), [
    ("nbformat__tests_invalid.ipynb", "cell 1: 'source' is a required property"),
    ("nbformat__tests_invalid_cell_id.ipynb", "cell 1 (id $illegal_chars), field id:"),
    ("nbclient__files_Output.ipynb", "field metadata.kernelspec: 'name' is a required property"),
    ("vscode-jupyter__notebooks_k3d_widgets.ipynb", "cell 4: 'outputs' is a required property"),
])
def test_invalid_notebooks_read_with_the_problem_named_and_edit(tmp_path: Path, name: str, named: str) -> None:
    (tmp_path / name).write_bytes((CORPUS / name).read_bytes())
    env = make_env(tmp_path)
    read = call(env, "notebook_read", path=name)
    assert not read.is_error, read.content
    assert "does not validate" in read.content and named in read.content
    cells = json.loads((CORPUS / name).read_bytes())["cells"]
    last = f"cell-{len(cells) - 1}" if "id" not in cells[-1] else cells[-1]["id"]
    edit = call(env, "notebook_edit", path=name, edit_mode="insert", cell_id=last, new_source="x = 1")
    assert not edit.is_error, edit.content


def test_broken_image_data_is_reported_as_invalid(tmp_path: Path) -> None:
    outputs = [
        {"output_type": "display_data", "metadata": {}, "data": {"image/png": ""}},
        {"output_type": "display_data", "metadata": {}, "data": {"image/png": base64.b64encode(b"not a png").decode()}},
        {"output_type": "display_data", "metadata": {}, "data": {"image/png": "%%% not base64 %%%"}},
        {"output_type": "display_data", "metadata": {}, "data": {"image/jpeg": base64.b64encode(b"\xff\xd8\xffcut").decode()}},
    ]
    (tmp_path / "img.ipynb").write_text(json.dumps(notebook([code("a", "plot()", outputs)]), indent=1))
    read = call(make_env(tmp_path), "notebook_read", path="img.ipynb")
    assert not read.is_error, read.content
    assert read.content.count("[image/png image: invalid PNG data]") == 3
    assert "[image/jpeg image: invalid JPEG data]" in read.content
    assert "1 MB" not in read.content and not read.images


def _record(cell: dict[str, Any], position: int, previous: str | None) -> NotebookRecord:
    return NotebookRecord(path="nb.ipynb", cells=[
        CellRecord(id=str(cell["id"]), existed=True, position=position, previous=previous, cell=cell),
    ])


def test_undo_in_a_closed_notebook_changes_only_the_cell_it_puts_back(tmp_path: Path) -> None:
    before = notebook([code("a", "a = 1"), code("b", "b = 2"), code("c", "c = 3")])
    # Another editor's layout: indent 2, unsorted keys, CRLF, a byte-order mark, no final newline.
    body = json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": before["cells"]}, indent=2)
    raw = b"\xef\xbb\xbf" + body.replace("\n", "\r\n").encode()
    changed = raw.replace(b'"b = 2"', b'"b = 20"')
    path = tmp_path / "nb.ipynb"
    path.write_bytes(changed)
    # The browser's copy of the cell as it was (whole strings, its transient `trusted` flag).
    was = {**code("b", "b = 2"), "metadata": {"trusted": True}}
    assert restore_in_file(tmp_path, _record(was, 1, "a")) == "the file"
    assert path.read_bytes() == raw


def test_undo_in_a_closed_notebook_refuses_to_add_a_problem(tmp_path: Path) -> None:
    # nbformat 4.4 has no cell ids: a cell from the browser (with its id) would not validate.
    path = tmp_path / "nb.ipynb"
    raw = json.dumps(notebook([code(None, "a = 1")], minor=4), indent=1).encode() + b"\n"
    path.write_bytes(raw)
    with pytest.raises(CellsNotRestored, match=r"cell 1 \(id x\): Additional properties are not allowed \('id' was unexpected\)"):
        restore_in_file(tmp_path, _record(code("x", "old"), 1, None))
    assert path.read_bytes() == raw


def test_a_text_that_cannot_be_walked_is_written_whole_in_its_layout() -> None:
    from larik_jupyter.nbjson.splice import splice

    # The text does not hold the cells the data says it does (as if changed under the reader):
    # no splice can be trusted, so the notebook is written whole, in the text's layout.
    text = '{\r\n    "cells": [],\r\n    "nbformat": 4\r\n}'
    new = {"cells": [code(None, "x")], "nbformat": 4}
    out = splice(text, {"cells": [code(None, "old")], "nbformat": 4}, new)
    assert out.rewritten
    assert json.loads(out.raw) == new
    assert out.raw.decode().startswith('{\r\n    "cells": [\r\n        {\r\n') and not out.raw.endswith(b"\n")


def test_a_cell_inserted_in_a_file_with_keys_as_written_follows_its_neighbours(tmp_path: Path) -> None:
    cell = {"cell_type": "code", "source": ["a = 1"], "metadata": {}, "outputs": [], "execution_count": None}
    text = json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [cell]}, indent=2)
    (tmp_path / "nb.ipynb").write_text(text)
    result = call(make_env(tmp_path), "notebook_edit", path="nb.ipynb", edit_mode="insert", cell_id="cell-1",
                  new_source="b = 2")
    assert not result.is_error, result.content
    new = (tmp_path / "nb.ipynb").read_text()
    assert new.startswith(text[:text.rindex("}\n  ]")])  # the first cell and all before it unchanged
    assert list(json.loads(new)["cells"][1]) == list(cell)
