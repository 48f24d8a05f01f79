"""Through the `Agent` API with a scripted model (and the real SDKs over the local wire
servers): whatever fails inside a tool comes back as an error result of one sentence and the
turn goes on; odd notebooks, duplicate cell ids, huge sources, a bad skill file and lone
surrogates from the model never crash a turn, an agent or the session store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from IPython.utils.capture import capture_output
from nbformat.v4 import new_code_cell, new_notebook

from larik_jupyter import Agent
from larik_jupyter.agent import events as ae
from larik_jupyter.agent.trace import Trace
from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.session.reader import load_entries
from larik_jupyter.testing import ScriptedHTTPServer
from larik_jupyter.tools import Env, Tool, ToolResult
from larik_jupyter.tools.notebook.cells import MAX_READ_CHARS
from tests.agent_helpers import done, make_env, personal, results_of, scripted, tool, wire_model
from tests.widget_helpers import larik, shell_with_magics

KEY = "sk-failures-test-abcdef0123456789"


def run_turn(project: Path, tmp_path: Path, calls: list[dict[str, Any]], **kw: Any) -> tuple[Agent, list[str]]:
    """One turn making `calls`, then saying "Carried on."; the agent and its results' texts."""
    agent = Agent(project, model=scripted(tmp_path, calls, done("Carried on.")), yes=True, **kw)
    outcome = agent.run("go")
    assert outcome.status == "done" and outcome.text == "Carried on."
    load_entries(agent.session_path)  # every line valid, or this raises
    return agent, [r.text() for r in results_of(agent)]


def test_odd_notebooks_each_get_their_own_sentence_and_the_turn_goes_on(project: Path, tmp_path: Path) -> None:
    files = {
        "v5.ipynb": json.dumps({"nbformat": 5, "nbformat_minor": 0, "metadata": {}, "cells": []}),
        "s4.ipynb": json.dumps({"nbformat": "4", "nbformat_minor": 5, "metadata": {}, "cells": []}),
        "c12.ipynb": json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [1, 2]}),
        "deep.ipynb": "[" * 100_000 + "]" * 100_000,
    }
    for name, text in files.items():
        (project / name).write_text(text)
    calls = [tool("notebook_read", path=name) for name in files]
    calls.append(tool("notebook_edit", path="deep.ipynb", cell_id="x", new_source="y"))
    agent, results = run_turn(project, tmp_path, calls)
    import nbformat

    assert results == [
        f"v5.ipynb uses nbformat 5, which this nbformat cannot read (nbformat {nbformat.__version__} "
        "reads up to nbformat 4); it was left unchanged.",
        's4.ipynb: its nbformat is "4", not a whole number, so it is not a notebook this tool can '
        "read; it was left unchanged.",
        "c12.ipynb is not a valid notebook: cell 1 is a number, not a cell object; it was left unchanged.",
    ] + [
        "deep.ipynb nests its JSON deeper than 100 levels, which no notebook does; it was left unchanged."
    ] * 2
    assert all(r.is_error for r in results_of(agent))
    assert {name: (project / name).read_text() for name in files} == files
    agent.close()


class Exploding(Tool):
    """A tool with a bug: what any tool does when something unforeseen raises inside it."""

    name = "exploding"
    description = "Raises."
    input_schema = {"type": "object", "properties": {}}

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        return {"cells": 1}["cells"] + "x"  # type: ignore[no-any-return, operator]


def test_the_debug_trace_keeps_the_traceback_the_model_never_sees(project: Path, tmp_path: Path) -> None:
    # Torn JSON (an invalid notebook is read, its problems named: issue 30).
    (project / "bad.ipynb").write_text('{"nbformat": 4, "cells": [')
    agent = Agent(project, model=scripted(tmp_path, [tool("notebook_read", path="bad.ipynb")], done("Carried on.")))
    folder = agent.trace(True)
    assert folder is not None
    assert agent.run("go").text == "Carried on."
    agent.trace(False)
    rows = [orjson.loads(line) for line in (folder / "events.jsonl").read_bytes().splitlines()]
    (finished,) = [r for r in rows if r["type"] == "ToolFinished"]
    assert finished["content"] == (
        "bad.ipynb does not parse as a notebook (Expecting value: line 1 column 27 (char 26)); it was left unchanged."
    )
    assert "Traceback (most recent call last)" in finished["traceback"] and "JSONDecodeError" in finished["traceback"]
    assert "Traceback" not in results_of(agent)[0].text()
    agent.close()


def test_an_unexpected_exception_is_one_sentence_and_its_traceback_goes_only_to_the_trace(
    tmp_path: Path,
) -> None:
    env = make_env(tmp_path)
    for result in (Exploding().run(env, {}), asyncio.run(Exploding().arun(env, {}))):
        assert result.is_error
        assert result.content == (
            "exploding failed with TypeError (unsupported operand type(s) for +: 'int' and 'str'), "
            "an error inside the tool; try another way or tell the user."
        )
        assert result.traceback is not None and "Traceback (most recent call last)" in result.traceback
        assert 'return {"cells": 1}["cells"] + "x"' in result.traceback
    trace = Trace(tmp_path / "t.trace", redactor_for(tmp_path))
    trace.record(ae.ToolFinished("id", "exploding", "", result.content, True, 0.0, traceback=result.traceback))
    trace.close()
    (row,) = [orjson.loads(line) for line in (tmp_path / "t.trace" / "events.jsonl").read_bytes().splitlines()]
    assert row["content"] == result.content and "Traceback" in row["traceback"]


