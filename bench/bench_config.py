"""Config costs as ratios to floors measured in the same run.

- load_config (4 layers, 3 instruction files) vs reading and json-parsing the same files;
- decide() on a 3-command bash chain against 30 rules vs shlex-splitting the command; every
  call gets a command not seen before (decide caches its tokenizer, the floor does not, so a
  repeated command would compare a cache hit with a fresh split);
- update_json vs a bare temp-write + fsync + rename of the same JSON.

Floor and subject alternate round by round; figures are medians of ROUNDS with their range.

Run: .venv/bin/python bench/bench_config.py [ROUNDS]
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from paired import alternate, banner, ratios, span


def per_call(run: Callable[[], object], n: int) -> Callable[[], float]:
    """A timer of seconds per call over `n` calls of `run`."""

    def timer() -> float:
        start = time.perf_counter()
        for _ in range(n):
            run()
        return (time.perf_counter() - start) / n

    return timer


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    banner()
    work = Path(tempfile.mkdtemp(prefix="bench-config-"))
    os.environ["LARIK_CONFIG_DIR"] = str(work / "config")
    from larik_jupyter.config.decide import decide
    from larik_jupyter.config.layers import config_layers, load_config
    from larik_jupyter.config.rules import CallSubject
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
    assert decide(loaded, CallSubject(("bash",), command="git status && ls -la | grep foo")) == "allow"
    fresh = itertools.count()  # one counter for both sides: no command is ever seen twice

    def new_command() -> str:
        return f"git status && ls -la d{next(fresh)} | grep foo"
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
        ("load_config (4 layers, 3 instruction files)", per_call(lambda: load_config(cwd), 50),
         per_call(floor_load, 50)),
        ("decide (new 3-command bash chain, 30 rules)",
         per_call(lambda: decide(loaded, CallSubject(("bash",), command=new_command())), 2000),
         per_call(lambda: shlex.split(new_command()), 2000)),
        ("update_json (lock + read + fsync + rename)",
         per_call(lambda: update_json(target, lambda d: d.update(payload)), 30),
         per_call(bare_write, 30)),
    ]
    print(f"rounds: {rounds}; microseconds per call, median (min – max)")
    print("| operation | ours | floor | ratio |")
    print("|---|---|---|---|")
    for name, ours, floor in rows:
        r = alternate({"floor": floor, "ours": ours}, rounds)
        print(f"| {name} | {span(r['ours'], 1e6, 0)} | {span(r['floor'], 1e6, 0)} | {span(ratios(r, 'ours', 'floor'), 1, 1, 'x')} |")


if __name__ == "__main__":
    main()
