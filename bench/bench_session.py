"""Session store benchmark: resume, memory, appends and fork, as ratios to a floor measured here.

    .venv/bin/python bench/bench_session.py [--sizes 1000,10000,100000] [--repeat 3]

Floor for reading = reading the file's bytes and splitting them into lines. Sessions are
realistic: ~1.4 KB entries of prompts, thinking + text + tool calls, tool results and usage,
a fifth of the lines with non-ASCII text. Prints a Markdown report for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import orjson
from paired import alternate, banner, ratios, span

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from larik_jupyter.llm.messages import (  # noqa: E402
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    user_text,
)
from larik_jupyter.session.branch import fork  # noqa: E402
from larik_jupyter.session.entry import Entry  # noqa: E402
from larik_jupyter.session.reader import load_entries  # noqa: E402
from larik_jupyter.session.state import replay  # noqa: E402
from larik_jupyter.session.store import Session  # noqa: E402

WORDS = (
    "the of and to in is that for it as with was on be at by this had not are but from or have an they "
    "which one you were all there would their we been has when who will more no if out so said what up "
    "its about into than them can only other new some could time these two may then do first def return "
    "import class self None True False print range len dict list str int path file"
).split()
NON_ASCII = ["naïve", "café", "—", "“quoted”", "日本語", "🎉"]


def _text(rng: random.Random, n: int, accent: bool) -> str:
    out, k = [], 0
    while k < n:
        word = rng.choice(NON_ASCII) if accent and rng.random() < 0.02 else rng.choice(WORDS)
        out.append(word)
        k += len(word) + 1
    return " ".join(out)


def session_lines(n: int, seed: int = 1) -> list[bytes]:
    """`n` lines (newline included) of a well-formed session, in Larik's format."""
    rng = random.Random(seed)
    out: list[bytes] = []
    prev: str | None = None

    def add(d: dict) -> None:
        nonlocal prev
        d["id"] = f"{len(out):016x}"
        if prev is not None:
            d["parent_id"] = prev
        d["time"] = "2026-11-30T12:00:00.000Z"
        prev = d["id"]
        out.append(orjson.dumps(d) + b"\n")

    add({"type": "meta", "meta": {"cwd": "/home/ana/proj", "provider": "anthropic", "model": "claude-sonnet-4-5"}})
    tool = 0
    while len(out) < n:
        accent = rng.random() < 0.2
        phase = len(out) % 5
        if phase == 1:
            add({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": _text(rng, 1650, accent)}]}})
        elif phase == 2:
            tool += 1
            add({"type": "message", "message": {"role": "assistant", "content": [
                {"type": "thinking", "thinking": _text(rng, 400, accent), "signature": "sig" * 20},
                {"type": "text", "text": _text(rng, 700, accent)},
                {"type": "tool_use", "id": f"toolu_{tool:08d}", "name": "read", "input": {"path": "src/app.py", "limit": 200}},
            ]}})
        elif phase == 3:
            add({"type": "message", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{tool:08d}", "content": _text(rng, 1700, accent)}]}})
        elif phase == 4:
            add({"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": _text(rng, 1550, accent)}]}})
        else:
            add({"type": "usage", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 1200, "output_tokens": 300, "cache_read_tokens": 5000}})
    return out


