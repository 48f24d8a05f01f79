"""notebook_read over the corpus of real notebooks, and the first notebook call of a kernel.

1. Each nbformat 4 notebook of tests/corpus/notebooks read whole by `notebook_read` (all cells,
   outputs and images) against `nbformat.read(path, as_version=4)` of the same file, the two
   alternating round by round; per file the median of the rounds, then the median and the worst
   of the per-file ratios. Target: median <= 2x.
2. A fresh kernel: `%load_ext larik_jupyter`, a 2 s pause (a user typing), then the first
   `notebook_read` of a corpus notebook (timed inside the kernel), a 2 s
   pause, and the same call again. Target: first <= 1.5x later. For scale, the same first call
   in a kernel without the extension loaded (no warm-up), and in a third kernel the same pair
   once the warm-up thread has finished (what a turn waits for before its first model request,
   so before any tool call). The tools' modules are imported before the clock starts: a turn
   has them before its first model request.

Run:

    .venv/bin/python bench/bench_notebook_corpus.py [ROUNDS] [KERNELS]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

from paired import alternate, banner, kernel, run_cell, span, timed

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "notebooks"
FIRST_CALL_NOTEBOOK = "nbformat__tests_test4.5.ipynb"

# The tools' modules are imported before the clock starts: a turn imports them (with the agent)
# before its first model request, so they are no part of a tool call's cost.
CALL = """
import time as _t, pathlib as _p
from larik_jupyter.tools.env import Env as _Env
from larik_jupyter.tools.notebook.cells import NotebookReadTool as _Read
_root = _p.Path({root!r})
_env = _Env(cwd=_root, root=_root)
_s = _t.perf_counter()
_r = _Read().run(_env, {{"path": {name!r}, "limit": 1000}})
assert not _r.is_error, _r.content
print(_t.perf_counter() - _s)
"""


def corpus() -> list[Path]:
    out = []
    for path in sorted(CORPUS.glob("*.ipynb")):
        data = json.loads(path.read_bytes().decode("utf-8-sig"))
        if data.get("nbformat") == 4:
            out.append(path)
    return out


def bench_read(rounds: int) -> list[tuple[str, float, float]]:
    import nbformat

    from larik_jupyter.tools.env import Env
    from larik_jupyter.tools.notebook.cells import NotebookReadTool

    env = Env(cwd=CORPUS, root=CORPUS)
    tool = NotebookReadTool()
    rows = []
    for path in corpus():
        args = {"path": path.name, "limit": 100_000}
        assert not tool.run(env, args).is_error

        def floor(path: Path = path) -> float:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return timed(lambda: nbformat.read(str(path), as_version=4))

        def ours(args: dict[str, object] = args) -> float:
            return timed(lambda: tool.run(env, args))

        results = alternate({"nbformat.read": floor, "notebook_read": ours}, rounds)
        rows.append((path.name, statistics.median(results["nbformat.read"]), statistics.median(results["notebook_read"])))
    return rows


# What a turn waits for before its first model request: the warm-up's SDK import.
JOIN_WARMUP = "from larik_jupyter.frontends.notebook import extension as _x\n_x._warmup.thread.join()"


def first_call(work: Path, load: bool, settled: bool = False) -> tuple[float, float]:
    env = {"LARIK_DATA_DIR": str(work / "data"), "LARIK_CONFIG_DIR": str(work / "config"),
           "LARIK_MODEL": "anthropic:claude-sonnet-4-6", "ANTHROPIC_API_KEY": "sk-bench"}
    with kernel(env, work) as kc:
        if load:
            run_cell(kc, "%load_ext larik_jupyter")
        time.sleep(2)
        if settled:
            run_cell(kc, JOIN_WARMUP)
        code = CALL.format(root=str(CORPUS), name=FIRST_CALL_NOTEBOOK)
        first = float(run_cell(kc, code).split()[-1])
        time.sleep(2)
        later = float(run_cell(kc, code).split()[-1])
        return first, later


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    kernels = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    banner()
    rows = bench_read(rounds)
    ratios = [ours / floor for _, floor, ours in rows]
    worst = max(rows, key=lambda r: r[2] / r[1])
    print(f"notebook_read vs nbformat.read over {len(rows)} corpus notebooks, {rounds} rounds each:")
    print(f"  per-file ratio: median {statistics.median(ratios):.2f}x, worst {max(ratios):.2f}x "
          f"({worst[0]}: {worst[1] * 1000:.1f} ms vs {worst[2] * 1000:.1f} ms)  (target median <= 2x)")
    print(f"  all files: nbformat.read {sum(r[1] for r in rows) * 1000:.0f} ms, "
          f"notebook_read {sum(r[2] for r in rows) * 1000:.0f} ms")
    results: dict[str, list[float]] = {"first": [], "later": [], "cold": [], "settled": [], "settled_later": []}
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(kernels):
            work = Path(tmp) / str(n)
            work.mkdir()
            first, later = first_call(work, load=True)
            results["first"].append(first)
            results["later"].append(later)
            results["cold"].append(first_call(work, load=False)[0])
            settled, settled_later = first_call(work, load=True, settled=True)
            results["settled"].append(settled)
            results["settled_later"].append(settled_later)
    pairs = [f / later for f, later in zip(results["first"], results["later"], strict=True)]
    print(f"first notebook_read in a fresh kernel ({FIRST_CALL_NOTEBOOK}), {kernels} kernels; ms, median (min – max):")
    print(f"  first, after %load_ext and 2 s   {span(results['first'], 1000, 1, ' ms')}")
    print(f"  later, after another 2 s         {span(results['later'], 1000, 1, ' ms')}")
    print(f"  ratio first / later              {span(pairs, 1, 2, 'x')}  (target <= 1.5x)")
    print(f"  first without the extension      {span(results['cold'], 1000, 1, ' ms')}  (no warm-up, for scale)")
    settled_pairs = [f / later for f, later in zip(results["settled"], results["settled_later"], strict=True)]
    print(f"  first once the warm-up finished  {span(results['settled'], 1000, 1, ' ms')}, later "
          f"{span(results['settled_later'], 1000, 1, ' ms')}, ratio {span(settled_pairs, 1, 2, 'x')}")
    print("  (a turn waits for the warm-up's SDK import before its first model request, so its first")
    print("   tool call comes after it; at 2 s the SDK import may still be running beside the call)")


if __name__ == "__main__":
    main()
