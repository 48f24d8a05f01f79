"""Overhead of a `larik-jupyter mcp` tool call over the same call in a `%larik` turn (issue 42).

The same `python` call (`x = 1`, allowed by a rule) in the same kernel, 30 times each way:

- in `%larik` turns (a scripted model makes the call): the call's time as the turn records it
  (its result's `duration`);
- through the MCP server: the round trip the `mcp` SDK's stdio client sees (the execute request
  to the kernel, the call's own turn with its checkpoint and fsynced appends, the answer).

Overhead = median(MCP round trip) - median(in-turn duration); target: at most 30 ms.

With `--restricted`, every variable is restricted (`"egress": {"default": "schema"}`) and the
kernel holds 20 DataFrames of 1,000 rows, so each answer to the client passes the whole egress
door (the value index, the tag's markers, the ledger line).

Run:

    .venv/bin/python bench/bench_mcp.py [--restricted]
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import mcp_types as types
from jupyter_client.manager import start_new_kernel
from mcp import ClientSession, StdioServerParameters, stdio_client

N = 30
CODE = "x = 1"
RESTRICTED = "--restricted" in sys.argv
FRAMES = """import pandas as pd
frames = {f"f{i}": pd.DataFrame({"email": [f"user{i}.{r}@ex.com" for r in range(1000)],
                                 "amount": [1000.25 + r * 1.5 for r in range(1000)]}) for i in range(20)}
globals().update(frames)
del frames"""


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    project = home / "proj"
    (project / ".git").mkdir(parents=True)
    os.environ["LARIK_DATA_DIR"], os.environ["LARIK_CONFIG_DIR"] = str(home / "data"), str(home / "config")
    replies = []
    for _ in range(N):
        replies += [{"content": [{"type": "tool_use", "name": "python", "input": {"code": CODE}}]},
                    {"content": [{"type": "text", "text": "Done."}]}]
    script = home / "script.json"
    script.write_text(json.dumps({"responses": replies}))
    (home / "config").mkdir()
    config: dict[str, object] = {"model": f"scripted:{script}", "permissions": {"allow": ["python"]}}
    if RESTRICTED:
        config["egress"] = {"default": "schema"}
    (home / "config" / "config.json").write_text(json.dumps(config))
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(project))
    try:
        if RESTRICTED:
            kc.execute_interactive(FRAMES, timeout=60, output_hook=lambda _msg: None)
        kc.execute_interactive("%load_ext larik_jupyter", timeout=60, output_hook=lambda _msg: None)
        for _ in range(N):
            kc.execute_interactive("%larik set x", timeout=60, output_hook=lambda _msg: None)
        from larik_jupyter.session.catalog import list_sessions
        from larik_jupyter.session.reader import load_entries

        [own] = list_sessions(project)
        entries = load_entries(Path(own.path)).entries
        in_turn = [b.duration or 0.0 for e in entries if e.message is not None for b in e.message.tool_results()]
        assert len(in_turn) == N, len(in_turn)
        over_mcp = asyncio.run(_mcp(km.connection_file, project))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    turn_ms, mcp_ms = statistics.median(in_turn) * 1000, statistics.median(over_mcp) * 1000
    print(f"{'restricted: ' if RESTRICTED else ''}python `{CODE}` x{N}: in a %larik turn {turn_ms:.1f} ms (median), over MCP {mcp_ms:.1f} ms "
          f"(median round trip); overhead {mcp_ms - turn_ms:.1f} ms (target <= 30 ms)")


async def _mcp(connection_file: str, project: Path) -> list[float]:
    params = StdioServerParameters(command=sys.executable, env=dict(os.environ), cwd=str(project),
                                   args=["-m", "larik_jupyter", "mcp", "--connection-file", connection_file])
    times = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=types.Implementation(name="bench", version="1")) as session:
            await session.initialize()
            await session.call_tool("python", {"code": CODE})  # the kernel opens the session once
            for _ in range(N):
                started = time.perf_counter()
                result = await session.call_tool("python", {"code": CODE})
                times.append(time.perf_counter() - started)
                assert not result.is_error, result
    return times


if __name__ == "__main__":
    main()
