"""Reading a session file: decode, check every line, tolerate a torn last line.

Decoding path, chosen by measurement (bench/bench_session.py): orjson per line with the
garbage collector paused, then a hand-written structural check that mirrors the pydantic
schema; `Entry` models are built lazily (see entry_list.py).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from larik_jupyter.errors import LarikError
from larik_jupyter.session.entry_list import EntryList


class CorruptSessionError(LarikError):
    """A session file is damaged before its last line; it is refused, never silently repaired."""

    def __init__(self, path: Path, line: int, what: str, fork_at: int | None = None) -> None:
        self.path = path
        self.line = line
        self.what = what
        self.fork_at = fork_at
        if fork_at is None:
            advice = "Nothing before it can be recovered; the file is left unchanged"
        else:
            advice = (
                f"Fork the valid prefix with `larik-jupyter fork {session_id_of(path)} --at {fork_at}` "
                "to continue from before it; the file itself is left unchanged"
            )
        super().__init__(f"{path}:{line}: {what}. {advice}.")


def session_id_of(path: Path) -> str:
    """The session id a transcript path names (its file name without `.jsonl`)."""
    return path.name.removesuffix(".jsonl")


@dataclass
class LoadResult:
    """What `load_entries` read. `torn_tail` is the byte offset where unreadable debris begins."""

    path: Path
    entries: EntryList
    torn_tail: int | None
    size: int
    ends_with_newline: bool
    checker: Checker
    error: CorruptSessionError | None = None


_ENTRY_TYPES = frozenset({"meta", "message", "compaction", "usage"})
_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _is_str(v: Any) -> bool:
    return type(v) is str


def _is_opt_str(v: Any) -> bool:
    return v is None or type(v) is str


def _is_opt_bool(v: Any) -> bool:
    return v is None or type(v) is bool


def _is_dict(v: Any) -> bool:
    return type(v) is dict


# Required and optional typed fields per content block type, mirroring llm/messages.py.
_BLOCK_FIELDS: dict[str, tuple[tuple[str, Callable[[Any], bool], bool], ...]] = {
    "text": (("text", _is_str, True),),
    "thinking": (("thinking", _is_str, True), ("signature", _is_opt_str, False)),
    "redacted_thinking": (("data", _is_str, True),),
    "tool_use": (("id", _is_str, True), ("name", _is_str, True), ("input", _is_dict, False)),
    "tool_result": (("tool_use_id", _is_str, True), ("is_error", _is_opt_bool, False)),
    "image": (("source", _is_dict, True),),
}


class Checker:
    """Checks entries in file order: shape, unique ids, parent chain, tool_result linkage.

    `check` returns what is wrong with one entry, or None; the checker then remembers it.
    """

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.tool_ids: set[str] = set()
        self.last_id: str | None = None
        self.count = 0

    def check(self, d: Any) -> str | None:
        if type(d) is not dict:
            return "not a JSON object"
        eid = d.get("id")
        if type(eid) is not str or not eid:
            return "missing or empty `id`"
        if eid in self.ids:
            return f"duplicate entry id {eid!r}"
        parent = d.get("parent_id")
        if parent != self.last_id:
            expected = "no parent_id" if self.last_id is None else f"parent_id {self.last_id!r}"
            return f"broken parent chain: parent_id is {parent!r}, expected {expected}"
        kind = d.get("type")
        if self.count == 0 and kind != "meta":
            return f"the first entry must have type 'meta', not {kind!r}"
        if kind not in _ENTRY_TYPES:
            return f"unknown entry type {kind!r}"
        if not _is_opt_str(d.get("time")) or not _is_opt_str(d.get("model")):
            return "`time` and `model` must be strings"
        problem = getattr(self, f"_check_{kind}")(d)
        if problem is None:
            self.ids.add(eid)
            self.last_id = eid
            self.count += 1
        return problem

    def _check_meta(self, d: dict[str, Any]) -> str | None:
        if self.count:
            return "a meta entry after the first line"
        meta = d.get("meta")
        if type(meta) is not dict or type(meta.get("cwd")) is not str:
            return "meta entry without `meta.cwd`"
        for key in ("provider", "model", "fork_of"):
            if not _is_opt_str(meta.get(key)):
                return f"`meta.{key}` must be a string"
        fork_at = meta.get("fork_at")
        if fork_at is not None and (type(fork_at) is not int or fork_at < 0):
            return "`meta.fork_at` must be a non-negative integer"
        return None

    def _check_usage(self, d: dict[str, Any]) -> str | None:
        usage = d.get("usage")
        if type(usage) is not dict:
            return "usage entry without a `usage` object"
        for key in _USAGE_FIELDS:
            if type(usage.get(key, 0)) is not int:
                return f"`usage.{key}` must be an integer"
        return None

    def _check_compaction(self, d: dict[str, Any]) -> str | None:
        if type(d.get("summary")) is not str:
            return "compaction entry without a `summary` string"
        return None

    def _check_message(self, d: dict[str, Any]) -> str | None:
        message = d.get("message")
        if type(message) is not dict:
            return "message entry without a `message` object"
        if message.get("role") not in ("user", "assistant"):
            return f"message role {message.get('role')!r} is not 'user' or 'assistant'"
        if not _is_opt_bool(message.get("interrupted")):
            return "`message.interrupted` must be a boolean"
        content = message.get("content", [])
        if type(content) is not list:
            return "`message.content` must be a list of blocks"
        new_tools: list[str] = []
        problem = self._check_blocks(content, new_tools, top=True)
        if problem is None:
            self.tool_ids.update(new_tools)
        return problem

    def _check_blocks(self, blocks: list[Any], new_tools: list[str], top: bool) -> str | None:
        for block in blocks:
            if type(block) is not dict:
                return "a content block is not a JSON object"
            kind = block.get("type")
            fields = _BLOCK_FIELDS.get(kind)  # type: ignore[arg-type]
            if fields is None:
                return f"unknown content block type {kind!r}"
            for name, ok, required in fields:
                if name in block:
                    if not ok(block[name]):
                        return f"{kind} block has a malformed `{name}`"
                elif required:
                    return f"{kind} block without `{name}`"
            if kind == "tool_use":
                new_tools.append(block["id"])
            elif kind == "tool_result":
                if not top:
                    return "a tool_result nested inside a tool_result"
                if block["tool_use_id"] not in self.tool_ids:
                    return f"tool_result for {block['tool_use_id']!r} without its tool_use"
                inner = block.get("content", "")
                if type(inner) is list:
                    problem = self._check_blocks(inner, new_tools, top=False)
                    if problem:
                        return problem
                elif type(inner) is not str:
                    return "tool_result content must be a string or a list of blocks"
        return None


def _describe_bad_line(line: bytes, exc: Exception) -> str:
    nul = line.find(b"\x00")
    if nul >= 0:
        return f"a run of NUL bytes at byte {nul} of the line"
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as bad:
        return f"invalid UTF-8 at byte {bad.start} of the line"
    if not line.strip():
        return "an empty line"
    return f"bad JSON ({exc})"


def is_prompt_raw(message: dict[str, Any]) -> bool:
    """`Message.is_prompt` on the JSON form: a user message with text and no tool results."""
    if message.get("role") != "user":
        return False
    kinds = {b.get("type") for b in message.get("content", ())}
    return "text" in kinds and "tool_result" not in kinds


def prefix_boundary(raw: list[dict[str, Any]]) -> int | None:
    """The last message index of a (valid) prefix a fork may keep: its end when no tool call is
    left open, else its last prompt; None when the prefix has no meta entry."""
    if not raw:
        return None
    count = 0
    last_prompt = 0
    open_calls: set[str] = set()
    for d in raw:
        message = d.get("message") if d.get("type") == "message" else None
        if message is None:
            continue
        if is_prompt_raw(message):
            last_prompt = count
        for block in message.get("content", ()):
            if block.get("type") == "tool_use":
                open_calls.add(block["id"])
            elif block.get("type") == "tool_result":
                open_calls.discard(block["tool_use_id"])
        count += 1
    return last_prompt if open_calls else count


def load_entries(path: str | os.PathLike[str], *, prefix: bool = False) -> LoadResult:
    """Read and check a session file.

    A torn last line (no trailing newline and unparsable) is tolerated and reported as
    `torn_tail`. Any other damage raises `CorruptSessionError` naming file and line; with
    `prefix=True` it is returned in `.error` instead, with the entries before it.
    """
    path = Path(path)
    with open(path, "rb") as f:
        data = f.read()
    body_end = data.rfind(b"\n") + 1
    tail = data[body_end:]
    lines = data[:body_end].split(b"\n")
    lines.pop()  # the empty piece after the final newline
    torn_tail: int | None = None
    if tail:
        try:
            orjson.loads(tail)
            lines.append(tail)
        except orjson.JSONDecodeError:
            torn_tail = body_end

    checker = Checker()
    check = checker.check
    raw: list[Any] = []
    error: CorruptSessionError | None = None
    gc_was_enabled = gc.isenabled()
    gc.disable()  # decoding allocates millions of objects the collector would rescan for nothing
    try:
        loads = orjson.loads
        try:
            raw = [loads(line) for line in lines]
        except orjson.JSONDecodeError:
            raw = []
            for line in lines:
                try:
                    raw.append(loads(line))
                except orjson.JSONDecodeError as exc:
                    bad_index, what = len(raw), _describe_bad_line(line, exc)
                    break
        else:
            bad_index, what = len(raw), ""
        for index, d in enumerate(raw):
            problem = check(d)
            if problem is not None:
                bad_index, what = index, problem
                break
        if what:
            del raw[bad_index:]
            error = CorruptSessionError(path, bad_index + 1, what, prefix_boundary(raw))
    finally:
        if gc_was_enabled:
            gc.enable()
    if error is not None and not prefix:
        raise error
    return LoadResult(
        path=path,
        entries=EntryList(raw, path),
        torn_tail=torn_tail,
        size=len(data),
        ends_with_newline=not tail or torn_tail is not None,
        checker=checker,
        error=error,
    )
