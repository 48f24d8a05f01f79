"""A notebook a real-time collaboration room holds is never written behind its server: the
notebook tools ask the Jupyter server that started the kernel (`GET /larik/api/room`, answered
here by a stand-in server found through its `jpserver-<pid>.json`, as the kernel finds it) and
refuse with one sentence naming the backend; a notebook no room holds is written as before."""

from __future__ import annotations

import json
import os
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell

from tests.agent_helpers import call, make_env
from tests.test_tools_notebook import write_nb


class Rooms:
    """What the stand-in server answers: the backend and the notebooks its rooms hold."""

    def __init__(self) -> None:
        self.backend: str | None = "jupyter-collaboration"
        self.open: set[str] = set()
        self.asked: list[str] = []


@pytest.fixture
def rooms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rooms]:
    state = Rooms()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            url = urllib.parse.urlsplit(self.path)
            path = urllib.parse.parse_qs(url.query).get("path", [""])[0]
            state.asked.append(path)
            body = json.dumps({"backend": state.backend, "open": path in state.open}).encode()
            self.send_response(200 if url.path == "/larik/api/room" else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    info = {"url": f"http://127.0.0.1:{server.server_address[1]}/", "token": "", "root_dir": str(tmp_path / "project"), "pid": os.getppid()}
    (runtime / f"jpserver-{os.getppid()}.json").write_text(json.dumps(info))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def test_a_notebook_a_room_holds_is_refused_with_the_backend_and_one_no_room_holds_is_written(
    tmp_path: Path, rooms: Rooms
) -> None:
    root = tmp_path / "project"
    (root / "sub").mkdir(parents=True)
    original = write_nb(root / "sub" / "shared.ipynb", [new_code_cell("x = 1", id="c1")])
    write_nb(root / "alone.ipynb", [new_code_cell("x = 1", id="c1")])
    rooms.open = {"sub/shared.ipynb"}
    env = make_env(root)

    refused = call(env, "notebook_edit", path="sub/shared.ipynb", cell_id="c1", new_source="x = 2")
    assert refused.is_error
    assert refused.content == (
        "Not landed: sub/shared.ipynb is open in a real-time collaboration room of jupyter-collaboration, "
        "whose server owns the notebook and would load a file written behind it over everyone's edits, "
        "so larik left the file unchanged; open it in a notebook page running this kernel, or close "
        "it in every tab, and ask again."
    )
    assert (root / "sub" / "shared.ipynb").read_bytes() == original

    # The made-false twin: a notebook no room holds is written, as without collaboration.
    written = call(env, "notebook_edit", path="alone.ipynb", cell_id="c1", new_source="x = 2")
    assert not written.is_error, written.content
    assert "x = 2" in (root / "alone.ipynb").read_text()
    assert rooms.asked == ["sub/shared.ipynb", "alone.ipynb"]

    # The room closes: the same edit is written now.
    rooms.open = set()
    assert not call(env, "notebook_edit", path="sub/shared.ipynb", cell_id="c1", new_source="x = 2").is_error
    assert "x = 2" in (root / "sub" / "shared.ipynb").read_text()


def test_the_sentence_names_jupyter_server_documents_when_it_owns_the_room(tmp_path: Path, rooms: Rooms) -> None:
    root = tmp_path / "project"
    root.mkdir()
    write_nb(root / "nb.ipynb", [new_code_cell("x = 1", id="c1")])
    rooms.backend, rooms.open = "jupyter-server-documents", {"nb.ipynb"}
    result = call(make_env(root), "notebook_edit", path="nb.ipynb", cell_id="c1", new_source="x = 2")
    assert result.content.startswith(
        "Not landed: nb.ipynb is open in a real-time collaboration room of jupyter-server-documents,"
    )
    assert result.content.endswith("close it in every tab, and ask again once its room has closed (up to about 6 minutes after its last tab closed).")


def test_undo_leaves_a_notebook_file_a_room_now_holds_even_with_force(tmp_path: Path, rooms: Rooms) -> None:
    """larik wrote the file while no room held it; a collaborator has opened it since: undo
    would write it behind the room, so it says why it leaves it, keeps the turn to undo, and
    restores it once the room has closed."""
    from larik_jupyter.agent.undo import undo_turns
    from larik_jupyter.checkpoint.store import CheckpointStore
    from larik_jupyter.tools.env import Env

    root = tmp_path / "project"
    root.mkdir()
    original = write_nb(root / "nb.ipynb", [new_code_cell("x = 1", id="c1")])
    store = CheckpointStore("20260101-000000-abcdef", root)
    store.begin_turn()
    env = Env(cwd=root, root=root, checkpoints=store)
    assert not call(env, "notebook_edit", path="nb.ipynb", cell_id="c1", new_source="x = 2").is_error
    edited = (root / "nb.ipynb").read_bytes()
    rooms.backend, rooms.open = "jupyter-server-documents", {"nb.ipynb"}

    report = undo_turns(store, env, lambda note: None, None, prompts=1, force=True)
    assert (root / "nb.ipynb").read_bytes() == edited
    assert report[0].refused == [(
        "nb.ipynb",
        "is open in a real-time collaboration room of jupyter-server-documents, whose server owns the "
        "notebook and would load a file written behind it over everyone's edits, so it was not restored; "
        "close it in every tab, and undo again once its room has closed (up to about 6 minutes after its last tab closed)",
    )]
    assert "not restored nb.ipynb: is open in a real-time collaboration room" in report.plain()

    # The made-false twin: once the room has closed, the same undo puts the file back.
    rooms.open = set()
    assert undo_turns(store, env, lambda note: None, None, prompts=1)[0].restored == ["nb.ipynb"]
    assert (root / "nb.ipynb").read_bytes() == original


@pytest.mark.parametrize("redraw", [True, False])
def test_a_redrawn_transcript_is_one_output_where_display_updates_are_appended(redraw: bool) -> None:
    """Where every display update is appended as a new output (jupyter-server-documents 0.3.3's
    rooms; IPython's capturing publisher does the same), the transcript drawn again after a
    clear is one output; updated in place (the made-false twin) it is one output per update."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from larik_jupyter.agent import events as ae
    from larik_jupyter.frontends.notebook.view import TranscriptView

    InteractiveShell.instance()
    view = TranscriptView()
    view.redraw = redraw
    with capture_output() as shown:
        view.show()
        for word in ("one ", "two ", "three"):
            view.handle(ae.TextDelta(word))
            view.flush(force=True)
    texts = [o.data["text/markdown"] for o in shown.outputs]
    if redraw:
        assert len(texts) == 1 and "one two three" in texts[0], texts
    else:
        assert len(texts) == 4 and "one two three" in texts[-1], texts
