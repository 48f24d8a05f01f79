"""`larik-jupyter mcp` driven by the `mcp` SDK's stdio client against a real kernel (headless,
attached by its connection file): a ten-step analysis, the record, undo, and a client killed
mid-call. The browser variant is tests/browser/test_mcp_browser.py."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import nbformat
import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager, start_new_kernel
from mcp import ClientSession, StdioServerParameters, stdio_client

from larik_jupyter.agent.loop import INTERRUPTED_RESULT
from larik_jupyter.session.catalog import list_sessions
from larik_jupyter.session.reader import load_entries
from tests.agent_helpers import personal
from tests.process_helpers import wait_until

CLIENT = "test-client"
ALLOW = {"permissions": {"allow": ["python", "notebook_edit", "notebook_run", "notebook_check"]}}


class Kernel:
    def __init__(self, km: KernelManager, kc: BlockingKernelClient) -> None:
        self.km, self.kc = km, kc

    def run(self, code: str) -> str:
        """Run `code` as a cell; its text output."""
        out: list[str] = []

        def keep(msg: dict[str, Any]) -> None:
            content = msg["content"]
            out.append(content.get("text") or (content.get("data") or {}).get("text/plain", ""))

        self.kc.execute_interactive(code, timeout=60, output_hook=keep)
        return "".join(out)

    def value(self, expression: str) -> str:
        """`expression` evaluated in the kernel, as its repr (a user expression: nothing runs in history)."""
        reply = self.kc.execute_interactive("", user_expressions={"v": expression}, timeout=30)
        data = reply["content"]["user_expressions"]["v"]
        assert data["status"] == "ok", data
        return str(data["data"]["text/plain"])


@pytest.fixture
def kernel(project: Path) -> Iterator[Kernel]:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3]})", id="load"),
        nbformat.v4.new_code_cell("total = df['a'].sum()\ntotal", id="total"),
    ]
    nbformat.write(notebook, project / "analysis.ipynb")
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(project))
    try:
        kc.execute_interactive("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3]})", timeout=60)
        yield Kernel(km, kc)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def server_params(kernel: Kernel, project: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "larik_jupyter", "mcp", "--connection-file", kernel.km.connection_file],
        env=dict(os.environ),
        cwd=str(project),
    )


def text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def drive(params: StdioServerParameters, steps: list[tuple[str, dict[str, Any]]]) -> list[types.CallToolResult]:
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=types.Implementation(name=CLIENT, version="1")) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"notebook_read", "notebook_edit", "notebook_run", "notebook_check", "python",
                    "variable_report", "undo_list", "transcript", "undo"} <= names
            return [await session.call_tool(name, args) for name, args in steps]


def test_ten_step_analysis_is_recorded_and_undone(kernel: Kernel, project: Path) -> None:
    personal(ALLOW)
    nb = "analysis.ipynb"
    steps: list[tuple[str, dict[str, Any]]] = [
        ("notebook_read", {"path": nb}),
        ("python", {"code": "df['b'] = df['a'] * 10\nprint(df.shape)"}),
        ("variable_report", {}),
        ("notebook_edit", {"path": nb, "cell_id": "total", "edit_mode": "replace",
                           "new_source": "total = df['b'].sum()\ntotal"}),
        ("notebook_run", {"path": nb, "cell_id": "total"}),
        ("notebook_read", {"path": nb}),
        ("notebook_check", {"path": nb}),
        ("undo_list", {}),
        ("transcript", {}),
        ("undo", {"to": 2}),
    ]
    results = asyncio.run(drive(server_params(kernel, project), steps))
    said = [text(r) for r in results]
    assert not any(r.is_error for r in results[:9]), said
    assert "(3, 2)" in said[1]
    assert "df:" in said[2] and "3×1 → 3×2" in said[2]
    assert "60" in said[4]  # the edited cell ran in the live kernel: 10+20+30
    assert "df['b'].sum()" in said[5]
    assert "notebook_edit" in said[8] and "df['b'] = df['a'] * 10" in said[8]
    # undo --to 2 took back the cell edit and the DataFrame change, newest first.
    assert kernel.value("list(df.columns)") == "['a']"
    source = nbformat.read(project / nb, as_version=4).cells[1].source
    assert source == "total = df['a'].sum()\ntotal"
    # The record: one session named after the client, one prompt per recorded call.
    [info] = list_sessions(project)
    assert info.first_prompt.startswith(f"{CLIENT}: ")
    loaded = load_entries(Path(info.path))
    entries = loaded.entries
    assert loaded.torn_tail is None
    assert entries[0].meta is not None and (entries[0].meta.provider, entries[0].meta.model) == ("mcp", CLIENT)
    calls = [b.name for e in entries if e.message is not None for b in e.message.tool_uses()]
    assert calls == ["notebook_read", "python", "notebook_edit", "notebook_run", "notebook_read", "notebook_check"]
    # `/notebook` turns what the client did into cells, as for a turn of larik's own: the calls
    # undone (prompts 2 on) are left out by default, and kept, not run, with --include-undone.
    from larik_jupyter.analysis.as_notebook import write_notebook

    kept = nbformat.read(write_notebook(Path(info.path), "as-notebook.ipynb", cwd=project), as_version=4)
    assert not any("df['b'] = df['a'] * 10" in c.source for c in kept.cells if c.cell_type == "code")
    every = nbformat.read(write_notebook(Path(info.path), "all.ipynb", cwd=project, include_undone=True), as_version=4)
    assert any("df['b'] = df['a'] * 10\nprint(df.shape)" in c.source and c.cell_type == "markdown" for c in every.cells)


def test_the_person_undoes_a_connected_clients_call_in_the_notebook(kernel: Kernel, project: Path) -> None:
    personal(ALLOW)
    said: list[str] = []

    async def run() -> types.CallToolResult:
        async with stdio_client(server_params(kernel, project)) as (read, write):
            async with ClientSession(read, write, client_info=types.Implementation(name=CLIENT, version="1")) as session:
                await session.initialize()
                await session.call_tool("python", {"code": "df['b'] = 1"})
                [info] = list_sessions(project)
                said.append(await asyncio.to_thread(kernel.run, f"%larik /undo --session {info.id}"))
                return await session.call_tool("python", {"code": "print(sorted(df.columns))"})

    after = text(asyncio.run(run()))
    assert "['a']" in after  # the client's change is gone from the kernel
    assert "<system-note>" in after and "df" in after  # and the client is told, with its next result
    assert len(list_sessions(project)) == 1  # the notebook acted on the client's session, no branch of it


def test_a_kernel_that_dies_mid_call_is_said_as_such(kernel: Kernel, project: Path) -> None:
    personal(ALLOW)

    async def run() -> types.CallToolResult:
        async with stdio_client(server_params(kernel, project)) as (read, write):
            async with ClientSession(read, write, client_info=types.Implementation(name=CLIENT, version="1")) as session:
                await session.initialize()
                code = "open('call_started', 'w').close()\nimport time\ntime.sleep(60)"
                call = asyncio.ensure_future(session.call_tool("python", {"code": code}))
                started = project / "call_started"  # the kernel works in the project
                await asyncio.to_thread(wait_until, started.exists, "the call's code to run in the kernel")
                os.kill(kernel.km.provisioner.pid, signal.SIGKILL)  # type: ignore[union-attr]
                return await asyncio.wait_for(call, 30)

    result = asyncio.run(run())
    assert result.is_error and "The kernel stopped answering during the call" in text(result)


def test_nobody_to_ask_means_denied(kernel: Kernel, project: Path) -> None:
    malformed, result = asyncio.run(drive(server_params(kernel, project), [
        ("python", {"code": 123}), ("python", {"code": "df['c'] = 1"}),
    ]))
    # No allow rule: the malformed call is told its input error, not a permission denial.
    assert malformed.is_error
    assert "python.code must be of type string, got int" in text(malformed), text(malformed)
    assert "Permission denied" not in text(malformed)
    # Made false: the same call well formed is the denial (and no answer tells the client to use --yes).
    assert result.is_error and "nobody can answer an approval" in text(result)
    assert "ask the person to open the notebook or to add an allow rule" in text(result)
    assert "--yes" not in text(malformed) + text(result)
    assert kernel.value("list(df.columns)") == "['a']"


def test_where_no_page_can_answer_the_client_user_is_asked_by_elicitation(kernel: Kernel, project: Path) -> None:
    asked: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        if len(asked) == 1:
            return types.ElicitResult(action="accept", content={"decision": "allow"})
        return types.ElicitResult(action="accept", content={"decision": "deny", "reason": "not that column"})

    async def run() -> list[types.CallToolResult]:
        async with stdio_client(server_params(kernel, project)) as (read, write):
            async with ClientSession(read, write, client_info=types.Implementation(name=CLIENT, version="1"),
                                     elicitation_callback=answer) as session:
                await session.initialize()
                return [await session.call_tool("python", {"code": code}) for code in ("df['b'] = 1", "df['c'] = 2")]

    allowed, denied = asyncio.run(run())
    assert len(asked) == 2 and f"The outside agent `{CLIENT}` (over MCP) asks: Run this Python in your kernel?" in asked[0]
    assert not allowed.is_error, text(allowed)
    assert denied.is_error and "The user denied permission" in text(denied) and "not that column" in text(denied)
    assert kernel.value("list(df.columns)") == "['a', 'b']"


def test_protect_mode_holds_for_outside_calls(kernel: Kernel, project: Path) -> None:
    personal({**ALLOW, "protect_variables": True})
    [result] = asyncio.run(drive(server_params(kernel, project), [("python", {"code": "df['c'] = 1"})]))
    assert result.is_error and "protected" in text(result)
    assert kernel.value("list(df.columns)") == "['a']"


def test_what_the_person_sets_mid_connection_holds_from_the_clients_next_call(kernel: Kernel, project: Path) -> None:
    personal(ALLOW)
    add, drop = ("python", {"code": "df['churned'] = 0"}), ("python", {"code": "df.drop(columns=['churned'], inplace=True)"})

    async def run() -> list[types.CallToolResult]:
        async with stdio_client(server_params(kernel, project)) as (read, write):
            async with ClientSession(read, write, client_info=types.Implementation(name=CLIENT, version="1")) as session:
                await session.initialize()
                out = [await session.call_tool(*add), await session.call_tool(*drop)]
                columns.append(await asyncio.to_thread(kernel.value, "list(df.columns)"))
                out.append(await session.call_tool(*add))
                await asyncio.to_thread(kernel.run, "%config LarikMagics.protect = True")  # the person, in the notebook
                out.append(await session.call_tool(*drop))
                columns.append(await asyncio.to_thread(kernel.value, "list(df.columns)"))
                await asyncio.to_thread(kernel.run, "%config LarikMagics.protect = False")
                personal({"permissions": {"deny": ["python"]}})  # and a deny rule
                out.append(await session.call_tool("python", {"code": "print('still here')"}))
                return out

    columns: list[str] = []
    added, dropped, again, protected, denied = asyncio.run(run())
    assert not any(r.is_error for r in (added, dropped, again)), [text(r) for r in (added, dropped, again)]
    # Made false: before protect mode, the client's in-place drop ran unasked.
    assert columns[0] == "['a']"
    # Protect mode switched on mid-connection holds for the client's next call: refused, kept.
    assert protected.is_error and "the user's variables are protected" in text(protected), text(protected)
    assert columns[1] == "['a', 'churned']"
    # A deny rule written meanwhile holds for the next call too.
    assert denied.is_error and "Permission denied by a configured rule" in text(denied), text(denied)


CLIENT_SCRIPT = """
import asyncio, os, sys
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client

