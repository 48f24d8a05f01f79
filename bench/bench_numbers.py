"""Transcript pages whose replies hold made-up numbers (issue 39): each page traces its turns
with the outputs of the earlier turns the context held, read back to the latest compaction
only while a number is unfound. Measured against a floor in the same run.

- A 100,000-entry session (`bench_session.session_lines`) whose every final reply states a
  number its turn's output supports and one it does not (so every page reads back), with a
  compaction entry every 650 entries (about a 200k-token context of these turns).
- Round by round, the floor (one full read of the file's bytes) alternates with pages of 200
  entries (the server's default) at the start, the middle and the end, each the JSON the
  `/larik/api/sessions/<id>` handler writes. Target: every page <= 0.1x the floor.
- For scale, once: the last page of the same session with no compaction at all (the context
  reaching back to the first prompt, which no model window allows), read back to the start.

    .venv/bin/python bench/bench_numbers.py [ROUNDS]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import orjson
from bench_session import session_lines
from paired import alternate, banner, ratios, span, timed

ENTRIES = 100_000
LIMIT = 200
CONTEXT = 650  # entries between compactions
OUTPUT = " mean 1762.142857 over 12335 rows"
REPLY = " The mean is 1762.1 and about 4,321 rows were dropped."


def numbered_lines(n: int, every: int | None) -> list[bytes]:
    """`session_lines(n)` with a number in each tool result and final reply (one found, one
    made up), and a compaction entry every `every` entries (never when None)."""
    out: list[bytes] = []
    for k, line in enumerate(session_lines(n)):
        entry = orjson.loads(line)
        content = (entry.get("message") or {}).get("content") or []
        if content and content[0].get("type") == "tool_result":
            content[0]["content"] += OUTPUT
        elif entry.get("message", {}).get("role") == "assistant" and len(content) == 1:
            content[0]["text"] += REPLY
        if every and k > 1 and k % every == 1 and content and content[0].get("type") == "text" and entry["message"]["role"] == "user":
            out.append(orjson.dumps({"type": "compaction", "summary": "Earlier work, summarised.", "model": "claude-sonnet-4-5",
                                     "time": entry["time"]}) + b"\n")
        out.append(orjson.dumps(entry) + b"\n")
    # Fresh ids, each entry's parent the one before.
    fixed, prev = [], None
    for i, line in enumerate(out):
        entry = orjson.loads(line)
        entry["id"] = f"{i:016x}"
        if prev is None:
            entry.pop("parent_id", None)
        else:
            entry["parent_id"] = prev
        prev = entry["id"]
        fixed.append(orjson.dumps(entry) + b"\n")
    return fixed


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    banner()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LARIK_DATA_DIR"] = os.path.join(tmp, "data")
        os.environ["LARIK_CONFIG_DIR"] = os.path.join(tmp, "config")
        from larik_jupyter.frontends.server import views

        big = Path(tmp) / "20260101-000000-000001.jsonl"
        big.write_bytes(b"".join(numbered_lines(ENTRIES, CONTEXT)))
        total = sum(1 for _ in big.open("rb"))
        size_mb = big.stat().st_size / 1e6
        first = views.transcript_page(big.stem, big, total - LIMIT, LIMIT, Path(tmp))
        assert first.unfound and all(n.text == "4,321" for u in first.unfound for n in u.numbers), "every reply marks 4,321"

        def a_page(offset: int) -> float:
            return timed(lambda: views.transcript_page(big.stem, big, offset, LIMIT, Path(tmp)).model_dump_json())

        def read_all() -> float:
            def read() -> None:
                with open(big, "rb") as f:
                    f.read()

            return timed(read)

        last = total - LIMIT
        pages = alternate(
            {"floor": read_all, "page 0": lambda: a_page(0), f"page {total // 2}": lambda: a_page(total // 2),
             f"page {last}": lambda: a_page(last)},
            rounds,
        )
        print(f"\n## Pages with made-up numbers: {total:,} entries, {size_mb:.1f} MB, a compaction every {CONTEXT}; {rounds} rounds")
        print(f"floor, one full read: {span(pages['floor'], 1000, 1, ' ms')}")
        for name in pages:
            if name != "floor":
                print(f"{name:<12} {span(pages[name], 1000, 2, ' ms')}  ratio {span(ratios(pages, name, 'floor'), 1, 4, 'x')}  (target <= 0.1x)")

        never = Path(tmp) / "20260101-000000-000002.jsonl"
        never.write_bytes(b"".join(numbered_lines(ENTRIES, None)))
        views.transcript_page(never.stem, never, 0, LIMIT, Path(tmp))  # builds the offset index
        worst = timed(lambda: views.transcript_page(never.stem, never, ENTRIES - LIMIT, LIMIT, Path(tmp)).model_dump_json())
        print(f"never compacted, last page (reads back to the start), once: {worst * 1000:.0f} ms "
              f"= {worst / (sum(pages['floor']) / len(pages['floor'])):.1f}x the floor")


if __name__ == "__main__":
    main()
