"""Figures and live output of `python` calls (issue 39): in a real kernel under nbclient, a figure
drawn with `plt.show()`, left open, shown with `display(fig)` or returned as an Axes is one image
under the call that drew it, stored once with the call, and carried by the export and the branch
notebook; nothing escapes into the cell below the reply. A loop printing every 0.3 s shows its
lines in the call's row before the call ends."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell

from larik_jupyter.agent import events as ae
from larik_jupyter.llm.messages import ImageBlock
from larik_jupyter.session.catalog import latest
from larik_jupyter.session.reader import load_entries
from tests.agent_helpers import done, scripted, tool
from tests.test_notebook_kernel_undo import client, run_cells

SHOW = "import matplotlib.pyplot as plt\nplt.figure(figsize=(2, 2))\nplt.plot([1, 2, 3])\nplt.show()\nprint('shown')"
LEFT_OPEN = "plt.figure(figsize=(2, 2))\nplt.plot([3, 2, 1])\nprint('left open')"
DISPLAYED = "fig, ax = plt.subplots(figsize=(2, 2))\nax.bar([1, 2], [3, 4])\ndisplay(fig)\nprint('displayed')"
AXES = "import pandas as pd\npd.Series([1, 3, 2]).plot()"
TABLE = "display(pd.DataFrame({'city': ['Oslo', 'Lima']}))\nprint('table')"
CALLS = [SHOW, LEFT_OPEN, DISPLAYED, AXES, TABLE]
IMAGE = "![image/png](data:image/png;base64,"


def _images(content: Any) -> list[ImageBlock]:
    return [] if isinstance(content, str) else [b for b in content if isinstance(b, ImageBlock)]


@pytest.mark.timeout(300)
def test_each_figure_shows_once_under_its_call_and_is_stored_with_it(project: Path, tmp_path: Path) -> None:
    model = scripted(tmp_path, *[[tool("python", code=code)] for code in CALLS], done("Plotted."))
    nbc = client(project, ["%load_ext larik_jupyter", f"%larik --model {model} --yes plot it", "print('next')"])
    with nbc.setup_kernel():
        run_cells(nbc)
    prompt, after = nbc.nb.cells[1], nbc.nb.cells[2]
    # Headless, the turn's cell holds its transcript only: no figure escaped below it, nor into
    # the next cell (the inline backend's end-of-cell drawing).
    assert len(prompt.outputs) == 1, [o.get("data", {}).keys() for o in prompt.outputs]
    assert [o.output_type for o in after.outputs] == ["stream"]
    markdown = prompt.outputs[0]["data"]["text/markdown"]
    rows = markdown.split("<details><summary>✓ <code>python:")[1:]
    assert [row.count(IMAGE) for row in rows] == [1, 1, 1, 1, 0]
    assert markdown.rindex(IMAGE) < markdown.index("Plotted.")
    # The DataFrame the code displayed shows as a table in its row; its text reaches the model.
    assert '<div class="larik-rich">' in rows[4] and "<table" in rows[4]

    session = latest(project)
    assert session is not None
    results = [b for e in load_entries(session.path).entries if e.message for b in e.message.tool_results()]
    assert [len(_images(r.content)) for r in results] == [1, 1, 1, 1, 0]
    texts = [r.content if isinstance(r.content, str) else r.content[0].text for r in results]  # type: ignore[union-attr]
    assert texts[0].startswith("shown\n[1 image attached")
    assert "Oslo" in texts[4] and "table" in texts[4]

    exported = tmp_path / "export.md"
    made = subprocess.run([sys.executable, "-m", "larik_jupyter", "export", session.id, str(exported)],
                          cwd=project, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    assert exported.read_text().count(IMAGE) == 4
    branch = tmp_path / "branch.ipynb"
    made = subprocess.run([sys.executable, "-m", "larik_jupyter", "notebook", session.id, str(branch)],
                          cwd=project, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    nb = nbformat.read(branch, as_version=4)
    pictures = {c.source: sum("image/png" in o.get("data", {}) for o in c.outputs) for c in nb.cells if c.cell_type == "code"}
    assert [pictures.get(code) for code in CALLS] == [1, 1, 1, 1, 0]
    # Replay draws the same pictures (an unchanged figure displayed, then drawn again at the end
    # of its cell, counts once there too).
    replayed = subprocess.run([sys.executable, "-m", "larik_jupyter", "replay", session.id],
                              cwd=project, capture_output=True, text=True, timeout=300)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "5 same, 0 changed, 0 failed" in replayed.stdout, replayed.stdout


@pytest.fixture
def shell() -> InteractiveShell:
    return InteractiveShell.instance()


def test_a_loop_shows_its_lines_in_its_row_before_the_call_ends(project: Path, tmp_path: Path, shell: InteractiveShell) -> None:
    from larik_jupyter import Agent, KernelHost
    from larik_jupyter.frontends.notebook.view import TranscriptView

    loop = "import time\nfor i in range(6):\n    print('tick', i)\n    time.sleep(0.3)"
    model = scripted(tmp_path, [tool("python", code=loop)], done("Counted."))
    agent = Agent(project, model=model, yes=True, host=KernelHost(shell.user_ns))
    view = TranscriptView()
    seen: list[tuple[float, str, str]] = []  # when, on which thread, the row as shown

    def watch(event: ae.AgentEvent) -> None:
        view.handle(event)
        if isinstance(event, ae.ToolOutput | ae.ToolStarted | ae.ToolFinished):
            seen.append((time.monotonic(), threading.current_thread().name, view.markdown()))

    agent.subscribe(watch)
    try:
        agent.run("count")
    finally:
        agent.close()
    started, *live, (ended, _, final) = seen
    assert "… running:" in started[2]
    early = [(when, markdown) for when, _, markdown in live if "tick 1" in markdown]
    assert early, [m for _, _, m in live]
    when, markdown = early[0]
    assert ended - when > 0.6  # seen well before the call ended (four more ticks to go)
    assert "… running:" in markdown and "tick 0\ntick 1" in markdown and "tick 5" not in markdown
    assert all(thread == "larik-live-output" for _, thread, _ in live)  # the code's thread is busy
    # Throttled: the updates are at least 0.1 s apart; the result carries everything once it ends.
    times = [t for t, _, _ in live]
    assert all(b - a >= 0.09 for a, b in zip(times, times[1:], strict=False))
    assert "✓ <code>python:" in final and re.search(r"tick 0\ntick 1\n.*tick 5", final, re.S)
    assert final.count("tick 5") == 1  # the live lines gave way to the result


ANIMATION = """from IPython.display import clear_output, display
import matplotlib.pyplot as plt
before.update('updated from the call')
for n in range(3):
    clear_output(wait=True)
    plt.figure(figsize=(2, 2))
    plt.plot([0, n])
    plt.title(f'frame {n}')
    plt.show()
