"""Code run to check or replay is confined by the operating system (issue 50): under Landlock a
checked or replayed cell cannot change a file outside the copy by any route, C code included
(pyarrow's writers, ctypes' libc, a shell the C library starts, `os.open` with `dir_fd`, a
write through the link to a large linked file), nor connect to another machine; the report
names each cell, says in its first line what did not hold and in its last line the confinement.
Each test has its made-false twin: `LARIK_TEST_CONFINEMENT=off` (a test-only switch) runs the
same cells unconfined and sees the files change and the requests arrive."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from agent_helpers import done, scripted, tool
from session_helpers import python_session, tree_state
from test_notebook_check import write_notebook
from test_notebook_kernel_undo import client, run_cells

from larik_jupyter import Agent, KernelHost
from larik_jupyter.scratch import bubblewrap
from larik_jupyter.scratch.confine import availability
from larik_jupyter.tools.check.tool import run_check
from tests.agent_helpers import make_env

needs_landlock = pytest.mark.skipif(
    availability().abi < 4, reason="this machine's kernel has no Landlock with network rules (ABI 4+)"
)
WORKTREE = Path(__file__).resolve().parent.parent
LANDLOCK = "confined by the operating system (Landlock: files outside the copy read-only, no network)"


class _Counting(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"reached")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    """A local HTTP server that counts the requests it sees (`server.hits`)."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    srv.hits = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def make_world(base: Path) -> dict[str, Path]:
    """A project (with a linked-size data file, 65 MB) and, beside it, a folder of the user's
    real results that every hostile cell aims at."""
    project, out = base / "proj", base / "results"
    (project / ".git").mkdir(parents=True)
    out.mkdir()
    for name, data in [("summary.parquet", b"old parquet"), ("arr.npy", b"old npy"), ("table.csv", b"old,csv\n"),
                       ("real.txt", b"real\n"), ("victim.txt", b"victim\n"), ("dirfd.txt", b"dirfd\n")]:
        (out / name).write_bytes(data)
    with sqlite3.connect(out / "db.sqlite") as con:
        con.execute("create table t (x)")
        con.execute("insert into t values (1)")
    con.close()
    with open(project / "big.bin", "wb") as big:  # over the size copied outright: a link to it
        big.write(b"x" * (65 * 1024 * 1024))
    return {"project": project, "out": out}


def state(world: dict[str, Path]) -> dict[str, str]:
    return {**tree_state(world["project"]), **tree_state(world["out"])}


def _raise_errno(path: str) -> str:
    # What a C wrapper does when its call fails: raise the errno with the path.
    return f"if fd < 0:\n    raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), {path})\nlibc.close(fd)"


def hostile(out: Path, port: int) -> list[str]:
    """The setup cell, then one cell per route out of the copy (cells 3 to 13 of the notebook)."""
    return [
        "import ctypes, os, socket, sqlite3, subprocess, urllib.request\nimport numpy as np, pandas as pd\n"
        f"import pyarrow as pa, pyarrow.csv as pacsv\nlibc = ctypes.CDLL(None, use_errno=True)\nOUT = {str(out)!r}\nprint('ready')",
        "pd.DataFrame({'a': [1, 2]}).to_parquet(OUT + '/summary.parquet')",
        "np.save(OUT + '/arr.npy', np.zeros(3))",
        "pacsv.write_csv(pa.table({'a': [1]}), OUT + '/table.csv')",
        "con = sqlite3.connect(OUT + '/db.sqlite')\ncon.execute('insert into t values (2)')\ncon.commit()",
        "fd = libc.open((OUT + '/real.txt').encode(), os.O_WRONLY | os.O_TRUNC)\n" + _raise_errno("OUT + '/real.txt'"),
        "libc.system(('rm ' + OUT + '/victim.txt').encode())",
        "libc.system(('sh -c \"echo made > ' + OUT + '/sub.txt\"').encode())",
        "folder = os.open(OUT, os.O_RDONLY)\nos.close(os.open('dirfd.txt', os.O_WRONLY | os.O_TRUNC, dir_fd=folder))",
        "fd = libc.open(b'big.bin', os.O_WRONLY | os.O_APPEND)\nif fd >= 0:\n    libc.write(fd, b'appended', 8)\n"
        + _raise_errno("'big.bin'"),
        f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=30)\n"
        "s.sendall(b'GET /socket HTTP/1.0\\r\\n\\r\\n')\nprint(s.recv(100))",
        f"import urllib.request\nprint(urllib.request.urlopen('http://127.0.0.1:{port}/urllib', timeout=30).read())",
    ]