def timed(fn: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    result = fn()
    spent = time.perf_counter() - start
    del result
    return spent


def paired(floor_fn: Callable[[], object], fn: Callable[[], object], repeat: int) -> tuple[list[float], list[float], list[float]]:
    """Floor times, times and per-round ratios over `repeat` rounds. Floor and subject
    alternate so both see the same load on a shared machine."""
    r = alternate({"floor": lambda: timed(floor_fn), "ours": lambda: timed(fn)}, repeat, warmup=0)
    return r["floor"], r["ours"], ratios(r, "ours", "floor")


def floor(path: Path) -> list[bytes]:
    with open(path, "rb") as f:
        return f.read().split(b"\n")


def resume(path: Path) -> Session:
    session = Session.open(path)
    session.close()
    return session


def alt_json_loads(path: Path) -> list[object]:
    return [json.loads(line) for line in floor(path) if line]


def alt_orjson(path: Path) -> list[object]:
    gc.disable()
    try:
        return [orjson.loads(line) for line in floor(path) if line]
    finally:
        gc.enable()


def alt_pydantic(path: Path) -> list[Entry]:
    return [Entry.model_validate_json(line) for line in floor(path) if line]


def extra_memory(path: Path) -> int:
    """Bytes still allocated after a resume (the Session and its State kept alive)."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    session = Session.open(path)
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    session.close()
    return held


def bench_appends(folder: Path, count: int) -> dict[str, float]:
    """Appends/s of a realistic turn mix under the durability policy, and the raw-write floor."""
    lines: list[bytes] = []
    os.environ["LARIK_DATA_DIR"] = str(folder)
    with Session.create(folder, "anthropic", "claude-sonnet-4-5") as session:
        body = "x" * 1300
        start = time.perf_counter()
        for n in range(count // 5):
            session.append_message(user_text(body), sync=True)  # prompt submitted
            call = ToolUseBlock(id=f"t{n}", name="write", input={"path": "a.py"})
            session.append_message(Message(role="assistant", content=[TextBlock(text=body), call]), sync=True)  # tool about to write
            session.append_message(Message(role="user", content=[ToolResultBlock(tool_use_id=call.id, content=body)]))
            session.append_message(Message(role="assistant", content=[TextBlock(text=body)]))
            session.append(Entry(type="usage", usage=Usage(input_tokens=1, output_tokens=1)), sync=True)  # turn ended
        policy = time.perf_counter() - start
        start = time.perf_counter()
        for _ in range(count // 5):
            for _ in range(5):
                session.append_message(user_text(body))
        no_sync = time.perf_counter() - start
        lines = [session.entries.line(i) + b"\n" for i in range(1, count + 1)]
    raw = folder / "raw.jsonl"
    fd = os.open(raw, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    start = time.perf_counter()
    for line in lines:
        os.write(fd, line)
    write_floor = time.perf_counter() - start
    os.close(fd)
    return {"policy": count / policy, "no_sync": count / no_sync, "floor": count / write_floor}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    banner()
    print(f"rounds: {args.repeat}; median (min – max)")
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        print("| entries | file MB | floor s | resume s | entries/s | ratio | extra memory / file |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        files = {}
        for n in sizes:
            path = folder / f"20261130-120000-{n:06x}.jsonl"
            path.write_bytes(b"".join(session_lines(n)))
            files[n] = path
            state = replay(load_entries(path).entries)
            assert len(state.all) > 0 and state.cost is not None
            del state  # keep the heap of later rounds as a fresh process would have it
            f, r, ratio = paired(lambda p=path: floor(p), lambda p=path: resume(p), args.repeat)
            mem = extra_memory(path) / path.stat().st_size
            print(f"| {n} | {path.stat().st_size / 1e6:.1f} | {span(f, 1, 3)} | {span(r, 1, 3)} "
                  f"| {n / statistics.median(r):,.0f} | {span(ratio, 1, 2, 'x')} | {mem:.2f}x |")

        mid = sizes[len(sizes) // 2]
        print(f"\nDecoding alternatives at {mid} entries (ratio to the floor):\n")
        path = files[mid]
        for name, fn in [
            ("json.loads per line", alt_json_loads),
            ("orjson per line, gc paused", alt_orjson),
            ("pydantic Entry.model_validate_json per line", alt_pydantic),
            ("chosen: msgspec outlines + checks + replay (Session.open)", resume),
        ]:
            print(f"- {name}: {span(paired(lambda: floor(path), lambda fn=fn: fn(path), args.repeat)[2], 1, 2, 'x')}")

        big = files[max(sizes)]
        total = len(load_entries(big).entries)
        state = replay(load_entries(big).entries)
        keep = min(state.prompt_positions, key=lambda i: abs(state.entry_indexes[i] - total // 2))
        forks: list[Path] = []
        f, spent, ratio = paired(lambda: floor(big), lambda: forks.append(fork(big, keep)), args.repeat)
        print(f"\nFork of {state.entry_indexes[keep]} of {total} entries: {span(spent, 1, 3, ' s')}, "
              f"{span(ratio, 1, 2, 'x')} the read floor of the source; new file {forks[0].stat().st_size / 1e6:.1f} MB")

        # Each round writes its own session (the policy and no-fsync runs), then the raw floor.
        rounds = [bench_appends(folder / f"appends-{i}", 5000) for i in range(args.repeat)]
        rate = {k: [r[k] for r in rounds] for k in ("policy", "no_sync", "floor")}
        print(
            f"\nAppends (~1.4 KB entries), per second: {span(rate['policy'], 1, 0)} with the durability policy "
            f"(fsync at prompt, before a writing tool, at turn end: 3 of 5 entries), "
            f"{span(rate['no_sync'], 1, 0)} without fsync, raw os.write floor {span(rate['floor'], 1, 0)} "
            f"(no-fsync append = {span([f / n for f, n in zip(rate['floor'], rate['no_sync'], strict=True)], 1, 1, 'x')} the floor's time)"
        )


if __name__ == "__main__":
    main()
