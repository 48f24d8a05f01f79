"""Reading session files: torn tails are tolerated, every other damage names file and line."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from session_helpers import make_session

from larik_jupyter.llm.messages import user_text
from larik_jupyter.session.corrupt import CorruptSessionError
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.store import Session


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize(
    "tail",
    [b'{"id":"abc","parent_id":"x","type":"mess', b"{", b'{"id":"\xff\xfe', b"\x00\x00\x00\x00"],
    ids=["half-object", "lone-brace", "invalid-utf8", "nul-run"],
)
def test_torn_last_line_loads_the_rest_and_appends_cleanly(tmp_path: Path, tail: bytes) -> None:
    path = make_session(tmp_path, 2)
    before = load_entries(path)
    clean = path.read_bytes()
    with open(path, "ab") as f:
        f.write(tail)

    result = load_entries(path)
    assert [e.id for e in result.entries] == [e.id for e in before.entries]
    assert result.torn_tail == before.size

    with Session.open(path) as session:
        session.append_message(user_text("after the crash"), sync=True)
    after = load_entries(path)
    assert after.torn_tail is None
    assert len(after.entries) == len(before.entries) + 1
    assert after.entries[-1].message is not None and after.entries[-1].message.text() == "after the crash"
    assert after.entries[-1].parent_id == before.entries[-1].id
    assert path.read_bytes().startswith(clean + b'{"id":')  # the debris is gone


def test_complete_last_line_without_newline_is_kept_and_newline_added_before_append(tmp_path: Path) -> None:
    path = make_session(tmp_path, 1)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    count = len(load_entries(path).entries)
    with Session.open(path) as session:
        session.append_message(user_text("next"))
    assert len(load_entries(path).entries) == count + 1


def _corrupt(path: Path, line_no: int, new: bytes) -> None:
    lines = _lines(path)
    lines[line_no - 1] = new
    path.write_bytes(b"".join(lines))


def _entry(path: Path, line_no: int) -> dict:
    return orjson.loads(_lines(path)[line_no - 1])


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d, raw: raw[:20] + b"\n", "bad JSON"),
        (lambda d, raw: raw[:30] + b"\x00" * 64 + raw[30:], "NUL bytes"),
        (lambda d, raw: raw.replace(b"prompt", b"pr\xffompt"), "invalid UTF-8"),
        (lambda d, raw: b"\n", "an empty line"),
        (lambda d, raw: orjson.dumps({**d, "parent_id": "nope"}) + b"\n", "broken parent chain"),
        (lambda d, raw: orjson.dumps({**d, "type": "banana"}) + b"\n", "Invalid value 'banana' - at `$.type`"),
        (lambda d, raw: orjson.dumps({**d, "message": {"role": "user", "content": [{"type": "text"}]}}) + b"\n", "missing required field `text`"),
    ],
    ids=["bad-json", "nul-run", "invalid-utf8", "empty-line", "parent-chain", "unknown-type", "malformed-block"],
)
def test_mid_file_corruption_is_refused_naming_file_and_line(tmp_path: Path, damage, message: str) -> None:
    path = make_session(tmp_path, 3)
    line_no = 7  # the second prompt
    _corrupt(path, line_no, damage(_entry(path, line_no), _lines(path)[line_no - 1]))
    original = path.read_bytes()

    with pytest.raises(CorruptSessionError) as info:
        load_entries(path)
    text = str(info.value)
    assert text.startswith(f"{path}:{line_no}: ")
    assert message in text
    assert f"larik-jupyter fork {path.stem} --at-message 4" in text  # the prompt before the damage
    assert info.value.path == path and info.value.line == line_no
    with pytest.raises(CorruptSessionError):
        Session.open(path)
    assert path.read_bytes() == original  # refused, never repaired


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    path = make_session(tmp_path, 2)
    second = _entry(path, 2)
    third = _entry(path, 3)
    _corrupt(path, 3, orjson.dumps({**third, "id": second["id"]}) + b"\n")
    with pytest.raises(CorruptSessionError, match=r":3: duplicate entry id"):
        load_entries(path)


def test_tool_result_without_its_tool_use_is_refused(tmp_path: Path) -> None:
    path = make_session(tmp_path, 2)
    result_line = _entry(path, 4)
    assert result_line["message"]["content"][0]["type"] == "tool_result"
    result_line["message"]["content"][0]["tool_use_id"] = "toolu_missing"
    _corrupt(path, 4, orjson.dumps(result_line) + b"\n")
    with pytest.raises(CorruptSessionError, match=r":4: tool_result for 'toolu_missing' without its tool_use"):
        load_entries(path)


def test_damaged_meta_line_cannot_be_forked(tmp_path: Path) -> None:
    path = make_session(tmp_path, 1)
    _corrupt(path, 1, b"{oops}\n")
    with pytest.raises(CorruptSessionError, match="Nothing before it can be recovered"):
        load_entries(path)


def test_prefix_mode_returns_entries_before_the_damage(tmp_path: Path) -> None:
    path = make_session(tmp_path, 3)
    _corrupt(path, 7, b"garbage\n")
    result = load_entries(path, prefix=True)
    assert len(result.entries) == 6
    assert result.error is not None and result.error.line == 7


def test_unknown_keys_are_kept_on_read(tmp_path: Path) -> None:
    path = make_session(tmp_path, 1)
    prompt = _entry(path, 2)
    prompt["future_field"] = {"x": 1}
    prompt["message"]["content"][0]["cache_hint"] = "yes"
    _corrupt(path, 2, orjson.dumps(prompt) + b"\n")
    entry = load_entries(path).entries[1]
    assert entry.to_json()["future_field"] == {"x": 1}
    assert entry.to_json()["message"]["content"][0]["cache_hint"] == "yes"


def test_a_schema_error_outside_the_outline_is_reported_with_its_line_on_use(tmp_path: Path) -> None:
    path = make_session(tmp_path, 1)
    prompt = _entry(path, 2)
    prompt["message"]["content"][0]["text"] = 5  # resume skips text bodies; the model refuses it
    _corrupt(path, 2, orjson.dumps(prompt) + b"\n")
    entries = load_entries(path).entries
    with pytest.raises(CorruptSessionError, match=r":2: message\.content\.0\.text.*valid string"):
        entries[1]


def test_non_ascii_text_loads_and_round_trips(tmp_path: Path) -> None:
    with Session.create(tmp_path) as session:
        session.append_message(user_text("naïve 日本語 🎉"))
        path = session.path
    assert load_entries(path).entries[1].message.text() == "naïve 日本語 🎉"  # type: ignore[union-attr]