HOSTILE_CELLS = list(range(3, 14))  # their labels: "cell 3" ... "cell 13" (cell 1 is Markdown)


def refused_cells(text: str) -> list[int]:
    """The cells the report's Refused section names."""
    section = text.split("Refused: changes outside the scratch copy, shell commands and connections:")[1]
    section = section.split("\n\n")[0]
    return sorted({int(n) for n in re.findall(r"^- cell (\d+) \(", section, re.MULTILINE)})


def check_in_nbclient(project: Path, lines: list[str]) -> list[str]:
    """Each `/check` line run in a real kernel under nbclient: the report's text of each."""
    nbc = client(project, ["%load_ext larik_jupyter", *lines])
    nbc.timeout = 300
    with nbc.setup_kernel():
        run_cells(nbc)
    # The report is the widget's text (the notice that no model is configured is shown before it).
    texts = [[o.get("data", {}).get("text/plain", "") for o in cell.outputs] for cell in nbc.nb.cells[1:]]
    return [next((t for t in found if "top to bottom in a scratch" in t), "\n".join(found)) for found in texts]


def _unchanged(world: dict[str, Path], before: dict[str, str]) -> None:
    after = state(world)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"changed outside the copy: {changed}"


@needs_landlock
def test_check_confines_c_code_and_the_network_and_says_so(tmp_path: Path, server: ThreadingHTTPServer) -> None:
    world = make_world(tmp_path)
    port = server.server_address[1]
    write_notebook(world["project"] / "hostile.ipynb", [(c, None, []) for c in hostile(world["out"], port)])
    write_notebook(world["project"] / "net.ipynb", [(hostile(world["out"], port)[-1], None, [])])
    before = state(world)
    confined, networked = check_in_nbclient(
        world["project"], ["%larik /check hostile.ipynb --timeout 240", "%larik /check net.ipynb --network"]
    )
    _unchanged(world, before)
    assert server.hits == ["/urllib"], "only the run with --network reached the server"  # type: ignore[attr-defined]
    assert refused_cells(confined) == HOSTILE_CELLS, confined
    lines = [line for line in confined.splitlines() if line.strip()]
    assert lines[0].startswith("Checked hostile.ipynb"), "nothing failed to hold, so no warning comes first"
    assert lines[-1] == ("The live kernel, the notebook and your files were not changed: the cells ran in a scratch "
                         f"copy of {world['project']}, {LANDLOCK}."), lines[-1]
    assert "the operating system refused what this cell tried at dirfd.txt (PermissionError" in confined
    assert f"cannot create {world['out']}/sub.txt: Permission denied" in confined
    assert "this cell tried to connect to 127.0.0.1" in confined and "(--network allows it)" in confined
    net = [line for line in networked.splitlines() if line.strip()]
    assert net[0] == "The network was allowed (--network): the code could connect to other machines.", net[0]
    assert "Refused" not in networked and net[-1].endswith("(Landlock: files outside the copy read-only, network allowed).")


