"""How much of a long session's input the providers' prompt caches serve, and what it costs.

A scripted session of 30 model calls (two steps of 12 parallel reads, single reads and
greps, an MCP server, an approval that reloads the config, a fork, a resume in a new agent,
a compaction)
runs through `Agent` and the real SDKs against `ScriptedHTTPServer`, once speaking Anthropic
and once OpenAI. Every request body the real request builders produced is captured, then
replayed through each vendor's published caching rules:

- Anthropic (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching): the
  prefix is tools, system, messages, block by block; a request writes the prefix ending at
  each `cache_control` block ("up to 4 cache breakpoints") that reaches the model's minimum
  cacheable length (the model table's `cache_min_tokens`), and reads the longest cached
  prefix ending at a block boundary at most 20 blocks before one of its breakpoints ("the
  system automatically checks for cache hits at all previous content block boundaries (up to
  approximately 20 blocks before your explicit breakpoint)"). Reads cost 0.1x the input
  price, writes 1.25x.
- OpenAI (https://platform.openai.com/docs/guides/prompt-caching): automatic for prompts of
  1,024 tokens or more; the cached part is the longest prefix any earlier request shared,
  counted "in increments of 128 tokens" from 1,024.

Tokens are estimated as 4 characters of JSON each. Printed: the share of input tokens read
from the cache over the calls after the first (target >= 90%), the calls that missed, and the
session's input cost against the same requests with no caching. The one call expected not to
read the whole previous request is the first after the compaction (the summary replaces the
conversation; it still reads the tools and system prompt).

    .venv/bin/python bench/bench_cache.py
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paired import banner

from larik_jupyter import Agent
from larik_jupyter.llm.models import model_info
from larik_jupyter.testing import ScriptedHTTPServer
from larik_jupyter.testing.api_rules import without_breakpoints

ROOT = Path(__file__).resolve().parent.parent
MCP_SERVER = {"command": sys.executable, "args": [str(ROOT / "tests" / "mcp_servers" / "tiny_server.py")]}
SOURCES = sorted((ROOT / "larik_jupyter" / "agent").glob("*.py"))[:12]
MODELS = {"anthropic": "anthropic:claude-sonnet-4-6", "openai": "openai:gpt-5"}
LOOKBACK = 20


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "name": name, "input": args}


def _say(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "usage": {"input_tokens": 1, "output_tokens": 1}}


def _step(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": "Looking."}, *calls]}


def script() -> dict[str, list[dict[str, Any]]]:
    """The replies of each turn, keyed by the turn's prompt."""
    files = [f"src/{p.name}" for p in SOURCES]
    return {
        "survey the agent package": [_step(*(_call("read", path=f) for f in files)), _say("Surveyed.")],
        "look closer": [
            *(_step(_call("read", path=f, limit=40)) for f in files[:8]),
            _step(_call("grep", pattern="def ", path="src")),
            _step(_call("glob", pattern="src/*.py")),
            _say("Closer look done."),
        ],
        "after the approval": [_step(*(_call("read", path=f, offset=20) for f in files)), _say("Re-read.")],
        "on the fork": [
            _step(_call("grep", pattern="class ", path="src")),
            *(_step(_call("read", path=f)) for f in files[9:11]),
            _say("Forked."),
        ],
        "after resuming": [
            _step(_call("ls", path="src")),
            *(_step(_call("read", path=f, limit=60)) for f in files[1:4]),
            _say("Resumed."),
        ],
        "compact": [_say("SUMMARY: the agent package was surveyed, read twice, forked and resumed.")],
        "after the compaction": [*(_step(_call("read", path=f)) for f in files[6:10]), _say("Done.")],
    }


def run_session(kind: str, work: Path) -> list[dict[str, Any]]:
    """Play the session with `kind`'s SDK; the request bodies, in order."""
    project = work / kind
    (project / "src").mkdir(parents=True)
    (project / ".git").mkdir()
    for source in SOURCES:
        shutil.copy(source, project / "src" / source.name)
    (project / ".larik").mkdir()
    (project / ".larik" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["bash(ls:*)"]}}))
    turns = script()
    replies = [reply for steps in turns.values() for reply in steps]
    with ScriptedHTTPServer(replies, api_key="sk-bench") as server:
        if kind == "anthropic":
            os.environ |= {"ANTHROPIC_API_KEY": "sk-bench", "ANTHROPIC_BASE_URL": server.anthropic_base_url}
        else:
            os.environ |= {"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": server.openai_base_url}
        agent = Agent(project, model=MODELS[kind], yes=True)
        prompts = iter(turns)
        agent.run(next(prompts))
        agent.run(next(prompts))
        agent.config.approve("bash(ls:*)")  # reloads the config mid-session
        agent.run(next(prompts))
        agent.fork()
        agent.run(next(prompts))
        session = agent.session_id
        agent.close()
        agent = Agent(project, model=MODELS[kind], yes=True, session=session)  # a resume
        agent.run(next(prompts))
        next(prompts)
        agent.compact()
        agent.run(next(prompts))
        agent.close()
        assert server.remaining == 0, f"{server.remaining} replies unplayed: a request was refused"
        return [r.body for r in server.requests]


