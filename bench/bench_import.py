"""Import cost of larik_jupyter, as ratios to floors measured in the same run.

Each figure is the cumulative `-X importtime` time of a module in a fresh interpreter
(best of REPEATS): `import larik_jupyter`, `import larik_jupyter.llm.select` (what
choosing a model loads), the floor `import pydantic` (the core's one unavoidable
dependency) and, for scale, the two SDKs that load on first use only.

Run: .venv/bin/python bench/bench_import.py
"""

from __future__ import annotations

import subprocess
import sys

REPEATS = 5
TARGETS = {
    "pydantic (floor)": ("pydantic", "pydantic"),
    "larik_jupyter": ("larik_jupyter", "larik_jupyter"),
    "larik_jupyter.llm.select": ("larik_jupyter.llm.select", "larik_jupyter"),
    "anthropic + openai SDKs": ("anthropic, openai", "anthropic openai"),
}


def cumulative_us(statement: str, tops: list[str]) -> tuple[int, set[str]]:
    """Cumulative import time (µs) of the packages `tops` and their submodules, and every module imported."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {statement}"],
        capture_output=True,
        text=True,
        check=True,
    )
    total = 0
    modules: set[str] = set()
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, raw = line.removeprefix("import time:").split("|")
        name = raw.strip()
        modules.add(name)
        # One space of indent marks a module imported by the statement itself.
        if not raw.startswith("  ") and name.split(".")[0] in tops:
            total += int(cumulative)
    return total, modules


def main() -> None:
    best: dict[str, int] = {}
    for label, (statement, tops) in TARGETS.items():
        runs = [cumulative_us(statement, tops.split()) for _ in range(REPEATS)]
        best[label] = min(t for t, _ in runs)
        if label.startswith("larik_jupyter"):
            heavy = {m for m in runs[0][1] if m.split(".")[0] in ("anthropic", "openai", "httpx", "httpx2")}
            assert not heavy, f"{label} imported {sorted(heavy)}"
    floor = best["pydantic (floor)"]
    print(f"{'import':<28} {'ms':>8} {'ratio':>7}")
    for label, us in best.items():
        print(f"{label:<28} {us / 1000:>8.1f} {us / floor:>7.2f}")


if __name__ == "__main__":
    main()