def test_check_unconfined_twin_sees_every_route_change_the_files(
    tmp_path: Path, server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = make_world(tmp_path)
    write_notebook(world["project"] / "hostile.ipynb", [(c, None, []) for c in hostile(world["out"], server.server_address[1])])
    before = state(world)
    monkeypatch.setenv("LARIK_TEST_CONFINEMENT", "off")
    (report,) = check_in_nbclient(world["project"], ["%larik /check hostile.ipynb --timeout 240"])
    after = state(world)
    changed = {Path(k).name for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert changed == {"summary.parquet", "arr.npy", "table.csv", "db.sqlite", "real.txt", "victim.txt", "sub.txt",
                       "dirfd.txt", "big.bin"}, changed
    assert sorted(server.hits) == ["/socket", "/urllib"]  # type: ignore[attr-defined]
    lines = [line for line in report.splitlines() if line.strip()]
    assert lines[0].startswith("Not confined: confinement was switched off for a test (LARIK_TEST_CONFINEMENT=off)")
    assert lines[-1].endswith("not confined (switched off for a test).") and "your files were not changed" not in report


def test_without_landlock_the_first_line_says_so_and_the_audit_hook_still_refuses(
    tmp_path: Path, server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = make_world(tmp_path)
    cells = hostile(world["out"], server.server_address[1])
    write_notebook(world["project"] / "hostile.ipynb", [(c, None, []) for c in cells])
    before = state(world)
    monkeypatch.setenv("LARIK_TEST_CONFINEMENT", "unavailable")
    model = scripted(tmp_path, [tool("notebook_check", path="hostile.ipynb", timeout=240)], done())
    agent = Agent(world["project"], model=model, yes=True, host=KernelHost({}))
    agent.run("check the notebook")
    report = agent.loop.session.state.all[-2].tool_results()[0].text()
    agent.close()
    lines = report.splitlines()
    assert lines[0] == ("Not confined by the operating system: Landlock was reported unavailable for a test and "
                        "bubblewrap was reported unavailable for a test; code in C extensions could write outside the "
                        "copy and open network connections."), lines[0]
    assert lines[-1].endswith("guarded by a Python audit hook only (not confined by the operating system).")
    assert "your files were not changed" not in report
    after = state(world)
    # What Python code does, the audit hook refuses: np.save, sqlite3, both connections.
    for name in ("arr.npy", "db.sqlite"):
        assert before[str(world["out"] / name)] == after[str(world["out"] / name)], name
    assert server.hits == []  # type: ignore[attr-defined]
    assert {4, 6, 12, 13} <= set(refused_cells(report)), report
    # C code is not seen by it, which the first line warned of: pyarrow wrote the real file.
    assert before[str(world["out"] / "summary.parquet")] != after[str(world["out"] / "summary.parquet")]


def test_without_landlock_bubblewrap_confines_the_same_cells(
    tmp_path: Path, server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LARIK_TEST_CONFINEMENT", "bubblewrap")
    missing = bubblewrap.unusable()
    if missing:
        pytest.skip(f"the stand-in for Landlock cannot be tried here: {missing}")
    world = make_world(tmp_path)
    cells = hostile(world["out"], server.server_address[1])
    write_notebook(world["project"] / "hostile.ipynb", [(c, None, []) for c in cells])
    write_notebook(world["project"] / "net.ipynb", [(cells[-1], None, [])])
    before = state(world)
    report = run_check(make_env(world["project"], host=KernelHost({})), "hostile.ipynb", timeout=240).text()
    _unchanged(world, before)
    assert server.hits == [] and refused_cells(report) == HOSTILE_CELLS, report  # type: ignore[attr-defined]
    lines = report.splitlines()
    assert lines[0] == ("Not confined by Landlock: Landlock was reported unavailable for a test; bubblewrap confined "
                        "the code instead."), lines[0]
    assert lines[-1].endswith("confined by the operating system (bubblewrap: files outside the copy read-only, no network).")
    networked = run_check(make_env(world["project"], host=KernelHost({})), "net.ipynb", timeout=240, network=True).text()
    assert server.hits == ["/urllib"] and "The network was allowed (--network)" in networked.splitlines()[0], networked  # type: ignore[attr-defined]


def _replay(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "larik_jupyter", "replay", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env={**os.environ, **(env or {})})


@needs_landlock
def test_replay_confines_c_code_and_the_network_and_its_twin_does_not(
    tmp_path: Path, server: ThreadingHTTPServer
) -> None:
    world = make_world(tmp_path)
    project, out = world["project"], world["out"]
    cells = hostile(out, server.server_address[1])
    path = python_session(project, [(cells[0], "ready"), *[(code, "(no output)") for code in cells[1:]]])
    before = state(world)
    confined = _replay(project, path.stem)
    _unchanged(world, before)
    assert server.hits == [], confined.stdout  # type: ignore[attr-defined]
    rows = [line.split()[-1] for line in confined.stdout.splitlines() if re.match(r"\s+\d+\s+\d+\s+python", line)]
    assert rows == ["same"] + ["failed"] * 11, confined.stdout
    assert "replayed in a copy; the operating system refused what this cell tried at" in confined.stdout
    lines = [line for line in confined.stdout.splitlines() if line.strip()]
    assert lines[0].startswith("Replay of ") and lines[-1] == f"The replay ran in a scratch copy of {project}, {LANDLOCK}."
    # The twin: the same replay unconfined changes the user's results and reaches the server.
    loose = _replay(project, path.stem, env={"LARIK_TEST_CONFINEMENT": "off"})
    after = state(world)
    assert before[str(out / "real.txt")] != after[str(out / "real.txt")] and not (out / "victim.txt").exists()
    assert before[str(project / "big.bin")] != after[str(project / "big.bin")]
    assert sorted(server.hits) == ["/socket", "/urllib"], loose.stdout  # type: ignore[attr-defined]
    assert loose.stdout.startswith("Not confined: confinement was switched off for a test")


@needs_landlock
def test_replay_in_place_confines_shell_commands_to_the_project_and_network_lets_them_out(
    tmp_path: Path, server: ThreadingHTTPServer
) -> None:
    world = make_world(tmp_path)
    project, out = world["project"], world["out"]
    path = python_session(project, [
        ("open('made.txt', 'w').write('in the project')\nprint('made')", "made"),
        (f"import subprocess\nsubprocess.run(['sh', '-c', 'echo x > {out}/sub.txt'])\nprint('ran')", "ran"),
        (f"import urllib.request\nprint(urllib.request.urlopen('http://127.0.0.1:{server.server_address[1]}/in-place').read())",
         "b'reached'"),
    ])
    before = tree_state(out)
    done_ = _replay(project, path.stem, "--in-place", "--include-shell", "--network")
    assert tree_state(out) == before and (project / "made.txt").read_text() == "in the project", done_.stdout
    assert server.hits == ["/in-place"], done_.stdout  # type: ignore[attr-defined]
    assert f"replayed in place; the operating system refused what this cell ran: sh: 1: cannot create {out}/sub.txt" in done_.stdout
    lines = [line for line in done_.stdout.splitlines() if line.strip()]
    assert lines[0] == "The network was allowed (--network): the code could connect to other machines."
    assert lines[-1] == (f"The replay ran in {project} itself, confined by the operating system (Landlock: files outside "
                         f"{project} read-only, network allowed).")


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def _nobody_python() -> tuple[str, str] | None:
    """A Python the user nobody can run with this worktree's packages (the venv's own, or the
    system's of the same version where the venv's lies in a folder only root may enter), and
    the PYTHONPATH it needs; None if there is none."""
    site = next(p for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix))
    for python, path in ((sys.executable, str(WORKTREE)), (f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}",
                                                          f"{WORKTREE}{os.pathsep}{site}")):
        probe = subprocess.run([*NOBODY, python, "-c", "import subprocess, sys\n"
                                "subprocess.run([sys.executable, '-c', 'import ipykernel, pyarrow, larik_jupyter'], check=True)"], cwd="/",
                               capture_output=True, timeout=120, env={**os.environ, "PYTHONPATH": path})
        if probe.returncode == 0:
            return python, path
    return None


@needs_landlock
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="running a check as another user needs root and setpriv (util-linux)")
def test_the_same_check_holds_for_an_unprivileged_user(server: ThreadingHTTPServer) -> None:
    found = _nobody_python()
    if found is None:
        pytest.skip("no Python with larik_jupyter's packages can be run by the user nobody here")
    python, pythonpath = found
    base = Path(tempfile.mkdtemp(prefix="larik-nobody-"))
    try:
        world = make_world(base)
        cells = hostile(world["out"], server.server_address[1])
        write_notebook(world["project"] / "n.ipynb", [(cells[i], None, []) for i in (0, 1, 5, 11)])
        (base / "home").mkdir()
        for folder, _, files in os.walk(base):
            for name in [folder, *(os.path.join(folder, f) for f in files)]:
                os.chown(name, 65534, 65534)  # the user's own files: nothing but confinement keeps them
        script = ("import sys\nfrom pathlib import Path\nfrom larik_jupyter.tools.check.tool import run_check\n"
                  "from larik_jupyter.tools.host import KernelHost\nfrom tests.agent_helpers import make_env\n"
                  "print(run_check(make_env(Path.cwd(), host=KernelHost({})), 'n.ipynb', timeout=240).text())")

        def as_nobody(**env: str) -> str:
            run = subprocess.run(
                [*NOBODY, python, "-c", script],
                cwd=world["project"], capture_output=True, text=True, timeout=600,
                env={**os.environ, "HOME": str(base / "home"), "PYTHONPATH": pythonpath,
                     "LARIK_DATA_DIR": str(base / "home" / "data"), "LARIK_CONFIG_DIR": str(base / "home" / "config"), **env},
            )
            assert run.returncode == 0, run.stderr
            return run.stdout

        before = state(world)
        report = as_nobody()
        _unchanged(world, before)
        assert server.hits == [] and refused_cells(report) == [3, 4, 5], report  # type: ignore[attr-defined]
        assert report.rstrip().endswith(f"{LANDLOCK}."), report
        twin = as_nobody(LARIK_TEST_CONFINEMENT="off")
        after = state(world)
        assert before[str(world["out"] / "real.txt")] != after[str(world["out"] / "real.txt")], twin
        assert server.hits == ["/urllib"], twin  # type: ignore[attr-defined]
    finally:
        shutil.rmtree(base, ignore_errors=True)
