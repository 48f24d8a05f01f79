"""A `python` tool call against the same code run plainly in the same namespace: the cost a call
adds, as the call-cost benches measure and print it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.paired import alternate, span, timed
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.host import KernelHost
from larik_jupyter.tools.kernel.python import PythonTool
from larik_jupyter.tools.kernel.undo import kernel_snapshots

WORDS = {"first": "first of a turn", "later": "later in a turn",
         "protect": "first of a turn, protect mode (every variable copied)"}


def python_call_times(
    ns: dict[str, Any], code: str, root: Path, *, calls: int, rounds: int, protect: bool = False
) -> dict[str, list[float]]:
    """Seconds per call of `code` run plainly (`plain`, `exec` in `ns`) and through the python
    tool as the first call of a turn (`first`: nothing cached), a later call of the turn
    (`later`) and, with `protect`, a first call under protect mode (`protect`), alternating in
    `rounds` rounds of `calls` calls."""
    env = Env(cwd=root, root=root, host=KernelHost(ns))
    env.keeps_variables = True
    snapshots = kernel_snapshots(env.call.session_id)
    tool = PythonTool()
    compiled = compile(code, "<plain>", "exec")
    turn = iter(range(1, 1 << 30))

    def plain() -> float:
        return timed(lambda: [exec(compiled, ns) for _ in range(calls)])

    def first_of_turn(protect: bool = False) -> float:
        total = 0.0
        for _ in range(calls):
            snapshots.open_turn(next(turn), protect=protect)
            env.host.fingerprints.clear()  # type: ignore[union-attr]
            total += timed(lambda: tool.run(env, {"code": code}))
        return total

    def later_in_turn() -> float:
        snapshots.open_turn(next(turn))
        env.host.fingerprints.clear()  # type: ignore[union-attr]
        tool.run(env, {"code": code})
        return timed(lambda: [tool.run(env, {"code": code}) for _ in range(calls)])

    cases = {"plain": plain, "first": first_of_turn, "later": later_in_turn}
    if protect:
        cases["protect"] = lambda: first_of_turn(protect=True)
    return {name: [t / calls for t in values] for name, values in alternate(cases, rounds).items()}


def report(label: str, per_call: dict[str, list[float]], target: str) -> None:
    """The plain run, then each kind of call with what it added to the plain run (against
    `target`; protect mode's for the record)."""
    print(label)
    print(f"  plain run:                    {span(per_call['plain'], 1e3, digits=3, unit=' ms')}")
    for name in [n for n in WORDS if n in per_call]:
        added = [s - p for s, p in zip(per_call[name], per_call["plain"], strict=True)]
        print(f"  python call, {WORDS[name]}: {span(per_call[name], 1e3, digits=1, unit=' ms')}  "
              f"added {span(added, 1e3, digits=1, unit=' ms')} ({target if name != 'protect' else 'for the record'})")