def test_an_edit_by_a_duplicated_cell_id_is_refused_naming_both_addresses(project: Path, tmp_path: Path) -> None:
    cells = [new_code_cell(src, id=cid) for src, cid in (("1", "a"), ("2", "b"), ("3", "c"))]
    notebook = new_notebook(cells=cells)
    notebook.cells[2].id = "a"  # as a copy-paste outside Jupyter leaves them
    path = project / "dup.ipynb"
    path.write_text(json.dumps(notebook, indent=1))
    before = path.read_bytes()
    agent, results = run_turn(project, tmp_path, [
        tool("notebook_edit", path="dup.ipynb", cell_id="a", new_source="changed"),
        tool("notebook_edit", path="dup.ipynb", cell_id="cell-3", new_source="changed"),
    ])
    assert results[0] == (
        "dup.ipynb has 2 cells with the id 'a' (cells 1 and 3), so it does not say which one "
        "is meant; address the cell as cell-1 or cell-3 instead."
    )
    assert results_of(agent)[0].is_error and not results_of(agent)[1].is_error
    sources = [c["source"] for c in json.loads(path.read_text())["cells"]]
    assert sources == ["1", "2", "changed"] and path.read_bytes() != before
    agent.close()


def test_notebook_read_caps_a_huge_source_and_says_how_to_read_on(project: Path, tmp_path: Path) -> None:
    big = "".join(f"row_{i} = {i}  # {'x' * 90}\n" for i in range(40_000))  # 4.3 MB in one cell
    cells = [new_code_cell(big, id="big"), *(new_code_cell("y = 1\n" * 4000, id=f"c{i}") for i in range(30))]
    (project / "big.ipynb").write_text(json.dumps(new_notebook(cells=cells)))
    agent, (first, more) = run_turn(project, tmp_path, [
        tool("notebook_read", path="big.ipynb"),
        tool("notebook_read", path="big.ipynb", cell_ids=["big"], source_offset=1001),
    ])
    assert len(first) < MAX_READ_CHARS + 30_000 and len(more) < 30_000
    assert 'read on with notebook_read cell_ids=["big"] source_offset=' in first
    assert "; call again with start=" in first.splitlines()[0]
    assert "row_1000 = 1000" in more and "[source lines 1001-" in more and "row_999 " not in more
    assert agent.session_path.stat().st_size < 1_000_000
    agent.close()


def test_a_skill_file_that_breaks_the_yaml_parser_is_listed_broken_and_the_agent_opens(
    project: Path, tmp_path: Path
) -> None:
    for name, description in (("deep", "[" * 5000 + "]" * 5000), ("fine", "works")):
        folder = project / ".larik" / "skills" / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\nBody of {name}.\n")
    calls = [{"type": "tool_use", "name": "skill", "input": {"name": name}} for name in ("deep", "fine")]
    agent, results = run_turn(project, tmp_path, calls)
    assert results[0].startswith("The skill deep (")
    assert "is broken: the front matter of SKILL.md nests too deeply to parse (RecursionError)" in results[0]
    assert "Body of fine." in results[1]
    agent.close()
    shell, _ = shell_with_magics(project, scripted(tmp_path, done()))
    with capture_output() as shown:
        larik(shell, "/skills")
    table = "\n".join(o.data.get("text/markdown", "") for o in shown.outputs)
    assert "| deep | repository | **broken**: the front matter of SKILL.md nests too deeply to parse (RecursionError) |" in table


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_lone_surrogates_streamed_by_the_model_are_stored_and_sent_as_replacement_characters(
    kind: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [
        {"content": [{"type": "text", "text": "Writing \ud800 it."},
                     {"type": "tool_use", "name": "write", "input": {"path": "s.txt", "content": "a\udfffb\n"}}]},
        {"content": [{"type": "text", "text": "Wrote \udc00 s.txt."}]},
    ]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        agent = Agent(project, model=wire_model(kind, server, KEY, monkeypatch), yes=True)
        outcome = agent.run("write s.txt \ud83d")
        bodies = [request.body for request in server.requests]
    assert outcome.status == "done" and outcome.text == "Wrote \ufffd s.txt."
    assert (project / "s.txt").read_text(encoding="utf-8") == "a\ufffdb\n"
    raw = agent.session_path.read_bytes()
    raw.decode("utf-8")  # valid UTF-8 throughout
    entries = load_entries(agent.session_path).entries
    texts = json.dumps([e.to_json() for e in entries], ensure_ascii=False)
    assert "Writing \ufffd it." in texts and "write s.txt \ufffd" in texts
    sent = json.dumps(bodies[1], ensure_ascii=False)
    assert "Writing \ufffd it." in sent and "write s.txt \ufffd" in sent
    assert not any(f"\\u{half}" in sent.lower() for half in ("d8", "d9", "da", "db", "dc", "dd", "de", "df"))
    agent.close()


def test_a_malformed_call_is_told_its_input_error_before_any_permission_decision(project: Path, tmp_path: Path) -> None:
    personal({"permissions": {"deny": ["bash"]}})
    calls = [tool("bash", command=["ls"]), tool("bash", command="ls")]
    agent = Agent(project, model=scripted(tmp_path, *[[c] for c in calls], done("ok")))  # no --yes, nobody to ask
    try:
        agent.run("go")
        malformed, denied = [r.text() for r in results_of(agent)]
    finally:
        agent.close()
    assert "bash.command must be of type string, got list; fix the tool input." in malformed
    assert "Permission denied" not in malformed
    # Made false: well formed, the same call meets the deny rule.
    assert "Permission denied by a configured rule" in denied
