"""notebook_read and notebook_edit on real .ipynb files: every edit mode, cell-N addressing,
refusals that leave the file unchanged, paging, layout kept byte for byte, checkpoint undo."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from larik_jupyter.checkpoint.store import CheckpointStore
from larik_jupyter.tools import Env
from larik_jupyter.tools.env import CallContext
from larik_jupyter.tools.images import MAX_PER_RESULT, MAX_SIDE
from larik_jupyter.tools.notebook.cells import NotebookReadTool
from larik_jupyter.tools.notebook.edit import NotebookEditTool
from tests.agent_helpers import call, make_env
from tests.rule_calls import subject


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


def write_nb(path: Path, cells: list[Any], minor: int = 5) -> bytes:
    nb = new_notebook(cells=cells)
    nb.nbformat_minor = minor
    if minor < 5:
        for cell in nb.cells:
            cell.pop("id", None)
    nbformat.write(nb, str(path))
    return path.read_bytes()


def sample(root: Path) -> Path:
    path = root / "a.ipynb"
    boom = new_code_cell("x = 1\n1/0", id="boom", execution_count=2)
    boom.outputs = [
        new_output(
            "error",
            ename="ZeroDivisionError",
            evalue="division by zero",
            traceback=["\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"],
        )
    ]
    write_nb(
        path,
        [
            new_markdown_cell("# Title", id="intro"),
            boom,
            new_code_cell("print('hi')", id="tail", execution_count=3,
                          outputs=[new_output("stream", name="stdout", text="hi\n")]),
        ],
    )
    return path


def cells_json(path: Path) -> list[str]:
    """Each cell's JSON text as the file holds it (nbformat's layout: indent 1, sorted keys)."""
    return [json.dumps(c, indent=1, sort_keys=True, ensure_ascii=False) for c in json.loads(path.read_text())["cells"]]


def test_read_lists_cells_with_outputs_in_an_envelope(root: Path) -> None:
    sample(root)
    env = make_env(root)
    result = call(env, "notebook_read", path="a.ipynb")
    text = result.content
    assert not result.is_error
    assert "a.ipynb: 3 cells (nbformat 4.5); showing cells 1-3." in text
    assert "--- cell 2 · id boom · code · execution_count 2" in text
    assert "ZeroDivisionError: division by zero" in text and "\x1b" not in text
    assert f'<notebook-data nonce="{env.call.nonce}" source="a.ipynb">' in text
    assert text.rstrip().endswith(f'</notebook-data nonce="{env.call.nonce}">')
    bare = call(env, "notebook_read", path="a.ipynb", include_outputs=False).content
    assert "division by zero" not in bare and "1/0" in bare


def test_read_pages_and_picks_cells(root: Path) -> None:
    path = root / "big.ipynb"
    write_nb(path, [new_code_cell(f"n = {i}", id=f"c{i}") for i in range(120)])
    env = make_env(root)
    first = call(env, "notebook_read", path="big.ipynb").content
    assert "120 cells" in first and "showing cells 1-50" in first and "start=51" in first
    assert "n = 49" in first and "n = 50" not in first
    page = call(env, "notebook_read", path="big.ipynb", start=111, limit=20).content
    assert "showing cells 111-120" in page and "start=" not in page
    picked = call(env, "notebook_read", path="big.ipynb", cell_ids=["c7", "c3"]).content
    assert picked.index("n = 3") < picked.index("n = 7") and "n = 4" not in picked
    missing = call(env, "notebook_read", path="big.ipynb", cell_ids=["nope"])
    assert missing.is_error and "no cell 'nope'" in missing.content


def test_read_sends_images_as_blocks(root: Path) -> None:
    from PIL import Image

    def png(size: tuple[int, int]) -> str:
        out = io.BytesIO()
        Image.new("RGB", size, "red").save(out, format="PNG")
        return base64.b64encode(out.getvalue()).decode()

    outputs = [new_output("display_data", data={"image/png": png((3000, 1000)), "text/plain": "<Figure>"})]
    outputs += [new_output("display_data", data={"image/png": png((10, 10))}) for _ in range(MAX_PER_RESULT)]
    write_nb(root / "img.ipynb", [new_code_cell("plot()", id="p", outputs=outputs)])
    result = call(make_env(root), "notebook_read", path="img.ipynb")
    assert len(result.images) == MAX_PER_RESULT
    # The note names the cell as the header above it does, counted from 1.
    assert "--- cell 1 · id p" in result.content
    assert "[image image/png of cell 1 not sent: at most 8 per result]" in result.content
    big = Image.open(io.BytesIO(base64.b64decode(result.images[0].source["data"])))
    assert max(big.size) == MAX_SIDE
    # The twin: the same cell second in the notebook is named cell 2.
    write_nb(root / "img2.ipynb", [new_code_cell("x = 1", id="a"), new_code_cell("plot()", id="p", outputs=outputs)])
    second = call(make_env(root), "notebook_read", path="img2.ipynb")
    assert "[image image/png of cell 2 not sent: at most 8 per result]" in second.content
    assert "of cell 1 not sent" not in second.content


def test_replace_whole_source_clears_outputs_and_keeps_other_cells(root: Path) -> None:
    path = sample(root)
    before = cells_json(path)
    captured: list[Path] = []
    result = call(make_env(root, captured), "notebook_edit", path="a.ipynb", cell_id="boom", new_source="x = 1\nx / 1")
    assert not result.is_error, result.content
    assert captured == [path.resolve()]
    assert "-1/0" in result.content and "+x / 1" in result.content and result.diff
    nb = nbformat.read(str(path), as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    boom = nb.cells[1]
    assert boom.source == "x = 1\nx / 1" and boom.outputs == [] and boom.execution_count is None
    after = cells_json(path)
    assert after[0] == before[0] and after[2] == before[2] and after[1] != before[1]


def test_replace_old_string_and_refusals_leave_the_file_unchanged(root: Path) -> None:
    path = sample(root)
    env = make_env(root)
    original = path.read_bytes()
    ambiguous = call(env, "notebook_edit", path="a.ipynb", cell_id="tail", old_string="i", new_string="o")
    assert ambiguous.is_error and "matches 2 places" in ambiguous.content
    missing = call(env, "notebook_edit", path="a.ipynb", cell_id="tail", old_string="zzz", new_string="o")
    assert missing.is_error and "not found" in missing.content
    both = call(env, "notebook_edit", path="a.ipynb", cell_id="tail", new_source="a", old_string="p", new_string="q")
    assert both.is_error and "not both" in both.content
    assert path.read_bytes() == original
    ok = call(env, "notebook_edit", path="a.ipynb", cell_id="boom", old_string="1/0", new_string="1/1")
    assert not ok.is_error
    assert nbformat.read(str(path), as_version=4).cells[1].source == "x = 1\n1/1"


def test_invalid_result_not_a_notebook_and_unparsable_are_refused(root: Path) -> None:
    path = sample(root)
    env = make_env(root)
    original = path.read_bytes()
    bad_type = call(env, "notebook_edit", path="a.ipynb", cell_id="boom", edit_mode="insert",
                    new_source="x", cell_type="heading")
    assert bad_type.is_error and "cell_type must be" in bad_type.content
    unencodable = call(env, "notebook_edit", path="a.ipynb", cell_id="boom", new_source="x = '\ud800'")
    assert unencodable.is_error and "left unchanged" in unencodable.content
    data = json.loads(original)
    del data["cells"][2]["outputs"]  # a code cell without outputs breaks the schema
    broken = root / "broken.ipynb"
    broken.write_text(json.dumps(data, indent=1))
    # Read as JupyterLab opens it, the problem named; an edit that adds no problem lands.
    read = call(env, "notebook_read", path="broken.ipynb")
    assert not read.is_error and "cell 3 (id tail): 'outputs' is a required property" in read.content
    allowed = call(env, "notebook_edit", path="broken.ipynb", cell_id="boom", new_source="y")
    assert not allowed.is_error, allowed.content
    assert json.loads(broken.read_text())["cells"][2] == data["cells"][2]
    (root / "notes.txt").write_text("hi")
    not_nb = call(env, "notebook_edit", path="notes.txt", cell_id="cell-0", new_source="y")
    assert not_nb.is_error and "is not a notebook" in not_nb.content
    (root / "torn.ipynb").write_text('{"cells": [')
    torn = call(env, "notebook_read", path="torn.ipynb")
    assert torn.is_error and "does not parse" in torn.content
    assert path.read_bytes() == original and (root / "torn.ipynb").read_text() == '{"cells": ['


def test_insert_and_delete(root: Path) -> None:
    path = sample(root)
    env = make_env(root)
    first = call(env, "notebook_edit", path="a.ipynb", edit_mode="insert", new_source="import os", cell_type="code")
    assert not first.is_error, first.content
    nb = nbformat.read(str(path), as_version=4)
    new_id = nb.cells[0].id
    assert f"Inserted code cell {new_id} as the first cell" in first.content
    after = call(env, "notebook_edit", path="a.ipynb", edit_mode="insert", cell_id="intro",
                 new_source="Some *notes*", cell_type="markdown")
    assert not after.is_error
    nb = nbformat.read(str(path), as_version=4)
    assert [c.cell_type for c in nb.cells] == ["code", "markdown", "markdown", "code", "code"]
    assert nb.cells[2].source == "Some *notes*" and len({c.id for c in nb.cells}) == 5
    gone = call(env, "notebook_edit", path="a.ipynb", edit_mode="delete", cell_id="tail")
    assert not gone.is_error and "-print('hi')" in gone.content
    nb = nbformat.read(str(path), as_version=4)
    nbformat.validate(nb)
    assert "tail" not in [c.id for c in nb.cells]
    no_id = call(env, "notebook_edit", path="a.ipynb", edit_mode="delete")
    assert no_id.is_error and "needs cell_id" in no_id.content


def test_notebook_without_ids_is_addressed_as_cell_n_and_never_upgraded(root: Path) -> None:
    path = root / "old.ipynb"
    write_nb(path, [new_code_cell("a = 1"), new_code_cell("b = 2"), new_code_cell("c = 3")], minor=4)
    env = make_env(root)
    read = call(env, "notebook_read", path="old.ipynb").content
    assert "nbformat 4.4" in read and "cell-N" in read and "--- cell 2 · id cell-2 · code" in read
    edit = call(env, "notebook_edit", path="old.ipynb", cell_id="cell-2", new_source="b = 20")
    assert not edit.is_error, edit.content
    added = call(env, "notebook_edit", path="old.ipynb", edit_mode="insert", cell_id="cell-3", new_source="d = 4")
    assert "cell-4" in added.content
    data = json.loads(path.read_text())
    assert data["nbformat_minor"] == 4
    assert all("id" not in cell for cell in data["cells"])
    assert [("".join(c["source"])) for c in data["cells"]] == ["a = 1", "b = 20", "c = 3", "d = 4"]
    nbformat.validate(nbformat.reads(path.read_text(), as_version=nbformat.NO_CONVERT))


def test_layout_indent_key_order_and_newline_are_kept(root: Path) -> None:
    path = root / "vs.ipynb"
    nb = new_notebook(cells=[new_code_cell("a = 1", id="one"), new_code_cell("b = 2", id="two")])
    # Another editor's layout: two-space indent, insertion-ordered keys, no final newline.
    text = json.dumps(nbformat.from_dict(nb), indent=2, sort_keys=False)
    path.write_text(text)
    call(make_env(root), "notebook_edit", path="vs.ipynb", cell_id="two", new_source="b = 3")
    new_text = path.read_text()
    assert not new_text.endswith("\n")
    first_cell = json.dumps(json.loads(text)["cells"][0], indent=2)
    assert "\n".join("    " + line for line in first_cell.splitlines()).strip() in new_text
    assert new_text == text.replace('"b = 2"', '"b = 3"').replace(
        '"execution_count": null', '"execution_count": null'
    )


def test_default_path_is_the_kernel_notebook_and_edits_say_reload(root: Path) -> None:
    path = sample(root)
    env = make_env(root, call=CallContext(notebook_path=path))
    assert "3 cells" in call(env, "notebook_read").content
    result = call(env, "notebook_edit", cell_id="intro", new_source="# New title")
    assert "reload it from disk" in result.content and result.notices
    unknown = call(make_env(root), "notebook_read")
    assert unknown.is_error and "notebook this kernel belongs to is unknown" in unknown.content


def test_undo_restores_the_notebook_byte_for_byte(root: Path) -> None:
    path = sample(root)
    original = path.read_bytes()
    store = CheckpointStore("20260101-000000-abcdef", root)
    store.begin_turn()
    env = Env(cwd=root, root=root, checkpoints=store)
    assert not call(env, "notebook_edit", path="a.ipynb", cell_id="boom", new_source="1/1").is_error
    assert not call(env, "notebook_edit", path="a.ipynb", edit_mode="delete", cell_id="tail").is_error
    assert path.read_bytes() != original
    assert store.undo().restored == ["a.ipynb"]
    assert path.read_bytes() == original


def test_always_allow_of_an_edit_of_the_kernels_notebook_allows_only_that_notebook(
    root: Path, tmp_path: Path
) -> None:
    from larik_jupyter import Agent
    from larik_jupyter.agent.permissions import PermissionAnswer, PermissionRequest
    from tests.agent_helpers import scripted, text, tool

    sample(root)
    write_nb(root / "b.ipynb", [new_code_cell("z = 0", id="other")])
    spec = scripted(
        tmp_path,
        [tool("notebook_edit", cell_id="tail", new_source="print(1)")], [text("ok")],
        [tool("notebook_edit", cell_id="tail", new_source="print(2)")], [text("ok")],
        [tool("notebook_edit", path="b.ipynb", cell_id="other", new_source="z = 1")], [text("ok")],
    )
    asked: list[PermissionRequest] = []

    async def approver(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return PermissionAnswer("always" if len(asked) == 1 else "deny")

    agent = Agent(root, model=spec, approver=approver)
    own = root / "a.ipynb"
    agent.run("edit my notebook", notebook=own)
    agent.run("edit it again", notebook=own)  # allowed by the rule for a.ipynb, no ask
    assert len(asked) == 1 and "print(2)" in (root / "a.ipynb").read_text()
    agent.run("edit another notebook", notebook=own)  # b.ipynb is not covered: it asks
    assert len(asked) == 2 and asked[1].input["path"] == "b.ipynb"
    assert "z = 0" in (root / "b.ipynb").read_text()
    agent.close()
def test_approval_preview_shows_the_cell_diff_without_writing(root: Path) -> None:
    from larik_jupyter.agent.preview import preview_change

    path = sample(root)
    original = path.read_bytes()
    env = make_env(root)
    detail = preview_change(env, NotebookEditTool(), {"path": "a.ipynb", "cell_id": "boom", "new_source": "2/1"}).text
    assert detail.startswith("Replace the source of cell 2 (boom) of a.ipynb and clear its outputs?\n--- a/a.ipynb cell 2 (boom)")
    assert "+2/1" in detail and "No newline" not in detail
    bad = preview_change(env, NotebookEditTool(), {"path": "a.ipynb", "cell_id": "zz", "new_source": "x"}).text
    assert bad.startswith("(no preview: ") and "no cell 'zz'" in bad
    assert path.read_bytes() == original


def test_rules_match_notebook_paths(root: Path) -> None:
    from larik_jupyter.config.decide import decide
    from larik_jupyter.config.model import Config, Permissions

    assert NotebookReadTool.default_permission == "allow"
    assert NotebookEditTool.default_permission == "ask"
    rules = Config(permissions=Permissions(allow=["notebook_edit(nb/**)"], deny=["notebook_read(secret/**)"]))
    assert decide(rules, subject("notebook_edit", {"path": "nb/a.ipynb"}), root=root, cwd=root) == "allow"
    assert decide(rules, subject("notebook_edit", {"path": "other/a.ipynb"}), root=root, cwd=root) is None
    assert decide(rules, subject("notebook_read", {"path": "secret/x.ipynb"}), root=root, cwd=root) == "deny"


def test_the_insert_preview_names_the_id_the_cell_then_gets(root: Path) -> None:
    from larik_jupyter.agent.preview import preview_change

    sample(root)
    env = make_env(root)
    call = {"path": "a.ipynb", "edit_mode": "insert", "cell_id": "boom", "new_source": "print(2)"}
    question = preview_change(env, NotebookEditTool(), call).text.split("\n", 1)[0]
    assert question.startswith("Insert a new code cell (") and question.endswith(") after cell 2 (boom) of a.ipynb?")
    NotebookEditTool().execute(env, call)
    ids = [cell.id for cell in nbformat.read(root / "a.ipynb", 4).cells]
    assert question.split("(", 1)[1].split(")", 1)[0] in ids
