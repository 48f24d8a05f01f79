"""Property: appends, forks and truncations at any byte leave files the reader loads (minus at
most a torn tail) or refuses with CorruptSessionError; nothing else is ever raised."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from larik_jupyter.llm.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, user_text
from larik_jupyter.session.branch import BranchError, fork
from larik_jupyter.session.corrupt import CorruptSessionError
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.store import Session

_text = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=30)
_op = st.one_of(
    st.tuples(st.just("prompt"), _text),
    st.tuples(st.just("tool"), _text),
    st.tuples(st.just("reply"), _text),
    st.tuples(st.just("fork"), st.integers(0, 20)),
    st.tuples(st.just("truncate"), st.floats(0, 1)),
)


def _check(path: Path, line_ends: list[int]) -> None:
    """Loads with exactly the entries whose line survived; only a file that lost its meta line
    may be refused (cleanly, naming the file)."""
    size = path.stat().st_size
    whole = sum(1 for end in line_ends if end <= size)
    try:
        result = load_entries(path)
    except CorruptSessionError as exc:
        assert str(exc).startswith(f"{path}:")
        assert whole == 0, f"an intact file with {whole} whole lines was refused: {exc}"
        return
    assert len(result.entries) in (whole, whole + 1)  # +1: a complete line missing only its newline


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_op, max_size=12))
def test_any_appends_forks_and_truncations_load_or_are_refused(ops: list[tuple[str, object]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        session = Session.create(tmp, directory=Path(tmp))
        files = [session.path]
        ends = {session.path: [session.path.stat().st_size]}
        calls = 0
        try:
            for kind, arg in ops:
                if kind == "truncate":
                    session.close()
                    size = session.path.stat().st_size
                    os.truncate(session.path, int(size * float(arg)))  # type: ignore[arg-type]
                    try:
                        session = Session.open(session.path)
                    except CorruptSessionError:
                        return _check(session.path, ends[session.path])
                    size = session.path.stat().st_size
                    whole = [e for e in ends[session.path] if e <= size]
                    # a line cut just before its newline still parses; the store re-adds the newline
                    ends[session.path] = whole + [size + 1] * (len(session.entries) - len(whole))
                    continue
                if kind == "fork":
                    session.sync()
                    try:
                        new = fork(session.path, int(arg))  # type: ignore[call-overload]
                    except BranchError:
                        continue
                    files.append(new)
                    continue
                if kind == "prompt":
                    message = user_text(str(arg) or "hi")
                elif kind == "tool":
                    calls += 1
                    call = ToolUseBlock(id=f"t{calls}", name="read", input={"q": arg})
                    session.append_message(Message(role="assistant", content=[call]))
                    ends[session.path].append(session.path.stat().st_size)
                    message = Message(role="user", content=[ToolResultBlock(tool_use_id=call.id, content=str(arg))])
                else:
                    message = Message(role="assistant", content=[TextBlock(text=str(arg))])
                session.append_message(message)
                ends[session.path].append(session.path.stat().st_size)
        finally:
            session.close()
        _check(session.path, ends[session.path])
        for path in files:
            try:
                load_entries(path)
            except CorruptSessionError:
                pass
