"""Streaming 10,000 deltas through the live transcript inside a real kernel.

Runs one cell in a fresh ipykernel (via nbclient): a coroutine on the turn's worker thread
emits 10,000 text deltas at about 2,000 per second through `TurnUI.listener`, exactly as the
agent does, while the cell's thread pumps them into the throttled Markdown view. Reports the
kernel's CPU seconds for the whole stream, the same stream with a listener that drops events
(the floor: the pump and the event traffic alone), and how many display updates were sent.
Floor and view alternate round by round in the same kernel; figures are medians of ROUNDS
with their range.

    .venv/bin/python bench/bench_transcript.py [ROUNDS]
"""

from __future__ import annotations

import json
import sys

import nbformat
from nbclient import NotebookClient
from paired import banner, span

CELL = r'''
import asyncio, json, time
from larik_jupyter.agent import events as ae
from larik_jupyter.frontends.notebook.pump import MainThreadPump
from larik_jupyter.frontends.notebook.turn_ui import TurnUI

N, RATE = 10_000, 2_000

async def stream(listener):
    for i in range(N):
        listener(ae.TextDelta(f"word{i} "))
        if i % 20 == 0:
            await asyncio.sleep(20 / RATE)

def measure(render):
    pump = MainThreadPump()
    ui = TurnUI(pump, lambda: None, interactive=False)
    if render:
        ui.show()
    listener = ui.listener if render else (lambda event: pump.post(lambda: None))
    cpu, wall = time.process_time(), time.perf_counter()
    pump.run(stream(listener), on_interrupt=lambda: None)
    ui.finish() if render else None
    return time.process_time() - cpu, time.perf_counter() - wall, ui.view.updates

rounds = []
for _ in range(ROUNDS):
    floor = measure(False)
    view = measure(True)
    rounds.append({"floor_cpu": floor[0], "view_cpu": view[0], "wall": view[1], "updates": view[2]})
print("RESULT", json.dumps(rounds))
'''


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    banner()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"ROUNDS = {rounds}\n" + CELL)]
    NotebookClient(nb, kernel_name="python3", timeout=600).execute()
    text = "".join(o.get("text", "") for o in nb.cells[0].outputs if o.get("output_type") == "stream")
    results = json.loads(text.split("RESULT", 1)[1])

    def col(key: str) -> list[float]:
        return [float(r[key]) for r in results]

    print(f"rounds: {rounds}; median (min – max)")
    print(f"10,000 deltas over {span(col('wall'), 1, 1, ' s')} of streaming")
    print(f"kernel CPU with the view:  {span(col('view_cpu'), 1, 3, ' s')} (target < 1 s)")
    print(f"kernel CPU, events only:   {span(col('floor_cpu'), 1, 3, ' s')} (floor)")
    print(f"ratio to floor:            {span([r['view_cpu'] / max(r['floor_cpu'], 1e-9) for r in results], 1, 2, 'x')}")
    print(f"display updates sent:      {span(col('updates'), 1, 0)} ({span([r['updates'] / r['wall'] for r in results], 1, 1, '/s')})")


if __name__ == "__main__":
    main()
