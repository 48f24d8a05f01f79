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

from larik_jupyter.config.model import LspServer
from larik_jupyter.lsp.manager import LspManager
from larik_jupyter.tools.edit import EditTool
from larik_jupyter.tools.env import Env

PYLSP = str(Path(sys.executable).parent / "pylsp")
SOURCE = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(200))


def make_env(root: Path, manager: LspManager | None) -> Env:
    return Env(cwd=root, root=root, before_write=lambda p: None, capture_paths=lambda ps: None,
               diagnostics=manager)


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
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LARIK_DATA_DIR"] = str(Path(tmp) / "data")
        root = Path(tmp) / "proj"
        root.mkdir()
        path = root / "mod.py"

        path.write_text(SOURCE)
        floor = statistics.median(timed_edits(make_env(root, None), path, opts.later))

        firsts: list[float] = []
        laters: list[float] = []
        for _ in range(opts.firsts):
            path.write_text(SOURCE)
            manager = LspManager({"pylsp": LspServer(command=PYLSP, languages=["python"])}, root)
            try:
                times = timed_edits(make_env(root, manager), path, opts.later + 1)
            finally:
                manager.close()
            firsts.append(times[0])
            laters.extend(times[1:])
    first, later = statistics.median(firsts), statistics.median(laters)
    print(f"edit without servers (floor): {floor:8.1f} ms  (median of {opts.later})")
    print(f"first edit with pylsp:        {first:8.1f} ms  (+{first - floor:.0f} ms, "
          f"{first / floor:.0f}x floor; median of {opts.firsts})")
    print(f"later edits with pylsp:       {later:8.1f} ms  (+{later - floor:.0f} ms, "
          f"{later / floor:.0f}x floor; median of {len(laters)}, min {min(laters):.0f}, max {max(laters):.0f})")


if __name__ == "__main__":
    main()
