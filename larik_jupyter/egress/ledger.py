"""The egress ledger: for each request, the bytes that went out by source and what was
withheld, appended beside the session transcript (`<id>.egress/ledger.jsonl`, as the debug
trace is `<id>.trace/events.jsonl`) and never rewritten.

Lines: `{"type": "request", …}` (see `RequestRecord`; with `"kind": "answer"`, an answer to
an outside agent over MCP) and `{"type": "policy", "target",
"policy", "origin", "time"}` / `{"type": "local_only", "value", "time"}` for each change the
notebook made, which a resumed session applies again.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson


def ledger_path(transcript: str | os.PathLike[str]) -> Path:
    """`<id>.egress/ledger.jsonl` beside the transcript `<id>.jsonl`."""
    path = Path(transcript)
    return path.with_name(path.name.removesuffix(".jsonl") + ".egress") / "ledger.jsonl"


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Part:
    """Bytes of one request that came from one source (`prompt 1`, `result of call X`,
    `summary of df`, `image of call W`, `framing`)."""

    source: str
    bytes: int


@dataclass
class Withheld:
    """What the door kept out of one request: `source` (`df.email`, `data/x.csv`) under
    `policy`, in the part `where`, `count` times."""

    source: str
    policy: str
    where: str
    count: int = 1


@dataclass
class RequestRecord:
    """One request as it left: `bytes` is the size of its body (the JSON the SDK sends), and
    the `parts` add up to it (`framing` is the JSON around the content). With `kind`
    `answer`, the answer to an outside agent's call (the MCP tool result) instead."""

    time: str
    destination: str
    local: bool
    bytes: int
    parts: list[Part] = field(default_factory=list)
    withheld: list[Withheld] = field(default_factory=list)
    turn: int | None = None
    prompt: int | None = None
    kind: str | None = None  # `answer`: a tool result sent back to an outside agent (MCP)
    type: str = "request"

    def to_json(self) -> dict[str, Any]:
        # orjson writes the nested dataclasses directly (`asdict` deep-copies: a per-request cost
        # that grew with the context's sources).
        data: dict[str, Any] = orjson.loads(orjson.dumps(self))
        return {k: v for k, v in data.items() if v is not None}


class Ledger:
    """The append-only ledger file of one session."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: dict[str, Any]) -> None:
        line = orjson.dumps(record) + b"\n"
        self.path.parent.mkdir(mode=0o700, exist_ok=True)
        # O_APPEND without following a link: the file lies beside the transcript in the data dir.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def read_ledger(path: Path) -> list[dict[str, Any]]:
    """The ledger's records, oldest first; a torn last line is left out."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out
