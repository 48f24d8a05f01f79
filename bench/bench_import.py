"""Import cost of larik_jupyter, as ratios to floors measured in the same run.

Each figure is the cumulative `-X importtime` time of a module in a fresh interpreter
(median of ROUNDS with its range; the imports alternate round by round): `import larik_jupyter`, `import larik_jupyter.llm.select` (what
choosing a model loads), the floor `import pydantic` (the core's one unavoidable
dependency) and, for scale, the two SDKs that load on first use only.

Run: .venv/bin/python bench/bench_import.py [ROUNDS]
"""

from __future__ import annotations

import subprocess
import sys

from paired import alternate, banner, ratios, span

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
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    banner()
    seen: dict[str, set[str]] = {}

    def timer(label: str, statement: str, tops: str) -> float:
        us, modules = cumulative_us(statement, tops.split())
        seen[label] = modules
        return us / 1e6

    results = alternate(
        {label: (lambda a=label, b=statement, c=tops: timer(a, b, c)) for label, (statement, tops) in TARGETS.items()},
        rounds,
    )
    for label, modules in seen.items():
        if label.startswith("larik_jupyter"):
            heavy = {m for m in modules if m.split(".")[0] in ("anthropic", "openai", "httpx", "httpx2")}
            assert not heavy, f"{label} imported {sorted(heavy)}"
    print(f"rounds: {rounds}; ms, median (min – max)")
    print("| import | ms | ratio to floor |")
    print("|---|---|---|")
    for label, values in results.items():
        print(f"| {label} | {span(values, 1000, 1)} | {span(ratios(results, label, 'pydantic (floor)'), 1, 2, 'x')} |")


if __name__ == "__main__":
    main()
