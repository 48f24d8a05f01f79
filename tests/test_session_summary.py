"""One read of a session file gives its summary; unchanged files are not read again."""

from __future__ import annotations

import os
import time
from pathlib import Path

from larik_jupyter.llm.messages import Message, TextBlock, user_text
from larik_jupyter.session.catalog import list_sessions
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.store import Session
from larik_jupyter.session.summary import summary
from tests.session_helpers import add_turn, make_session


def age(path: Path, seconds: float = 60) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_summary_holds_prompts_usage_cost_and_totals(project: Path) -> None:
    path = make_session(project, prompts=3)
    s = summary(path)
    assert s.meta is not None and s.meta.model == "claude-sonnet-4-5"
    assert [(p.number, p.first_line) for p in s.prompts] == [(1, "prompt 1"), (2, "prompt 2"), (3, "prompt 3")]
    assert all(p.usage.input_tokens == 100 and p.usage.output_tokens == 10 for p in s.prompts)
    assert all(p.cost is not None and p.cost > 0 and p.time for p in s.prompts)
    assert s.usage.input_tokens == 300 and s.cost is not None
    assert abs(s.cost - sum(p.cost or 0 for p in s.prompts)) < 1e-12
    assert s.message_count == 12 and s.interrupted is None and s.compactions == () and s.error is None


def test_an_interrupted_turn_and_a_compaction_are_summarized(project: Path) -> None:
    path = make_session(project, prompts=1)
    with Session.open(path) as session:
        session.append(Entry(type="compaction", summary="earlier work"))
        add_turn(session, "second", 2, tool=False)
        session.append_message(user_text("third"))
        session.append_message(Message(role="assistant", content=[TextBlock(text="par")], interrupted=True))
    s = summary(path)
    assert s.compactions == (4,)
    assert [p.interrupted for p in s.prompts] == [False, False, True]
    assert s.interrupted == "the last assistant reply was interrupted"


def test_unchanged_files_are_not_read_again_and_changed_ones_are(project: Path) -> None:
    kept, changed = make_session(project, prompts=1), make_session(project, prompts=1)
    for path in (kept, changed):
        age(path)
    assert {i.first_prompt for i in list_sessions(project)} == {"prompt 1"}
    # Same size, same times: the file's identity is unchanged, so its summary is the kept one.
    st = kept.stat()
    kept.write_bytes(kept.read_bytes().replace(b"prompt 1", b"prompt X"))
    os.utime(kept, ns=(st.st_atime_ns, st.st_mtime_ns))
    with Session.open(changed) as session:
        add_turn(session, "appended", 5)
    by_path = {Path(i.path): i for i in list_sessions(project)}
    assert by_path[kept].first_prompt == "prompt 1"
    assert by_path[changed].message_count == 8


def test_a_just_written_file_is_read_again_even_with_the_same_identity(project: Path) -> None:
    path = make_session(project, prompts=1)
    assert summary(path).prompts[0].first_line == "prompt 1"
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"prompt 1", b"prompt X"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # within the clock's granularity
    assert summary(path).prompts[0].first_line == "prompt X"
