"""The notebook bridge's round trip in a real JupyterLab (kernel -> browser -> kernel).

A headless chromium opens a notebook of 500 code cells whose kernel loads larik_jupyter. A cell
then times, from a worker thread as the tools send them (`Bridge.request`): (floor) a request the browser refuses at once (the `delete` of a
cell it does not have: one comm message each way, a lookup of the id); one live cell edit (`replace` of one cell's source); and
`notebook_edit` itself on 50 of the 500 cells, from a worker thread as in a turn: on cells the
kernel has not read (a read of the cell, then the edit), and after a `notebook_read` of the
notebook, as an agent reads it to learn the cell ids (the edit alone, sent with what the kernel
read of the cell), without and with the turn's checkpoint recording each cell's state before
the edit (what undo puts back). Medians with ranges (the maximum is the slowest
edit), in milliseconds. Measuring starts once the page has finished rendering the opened
notebook (every cell rendered, then five idle periods in a row) and, since starting the
measuring cell scrolls the page (half a second or more of 500 editors' scroll handlers), once
five refused requests in a row have come back within 25 ms; the page's long tasks (main thread
busy > 50 ms) from then until the last edit say whether it stayed responsive. The load average
is printed: the machine is shared.

    .venv/bin/python bench/bench_bridge.py [ROUNDS] [WINDOWING]

WINDOWING is JupyterLab's notebook `windowingMode`: its default in JupyterLab 4.6,
"contentVisibility" (every cell attached with an editor, the browser skipping the layout of
cells out of view), "defer" (every cell attached in idle time), "full" (only the cells in view
are attached), or "none".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat
from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.browser.conftest import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    LAB_SETTINGS,
    LABEXTENSION_BUILT,
    LABEXTENSION_NAME,
    _free_port,
    write_server_config,
)

MEASURE = r'''
import asyncio, json, statistics, time
from larik_jupyter.tools.host import KernelHost
from larik_jupyter.bridge_protocol import Delete, Replace
from larik_jupyter.frontends.notebook import extension
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.notebook.cells import NotebookReadTool
from larik_jupyter.tools.notebook.edit import NotebookEditTool
bridge = extension._magics.bridge
path = bridge.notebook_path
async def timed(op, n):
    out = []
    for i in range(n):
        started = time.perf_counter()
        try:
            await asyncio.to_thread(bridge.request, path, op(i))
        except Exception:
            pass
        out.append((time.perf_counter() - started) * 1000)
    return out
settle_until = time.monotonic() + 30
quick = 0
while quick < 5 and time.monotonic() < settle_until:
    quick = quick + 1 if max(await timed(lambda i: Delete(cell_id="no-such-cell"), 1)) < 25 else 0
measuring_since = time.time() * 1000
floor = await timed(lambda i: Delete(cell_id="no-such-cell"), ROUNDS)
edit = await timed(lambda i: Replace(cell_id=f"c{(i * 10 + 5) % 500}", cell={"cell_type": "code", "source": f"x = {i}", "metadata": {}, "outputs": [], "execution_count": None}), ROUNDS)
env = Env(cwd=path.parent, root=path.parent, host=KernelHost({}, bridge=bridge))
tool = NotebookEditTool()
async def edits(offset, read):
    """50 `notebook_edit` calls from a worker thread as in a turn, on every tenth cell from
    `offset`; with `read`, after a `notebook_read` of the notebook (how the agent learns the
    cell ids), whose cells the kernel then holds. Also the bridge requests per call."""
    if read:
        assert not (await asyncio.to_thread(NotebookReadTool().run, env, {"path": path.name})).is_error
    out, trips = [], bridge.requests
    for i in range(50):
        started = time.perf_counter()
        result = await asyncio.to_thread(tool.run, env, {"path": path.name, "cell_id": f"c{i * 10 + offset}", "new_source": f"y = {i}"})
        took = (time.perf_counter() - started) * 1000
        out.append(took)
        if took >= 100:
            slow.append(round(took, 1))
        assert not result.is_error, result.content
    return out, (bridge.requests - trips) / 50
slow = []
unread, unread_trips = await edits(0, False)
tool_times, tool_trips = await edits(1, True)
# The same edits with the turn's checkpoint recording each cell before it changes (for undo).
from larik_jupyter.checkpoint.store import CheckpointStore
store = CheckpointStore("20250101-000000-bench0", path.parent)
store.begin_turn(1)
env.checkpoints = store
checkpointed, kept_trips = await edits(2, True)
store.finish_turn()
ended = time.time() * 1000
print("BENCH" + json.dumps({"started": measuring_since, "ended": ended, "floor": floor, "edit": edit, "unread": unread,
                            "tool": tool_times, "checkpointed": checkpointed, "trips": [unread_trips, tool_trips, kept_trips], "slow": slow}))
'''


# JupyterLab renders the cells of a large notebook in idle time after opening it ("defer" and
# "contentVisibility" windowing), creating an editor each: seconds of work (tens of seconds on a
# busy machine) that is not the bridge's and would be measured with it.
ATTACHED = """() => { const nb = window.jupyterapp.shell.currentWidget.content;
  return nb.notebookConfig.windowingMode === 'full' || nb.widgets.every(w => w.isAttached && !w.isPlaceholder()); }"""

# Resolves once the page has had five idle periods in a row with most of their time left.
SETTLED = """() => new Promise(resolve => {
  let quiet = 0;
  const tick = deadline => {
    quiet = deadline.timeRemaining() > 40 ? quiet + 1 : 0;
    if (quiet >= 5) { resolve(true); } else { requestIdleCallback(tick, { timeout: 1000 }); }
  };
  requestIdleCallback(tick, { timeout: 1000 });
})"""

WATCH_LONG_TASKS = """() => {
  window.__longTasks = [];
  new PerformanceObserver(list => {
    // The wall clock the kernel's time.time() reads (performance.timeOrigin can drift from it).
    const offset = Date.now() - performance.now();
    for (const entry of list.getEntries()) {
      window.__longTasks.push({ start: offset + entry.startTime, duration: entry.duration });
    }
  }).observe({ type: 'longtask' });
}"""


def summary(values: list[float]) -> str:
    values = sorted(values)
    return f"{values[len(values) // 2]:.1f} ({values[0]:.1f}–{values[-1]:.1f})"


TRACKER = "@jupyterlab/notebook-extension/tracker.jupyterlab-settings"


def main(rounds: int, windowing: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        root = tmp / "work"
        root.mkdir()
        settings = dict(LAB_SETTINGS)
        if windowing:
            settings[TRACKER] = {**settings[TRACKER], "windowingMode": windowing}
        for name, value in settings.items():
            target = tmp / "settings" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(value))
        (tmp / "jp" / "labextensions").mkdir(parents=True)
        (tmp / "jp" / "labextensions" / LABEXTENSION_NAME).symlink_to(LABEXTENSION_BUILT)
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("%load_ext larik_jupyter", id="load")]
        nb.cells += [nbformat.v4.new_code_cell(f"value_{i} = {i}\nprint(value_{i})", id=f"c{i}") for i in range(500)]
        nb.cells.append(nbformat.v4.new_code_cell(MEASURE.replace("ROUNDS", str(rounds)), id="bench"))
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, root / "big.ipynb")
        env = {
            **os.environ,
            "LARIK_DATA_DIR": str(tmp / "data"),
            "LARIK_CONFIG_DIR": str(tmp / "config"),
            "JUPYTERLAB_SETTINGS_DIR": str(tmp / "settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
            "JUPYTER_PATH": str(tmp / "jp"),
            "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
            # The numbers are the default's: neither collaboration backend (both a test extra).
            "JUPYTER_CONFIG_DIR": str(tmp / "jupyter-config"),
        }
        write_server_config(tmp / "jupyter-config")
        port = _free_port()
        command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
                   "--ServerApp.token=", "--ServerApp.password=", f"--ServerApp.root_dir={root}",
                   "--LabApp.expose_app_in_browser=True"]
        if os.geteuid() == 0:
            command.append("--allow-root")
        lab = subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}/"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    urllib.request.urlopen(url + "api/status", timeout=2)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page()
                page.set_default_timeout(120_000)
                page.goto(url + "lab/tree/big.ipynb")
                page.wait_for_function("!!window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel")
                page.wait_for_function("window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'")
                run = """i => { const p = window.jupyterapp.shell.currentWidget; p.content.activeCellIndex = i;
                           return window.jupyterapp.commands.execute('notebook:run-cell'); }"""
                page.evaluate(run, 0)
                page.wait_for_function(ATTACHED, polling=500)
                # Going to the last cell scrolls past all 500 editors (seconds of CodeMirror
                # scroll handlers): done, and settled, before measuring.
                page.evaluate("() => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = 501; }")
                page.evaluate(SETTLED)
                page.evaluate(WATCH_LONG_TASKS)
                load_before = os.getloadavg()[0]
                page.evaluate(run, 501)
                outputs = """() => window.jupyterapp.shell.currentWidget.content.model.sharedModel
                    .cells.find(c => c.getId() === 'bench').toJSON().outputs.map(o => o.text || o.evalue || '').join('')"""
                page.wait_for_function("(" + outputs + ")().length > 0")
                text = page.evaluate("""() => window.jupyterapp.shell.currentWidget.content.model.sharedModel
                    .cells.find(c => c.getId() === 'bench').toJSON().outputs.map(o => o.text || '').join('')""")
                long_tasks = page.evaluate("window.__longTasks")
                mode = page.evaluate("window.jupyterapp.shell.currentWidget.content.notebookConfig.windowingMode")
                load_after = os.getloadavg()[0]
                browser.close()
        finally:
            lab.terminate()
            lab.wait(15)
    data = json.loads(text.split("BENCH", 1)[1])
    floor = sorted(data["floor"])[len(data["floor"]) // 2]
    default = "" if windowing else " (JupyterLab's default)"
    print(f"500-cell notebook, windowing {mode}{default}, {rounds} rounds, ms median (min–max):")
    print(f"  floor: refused request round trip  {summary(data['floor'])}")
    edit = sorted(data["edit"])[len(data["edit"]) // 2]
    print(f"  one live cell edit (replace)       {summary(data['edit'])}  ratio {edit / floor:.2f}")
    unread_trips, tool_trips, kept_trips = data["trips"]
    unread = sorted(data["unread"])[len(data["unread"]) // 2]
    print(f"  notebook_edit x50, cells not read  {summary(data['unread'])}  ratio {unread / floor:.2f}"
          f"  ({unread_trips:g} requests each)")
    tool = sorted(data["tool"])[len(data["tool"]) // 2]
    print(f"  notebook_edit x50 after a read     {summary(data['tool'])}  ratio {tool / floor:.2f}"
          f"  ({tool_trips:g} request each)")
    kept = sorted(data["checkpointed"])[len(data["checkpointed"]) // 2]
    print(f"  ... with cells checkpointed        {summary(data['checkpointed'])}  ratio {kept / floor:.2f}"
          f"  ({kept_trips:g} request each)")
    for name, times in (("not read", data["unread"]), ("after a read, both runs", data["tool"] + data["checkpointed"])):
        print(f"  notebook_edit calls of 100 ms or more, {name}: {sum(t >= 100 for t in times)} of {len(times)}")
    if data["slow"]:
        print("  those calls: " + ", ".join(f"{took}" for took in data["slow"]))
    during = [t["duration"] for t in long_tasks if data["started"] <= t["start"] <= data["ended"]]
    print(f"  page long tasks (> 50 ms) meanwhile: {len(during)}, longest {max(during, default=0.0):.0f} ms")
    print(f"  load average (1 min) before / after: {load_before:.2f} / {load_after:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30, sys.argv[2] if len(sys.argv) > 2 else None)
