"""Every notebook in notebooks/ runs headless with nbclient against scripted models."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from larik_jupyter.session.catalog import list_sessions
from larik_jupyter.session.reader import load_entries

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def execute(name: str, workdir: Path) -> nbformat.NotebookNode:
    for item in NOTEBOOKS.iterdir():
        if item.is_file():
            shutil.copy(item, workdir / item.name)
    nb = nbformat.read(workdir / name, as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(workdir)}},
                   store_widget_state=True).execute()
    return nb


def outputs_text(cell: nbformat.NotebookNode) -> str:
    chunks = []
    for out in cell.get("outputs", []):
        chunks.append(out.get("text", ""))
        data = out.get("data", {})
        chunks.append(data.get("text/markdown", "") + data.get("text/plain", ""))
    return "\n".join(chunks)


def test_every_notebook_is_covered() -> None:
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == ["data-exploration.ipynb", "quickstart.ipynb"]


@pytest.mark.timeout(240)
def test_quickstart_runs_headless(tmp_path: Path) -> None:
    nb = execute("quickstart.ipynb", tmp_path)
    texts = [outputs_text(c) for c in nb.cells if c.cell_type == "code"]
    everything = "\n".join(texts)
    assert "scripted" in everything.lower()
    assert "Permission denied" in everything  # the first prompt asked; nobody could answer
    assert "Undid turn" in everything and "larik_demo.txt" in everything
    listing = [t for t in texts if "files here:" in t][0]
    assert "larik_demo.txt" not in listing  # the asked turn was denied, the --yes turn undone
    sessions = list_sessions(tmp_path)
    assert len(sessions) >= 3  # the original, the fork and the rewind branch
    original = [s for s in sessions if not s.fork_of][0]
    entries = load_entries(original.path).entries
    prompts = [e for e in entries if e.message is not None and e.message.is_prompt()]
    assert len(prompts) == 2
    assert any(s.fork_of == original.id for s in sessions)


@pytest.mark.timeout(240)
def test_data_exploration_runs_headless(tmp_path: Path) -> None:
    nb = execute("data-exploration.ipynb", tmp_path)
    last = outputs_text(nb.cells[-1])
    assert "north" in last and "south" in last
    (info,) = list_sessions(tmp_path)
    tools = [b.name for e in load_entries(info.path).entries if e.message for b in e.message.tool_uses()]
    assert tools == ["inspect_variables", "python"]
