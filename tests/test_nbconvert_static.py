"""`jupyter nbconvert --to html --execute` of the quickstart, as a user runs it: every output
reads in the static page (no blank widget outputs, monospace where columns matter, denials
visible)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup, Tag

REPO = Path(__file__).resolve().parent.parent
JUPYTER = Path(sys.prefix) / "bin" / "jupyter"


def outputs_of(page: BeautifulSoup) -> list[tuple[str, list[Tag]]]:
    """Each code cell's source with its rendered outputs."""
    cells = []
    for cell in page.select("div.jp-CodeCell"):
        editor = cell.select_one("div.jp-InputArea-editor")
        source = editor.get_text().strip() if editor is not None else ""
        cells.append((source, cell.select("div.jp-OutputArea-output")))
    return cells


def only(cells: list[tuple[str, list[Tag]]], source: str) -> list[Tag]:
    (found,) = [outputs for text, outputs in cells if text == source]
    return found


@pytest.mark.timeout(240)
def test_executed_quickstart_html_shows_every_output_readably(project: Path, tmp_path: Path) -> None:
    shutil.copy(REPO / "notebooks" / "quickstart.ipynb", project)
    done = subprocess.run(
        [str(JUPYTER), "nbconvert", "--to", "html", "--execute", "quickstart.ipynb", "--output", "out"],
        cwd=project, capture_output=True, text=True, timeout=200, env=os.environ.copy(),
    )
    assert done.returncode == 0, done.stderr
    page = BeautifulSoup((project / "out.html").read_text(), "html.parser")
    cells = outputs_of(page)

    # The session widgets' outputs are their static renderings, not widget views that a
    # static page never renders.
    for command in ("%larik /checkpoints", "%larik /undo", "%larik /tree"):
        shown = only(cells, command)
        assert shown and all(out.get("data-mime-type") == "text/html" for out in shown), command
    # A turn shows no approval area or Stop control there (blank outputs: nothing can click).
    blank = [out for _, outputs in cells for out in outputs if "jupyter-widgets" in out.get("class", [])]
    assert blank == []

    checkpoints = only(cells, "%larik /checkpoints")
    assert [li.get_text(" ", strip=True) for out in checkpoints for li in out.select("li")] == [
        "Prompt 2: larik_demo.txt"
    ]

    undo = only(cells, "%larik /undo")
    assert [p.get_text(strip=True) for out in undo for p in out.select("p")][0] == "Undid prompt 2."
    assert [li.get_text(" ", strip=True) for out in undo for li in out.select("li")] == ["restored larik_demo.txt"]

    tree = " ".join(out.get_text(" ", strip=True) for out in only(cells, "%larik /tree"))
    assert "1. Write larik_demo.txt with a greeting" in tree
    assert "2. Write larik_demo.txt again" in tree
    # The quickstart's `/rewind 1` on its `/rewind 3` branch hangs beside that branch, naming it.
    assert re.search(r"branched at the start of \d{8}-\d{6}-[0-9a-f]{6} \(no prompt yet\) \(current\)", tree), tree

    # The first turn ran headless without --yes: its asks were denied, and the reason shows
    # outside any folded section.
    first = only(cells, "%larik Write larik_demo.txt with a greeting, change its second line, then show it with cat.")
    reasons = [q.get_text(" ", strip=True) for out in first for q in out.select("blockquote")
               if q.find_parent("details") is None]
    assert any(r.startswith("Permission denied for write: larik_demo.txt: nobody can answer") for r in reasons)

    # The second turn's diff keeps its columns (a monospace <pre>); /help is a table whose
    # descriptions wrap beside their usages.
    second = next(outs for text, outs in cells if text.startswith("%%larik --yes"))
    (diff,) = [pre for out in second for pre in out.select("pre.larik-diff")
               if "+This line was edited by the agent at prompt 2." in pre.get_text()]
    assert "monospace" in str(diff.get("style")) and diff.find_parent("details") is None
    (table,) = [t for out in only(cells, "%larik /help") for t in out.select("table.larik-help")]
    rows = {tuple(td.get_text(" ", strip=True) for td in tr.select("td")) for tr in table.select("tr")}
    assert ("%larik /help", "list the commands") in rows
    assert ("%larik /tree", "the fork tree of this directory's sessions") in rows


@pytest.mark.timeout(240)
def test_headless_rewind_prints_the_prompt_and_nbconvert_sees_no_unknown_comm(project: Path, tmp_path: Path) -> None:
    import json

    import nbformat

    (project / "script.json").write_text(json.dumps({"responses": [{"content": [{"type": "text", "text": "Hi."}]}]}))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in (
        "%load_ext larik_jupyter",
        "%%larik --model scripted:script.json\nsummarise the data\nby region",
        "%larik /rewind 1",
    )]
    nbformat.write(nb, project / "rewind.ipynb")
    done = subprocess.run(
        [str(JUPYTER), "nbconvert", "--to", "notebook", "--execute", "rewind.ipynb", "--output", "out"],
        cwd=project, capture_output=True, text=True, timeout=200, env=os.environ.copy(),
    )
    assert done.returncode == 0, done.stderr
    assert "No handler found for comm target" not in done.stderr
    out = nbformat.read(project / "out.ipynb", 4)
    shown = [o.get("data", {}).get("text/plain", "") for o in out.cells[2].outputs]
    assert any("no front end here to add a cell" in text for text in shown), shown
    assert "%%larik\nsummarise the data\nby region" in shown
    assert len(out.cells) == 3  # nothing pretended to add a cell
