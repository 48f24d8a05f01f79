"""What a language server adds to an edit: the first edit (server start-up) and every later one.

Runs the real `edit` tool on a Python file three ways in the same process: without servers
(the floor), as the first edit with pylsp configured (start, handshake, first diagnostics),
and as later edits. Prints medians in ms and the extra latency over the floor.

    .venv/bin/python bench/bench_lsp.py [--later 10] [--firsts 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from paired import banner, span

from larik_jupyter.config.model import LspServer
from larik_jupyter.lsp.manager import LspManager
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.files.edit import EditTool

PYLSP = str(Path(sys.executable).parent / "pylsp")
SOURCE = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(200))


def make_env(root: Path, manager: LspManager | None) -> Env:
    return Env(cwd=root, root=root, diagnostics=manager)


def timed_edits(env: Env, path: Path, count: int) -> list[float]:
    tool, times = EditTool(), []
    for i in range(count):
        old, new = (f"return x + {i}\n", f"return x + {i} + undefined_{i}\n")
        started = time.perf_counter()
        result = tool.run(env, {"path": str(path), "old_string": old, "new_string": new})
        times.append((time.perf_counter() - started) * 1000)
        assert not result.is_error, result.content
        if env.diagnostics is not None:
            assert f"undefined name 'undefined_{i}'" in result.content, result.content
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--later", type=int, default=10)
    parser.add_argument("--firsts", type=int, default=3)
    opts = parser.parse_args()
    banner()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LARIK_DATA_DIR"] = str(Path(tmp) / "data")
        root = Path(tmp) / "proj"
        root.mkdir()
        path = root / "mod.py"

        floors: list[float] = []
        firsts: list[float] = []
        laters: list[float] = []
        # Round by round: the floor's edits with no server, then a fresh pylsp's edits.
        for _ in range(opts.firsts):
            path.write_text(SOURCE)
            floors.append(statistics.median(timed_edits(make_env(root, None), path, opts.later)))
            path.write_text(SOURCE)
            manager = LspManager({"pylsp": LspServer(command=PYLSP, languages=["python"])}, root)
            try:
                times = timed_edits(make_env(root, manager), path, opts.later + 1)
            finally:
                manager.close()
            firsts.append(times[0])
            laters.extend(times[1:])
    floor, first, later = (statistics.median(v) for v in (floors, firsts, laters))
    print(f"rounds: {opts.firsts} (a fresh pylsp each, {opts.later} later edits); ms, median (min – max)")
    print(f"edit without servers (floor): {span(floors, 1, 1)}")
    print(f"first edit with pylsp:        {span(firsts, 1, 0)}  (+{first - floor:.0f} ms, {first / floor:.0f}x floor)")
    print(f"later edits with pylsp:       {span(laters, 1, 0)}  (+{later - floor:.0f} ms, {later / floor:.0f}x floor)")


if __name__ == "__main__":
    main()