display({'application/vnd.jupyter.widget-view+json': {'model_id': 'bar'}, 'text/plain': 'progress'}, raw=True)
print('animated')"""


def test_an_animation_keeps_its_last_frame_and_other_displays_pass(project: Path, shell: InteractiveShell) -> None:
    """`clear_output` in a loop keeps the last frame for the call; a widget (a progress bar)
    and an update of a display made before the call still reach the cell."""
    from IPython.core.displaypub import CapturingDisplayPublisher
    from IPython.display import display

    from larik_jupyter.frontends.notebook.display_capture import captured_displays
    from larik_jupyter.tools import Env, default_tools
    from larik_jupyter.tools.host import KernelHost

    cell = CapturingDisplayPublisher()  # stands for the running cell's output
    saved = shell.display_pub
    shell.display_pub = cell
    import matplotlib
    from matplotlib_inline.backend_inline import configure_inline_support

    inline = "module://matplotlib_inline.backend_inline"
    matplotlib.use(inline)
    configure_inline_support(shell, inline)  # what `%matplotlib inline` does in a kernel
    try:
        shell.user_ns["before"] = display("shown before the call", display_id=True)
        env = Env(cwd=project, root=project, host=KernelHost(shell.user_ns, displays=lambda: captured_displays(shell)))
        result = default_tools(env)["python"].run(env, {"code": ANIMATION})
    finally:
        import matplotlib.pyplot as plt

        plt.close("all")
        plt.switch_backend("agg")
        configure_inline_support(shell, "agg")
        shell.display_pub = saved
    assert not result.is_error, result.content
    assert len(result.images) == 1 and result.content.startswith("animated\n[1 image attached")
    reached = [(o["data"].get("text/plain"), o.get("update", False)) for o in cell.outputs]
    assert reached == [("'shown before the call'", False), ("'updated from the call'", True), ("progress", False)]
