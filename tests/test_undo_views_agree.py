"""One source of truth for undo (issue 53, point 4): the sidebar's "Undoable turns" (the
server's checkpoints view), the notebook's undo panel, `/undo` and MCP's `undo_list` read the
same list, before and after a kernel restart (a turn whose variables died with the kernel is
`files only` or `not undoable` in every view), and after an outside agent's call is undone from
the notebook, which stays on its own session."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from jupyter_core.utils import run_sync
from mcp import ClientSession, stdio_client
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from larik_jupyter.agent.undo_list import WENT_WITH_THE_KERNEL
from larik_jupyter.frontends.server.views import checkpoints
from larik_jupyter.session.catalog import list_sessions
from tests.agent_helpers import done, personal, scripted, tool
from tests.process_helpers import wait_until
from tests.session_helpers import released
from tests.test_mcp_server import ALLOW, CLIENT, Kernel, kernel, server_params, text  # noqa: F401 (fixture)
from tests.test_notebooks import outputs_text
from tests.test_undo_panel_kernel import panel_states


def sidebar(project: Path, session_id: str | None = None) -> list[tuple[str, str]]:
    """What the sidebar lists for the session (default: the project's newest): each turn's
    label and state, as the server's checkpoints view answers the page."""
    info = next(i for i in list_sessions(project) if session_id in (None, i.id))
    answer = checkpoints(info.id, project, str(project), Path(info.path))
    return [(t.label, t.state) for t in answer.turns]


def panel_heads(text: str) -> list[str]:
    """The turn lines of an undo panel's text rendering (`Prompt 2: variable df`), lowercased."""
    return [line.lower() for line in text.splitlines() if re.match(r"Prompt \d+: ", line)]


def panel(state: dict[str, Any]) -> list[tuple[str, str]]:
    return [(t["label"], t["state"]) for t in state["turns"]]


@pytest.mark.timeout(300)
def test_the_panel_the_sidebar_and_undo_agree_before_and_after_a_kernel_restart(project: Path, tmp_path: Path) -> None:
    (project / "notes.txt").write_text("before\n")
    model = scripted(
        tmp_path,
        [tool("write", path="notes.txt", content="after\n")], done("Wrote."),
        [tool("python", code="x = 5")], done("Set x."),
        [tool("write", path="more.txt", content="more\n"), tool("python", code="y = 7")], done("Both."),
    )
    nb = new_notebook(cells=[new_code_cell(source) for source in [
        "%load_ext larik_jupyter",
        f"%larik --model {model} --yes write notes",
        "%larik --yes set x",
        "%larik --yes write more and set y",
        "%larik /checkpoints",
        # the kernel restarts here
        "%load_ext larik_jupyter",
        "%larik /resume --last",
        "%larik /checkpoints",
        "%larik /undo",
        "%larik /undo",
        "%larik /undo",
        "%larik /checkpoints",
    ]])
    nb.cells[10].metadata["tags"] = ["raises-exception"]  # nothing left: a UsageError saying so
    nbc = NotebookClient(
        nb, kernel_name="python3", timeout=120, store_widget_state=True,
        resources={"metadata": {"path": str(project)}},
    )
    seen: list[list[tuple[str, str]]] = []
    with nbc.setup_kernel():
        for index in range(5):
            nbc.execute_cell(nb.cells[index], index)
        seen.append(sidebar(project))  # while the kernel that ran the turns lives
        assert nbc.km is not None and nbc.kc is not None
        run_sync(nbc.km.restart_kernel)()
        run_sync(nbc.kc.wait_for_ready)(timeout=60)
        wait_until(lambda: released(project), "the restarted kernel's old process to release its session")
        for index in range(5, 8):
            nbc.execute_cell(nb.cells[index], index)
        seen.append(sidebar(project))
        for index in range(8, len(nb.cells)):
            nbc.execute_cell(nb.cells[index], index)
        seen.append(sidebar(project))
        nbc.set_widgets_metadata()
    texts = [outputs_text(cell) + "".join(o.get("evalue", "") for o in cell.outputs) for cell in nb.cells]
    panels = [state["panel"] for state in panel_states(nb)]  # cells 4, 7, 8, 9 and 11
    before, after, end = panels[0], panels[1], panels[-1]

    # Before the restart every turn is undoable, in the panel as in the sidebar.
    assert panel(before) == seen[0] == [("prompt 3", "undoable"), ("prompt 2", "undoable"), ("prompt 1", "undoable")]
    # After it: prompt 3's variable went with the kernel (its file can still be undone), prompt 2
    # changed only a variable (nothing left to put back); both views say so in the same words.
    assert panel(after) == seen[1] == [
        ("prompt 3", "files only"), ("prompt 2", "not undoable"), ("prompt 1", "undoable"),
    ]
    assert [t["note"] for t in after["turns"]][1] == WENT_WITH_THE_KERNEL
    info = list_sessions(project)[0]
    notes = [t.note for t in checkpoints(info.id, project, str(project), Path(info.path)).turns]
    assert notes == [t["note"] for t in end["turns"]]
    assert WENT_WITH_THE_KERNEL in texts[7]  # the panel's text rendering says it too
    # /undo acts on the list's next turn: prompt 3's file, then prompt 1 (passing over prompt 2).
    assert "Undid prompt 3" in texts[8] and "variables gone with the kernel" in texts[8] and "y" in texts[8]
    assert not (project / "more.txt").exists()
    assert "Undid prompt 1." in texts[9] and "Undid prompt 2" not in texts[9]
    assert (project / "notes.txt").read_text() == "before\n"
    # Made false: with nothing the list can undo, /undo undoes nothing and says why, as the panel does.
    assert "Nothing left to undo" in texts[10] and "Not undoable: prompt 2" in texts[10]
    assert "Undid" not in texts[10]
    assert panel(end) == seen[2] == [("prompt 2", "not undoable")]
    assert end["empty"] in texts[10]


def test_undoing_a_clients_call_from_the_notebook_keeps_the_notebooks_session(
    kernel: Kernel, project: Path, tmp_path: Path  # noqa: F811 (the fixture)
) -> None:
    personal(ALLOW)
    said: dict[str, str] = {}

    async def run() -> None:
        async with stdio_client(server_params(kernel, project)) as (read, write):
            async with ClientSession(read, write, client_info=_client()) as session:
                await session.initialize()
                await session.call_tool("python", {"code": "df['b'] = 1"})
                await session.call_tool("python", {"code": "made = 1\ndf['c'] = 2"})
                said["list before"] = text(await session.call_tool("undo_list", {}))
                [info] = list_sessions(project)
                said["id"] = info.id
                said["sidebar before"] = repr(sidebar(project, info.id))
                said["panel before"] = await asyncio.to_thread(kernel.run, f"%larik /checkpoints --session {info.id}")
                said["resume"] = await asyncio.to_thread(kernel.run, f"%larik /resume {info.id}")
                said["undo"] = await asyncio.to_thread(kernel.run, f"%larik /undo --session {info.id}")
                said["list after"] = text(await session.call_tool("undo_list", {}))
                said["sidebar after"] = repr(sidebar(project, info.id))
                said["panel after"] = await asyncio.to_thread(kernel.run, f"%larik /checkpoints --session {info.id}")
                said["next"] = text(await session.call_tool("python", {"code": "print(sorted(df.columns))"}))

    asyncio.run(run())
    # Before: the client's two calls, newest first, in MCP's list as in the sidebar.
    assert said["list before"].splitlines()[0].startswith("prompt 2: variable df, variable made")
    assert said["list before"].splitlines()[1].startswith("prompt 1: variable df")
    assert said["sidebar before"] == repr([("prompt 2", "undoable"), ("prompt 1", "undoable")])
    # The notebook's undo panel on the client's session (it stays on its own) lists the same.
    assert panel_heads(said["panel before"]) == said["list before"].lower().splitlines()
    # /resume of a connected client's session leaves the notebook where it was, and says what to do.
    assert "live session of the outside agent `test-client`" in said["resume"]
    assert f"%larik /undo --session {said['id']}" in said["resume"]
    # /undo --session undoes the client's newest call, in the kernel and the file.
    assert "Undid prompt 2" in said["undo"] and "this notebook stays on its own" in said["undo"]
    assert kernel.value("'made' in globals()") == "False"
    assert said["list after"].splitlines() == [line for line in said["list before"].splitlines()[1:]]
    assert said["sidebar after"] == repr([("prompt 1", "undoable")])
    assert panel_heads(said["panel after"]) == said["list after"].lower().splitlines()
    assert "['a', 'b']" in said["next"] and "<system-note>" in said["next"]
    # The notebook's own prompt still works: no session was switched to the client's.
    reply = scripted(tmp_path, done("Hello from the notebook's own session."))
    own = kernel.run(f"%larik --model {reply} hello")
    assert "Hello from the notebook's own session." in own, own
    assert len(list_sessions(project)) == 2  # the client's, and the notebook's own


def _client() -> Any:
    import mcp_types as types

    return types.Implementation(name=CLIENT, version="1")


def test_undo_session_of_a_closed_session_leaves_the_notebook_where_it_was(project: Path, tmp_path: Path) -> None:
    from larik_jupyter import Agent
    from tests.widget_helpers import larik, shell_with_magics

    other = Agent(project, model=scripted(tmp_path, [tool("write", path="a.txt", content="a\n")], done("Wrote.")), yes=True)
    other.run("write a")
    other.close()
    shell, magics = shell_with_magics(project, scripted(tmp_path, done("Mine.")))
    larik(shell, "--yes mine")
    own = magics.agent
    assert own is not None and (project / "a.txt").exists()
    larik(shell, f"/undo --session {other.session_id}")
    assert not (project / "a.txt").exists()  # the other session's turn, undone from here
    assert magics.agent is own and own.session_id != other.session_id  # the notebook stayed on its own
    # Made false: without --session, /undo acts on the notebook's own session, which has nothing to undo.
    with pytest.raises(Exception, match=f"Nothing left to undo in session {own.session_id}"):
        larik(shell, "/undo")


def test_resuming_a_closed_clients_session_prompts_with_the_configured_model(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from IPython.utils.capture import capture_output

    from larik_jupyter.session.store import Session
    from tests.session_helpers import add_turn
    from tests.widget_helpers import larik, shell_with_magics

    with Session.create(project, "mcp", CLIENT) as client:
        add_turn(client, f"{CLIENT}: python", 0)
    monkeypatch.setenv("LARIK_MODEL", scripted(tmp_path, done("Answered by the configured model.")))
    shell, magics = shell_with_magics(project, "")
    magics.model = None  # the kernel names no model: the config's (here $LARIK_MODEL) answers
    larik(shell, f"/resume {client.id}")
    with capture_output() as shown:
        larik(shell, "go on from here")
    said = "\n".join(str(o.data.get("text/markdown", o.data.get("text/plain", ""))) for o in shown.outputs) + shown.stdout
    assert magics.agent is not None and magics.agent.session_id == client.id
    assert "Answered by the configured model." in said, said
    assert "no model answers prompts in it" not in said  # made false by the client's own 'model'