async def main():
    params = StdioServerParameters(command=sys.executable, args=sys.argv[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=types.Implementation(name="doomed", version="1")) as s:
            await s.initialize()
            print("calling", flush=True)
            code = "open('call_started', 'w').close()\\nimport time\\nfor _ in range(600): time.sleep(0.1)"
            await s.call_tool("python", {"code": code})

asyncio.run(main())
"""


def _servers_of(connection_file: str) -> list[int]:
    """The `larik-jupyter mcp` processes attached through `connection_file`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"mcp" in argv and connection_file.encode() in argv:
            found.append(int(entry.name))
    return found


def test_client_killed_mid_call_leaves_kernel_usable(kernel: Kernel, project: Path, tmp_path: Path) -> None:
    personal(ALLOW)
    script = tmp_path / "client.py"
    script.write_text(textwrap.dedent(CLIENT_SCRIPT))
    args = ["-m", "larik_jupyter", "mcp", "--connection-file", kernel.km.connection_file]
    client = subprocess.Popen([sys.executable, str(script), *args], cwd=project, stdout=subprocess.PIPE, text=True)
    try:
        assert client.stdout is not None and client.stdout.readline().strip() == "calling"
        wait_until((project / "call_started").exists, "the call's code to run in the kernel")
        os.kill(client.pid, signal.SIGKILL)
        client.wait(10)
        started = time.monotonic()
        assert kernel.value("1 + 1") == "2"
        assert time.monotonic() - started < 30  # not the 60 s the call would have taken
        # The server, left without its client, ends too (it stops the call, tells the
        # kernel, and exits): no process stays behind, however its waits interleave.
        wait_until(lambda: not _servers_of(kernel.km.connection_file), "the MCP server left without its client to exit")
    finally:
        if client.poll() is None:
            client.kill()
        for pid in _servers_of(kernel.km.connection_file):
            os.kill(pid, signal.SIGKILL)
    [info] = list_sessions(project)
    loaded = load_entries(Path(info.path))  # the whole file reads: no torn or missing line
    assert loaded.torn_tail is None
    entries = loaded.entries
    results = [b for e in entries if e.message is not None for b in e.message.tool_results()]
    assert len(results) == 1 and results[0].is_error
    assert INTERRUPTED_RESULT in json.dumps(results[0].content) or "interrupt" in json.dumps(results[0].content).lower()


def test_waiters_on_the_kernel_each_get_their_own_reply(kernel: Kernel) -> None:
    """A call being stopped and the connection's end wait on the kernel at once (as when the
    client goes mid-call): each gets its own reply, none is read away by the other (before,
    the server could wait forever for a reply the other waiter had read and dropped)."""
    from larik_jupyter.frontends.mcp.link import KernelLink

    async def later(code: str, link: KernelLink, delay: float) -> str:
        await asyncio.sleep(delay)
        reply = await link._execute(code, {}, timeout=15)
        return str(reply["content"]["status"])

    async def run(delay: float) -> list[str]:
        link = KernelLink(Path(kernel.km.connection_file))
        await link.ready()
        try:
            # The first waits past its heartbeat poll, so the two waiters' reads interleave.
            return list(await asyncio.gather(later("import time; time.sleep(2.5)", link, 0), later("2", link, delay)))
        finally:
            link.close()

    for delay in (0.5, 1.0, 1.5):
        assert asyncio.run(run(delay)) == ["ok", "ok"]


def test_cli_says_in_one_sentence_what_it_could_not_attach_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import http.server
    import threading

    from larik_jupyter.frontends.cli import main

    def error(*argv: str) -> str:
        assert main(["mcp", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "Traceback" not in err
        return err

    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    assert "No running Jupyter server was found" in error("--notebook", "a.ipynb")
    bad = tmp_path / "kernel-x.json"
    bad.write_text('{"ip": "127.0.0.1"}')
    assert "is not a kernel connection file (it has no shell_port" in error("--connection-file", str(bad))
    assert "No kernel connection file" in error("--connection-file", str(tmp_path / "missing.json"))

    class NoSessions(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"[]")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), NoSessions)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/"
        assert "The notebook a.ipynb is not open with a kernel" in error("--notebook", "a.ipynb", "--url", url)
    finally:
        server.shutdown()


# -- The egress policy holds for what goes back to the client: it counts as a model provider
# that is not local (issue 41 with 42). --

SECRET = "mcp.canary.5521@ex.com"  # in `secret`
PERSON = "mcp.person.8812@ex.com"  # in `people`
PLANT = (f"secret = pd.DataFrame({{'email': ['{SECRET}'], 'amount': [73456.78]}})\n"
         f"people = pd.DataFrame({{'email': ['{PERSON}'], 'age': [41]}})")
SHOW_BOTH = "print(secret.to_string())\nprint(people.to_string())"


def _plant(kernel: Kernel, project: Path) -> None:
    """The frames in the kernel, and a notebook whose cell's stored output shows both rows."""
    kernel.run(PLANT)
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(SHOW_BOTH, id="show")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"{SECRET} 73456.78\n{PERSON} 41\n")]
    notebook.cells = [cell]
    nbformat.write(notebook, project / "leak.ipynb")


