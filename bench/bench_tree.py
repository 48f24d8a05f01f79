"""The fork tree at scale: building its data from 1,000 session files, rendering it in chromium.

Generates 1,000 sessions (3 prompts each; two of three are forks of an earlier session) in
a temporary data dir, then reports, each with a floor measured in the same run:

- `tree_data` over the 1,000 files against reading every file and parsing every line with
  orjson, round by round: once with every file's identity changed before the call (all read
  again) and once with nothing changed (the cached summaries, `session/summary.py`);
- rendering `tree.js` in Debian's chromium (Playwright, a blank page, a stand-in model) for
  a tree of exactly 1,000 nodes and for the whole tree (about 3,000 nodes: a branch shows
  only its own prompts), timed in the page with
  `performance.now()` including layout, against inserting the same number of plain rows
  (ours then the floor in each of ROUNDS runs).

Figures are medians with their range.

    .venv/bin/python bench/bench_tree.py [ROUNDS]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from paired import alternate, banner, ratios, span, timed

SESSIONS = 1_000
PROMPTS = 3


def generate(cwd: str) -> None:
    from larik_jupyter import paths
    from larik_jupyter.llm.messages import Message, TextBlock, Usage, user_text
    from larik_jupyter.session.entry import Entry, Meta
    from larik_jupyter.session.store import encode

    folder = paths.sessions_dir(cwd)
    folder.mkdir(parents=True)
    ids: list[str] = []
    for i in range(SESSIONS):
        sid = f"20250101-{i // 3600:02d}{i // 60 % 60:02d}{i % 60:02d}-{i:06x}"
        source = ids[(i * 7919) % len(ids)] if ids and i % 3 else None
        meta = Meta(cwd=cwd, provider="anthropic", model="claude-sonnet-4-5", fork_of=source,
                    fork_at=2 * (i % PROMPTS) if source else None)
        entries = [Entry(type="meta", meta=meta)]
        for p in range(PROMPTS):
            entries.append(Entry(type="message", message=user_text(f"Prompt {p} of session {i}: fix bug {i * p}")))
            entries.append(Entry(type="message", message=Message(role="assistant", content=[TextBlock(text="ok " * 40)])))
            entries.append(Entry(type="usage", usage=Usage(input_tokens=1200, output_tokens=300)))
        parent = None
        lines = []
        for entry in entries:
            entry.parent_id = parent
            parent = entry.id
            lines.append(encode(entry))
        (folder / f"{sid}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
        ids.append(sid)


def floor_read(cwd: str) -> None:
    from larik_jupyter import paths

    for path in paths.sessions_dir(cwd).glob("*.jsonl"):
        for line in path.read_bytes().splitlines():
            orjson.loads(line)


def trim(data: dict[str, Any], limit: int) -> dict[str, Any]:
    """The first sessions of `data` (whole subtrees) up to `limit` nodes, exactly."""
    def size(node: dict[str, Any]) -> int:
        items = [i for i in node["items"] if i["kind"] == "prompt"]
        return 1 + len(items) + sum(size(c) for i in items for c in i["children"]) + sum(
            size(c) for c in node["children"])

    roots, total = [], 0
    for root in sorted(data["roots"], key=size):
        if total + size(root) <= limit:
            roots.append(root)
            total += size(root)
    filler = {"kind": "session", "id": "filler", "items": [], "children": []}
    while total < limit:
        roots.append(dict(filler, id=f"filler-{total}"))
        total += 1
    return dict(data, roots=roots, count=total)


PAGE = """<!doctype html><html><body><div id=host></div><div id=floor></div></body></html>"""

MEASURE = """async ([esm, data]) => {
  const url = URL.createObjectURL(new Blob([esm], {type: "text/javascript"}));
  const widget = (await import(url)).default;
  const listeners = {};
  const model = {
    get: (k) => ({tree: data, status: "", error: ""})[k],
    on: (e, f) => { listeners[e] = f; }, off: () => {}, send: () => {},
  };
  const host = document.getElementById("host");
  host.replaceChildren();
  const t0 = performance.now();
  widget.render({model, el: host});
  host.offsetHeight;  // force layout
  const ours = performance.now() - t0;
  const floor = document.getElementById("floor");
  floor.replaceChildren();
  const t1 = performance.now();
  const frag = document.createDocumentFragment();
  for (let i = 0; i < data.count; i++) {
    const row = document.createElement("div");
    row.textContent = "Prompt " + i + " of a session: fix a bug";
    frag.appendChild(row);
  }
  floor.appendChild(frag);
  floor.offsetHeight;
  const base = performance.now() - t1;
  return {ours, base, rows: host.querySelectorAll(".larik-row").length};
}"""


def render_in_chromium(esm: str, trees: list[dict[str, Any]], rounds: int) -> list[dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    args = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=args)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_content(PAGE)
        out = []
        for data in trees:
            page.evaluate(MEASURE, [esm, data])  # warm-up, unrecorded
            runs = [page.evaluate(MEASURE, [esm, data]) for _ in range(rounds)]
            out.append({
                "count": data["count"], "rows": runs[0]["rows"],
                "ours": [r["ours"] for r in runs], "base": [r["base"] for r in runs],
            })
        browser.close()
    return out


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    banner()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LARIK_DATA_DIR"] = str(Path(tmp) / "data")
        cwd = str(Path(tmp) / "project")
        from larik_jupyter import paths
        from larik_jupyter.frontends.notebook.widgets import esm as widget_esm
        from larik_jupyter.frontends.notebook.widgets.tree import tree_data

        generate(cwd)
        files = list(paths.sessions_dir(cwd).glob("*.jsonl"))
        ages = iter(range(3600, 0, -1))

        def all_changed() -> float:
            # A new (old enough to be cached) modification time for every file: all re-read.
            then = time.time() - 3600 - next(ages)
            for path in files:
                os.utime(path, (then, then))
            return timed(lambda: tree_data(cwd))

        r = alternate(
            {
                "floor": lambda: timed(lambda: floor_read(cwd)),
                "every file changed": all_changed,
                "nothing changed": lambda: timed(lambda: tree_data(cwd)),
            },
            rounds,
        )
        data = tree_data(cwd)
        print(f"rounds: {rounds}; ms, median (min – max)")
        print(f"tree_data, {SESSIONS} files ({data['count']} nodes); floor (read + orjson every line) {span(r['floor'], 1000, 0)}")
        for name in ("every file changed", "nothing changed"):
            print(f"  {name:<20} {span(r[name], 1000, 0)}  ratio {span(ratios(r, name, 'floor'), 1, 2, 'x')}")
        esm = widget_esm("tree")  # tree.js with the shared helpers before it, as the widget loads it
        small = json.loads(json.dumps(trim(data, 1000)))
        for out in render_in_chromium(esm, [small, data], rounds):
            per_run = [o / max(b, 0.1) for o, b in zip(out["ours"], out["base"], strict=True)]
            print(f"render {out['count']} nodes ({out['rows']} rows): {span(out['ours'], 1, 0)} ms; "
                  f"floor (plain rows) {span(out['base'], 1, 0)} ms; ratio {span(per_run, 1, 1, 'x')}")


if __name__ == "__main__":
    main()
