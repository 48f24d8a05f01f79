"""The agent loop's own cost per tool step, on top of the provider and the tool.

A scripted model asks for a tool N times (`read` of a small file, then in a second run
`write` of it, which also makes every step a fsynced durability boundary), then answers. The turn's wall
time minus the same script played by the provider alone and minus the same N tool calls
run alone is what the loop adds: events, permission checks, session appends (fsynced at
each tool-result boundary, the durability policy), checkpoint bookkeeping and the thread
hop that keeps the event loop free while a tool runs.

The three (provider alone, tool calls alone, the turn) alternate round by round; figures
are medians of ROUNDS with their range.

    .venv/bin/python bench/bench_agent.py [N] [ROUNDS]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from paired import alternate, banner, span

from larik_jupyter.llm.provider import ToolSchema
from larik_jupyter.llm.scripted import file_provider


def measure(steps: int, tool: str, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["LARIK_DATA_DIR"] = str(root / "data")
        os.environ["LARIK_CONFIG_DIR"] = str(root / "config")
        project = root / "proj"
        (project / ".larik").mkdir(parents=True)
        (project / ".larik" / "settings.json").write_text(json.dumps({"max_steps": steps + 5}))
        (project / "f.txt").write_text("hello\n" * 20)
        script = root / "script.json"
        args = {"path": "f.txt"} if tool == "read" else {"path": "f.txt", "content": "x\n"}
        call = {"content": [{"type": "tool_use", "name": tool, "input": args}]}
        script.write_text(json.dumps({"responses": [call] * steps + [{"content": [{"type": "text", "text": "done"}]}]}))

        from larik_jupyter import Agent
        from larik_jupyter.tools.env import Env
        from larik_jupyter.tools.registry import default_tools

        # Floor 1: the provider alone, playing the same script.
        schemas = [ToolSchema(tool, tool)]

        async def play() -> None:
            provider = file_provider(script)  # a fresh player each round, as each turn has
            for _ in range(steps + 1):
                async for _event in provider.stream("system", [], schemas):
                    pass

        def provider_alone() -> float:
            started = time.perf_counter()
            asyncio.run(play())
            return time.perf_counter() - started

        # Floor 2: the tool alone, called the same number of times.
        env = Env(cwd=project, root=project)
        runner = default_tools(env)[tool]

        def tool_alone() -> float:
            started = time.perf_counter()
            for _ in range(steps):
                runner.run(env, args)
            return time.perf_counter() - started

        def turn() -> float:
            agent = Agent(project, model=f"scripted:{script}", yes=True)
            started = time.perf_counter()
            outcome = agent.run("read it many times")
            spent = time.perf_counter() - started
            agent.close()
            assert outcome.status == "done", outcome
            return spent

        r = alternate({"provider": provider_alone, "tool": tool_alone, "turn": turn}, rounds)

    own = [(t - p - x) / steps for t, p, x in zip(r["turn"], r["provider"], r["tool"], strict=True)]
    print(
        f"{tool}: {steps} steps in {span(r['turn'], 1, 2, ' s')} (provider alone {span(r['provider'], 1, 2, ' s')}, "
        f"tool alone {span(r['tool'], 1, 2, ' s')}); loop's own cost per step {span(own, 1000, 2, ' ms')} (target < 5 ms)"
    )


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    banner()
    print(f"rounds: {rounds}; median (min – max)")
    for tool in ("read", "write"):
        measure(steps, tool, rounds)


if __name__ == "__main__":
    main()
