from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from larik_jupyter import paths
from larik_jupyter.checkpoint.store import CheckpointStore
from tests.agent_helpers import personal

SID = "20250102-030405-c0ffee"


def session_with_a_turn(root: Path) -> Path:
    (root / ".git").mkdir()
    (root / "src").mkdir()
    (root / "src" / "a.py").write_bytes(b"print('before')\n")
    transcript = paths.sessions_dir(root / "src") / f"{SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    meta = {
        "id": "0" * 16,
        "type": "meta",
        "time": "2025-01-02T03:04:05.000Z",
        "meta": {"cwd": str(root / "src")},
    }
    transcript.write_text(json.dumps(meta) + "\n")
    store = CheckpointStore(SID, root)
    store.begin_turn()
    store.capture(root / "src" / "a.py")
    store.capture(root / "src" / "b.py")
    store.capture(root / "src" / "new" / "c.py")
    (root / "src" / "a.py").write_bytes(b"print('after')\n")
    (root / "src" / "b.py").write_bytes(b"new\n")
    (root / "src" / "new").mkdir()
    (root / "src" / "new" / "c.py").write_bytes(b"c\n")
    return transcript


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "larik_jupyter", *args],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
    )


def test_checkpoints_lists_turns_and_undo_restores_from_a_terminal(tmp_path: Path) -> None:
    session_with_a_turn(tmp_path)
    listing = cli("checkpoints", SID)
    assert listing.returncode == 0, listing.stderr
    assert "turn 1 " in listing.stdout
    assert "changed  src/a.py  (16 bytes, mode 644)" in listing.stdout
    assert "created  src/b.py" in listing.stdout
    undone = cli("undo", SID)
    assert undone.returncode == 0, undone.stderr
    # The same report `%larik /undo` gives, as plain text.
    assert "- restored src/a.py" in undone.stdout and "- restored src/b.py" in undone.stdout
    assert (tmp_path / "src" / "a.py").read_bytes() == b"print('before')\n"
    assert not (tmp_path / "src" / "b.py").exists()
    assert "- removed src/new/ (created by the turn)" in undone.stdout
    assert not (tmp_path / "src" / "new").exists()
    again = cli("undo", SID)
    assert again.returncode == 2
    assert f"Nothing left to undo in session {SID}: no turn of it has changes" in again.stderr


def test_undo_by_path_reports_refusals_and_keeps_the_snapshot(tmp_path: Path) -> None:
    transcript = session_with_a_turn(tmp_path)
    (tmp_path / "src" / "a.py").unlink()
    (tmp_path / "src" / "a.py").symlink_to(tmp_path / "elsewhere")
    undone = cli("undo", str(transcript))
    assert undone.returncode == 1
    assert "- not restored src/a.py: is a symbolic link" in undone.stdout
    assert "- restored src/b.py" in undone.stdout
    assert f"The snapshot was kept: fix the files not restored, then run larik-jupyter undo {SID} again." in undone.stdout
    assert not (tmp_path / "elsewhere").exists()
    assert "turn 1 " in cli("checkpoints", str(transcript)).stdout


def test_unknown_session_is_one_clear_line() -> None:
    done = cli("checkpoints", "20990101-000000-ffffff")
    assert done.returncode == 2
    assert done.stderr.startswith("larik-jupyter: No session with id 20990101-000000-ffffff")


def test_store_opened_by_id_alone_finds_the_sessions_project_root(tmp_path: Path) -> None:
    session_with_a_turn(tmp_path)
    store = CheckpointStore(SID)  # e.g. after a kernel restart, knowing only the id
    assert store.root == tmp_path
    result = store.undo()
    assert sorted(result.restored) == ["src/a.py", "src/b.py", "src/new/c.py"]
    assert (tmp_path / "src" / "a.py").read_bytes() == b"print('before')\n"


def test_undo_from_a_terminal_says_kernel_variables_stay_with_the_kernel(tmp_path: Path) -> None:
    session_with_a_turn(tmp_path)
    store = CheckpointStore(SID, tmp_path)
    store.begin_turn(2)
    store.note_variables([("df", True), ("x", False)])
    listing = cli("checkpoints", SID)
    assert listing.returncode == 0 and "0 files, 2 kernel variables" in listing.stdout
    undo = cli("undo", SID)
    assert undo.returncode == 0, undo.stderr
    assert "variables gone with the kernel" in undo.stdout and "df, x" in undo.stdout
    assert [t.turn for t in CheckpointStore(SID, tmp_path).turns()] == [1]


def test_undo_opens_the_session_to_act_on_it_not_to_run_turns(tmp_path: Path) -> None:
    # `larik-jupyter undo` goes through `Agent` opened for_turns=False: a session recorded with
    # a model whose key is not set still undoes (the key is needed only by a turn), and no MCP
    # server of the personal config is started for it (this one would leave a marker file).
    transcript = session_with_a_turn(tmp_path)
    meta = json.loads(transcript.read_text())
    meta["meta"] |= {"provider": "anthropic", "model": "claude-sonnet-4-6"}
    transcript.write_text(json.dumps(meta) + "\n")
    marker = tmp_path / "mcp-started"
    starts = {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w')"]}
    personal({"mcpServers": {"marker": starts}})
    undone = cli("undo", SID)
    assert undone.returncode == 0, undone.stderr
    assert "- restored src/a.py" in undone.stdout
    assert not marker.exists()
    entries = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert "<system-note>" in entries[-1]["note"] and "model" not in entries[-1]  # changes no model
