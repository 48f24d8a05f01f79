"""The append-only store: line format, parent chain, one writer, durability under SIGKILL."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest
from session_helpers import make_session

from larik_jupyter import paths
from larik_jupyter.llm.messages import Message, TextBlock, user_text
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.store import Session, SessionLockedError, lock_path


def test_create_writes_meta_in_the_cwd_folder_with_an_id_name(tmp_path: Path) -> None:
    with Session.create(tmp_path, "anthropic", "claude-sonnet-4-5") as session:
        assert session.path.parent == paths.sessions_dir(tmp_path)
        assert paths.is_session_id(session.id) and session.path.name == f"{session.id}.jsonl"
        assert session.cwd == tmp_path
        first = orjson.loads(session.path.read_bytes())
    assert first["type"] == "meta" and "parent_id" not in first
    assert first["meta"] == {"cwd": str(tmp_path), "provider": "anthropic", "model": "claude-sonnet-4-5"}


def test_each_entry_is_one_line_chained_to_the_previous(tmp_path: Path) -> None:
    path = make_session(tmp_path, 2)
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    objects = [orjson.loads(line) for line in lines[:-1]]
    for previous, entry in zip(objects, objects[1:], strict=False):
        assert entry["parent_id"] == previous["id"]
    assert all("summary" not in o and "meta" not in o for o in objects[1:])  # empty fields omitted


def test_append_updates_state_and_entries(tmp_path: Path) -> None:
    with Session.create(tmp_path) as session:
        entry = session.append_message(user_text("hi"))
        assert session.entries[-1] is entry
        assert entry.parent_id == session.entries[0].id
        assert session.state.all[-1].text() == "hi" and session.state.prompt_positions == [0]


def test_append_refuses_a_tool_result_without_its_tool_use(tmp_path: Path) -> None:
    from larik_jupyter.llm.messages import ToolResultBlock

    with Session.create(tmp_path) as session:
        size = session.path.stat().st_size
        with pytest.raises(ValueError, match="without its tool_use"):
            session.append_message(Message(role="user", content=[ToolResultBlock(tool_use_id="x")]))
    assert session.path.stat().st_size == size
    assert len(load_entries(session.path).entries) == 1


def test_reopen_continues_the_chain(tmp_path: Path) -> None:
    path = make_session(tmp_path, 1)
    with Session.open(path) as session:
        last = session.entries[-1].id
        entry = session.append_message(Message(role="user", content=[TextBlock(text="more")]))
    assert entry.parent_id == last
    assert load_entries(path).entries[-1].id == entry.id


def test_second_writer_in_the_same_process_is_refused_with_fork_advice(tmp_path: Path) -> None:
    path = make_session(tmp_path, 1)
    with Session.open(path):
        with pytest.raises(SessionLockedError) as info:
            Session.open(path)
    assert f"larik-jupyter fork {path.stem}" in str(info.value)
    assert lock_path(path).exists()
    Session.open(path).close()  # released on close


_CONTENDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from larik_jupyter.session.store import Session, SessionLockedError
    path, go = Path(sys.argv[1]), Path(sys.argv[2])
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    try:
        session = Session.open(path)
    except SessionLockedError as exc:
        print("refused:", exc, flush=True)
        sys.exit(3)
    print("won", flush=True)
    time.sleep(60)
    """
)


def test_two_processes_race_one_wins_and_sigkill_releases_the_lock(tmp_path: Path) -> None:
    path = make_session(tmp_path, 1)
    go = tmp_path / "go"
    procs = [
        subprocess.Popen([sys.executable, "-c", _CONTENDER, str(path), str(go)], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    try:
        # Both contenders wait for `go` before either opens the session.
        assert [p.stdout.readline().strip() for p in procs if p.stdout] == ["ready", "ready"]
        go.touch()
        lines = {p: p.stdout.readline().strip() for p in procs if p.stdout}
        winners = [p for p, line in lines.items() if line == "won"]
        losers = [p for p, line in lines.items() if line.startswith("refused:")]
        assert len(winners) == 1 and len(losers) == 1
        assert losers[0].wait(10) == 3
        assert "open for writing in another process" in lines[losers[0]]
        assert "larik-jupyter fork" in lines[losers[0]]
        with pytest.raises(SessionLockedError):
            Session.open(path)
        winners[0].send_signal(signal.SIGKILL)
        winners[0].wait(10)
        Session.open(path).close()  # at once: the OS dropped the dead writer's lock
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def _appender(path: Path, report: int) -> None:
    """Child: open the session, append forever, reporting each id after its fsync returned."""
    try:
        session = Session.open(path)
        n = 0
        while True:
            n += 1
            entry = session.append(
                Entry(type="message", message=Message(role="user", content=[TextBlock(text="x" * (n % 200))])),
                sync=n % 3 == 0,
            )
            if n % 3 == 0:
                os.write(report, entry.id.encode() + b"\n")
    finally:
        os._exit(0)


def test_random_sigkills_never_lose_an_fsynced_entry_and_leave_a_loadable_file(tmp_path: Path) -> None:
    with Session.create(tmp_path) as session:
        path = session.path
    rng = random.Random(2)
    synced: list[str] = []
    for _ in range(200):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns
            os.close(read_end)
            _appender(path, write_end)
        os.close(write_end)
        time.sleep(rng.uniform(0, 0.03))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        with os.fdopen(read_end, "rb") as pipe:
            synced += pipe.read().split()
        entries = load_entries(path).entries  # always loads: at worst a torn tail
        ids = {entries.raw(i)["id"] for i in range(len(entries))}
        assert {s.decode() for s in synced} <= ids
    result = load_entries(path)
    assert len(result.entries) > 200
    assert len(synced) > 50  # many kills landed while appending, not only before the first append


def test_concurrent_appends_from_threads_keep_one_chain(tmp_path: Path) -> None:
    import threading

    with Session.create(tmp_path) as session:
        def worker(k: int) -> None:
            for n in range(50):
                session.append_message(user_text(f"{k}-{n}"))

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        path = session.path
    assert len(load_entries(path).entries) == 201  # loads: the parent chain is intact
