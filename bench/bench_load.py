"""`%load_ext larik_jupyter` against `%load_ext jupyter_ai_magics` in fresh kernels.

Each round starts one kernel per extension (peer first, then ours) and times the
`load_ext` call inside the kernel. The peer is the bench-only dependency
`jupyter-ai-magics` (`pip install -e '.[bench]'`). Target: ours <= 0.15x the peer.

Run: .venv/bin/python bench/bench_load.py [ROUNDS]
"""

from __future__ import annotations

import sys

from jupyter_client.manager import start_new_kernel
from paired import alternate, banner, ratios, span

TIMED = (
    "import time as _t\n"
    "_s = _t.perf_counter()\n"
    "get_ipython().run_line_magic('load_ext', {name!r})\n"
    "print(_t.perf_counter() - _s)\n"
)


def in_fresh_kernel(code: str) -> str:
    """What `code` prints in a new kernel, which is shut down afterwards."""
    km, kc = start_new_kernel(kernel_name="python3")
    try:
        out: list[str] = []
        kc.execute_interactive(
            code, timeout=120,
            output_hook=lambda msg: out.append(msg["content"].get("text", ""))
            if msg["msg_type"] == "stream" else None,
        )
        return "".join(out)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def load_seconds(name: str) -> float:
    printed = in_fresh_kernel(TIMED.format(name=name)).split()
    return float(printed[-1])


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    banner()
    results = alternate(
        {
            "jupyter_ai_magics": lambda: load_seconds("jupyter_ai_magics"),
            "larik_jupyter": lambda: load_seconds("larik_jupyter"),
        },
        rounds,
    )
    print(f"rounds: {rounds} (one fresh kernel per extension per round); ms, median (min – max)")
    for name, values in results.items():
        print(f"%load_ext {name:<18} {span(values, 1000, 1, ' ms')}")
    print(f"ratio ours / peer            {span(ratios(results, 'larik_jupyter', 'jupyter_ai_magics'), 1, 3, 'x')}  (target <= 0.15x)")


if __name__ == "__main__":
    main()