@dataclass
class Prefix:
    """A request as a chain of blocks: the hash of each prefix, its tokens, its breakpoints."""

    hashes: list[str]
    tokens: list[int]  # cumulative
    breakpoints: list[int]

    @classmethod
    def of(cls, blocks: list[tuple[Any, bool]]) -> Prefix:
        hashes, tokens, marks = [], [], []
        digest, total = hashlib.sha256(), 0
        for index, (block, marked) in enumerate(blocks):
            text = json.dumps(without_breakpoints(block), sort_keys=True)
            digest.update(text.encode())
            hashes.append(digest.copy().hexdigest())
            total += max(1, len(text) // 4)
            tokens.append(total)
            if marked:
                marks.append(index)
        return cls(hashes, tokens, marks)


def _marked(block: Any) -> bool:
    return isinstance(block, dict) and "cache_control" in block


def anthropic_prefix(body: dict[str, Any]) -> Prefix:
    blocks: list[tuple[Any, bool]] = [(t, _marked(t)) for t in body.get("tools", [])]
    blocks += [(s, _marked(s)) for s in body.get("system", [])]
    for m in body["messages"]:
        for i, b in enumerate(m["content"]):
            blocks.append(([m["role"], i, b], _marked(b)))
    return Prefix.of(blocks)


def openai_prefix(body: dict[str, Any]) -> Prefix:
    return Prefix.of([(t, False) for t in body.get("tools", [])] + [(m, False) for m in body["messages"]])


@dataclass
class Call:
    total: int
    read: int
    write: int


def anthropic_calls(bodies: list[dict[str, Any]], minimum: int) -> list[Call]:
    cache: set[str] = set()
    calls = []
    for body in bodies:
        p = anthropic_prefix(body)
        hit = -1
        for b in p.breakpoints:
            for at in range(b, max(-1, b - LOOKBACK), -1):
                if p.hashes[at] in cache:
                    hit = max(hit, at)
                    break
        read = p.tokens[hit] if hit >= 0 else 0
        written = [b for b in p.breakpoints if p.tokens[b] >= minimum]
        write = max(0, p.tokens[max(written)] - read) if written else 0
        cache.update(p.hashes[b] for b in written)
        calls.append(Call(p.tokens[-1], read, write))
    return calls


def openai_calls(bodies: list[dict[str, Any]]) -> list[Call]:
    seen: set[str] = set()
    calls = []
    for body in bodies:
        p = openai_prefix(body)
        shared = max((p.tokens[i] for i, h in enumerate(p.hashes) if h in seen), default=0)
        read = 0 if shared < 1024 else 1024 + (shared - 1024) // 128 * 128
        seen.update(p.hashes)
        calls.append(Call(p.tokens[-1], read, 0))
    return calls


def report(kind: str, calls: list[Call], granularity: int) -> None:
    """One line: the share read after the first call, the calls that did not read the whole
    previous request (within the cache's `granularity`), and the input cost."""
    price = model_info(MODELS[kind]).price
    assert price is not None
    later = calls[1:]
    total = sum(c.total for c in later)
    read = sum(c.read for c in later)
    misses = [n for n, (a, b) in enumerate(zip(calls, later, strict=False), start=2) if b.read <= a.total - granularity]
    cost = sum(
        (c.total - c.read - c.write) * price.input + c.read * price.cache_read + c.write * price.cache_write
        for c in calls
    ) / 1e6
    plain = sum(c.total for c in calls) * price.input / 1e6
    print(
        f"{kind:9} {len(calls)} calls, {sum(c.total for c in calls):,} input tokens; after the first "
        f"call {read / total:.1%} read from the cache (target >= 90%); calls not reading the whole "
        f"previous request: {misses or 'none'}; input cost ${cost:.4f} against ${plain:.4f} uncached ({cost / plain:.2f}x)"
    )


def main() -> None:
    banner()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LARIK_DATA_DIR"] = str(Path(tmp) / "data")
        os.environ["LARIK_CONFIG_DIR"] = str(Path(tmp) / "config")
        (Path(tmp) / "config").mkdir()
        (Path(tmp) / "config" / "config.json").write_text(json.dumps({"mcpServers": {"tiny": MCP_SERVER}}))
        for var in ("LARIK_MODEL",):
            os.environ.pop(var, None)
        anthropic = run_session("anthropic", Path(tmp))
        openai = run_session("openai", Path(tmp))
    minimum = model_info(MODELS["anthropic"]).cache_min_tokens
    print(f"Anthropic rules: breakpoints, {LOOKBACK}-block lookback, minimum {minimum} tokens ({MODELS['anthropic']})")
    report("anthropic", anthropic_calls(anthropic, minimum), 1)
    print("OpenAI rules: automatic prefix caching from 1,024 tokens in 128-token increments")
    report("openai", openai_calls(openai), 128)
    if "--calls" in sys.argv:
        for n, (a, o) in enumerate(zip(anthropic_calls(anthropic, minimum), openai_calls(openai), strict=False), 1):
            print(f"  call {n:2}: anthropic {a.read:6}/{a.total:6} read, {a.write:6} written; openai {o.read:6}/{o.total:6}")


if __name__ == "__main__":
    main()
