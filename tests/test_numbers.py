"""Numbers in replies traced to the turn's outputs: only a number no output supports is marked,
the same in the live view, the terminal, `/history` and the export."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from larik_jupyter import Agent, KernelHost
from larik_jupyter.agent.textlog import TextLog
from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.notebook.render import parts_from_entries, render_parts
from larik_jupyter.notebook.view import TranscriptView
from larik_jupyter.session.export import render_markdown
from larik_jupyter.session.numbers import HINT, claims, trace
from larik_jupyter.session.reader import load_entries
from tests.agent_helpers import done, scripted, tool

CODE = "print(12335 / 7)"  # 1762.142857…
REPLY = "The mean is 1762.1 per row, and about 4,321 rows were dropped."
UNFOUND = re.compile(r'<span class="larik-unfound"[^>]*title="' + HINT + r'">([^<]*)</span>')


def said(text: str) -> list[str]:
    return [c.text for c in claims(text)]


def test_what_counts_as_a_number() -> None:
    text = (
        "Mean 12.3, total 7,777 (45% missing, 12 % kept) and 1000×5 cells.\n"
        "1. first\n12. twelfth\n"
        "See cell 12, prompt 3, In [14]; released 2024-03-05, in March 2024, on 5 March 2023, "
        "in 2019, at 12:30; python 3.11.2; `df.iloc[:100]`; x86_64 float64 cell-12 df2; "
        "[link](https://e.org/99); 7 items."
    )
    assert said(text) == ["12.3", "7,777", "45%", "12 %", "1000"]


def test_rounding_percentages_and_separators_are_allowed() -> None:
    out = "mean 12.345\nshare 0.4512\ncount 7777\nbig 1,234,567\nratio 3.0e-01"
    reply = "12.3, 12.35, 45%, 45.1%, 7,777, 1,234,567, 30%, 12.4 and 0.45123"
    (unfound,) = trace([reply], [out]).unfound
    assert [c.text for c in unfound] == ["12.4", "0.45123"]


def stored_views(path: Path) -> tuple[str, str]:
    entries = load_entries(path).entries
    return render_parts(parts_from_entries(entries)), render_markdown(path, entries, redactor=redactor_for(None))


def test_only_the_invented_number_is_marked_live_in_history_export_and_terminal(
    project: Path, tmp_path: Path
) -> None:
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code=CODE)], done(REPLY)), yes=True, host=KernelHost({}))
    view, out = TranscriptView(), io.StringIO()
    agent.subscribe(view.handle)
    agent.subscribe(TextLog(out))
    agent.run("what is the mean?")
    path = agent.session_path
    agent.close()
    live = view.markdown()
    history, exported = stored_views(path)
    for shown in (live, history, exported):
        assert UNFOUND.findall(shown) == ["4,321"]
        assert "1 number not found in this turn's outputs" in shown
    assert "? 1 number not found in this turn's outputs: 4,321" in out.getvalue()


def test_while_the_turn_runs_nothing_is_marked(project: Path, tmp_path: Path) -> None:
    view = TranscriptView()
    agent = Agent(project, model=scripted(tmp_path, done("Invented: 98765.")), yes=True)
    seen: list[str] = []
    agent.subscribe(lambda event: seen.append(view.markdown()))
    agent.subscribe(view.handle)
    agent.run("go")
    agent.close()
    assert not any("larik-unfound" in text for text in seen[:-1])
    assert UNFOUND.findall(view.markdown()) == ["98765"]


@pytest.mark.timeout(240)
def test_in_a_kernel_the_cell_history_and_export_mark_only_the_invented_number(
    project: Path, tmp_path: Path
) -> None:
    from tests.test_notebook_kernel_undo import client, run_cells

    model = scripted(tmp_path, [tool("python", code=CODE)], done(REPLY))
    nbc = client(project, [
        "%load_ext larik_jupyter",
        f"%larik --model {model} --yes what is the mean?",
        "%larik /history",
        "%larik /export out.md",
    ])
    with nbc.setup_kernel():
        run_cells(nbc)
    cell, history = (
        "".join(out.get("data", {}).get("text/markdown", "") for out in nbc.nb.cells[i].outputs) for i in (1, 2)
    )
    exported = (project / "out.md").read_text()
    for shown in (cell, history, exported):
        assert UNFOUND.findall(shown) == ["4,321"]
        assert "1 number not found in this turn's outputs" in shown
