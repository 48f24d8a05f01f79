"""Language servers through `LspManager`: a real pylsp, and servers that crash, hang or are missing."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from larik_jupyter.config.model import LspServer
from larik_jupyter.lsp.manager import LspManager
from larik_jupyter.lsp.tracelog import log_path
from tests.process_helpers import wait_until

PYLSP = str(Path(sys.executable).parent / "pylsp")


def pylsp(**extra: object) -> LspServer:
    return LspServer(command=PYLSP, languages=["python"], **extra)


def python_server(code: str) -> LspServer:
    """A fake server: this Python running `code`."""
    return LspServer(command=sys.executable, args=["-c", code], patterns=["*.py"])


def write(path: Path, text: str) -> tuple[Path, str]:
    path.write_text(text)
    return path, text


def test_undefined_name_is_reported_with_its_line_and_the_fix_clears_it(tmp_path: Path) -> None:
    manager = LspManager({"pylsp": pylsp()}, tmp_path)
    try:
        clean = manager.after_write(*write(tmp_path / "app.py", "x = 1\nprint(x)\n"))
        assert clean == "Diagnostics (pylsp): no problems in app.py."
        broken = manager.after_write(*write(tmp_path / "app.py", "x = 1\nprint(x)\nprint(y)\n"))
        assert broken.startswith("Diagnostics (pylsp): 1 error in app.py:")
        assert "line 3, col 7: error: undefined name 'y' (pyflakes)" in broken
        assert manager.report(None) == broken
        fixed = manager.after_write(*write(tmp_path / "app.py", "x = 1\nprint(x)\ny = 2\n"))
        assert fixed == "Diagnostics (pylsp): no problems in app.py."
    finally:
        manager.close()
    [state] = manager.states()
    assert state.state == "exited" and state.starts == 1


def test_log_file_exists_and_grows_with_each_edit(tmp_path: Path) -> None:
    manager = LspManager({"pylsp": pylsp()}, tmp_path)
    log = log_path("pylsp")
    try:
        manager.after_write(*write(tmp_path / "a.py", "import os\n"))
        first = log.stat().st_size
        manager.after_write(*write(tmp_path / "a.py", "import sys\n"))
        assert log.stat().st_size > first
    finally:
        manager.close()
    text = log.read_text()
    assert "request initialize #1" in text and "response initialize #1" in text
    assert "notify textDocument/didChange" in text and "publishDiagnostics" in text
    assert log.parent == Path(os.environ["LARIK_DATA_DIR"]) / "logs"


def test_errors_come_first_and_the_list_is_capped(tmp_path: Path) -> None:
    text = "import os\n" + "".join(f"print(missing_{i})\n" for i in range(25))
    manager = LspManager({"pylsp": pylsp()}, tmp_path)
    try:
        out = manager.after_write(*write(tmp_path / "many.py", text))
    finally:
        manager.close()
    lines = out.splitlines()
    assert lines[0] == "Diagnostics (pylsp): 25 errors, 1 warning in many.py:"
    assert lines[1] == "  line 2, col 7: error: undefined name 'missing_0' (pyflakes)"
    assert lines[-1] == "  … and 6 more" and len(lines) == 22
    assert "warning" not in "\n".join(lines[1:])


def test_report_reads_the_file_from_disk_and_ignores_unserved_files(tmp_path: Path) -> None:
    manager = LspManager({"pylsp": pylsp()}, tmp_path)
    try:
        (tmp_path / "b.py").write_text("def f():\n    return zzz\n")
        assert "line 2, col 12: error: undefined name 'zzz'" in manager.report(tmp_path / "b.py")
        assert manager.report(tmp_path / "notes.txt") == "No language server is configured for notes.txt."
        assert manager.after_write(*write(tmp_path / "notes.txt", "hi\n")) == ""
    finally:
        manager.close()


def test_server_that_exits_at_once_gives_notices_and_is_not_restarted_forever(tmp_path: Path) -> None:
    code = "import sys; sys.stderr.write('boom: no config\\n'); sys.exit(3)"
    manager = LspManager({"broken": python_server(code)}, tmp_path, max_restarts=1)
    try:
        first = manager.after_write(*write(tmp_path / "a.py", "x = 1\n"))
        assert first.startswith("Diagnostics (broken): unavailable — the server exited with code 3")
        assert "(1 restart left)" in first and "The edit itself succeeded." in first
        second = manager.after_write(*write(tmp_path / "a.py", "x = 2\n"))
        assert "exited with code 3" in second and "(0 restarts left)" in second
        third = manager.after_write(*write(tmp_path / "a.py", "x = 3\n"))
        assert "failed 2 times (last: exited with code 3) and is not restarted again" in third
        [state] = manager.states()
        assert (state.state, state.starts) == ("failed", 2)
    finally:
        manager.close()
    assert log_path("broken").read_text().count("stderr boom: no config") == 2


def test_missing_command_is_a_notice_naming_the_config_key(tmp_path: Path) -> None:
    manager = LspManager({"ghost": LspServer(command="/nonexistent/ghost-ls", patterns=["*.py"])}, tmp_path)
    out = manager.after_write(*write(tmp_path / "a.py", "x = 1\n"))
    manager.close()
    assert "could not run `/nonexistent/ghost-ls`" in out and "lspServers.ghost.command" in out


@pytest.mark.timeout(120)
def test_hung_server_never_hangs_the_edit_or_the_close(tmp_path: Path) -> None:
    # Reads nothing and answers nothing for 120 s: initialize does not complete before the server ends.
    manager = LspManager({"stuck": python_server("import time; time.sleep(120)")}, tmp_path, start_timeout=0.5)
    started = time.monotonic()
    out = manager.after_write(*write(tmp_path / "a.py", "x = 1\n" * 20000))
    assert time.monotonic() - started < 30  # the 0.5 s start timeout, not the server's 120 s
    assert "still starting after 0.5 s" in out
    assert manager.states()[0].state == "starting"
    started = time.monotonic()
    manager.close()
    assert time.monotonic() - started < 30  # killed: not waited on until its 120 s sleep ends


def test_server_silent_after_a_change_times_out_with_a_notice(tmp_path: Path) -> None:
    # Answers initialize, then ignores everything: no publishDiagnostics ever comes.
    code = (
        "import sys, json\n"
        "def read():\n"
        "    n = 0\n"
        "    while (line := sys.stdin.buffer.readline().strip()):\n"
        "        if line.lower().startswith(b'content-length'): n = int(line.split(b':')[1])\n"
        "    return json.loads(sys.stdin.buffer.read(n)) if n else None\n"
        "while (m := read()) is not None:\n"
        "    if m.get('method') in ('initialize', 'shutdown'):\n"
        "        body = json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': {'capabilities': {}}}).encode()\n"
        "        sys.stdout.buffer.write(b'Content-Length: %d\\r\\n\\r\\n' % len(body) + body)\n"
        "        sys.stdout.buffer.flush()\n"
    )
    manager = LspManager({"mute": python_server(code)}, tmp_path, wait_timeout=0.3)
    try:
        out = manager.after_write(*write(tmp_path / "a.py", "x = 1\n"))
    finally:
        manager.close()
    assert out == "Diagnostics (mute): unavailable — no diagnostics for a.py within 0.3 s; call diagnostics later."


def test_killed_server_is_restarted_on_the_next_edit(tmp_path: Path) -> None:
    manager = LspManager({"pylsp": pylsp()}, tmp_path)
    try:
        manager.after_write(*write(tmp_path / "a.py", "x = 1\n"))
        pid = manager.states()[0].pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: manager.states()[0].state != "running", "the killed server to be seen as not running")
        assert manager.states()[0].state == "exited"
        out = manager.after_write(*write(tmp_path / "a.py", "print(nope)\n"))
        assert "line 1, col 7: error: undefined name 'nope'" in out
        state = manager.states()[0]
        assert (state.state, state.starts, state.open_files) == ("running", 2, 1)
        assert state.pid != pid
    finally:
        manager.close()
