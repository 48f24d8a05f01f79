"""Config costs as ratios to floors measured in the same run.

- load_config (4 layers, 3 instruction files) vs reading and json-parsing the same files;
- decide() on a 3-command bash chain against 30 rules vs shlex-splitting the command;
- update_json vs a bare temp-write + fsync + rename of the same JSON.

Run: .venv/bin/python bench/bench_config.py
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPEATS = 5


def per_call(run: Callable[[], object], n: int) -> float:
    """Best-of-REPEATS seconds per call over `n` calls."""
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(n):
            run()
        best = min(best, (time.perf_counter() - start) / n)
    return best


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-config-"))
    os.environ["LARIK_CONFIG_DIR"] = str(work / "config")
    from larik_jupyter.config.layers import config_layers, load_config
    from larik_jupyter.config.rules import decide
    from larik_jupyter.config.update import update_json

    root = work / "repo"
    cwd = root / "pkg" / "mod"
    (root / ".git").mkdir(parents=True)
    cwd.mkdir(parents=True)
    rules = {"allow": [f"bash(tool{i}:*)" for i in range(10)] + ["bash(git status:*)", "bash(ls:*)", "bash(grep:*)"],
             "ask": [f"write(dir{i}/**)" for i in range(7)],
             "deny": [f"bash(rm{i}:*)" for i in range(10)]}
    layer = {"model": "anthropic:claude-sonnet-4-5", "permissions": rules, "compaction": {"threshold": 0.7},
             "mcpServers": {f"s{i}": {"command": "srv", "args": ["-x", str(i)]} for i in range(5)}}
    files = [layer.path for layer in config_layers(root)]
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(layer))
    instruction_files = [work / "config" / "AGENTS.md", root / "AGENTS.md", cwd / "CLAUDE.md"]
    for path in instruction_files:
        path.write_text("Be careful.\n" * 200)

    def floor_load() -> None:
        for path in files:
            json.loads(path.read_text())
        for path in instruction_files:
            path.read_text()

    loaded = load_config(cwd)
    command = {"command": "git status && ls -la | grep foo"}
    assert decide(loaded, "bash", command) == "allow"
    target = work / "config" / "projects" / "u.json"
    bare = work / "bare.json"
    payload = {"keys": {f"k{i}": i for i in range(50)}}

    def bare_write() -> None:
        tmp = bare.with_suffix(".tmp")
        with open(tmp, "w") as handle:
            handle.write(json.dumps(payload, indent=2))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, bare)

    rows = [
        ("load_config", per_call(lambda: load_config(cwd), 50), per_call(floor_load, 50)),
        ("decide (bash chain, 30 rules)", per_call(lambda: decide(loaded, "bash", command), 2000),
         per_call(lambda: shlex.split(command["command"]), 2000)),
        ("update_json", per_call(lambda: update_json(target, lambda d: d.update(payload)), 30),
         per_call(bare_write, 30)),
    ]
    print(f"{'operation':32} {'per call':>12} {'floor':>12} {'ratio':>7}")
    for name, cost, floor in rows:
        print(f"{name:32} {cost * 1e6:10.0f}us {floor * 1e6:10.0f}us {cost / floor:7.1f}")


if __name__ == "__main__":
    main()
