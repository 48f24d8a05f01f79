"""Fork, rewind and the fork tree."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from session_helpers import add_turn, digest, make_session

from larik_jupyter.session.branch import BranchError, fork, fork_tree, rewind
from larik_jupyter.session.corrupt import CorruptSessionError
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.state import replay
from larik_jupyter.session.store import Session


def test_fork_at_the_end_copies_messages_not_usage_and_records_origin(tmp_path: Path) -> None:
    src = make_session(tmp_path, 2)
    before = digest(src)
    new = fork(src)
    assert digest(src) == before  # the source is byte-for-byte untouched
    assert new.parent == src.parent and new != src
    state = replay(load_entries(new).entries)
    assert state.meta.fork_of == src.stem and state.meta.fork_at == 8
    assert state.meta.cwd == str(tmp_path) and state.meta.model == "claude-sonnet-4-5"
    source = replay(load_entries(src).entries)
    assert list(state.all) == list(source.all)
    assert state.usage.input_tokens == 0  # each branch reports only its own spend


def test_fork_at_a_prompt_keeps_the_messages_before_it(tmp_path: Path) -> None:
    src = make_session(tmp_path, 3)
    state = replay(load_entries(fork(src, 4)).entries)
    assert len(state.all) == 4 and state.prompt_positions == [0]


def test_fork_at_a_non_boundary_names_the_nearest_boundaries(tmp_path: Path) -> None:
    src = make_session(tmp_path, 3)
    with pytest.raises(BranchError, match=r"at message 6: it is not a turn boundary.*nearest valid boundaries are 4 or 8"):
        fork(src, 6)
    with pytest.raises(BranchError, match="are 12"):
        fork(src, 13)
    assert len(list(src.parent.glob("*.jsonl"))) == 1


def test_unknown_keys_and_compactions_survive_a_fork(tmp_path: Path) -> None:
    with Session.create(tmp_path) as session:
        add_turn(session, "one", 1)
        session.append(Entry(type="compaction", summary="summary of one", extra_note="kept"))  # type: ignore[call-arg]
        add_turn(session, "two", 2)
        src = session.path
    lines = src.read_bytes().splitlines()
    prompt = orjson.loads(lines[1])
    prompt["x_future"] = [1, 2]
    prompt["message"]["content"][0]["x_block"] = True
    lines[1] = orjson.dumps(prompt)
    src.write_bytes(b"\n".join(lines) + b"\n")

    new = fork(src)
    copied = [orjson.loads(line) for line in new.read_bytes().splitlines()]
    assert copied[1]["x_future"] == [1, 2] and copied[1]["message"]["content"][0]["x_block"] is True
    compaction = [c for c in copied if c["type"] == "compaction"]
    assert compaction == [{**compaction[0], "summary": "summary of one", "extra_note": "kept"}]
    state = replay(load_entries(new).entries)
    assert state.messages[0].text() == "summary of one"


def test_a_corrupt_session_can_be_forked_up_to_its_valid_prefix(tmp_path: Path) -> None:
    src = make_session(tmp_path, 3)
    lines = src.read_bytes().splitlines(keepends=True)
    lines[8] = b"not json\n"  # the tool result of the second turn
    src.write_bytes(b"".join(lines))
    before = digest(src)
    with pytest.raises(BranchError, match="damaged at line 9.*boundaries are 4"):
        fork(src, 8)
    with pytest.raises(CorruptSessionError, match=r":9: bad JSON.*--at-message 4`"):
        fork(src)  # no end to fork at: the error offers the prefix instead
    new = fork(src, 4)
    assert digest(src) == before
    assert len(replay(load_entries(new).entries).all) == 4


def test_rewind_branches_before_prompt_n_and_returns_its_text(tmp_path: Path) -> None:
    src = make_session(tmp_path, 3)
    new, text = rewind(src, 2)
    assert text == "prompt 2\nsecond line"
    state = replay(load_entries(new).entries)
    assert state.meta.fork_at == 4 and len(state.all) == 4
    with pytest.raises(BranchError, match="has 3 prompt"):
        rewind(src, 4)


def test_fork_tree_is_computed_from_the_files(tmp_path: Path) -> None:
    src = make_session(tmp_path, 2)
    child = fork(src, 4)
    grandchild, _ = rewind(child, 1)
    other = make_session(tmp_path, 1)
    roots = fork_tree(tmp_path)
    assert sorted(r.id for r in roots) == sorted([src.stem, other.stem])
    root = next(r for r in roots if r.id == src.stem)
    assert [p.position for p in root.prompts] == [0, 4]
    assert root.prompts[0].first_line == "prompt 1" and root.prompts[0].time
    # The rewind before the branch's prompt 1 forked inside the prompt the branch copied from
    # `src`: it hangs beside the branch, under `src`, still naming the branch as its source.
    below = {c.id: c for c in root.children}
    assert sorted(below) == sorted([child.stem, grandchild.stem])
    assert below[child.stem].fork_at == 4 and below[child.stem].children == []
    assert below[grandchild.stem].fork_of == child.stem and below[grandchild.stem].fork_at == 0
