"""Figures and live output in a real JupyterLab (issue 39), light then dark: a loop's lines
appear in its call's row while it runs; a figure shown with `plt.show()` and one left open each
appear once, right under the call that drew them, above the final reply, a displayed DataFrame
shows as a table under its call, and nothing escapes below the transcript. Screenshots: artifacts/figures_live_<theme>_{running,done,end}.png."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nbformat
from playwright.sync_api import Page

from tests.browser.test_bridge_in_lab import open_notebook, run_cell, wait_idle_count
from tests.browser.test_notebook_live import ARTIFACTS
from tests.browser.test_turn_view import theme

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

LOOP = "import time\nfor i in range(8):\n    print(f'epoch {i}: loss {1 / (i + 1):.3f}')\n    time.sleep(0.4)"
SHOW = (
    "import matplotlib.pyplot as plt\nplt.figure(figsize=(3, 2))\nplt.plot([1, 3, 2], color='tab:orange')\n"
    "plt.title('shown with plt.show()')\nplt.show()"
)
LEFT_OPEN = "fig, ax = plt.subplots(figsize=(3, 2))\nax.bar(['a', 'b', 'c'], [3, 4, 2])\nax.set_title('left open')"
TABLE = "import pandas as pd\ndisplay(pd.DataFrame({'epoch': [0, 1, 2], 'loss': [1.0, 0.5, 0.333]}))"

# The prompt cell's transcript (its first output) as the page shows it.
TRANSCRIPT = """marker => {
  const cell = Array.from(document.querySelectorAll('.jp-CodeCell')).find(c => c.innerText.includes(marker));
  const outputs = Array.from(cell.querySelectorAll('.jp-OutputArea-output'));
  const transcript = outputs[0];
  if (!transcript) return null;
  const rows = Array.from(transcript.querySelectorAll('details')).filter(d => d.innerText.includes('python:'));
  const reply = Array.from(transcript.querySelectorAll('p')).find(p => p.innerText.includes('Plotted.'));
  const images = Array.from(transcript.querySelectorAll('img'));
  const before = (a, b) => !!(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
  // Which python row each image follows (the last row above it).
  const under = images.map(img => rows.filter(r => before(r, img)).length - 1);
  const tables = Array.from(transcript.querySelectorAll('.larik-rich table')).map(t => rows.filter(r => before(r, t)).length - 1);
  return {
    text: transcript.innerText,
    images: images.length,
    loaded: images.filter(i => i.complete && i.naturalWidth > 0).length,
    under,
    tables,
    aboveReply: reply ? images.every(img => before(img, reply)) : null,
    laterImages: outputs.slice(1).reduce((n, o) => n + o.querySelectorAll('img').length, 0),
    running: cell.querySelector('.jp-InputArea-prompt')?.innerText.includes('*') ?? false,
  };
}"""


def write_notebook(root: Path) -> None:
    turn = {"responses": [
        {"content": [{"type": "tool_use", "name": "python", "input": {"code": code}}]}
        for code in (LOOP, SHOW, LEFT_OPEN, TABLE)
    ] + [{"content": [{"type": "text", "text": "Plotted."}]}]}
    for name in ("light", "dark"):
        (root / f"{name}.json").write_text(json.dumps(turn))
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext larik_jupyter", id="load"),
        nbformat.v4.new_code_cell("%larik --model scripted:light.json --yes train and plot", id="light"),
        nbformat.v4.new_code_cell("%larik --model scripted:dark.json --yes train and plot", id="dark"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "plots.ipynb")


def cell_shot(page: Page, marker: str, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    cell = page.locator(".jp-CodeCell", has_text=marker)
    cell.scroll_into_view_if_needed()
    cell.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def run_turn(page: Page, index: int, marker: str, shot_name: str) -> dict[str, Any]:
    run_cell(page, index)
    # The loop's first lines show in its row while it is still running (8 lines, 0.4 s apart).
    page.wait_for_function(
        """marker => { const cell = Array.from(document.querySelectorAll('.jp-CodeCell')).find(c => c.innerText.includes(marker));
                       const text = cell?.querySelector('.jp-OutputArea-output')?.innerText ?? '';
                       return text.includes('epoch 1: loss') && !text.includes('epoch 7'); }""",
        arg=marker, timeout=60_000,
    )
    live = page.evaluate(TRANSCRIPT, marker)
    cell_shot(page, marker, f"{shot_name}_running")
    assert "… running:" in live["text"] and "epoch 0: loss 1.000" in live["text"], live["text"]
    assert "epoch 7" not in live["text"] and live["running"]
    wait_idle_count(page, marker.split(":")[1].split(".")[0])
    page.wait_for_function(
        "marker => Array.from(document.querySelectorAll('.jp-CodeCell')).find(c => c.innerText.includes(marker))"
        "?.querySelectorAll('.jp-OutputArea-output img').length >= 2 && document.body.innerText.includes('Plotted.')",
        arg=marker, timeout=60_000,
    )
    page.wait_for_function(  # the images decoded
        "marker => Array.from(Array.from(document.querySelectorAll('.jp-CodeCell')).find(c => c.innerText.includes(marker))"
        ".querySelectorAll('.jp-OutputArea-output img')).every(i => i.complete && i.naturalWidth > 0)",
        arg=marker, timeout=60_000,
    )
    done: dict[str, Any] = page.evaluate(TRANSCRIPT, marker)
    cell_shot(page, marker, f"{shot_name}_done")
    # The cell is taller than the page: its end, the table and the reply under the last call.
    page.locator(".jp-CodeCell", has_text=marker).get_by_text("Plotted.").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"{shot_name}_end.png"))
    return done


def test_figures_under_their_calls_and_live_output_light_and_dark(lab_page: Page, lab_server: LabServer) -> None:
    write_notebook(lab_server.root)
    open_notebook(lab_page, lab_server, "plots.ipynb")
    run_cell(lab_page, 0)
    wait_idle_count(lab_page, "load")
    for index, name in ((1, "light"), (2, "dark")):
        if name == "dark":
            theme(lab_page, "JupyterLab Dark")
        done = run_turn(lab_page, index, f"scripted:{name}.json", f"figures_live_{name}")
        # One image per figure, each under the call that drew it, above the reply; none below.
        assert done["images"] == 2 and done["loaded"] == 2, done
        assert done["under"] == [1, 2] and done["tables"] == [3], done
        assert done["aboveReply"] is True and done["laterImages"] == 0, done
        # The loop's lines went into its result, whose fold stays open (issue 53: what the
        # person was reading does not fold away), and are not left as live output besides.
        assert done["text"].count("epoch 7") == 1 and "… running:" not in done["text"]