def _received(result: types.CallToolResult) -> dict[str, Any]:
    """The tool result as the client received it (`content` and `isError`, as MCP carries them)."""
    return {"content": [c.model_dump(by_alias=True, mode="json", exclude_none=True) for c in result.content],
            "isError": bool(result.is_error)}


def _answers(project: Path) -> list[dict[str, Any]]:
    """The ledger lines of the client's session for its answers."""
    from tests.session_helpers import ledger_lines

    [info] = [i for i in list_sessions(project) if (i.first_prompt or "").startswith(f"{CLIENT}: ")]
    return [r for r in ledger_lines(Path(info.path)) if r.get("kind") == "answer"]


def test_restricted_data_does_not_reach_the_client_and_every_answer_is_in_the_ledger(
    kernel: Kernel, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import orjson

    from larik_jupyter.frontends.cli import main

    personal({**ALLOW, "egress": {"policies": {"secret": "never", "people": "schema"}}})
    _plant(kernel, project)
    steps: list[tuple[str, dict[str, Any]]] = [
        ("python", {"code": SHOW_BOTH}),
        ("python", {"code": "print(globals()['sec' + 'ret'].email[0])"}),  # untagged: the net finds it
        ("python", {"code": "leak = secret.email[0]\nraise ValueError(leak)"}),
        ("notebook_read", {"path": "leak.ipynb"}),
        ("variable_report", {}),
        ("transcript", {}),
    ]
    results = asyncio.run(drive(server_params(kernel, project), steps))
    said = [text(r) for r in results]
    wire = [json.dumps(_received(r), ensure_ascii=False) for r in results]
    for received in wire:
        assert SECRET not in received and PERSON not in received and "73456.78" not in received
    assert "[withheld: secret — policy never" in said[0] and "[withheld: people — policy schema" in said[0]
    assert "people: DataFrame" in said[0]  # the view the schema policy lets out
    assert "[withheld: secret.email — policy never" in said[1]
    assert "[withheld: secret" in said[3] and "leak.ipynb" in said[3]
    assert "leak: created str" in said[4]
    assert "print(secret.to_string())" in said[5] and "[withheld: secret" in said[5]
    # The ledger: one line per answer, to the client, its parts adding up to what it received.
    answers = _answers(project)
    assert len(answers) == len(steps)
    for line, result in zip(answers, results, strict=True):
        assert line["destination"] == f"mcp:{CLIENT}" and line["local"] is False
        assert sum(p["bytes"] for p in line["parts"]) == line["bytes"] == len(orjson.dumps(_received(result)))
    assert {w["source"] for w in answers[0]["withheld"]} == {"secret", "people"}
    assert any(w["where"].startswith("transcript: result of call") for w in answers[5]["withheld"])
    [info] = list_sessions(project)
    assert main(["egress", info.path]) == 0
    printed = capsys.readouterr().out
    assert f"1 answer to an outside agent, {answers[0]['bytes']:,} bytes to mcp:{CLIENT}" in printed
    assert "secret (never)" in printed


def test_without_a_policy_the_client_gets_the_data_and_the_notebooks_rules_then_hold(
    kernel: Kernel, project: Path
) -> None:
    personal(ALLOW)
    _plant(kernel, project)
    show = ("python", {"code": SHOW_BOTH})

    async def run() -> list[types.CallToolResult]:
        async with stdio_client(server_params(kernel, project)) as (read, write):
            async with ClientSession(read, write, client_info=types.Implementation(name=CLIENT, version="1")) as session:
                await session.initialize()

                async def call(name: str, args: dict[str, Any]) -> types.CallToolResult:
                    return await session.call_tool(name, args)

                out = [await call(*show), await call("notebook_read", {"path": "leak.ipynb"}), await call("transcript", {})]
                for rule in ("secret never", "people schema"):  # set by the person, in the notebook
                    await asyncio.to_thread(kernel.run, f"%larik /egress {rule}")
                out.append(await call(*show))
                await asyncio.to_thread(kernel.run, "%larik /egress --local-only on")
                out += [await call(*show), await call("transcript", {})]
                report.append(await asyncio.to_thread(kernel.run, "%larik /egress"))
                return out

    report: list[str] = []
    said = [text(r) for r in asyncio.run(run())]
    # No policy: the rows go to the client, from every route.
    for received in said[:3]:
        assert SECRET in received and PERSON in received
    assert not any(line["withheld"] for line in _answers(project)[:3])
    # The rules the person set in the notebook hold for the client's next call.
    assert SECRET not in said[3] and PERSON not in said[3] and "people: DataFrame" in said[3]
    # Local models only: the client is no local model, so restricted data is `never` for it.
    assert PERSON not in said[4] and "[withheld: people — policy never" in said[4] and "people: DataFrame" not in said[4]
    # The transcript withholds what the earlier answers, made before the rules, held.
    assert SECRET not in said[5] and PERSON not in said[5]
    # `/egress` in the notebook shows what the client was sent.
    assert f"**Outside agent `mcp:{CLIENT}`**" in report[0] and "6 answers to an outside agent in 4 turns" in report[0]
    assert "people (never) ×" in report[0]


@pytest.mark.parametrize("restricted", [True, False])
def test_an_ask_to_the_clients_user_passes_the_door(kernel: Kernel, project: Path, restricted: bool) -> None:
    """An approval asked through MCP elicitation shows what the call would do: here a cell's
    diff whose old source holds a restricted value. Made false: with no policy it is shown."""
    personal({"egress": {"policies": {"secret": "never"}}} if restricted else {})
    kernel.run(PLANT)
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(f"who = '{SECRET}'", id="who")]
    nbformat.write(notebook, project / "who.ipynb")
    asked: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "deny"})

    async def run() -> types.CallToolResult:
        async with stdio_client(server_params(kernel, project)) as (read, write):
            async with ClientSession(read, write, client_info=types.Implementation(name=CLIENT, version="1"),
                                     elicitation_callback=answer) as session:
                await session.initialize()
                edit = {"path": "who.ipynb", "cell_id": "who", "edit_mode": "replace", "new_source": "who = None"}
                return await session.call_tool("notebook_edit", edit)

    result = asyncio.run(run())
    assert result.is_error and "The user denied permission" in text(result)
    [message] = asked
    assert "who = None" in message
    answers = _answers(project)
    question = [line for line in answers if any(p["source"] == "approval detail" for p in line["parts"])]
    assert len(question) == 1 and question[0]["destination"] == f"mcp:{CLIENT}"
    if restricted:
        assert SECRET not in message and "[withheld: secret.email — policy never" in message
        assert question[0]["withheld"][0]["where"] == "approval detail"
    else:
        assert SECRET in message and not question[0]["withheld"]


def test_a_frame_the_client_made_from_restricted_data_is_withheld_in_its_later_calls(kernel: Kernel, project: Path) -> None:
    personal({**ALLOW, "egress": {"policies": {"secret": "schema"}}})
    kernel.run(PLANT)

    def show(name: str, title: str) -> tuple[str, dict[str, Any]]:
        code = (f"__import__('matplotlib').use('Agg')\nprint({name}.to_string())\n"
                f"{name}.plot(y='amount', title={title}, figsize=(2, 2)).figure")
        return ("python", {"code": code})

    _, shown, _, plain = asyncio.run(drive(server_params(kernel, project), [
        ("python", {"code": "top = secret[secret.amount > 0].copy()"}),
        show("top", "top['email'].iloc[0]"),
        # Made false: a frame made from unrestricted data goes, plot and all.
        ("python", {"code": "mine = df.assign(amount=df['a'] * 1.5)"}),
        show("mine", "'mine'"),
    ]))
    received = json.dumps(_received(shown))
    assert SECRET not in received and not any(isinstance(c, types.ImageContent) for c in shown.content)
    assert "[withheld: top — policy schema" in text(shown)
    assert any(isinstance(c, types.ImageContent) for c in plain.content) and "[withheld" not in text(plain)
