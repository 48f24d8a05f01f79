"""Every wire is declared once and read through its declaration (issue 54, point 2): no front end
reads wire data with `.get("…")`; the MCP link's two ends share `mcp_link`'s messages; the egress
ledger reads back as its record types."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import msgspec

import larik_jupyter
from larik_jupyter import mcp_link
from larik_jupyter.egress.ledger import (
    Ledger,
    LocalOnlyRecord,
    Part,
    PolicyRecord,
    RequestRecord,
    Withheld,
    read_ledger,
)

PACKAGE = Path(larik_jupyter.__file__).parent

# The front ends: every module of these folders, the bridge and the widgets included.
FRONT_ENDS = ("frontends",)
# `.get("KEY")` reads in the front ends that are not on wire data, by module, receiver and key.
NOT_WIRE: dict[tuple[str, str, str], str] = {
    ("frontends/notebook/magics.py", "sys.modules", "larik_jupyter.frontends.notebook.widgets.session_widget"): "Python's module table",
    ("frontends/notebook/render.py", "data", "text/html"): "a MIME bundle IPython's formatters made in this process",
    ("frontends/notebook/render.py", "data", "text/plain"): "a MIME bundle IPython's formatters made in this process",
    ("frontends/mcp/kernel_end.py", "request.input", "cell_id"): "a call's input, which its tool's schema declares",
    ("frontends/mcp/kernel_end.py", "source", "data"): "a stored image block's source (`llm.messages.ImageBlock`)",
    ("frontends/mcp/kernel_end.py", "source", "media_type"): "a stored image block's source (`llm.messages.ImageBlock`)",
    ("frontends/notebook/display_capture.py", ")", "display_id"): "IPython's `transient` argument to a display publisher",
    ("frontends/notebook/runner.py", ")", "display_id"): "IPython's `transient` argument to a display publisher",
    ("frontends/notebook/runner.py", "last", "output_type"): "an output this module built",
    ("frontends/notebook/runner.py", "o", "ename"): "an output this module built",
    ("frontends/notebook/runner.py", "old", "_display_id"): "an output this module built",
    ("frontends/notebook/capture.py", "data", "text/plain"): "a MIME bundle the kernel's display hook got in this process",
    ("frontends/notebook/consoles.py", "kernel.shell_handlers", "is_complete_request"): "ipykernel's table of handlers",
    ("frontends/notebook/session_commands.py", "args", "prompt_number"): "a command's arguments, parsed by its `@command` syntax",
    ("frontends/notebook/session_commands.py", "args", "force"): "a command's arguments, parsed by its `@command` syntax",
    ("frontends/notebook/session_commands.py", "args", "skip_changed"): "a command's arguments, parsed by its `@command` syntax",
    ("frontends/notebook/context.py", "namespace", "__vsc_ipynb_file__"): "the user's namespace",
    ("frontends/notebook/context.py", "namespace", "__session__"): "the user's namespace",
    ("frontends/notebook/context.py", "os.environ", "JPY_SESSION_NAME"): "the environment",
    ("frontends/cli/mcp.py", "os.environ", "JUPYTER_TOKEN"): "the environment",
    ("frontends/server/rooms.py", "serverapp.web_app.settings", "yroom_manager"): "the Jupyter server's settings in this process",
    ("frontends/server/rooms.py", "serverapp.web_app.settings", "file_id_manager"): "the Jupyter server's settings in this process",
}
GET = re.compile(r"""([\w.]+|\)|\])\.get\(\s*["']([^"']*)["']""")


def _front_end_modules() -> list[Path]:
    return [p for folder in FRONT_ENDS for p in sorted((PACKAGE / folder).rglob("*.py"))]


def _reads() -> list[tuple[str, str, str]]:
    found = []
    for path in _front_end_modules():
        name = path.relative_to(PACKAGE).as_posix()
        found += [(name, receiver, key) for receiver, key in GET.findall(path.read_text(encoding="utf-8"))]
    return found


def test_no_front_end_reads_wire_data_with_get() -> None:
    wire = [f"{name}: {receiver}.get({key!r})" for name, receiver, key in _reads() if (name, receiver, key) not in NOT_WIRE]
    assert not wire, f"front ends reading wire data by key (read it through its declared type): {wire}"


def test_every_not_wire_reason_is_still_needed() -> None:
    assert _front_end_modules() and "frontends/mcp/link.py" in [p.relative_to(PACKAGE).as_posix() for p in _front_end_modules()]
    stale = set(NOT_WIRE) - set(_reads())
    assert not stale, f"reasons for reads that are gone: {stale}"


def test_the_scan_sees_a_get_on_wire_data() -> None:
    # What the scan above would report, so it cannot pass by matching nothing.
    line = """answer = reply["content"].get("status") or msg.get('header') or (x or {}).get("id")"""
    assert GET.findall(line) == [("]", "status"), ("msg", "header"), (")", "id")]


def test_a_call_crosses_the_link_as_the_kernel_reads_it() -> None:
    call = mcp_link.Call(token="t1", key="k", client="claude-code", tool="python", arguments={"code": "1 + 1"},
                         notebook="/p/a.ipynb", elicit=True)
    sent = ast.parse(mcp_link.call_code(call)).body[0]
    assert isinstance(sent, ast.Expr) and isinstance(sent.value, ast.Await)
    invoked = sent.value.value
    assert isinstance(invoked, ast.Call) and isinstance(invoked.func, ast.Attribute) and invoked.func.attr == "call"
    (raw,) = [ast.literal_eval(arg) for arg in invoked.args]
    assert mcp_link.decode(raw, mcp_link.Call) == call
    assert mcp_link.KERNEL_END in mcp_link.call_code(call) and mcp_link.KERNEL_END in mcp_link.answer_expression("t1")


def test_an_answer_reads_back_as_the_mcp_result_it_is() -> None:
    answer = mcp_link.Answer([mcp_link.Text("done"), mcp_link.Image("AAAA", "image/jpeg")], False)
    raw = msgspec.json.encode(answer)
    assert msgspec.json.decode(raw) == {"content": [
        {"type": "text", "text": "done"}, {"type": "image", "data": "AAAA", "mimeType": "image/jpeg"}
    ], "isError": False}
    assert mcp_link.decode(raw, mcp_link.Answer) == answer
    try:
        mcp_link.decode(b'{"content": "x"}', mcp_link.Answer)
    except ValueError as exc:
        assert "does not read as one" in str(exc)
    else:
        raise AssertionError("an answer of another shape was read")


def test_the_views_offered_are_the_views_the_kernel_reads() -> None:
    from larik_jupyter.frontends.mcp.server import VIEW_TOOLS, tool_list

    assert set(VIEW_TOOLS) == set(mcp_link.VIEWS)
    schemas = {tool.name: tool.input_schema for tool in tool_list()}
    assert schemas["undo"]["properties"]["to"] == {"type": "integer", "minimum": 1}
    assert schemas["transcript"] == {"type": "object", "properties": {}}


def test_the_ledger_reads_back_as_its_records(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "s.egress" / "ledger.jsonl")
    request = RequestRecord(time="t", destination="anthropic:x", local=False, bytes=10,
                            parts=[Part("prompt 1", 8), Part("framing", 2)], withheld=[Withheld("df", "schema", "prompt 1")],
                            turn=1, prompt=1)
    ledger.append(PolicyRecord(time="t", target="variable:df", policy="schema"))
    ledger.append(request)
    ledger.append(LocalOnlyRecord(time="t", value=True))
    with ledger.path.open("ab") as file:
        file.write(b'{"type": "from a newer version", "x": 1}\n{"type": "request", "time": "t", "dest')
    assert read_ledger(ledger.path) == [
        PolicyRecord(time="t", target="variable:df", policy="schema"), request, LocalOnlyRecord(time="t", value=True)
    ]
    # Empty fields are left out of the line, as before.
    line = ledger.path.read_text(encoding="utf-8").splitlines()[1]
    assert '"kind"' not in line and line.startswith('{"type":"request"')
