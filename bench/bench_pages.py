"""The sidebar's server views at scale: transcript pages of a big session, and the sessions
list and fork tree of 1,000 sessions, each against a floor measured in the same run.

- Pages: a 100,000-entry session (~140 MB, `bench_session.session_lines`). The first page
  builds the offset index (one full, checked read; reported for scale). Then, round by
  round, the floor (one full read of the file's bytes) alternates with pages of 200 entries
  (the server's default) at the start, the middle and the end, each the JSON the
  `/larik/api/sessions/<id>` handler writes (`views.transcript_page(...).model_dump_json()`).
  Target: every page <= 0.1x the floor.
- Listing and tree: 1,000 generated sessions (`bench_tree.generate`), their modification
  times set an hour back (a file written in the last 2 s is re-read on purpose, see
  `session/summary.py`). The first call reads every file; then, round by round, the floor
  (reading every file's bytes) alternates with the `/larik/api/sessions` view
  (`views.session_list`, which holds the tree) and the tree widget's `tree_data`, with
  nothing changed and with one session appended to before the call.

    .venv/bin/python bench/bench_pages.py [ROUNDS]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from bench_session import session_lines
from bench_tree import generate
from paired import alternate, banner, ratios, span, timed

ENTRIES = 100_000
LIMIT = 200


def read_all(paths: list[Path]) -> None:
    for path in paths:
        with open(path, "rb") as f:
            f.read()


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    banner()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LARIK_DATA_DIR"] = os.path.join(tmp, "data")
        os.environ["LARIK_CONFIG_DIR"] = os.path.join(tmp, "config")
        from larik_jupyter import paths
        from larik_jupyter.frontends.notebook.widgets.tree import tree_data
        from larik_jupyter.frontends.server import views
        from larik_jupyter.frontends.server.tokens import DeleteTokens

        big = Path(tmp) / "20260101-000000-000001.jsonl"
        big.write_bytes(b"".join(session_lines(ENTRIES)))
        size_mb = big.stat().st_size / 1e6
        build = timed(lambda: views.transcript_page(big.stem, big, 0, LIMIT, Path(tmp)))
        last = ENTRIES - LIMIT

        def a_page(offset: int) -> float:
            return timed(lambda: views.transcript_page(big.stem, big, offset, LIMIT, Path(tmp)).model_dump_json())

        pages = alternate(
            {
                "floor": lambda: timed(lambda: read_all([big])),
                "page 0": lambda: a_page(0),
                f"page {ENTRIES // 2}": lambda: a_page(ENTRIES // 2),
                f"page {last}": lambda: a_page(last),
            },
            rounds,
        )
        print(f"\n## Transcript pages: {ENTRIES:,} entries, {size_mb:.1f} MB, {LIMIT} entries a page; {rounds} rounds")
        print(f"first page (builds the offset index): {build * 1000:.0f} ms")
        print(f"floor, one full read: {span(pages['floor'], 1000, 1, ' ms')}")
        for name in pages:
            if name != "floor":
                print(f"{name:<12} {span(pages[name], 1000, 2, ' ms')}  ratio {span(ratios(pages, name, 'floor'), 1, 4, 'x')}  (target <= 0.1x)")

        cwd = os.path.join(tmp, "proj")
        generate(cwd)
        files = sorted(paths.sessions_dir(cwd).glob("*.jsonl"))
        hour_ago = time.time() - 3600
        for path in files:
            os.utime(path, (hour_ago, hour_ago))
        tokens = DeleteTokens()
        cold_list = timed(lambda: views.session_list(tmp, Path(cwd), tokens))
        touched = files[len(files) // 2]
        line = touched.read_bytes().splitlines(keepends=True)[-1]

        def after_append(view: object) -> float:
            # Append a copy of the last (usage) line with a fresh id so the file stays valid.
            import orjson

            entry = orjson.loads(line)
            last_id = orjson.loads(touched.read_bytes().splitlines()[-1])["id"]
            entry["parent_id"], entry["id"] = last_id, os.urandom(8).hex()
            with open(touched, "ab") as f:
                f.write(orjson.dumps(entry) + b"\n")
            os.utime(touched, (hour_ago + 1, time.time() - 60))
            return timed(view)  # type: ignore[arg-type]

        listing = alternate(
            {
                "floor": lambda: timed(lambda: read_all(files)),
                "list, unchanged": lambda: timed(lambda: views.session_list(tmp, Path(cwd), tokens)),
                "list, one appended": lambda: after_append(lambda: views.session_list(tmp, Path(cwd), tokens)),
                "tree, unchanged": lambda: timed(lambda: tree_data(cwd)),
                "tree, one appended": lambda: after_append(lambda: tree_data(cwd)),
            },
            rounds,
        )
        print(f"\n## Sessions list and tree: {len(files):,} sessions; {rounds} rounds")
        print(f"first list (reads every file): {cold_list * 1000:.0f} ms")
        print(f"floor, read every file: {span(listing['floor'], 1000, 1, ' ms')}")
        for name in listing:
            if name != "floor":
                print(f"{name:<20} {span(listing[name], 1000, 1, ' ms')}  ratio {span(ratios(listing, name, 'floor'), 1, 2, 'x')}")


if __name__ == "__main__":
    main()
