"""The egress ledger: for each request, the bytes that went out by source and what was
withheld, appended beside the session transcript (`<id>.egress/ledger.jsonl`, as the debug
trace is `<id>.trace/events.jsonl`) and never rewritten.

Each line is one `LedgerRecord`, written and read back as that type: `RequestRecord`
(`"type": "request"`; with `"kind": "answer"`, an answer to an outside agent over MCP),
`PolicyRecord` (`"policy"`) and `LocalOnlyRecord` (`"local_only"`) for each change the notebook
made, which a resumed session applies again.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import msgspec

# A ledger line's `kind` for an answer to an outside agent (the MCP tool result), not a request.
ANSWER = "answer"


def ledger_path(transcript: str | os.PathLike[str]) -> Path:
    """`<id>.egress/ledger.jsonl` beside the transcript `<id>.jsonl`."""
    path = Path(transcript)
    return path.with_name(path.name.removesuffix(".jsonl") + ".egress") / "ledger.jsonl"


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Part(msgspec.Struct):
    """Bytes of one request that came from one source (`prompt 1`, `result of call X`,
    `summary of df`, `image of call W`, `framing`)."""

    source: str
    bytes: int


class Withheld(msgspec.Struct):
    """What the door kept out of one request: `source` (`df.email`, `data/x.csv`) under
    `policy`, in the part `where`, `count` times."""

    source: str
    policy: str
    where: str
    count: int = 1


class RequestRecord(msgspec.Struct, tag="request", tag_field="type", omit_defaults=True, kw_only=True):
    """One request as it left: `bytes` is the size of its body (the JSON the SDK sends), and
    the `parts` add up to it (`framing` is the JSON around the content). With `kind`
    `answer`, the answer to an outside agent's call (the MCP tool result) instead."""

    time: str
    destination: str
    local: bool
    bytes: int
    parts: list[Part]
    withheld: list[Withheld]
    turn: int | None = None
    prompt: int | None = None
    kind: str | None = None  # `answer`: a tool result sent back to an outside agent (MCP)


class PolicyRecord(msgspec.Struct, tag="policy", tag_field="type", kw_only=True):
    """The notebook set `target`'s policy (`origin`: where it was set)."""

    time: str
    target: str
    policy: str
    origin: str = "notebook"


class LocalOnlyRecord(msgspec.Struct, tag="local_only", tag_field="type", kw_only=True):
    """The notebook marked the session local-models-only (`value`), or unmarked it."""

    time: str
    value: bool


LedgerRecord = RequestRecord | PolicyRecord | LocalOnlyRecord
_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(LedgerRecord)


class Ledger:
    """The append-only ledger file of one session."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: LedgerRecord) -> None:
        line = _encoder.encode(record) + b"\n"
        self.path.parent.mkdir(mode=0o700, exist_ok=True)
        # O_APPEND without following a link: the file lies beside the transcript in the data dir.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def read_ledger(path: Path) -> list[LedgerRecord]:
    """The ledger's records, oldest first; a torn last line, and a line this version cannot
    read (a newer version's, a hand edit), are left out."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    out = []
    for line in data.splitlines():
        try:
            out.append(_decoder.decode(line))
        except msgspec.DecodeError:
            continue
    return out


def encode(record: LedgerRecord) -> bytes:
    """`record` as its ledger line's JSON (without the newline)."""
    return _encoder.encode(record)
