"""Turn results as kernel values: `Agent.run` returns the outcome, the `answer` tool hands back the
very kernel object, `%larik -o NAME` / `%%larik -o NAME` bind the outcome in the kernel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from larik_jupyter import Agent, KernelHost
from larik_jupyter.frontends.notebook.parser import MagicUsageError, Prompt, parse_magic
from tests.agent_helpers import done, scripted, text, tool
from tests.test_notebook_kernel_undo import client, run_cells


def answer(name: str) -> dict[str, Any]:
    return {"type": "tool_use", "name": "answer", "input": {"name": name}}


MAKE = "summary = df.groupby('g').sum()"
REPLY = "The summary has 2 groups."


def test_run_returns_the_outcome_with_the_very_object_answered(project: Path, tmp_path: Path) -> None:
    ns: dict[str, Any] = {"df": pd.DataFrame({"g": [1, 1, 2], "v": [1, 2, 3]})}
    model = scripted(
        tmp_path, [tool("python", code=MAKE)], [answer("summary")],
        {"content": done(REPLY), "usage": {"input_tokens": 10, "output_tokens": 5}},
    )
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns))
    out = agent.run("summarise df by g")
    assert out.value is ns["summary"]
    assert (out.status, out.text, out.prompt, out.session_id, out.answer) == (
        "done", REPLY, "summarise df by g", agent.session_id, "summary"
    )
    assert out.usage.output_tokens == 5
    shown = repr(out)
    assert "\n" not in shown and len(shown) < 120 and "summary (DataFrame)" in shown
    agent.close()
    lines = [json.loads(line) for line in agent.session_path.read_text().splitlines()]
    results = [b for e in lines for b in e.get("message", {}).get("content", []) if b["type"] == "tool_result"]
    assert [r.get("answer") for r in results] == [None, "summary"]


def test_answer_of_a_missing_name_is_an_error_the_turn_goes_on(project: Path, tmp_path: Path) -> None:
    model = scripted(tmp_path, [answer("nope")], done("No value."))
    agent = Agent(project, model=model, yes=True, host=KernelHost({}))
    out = agent.run("hand it back")
    assert out.value is None and out.answer is None and out.text == "No value."
    result = agent.loop.session.state.all[-2].tool_results()[0]
    assert result.is_error and "There is no variable 'nope' in the kernel" in result.text()
    agent.close()


def test_dash_o_parses_on_the_line_and_on_the_cell_magic() -> None:
    assert parse_magic("-o out --yes make it") == Prompt(text="make it", yes=True, output="out")
    assert parse_magic("--yes -o out make it") == Prompt(text="make it", yes=True, output="out")
    assert parse_magic("-o res", "make it\n") == Prompt(text="make it", output="res")
    assert parse_magic("-one of these") == Prompt(text="-one of these")
    for bad in ("-o 1x go", "-o class go"):
        with pytest.raises(MagicUsageError, match="-o takes a Python variable name"):
            parse_magic(bad)
    with pytest.raises(MagicUsageError, match="needs a value"):
        parse_magic("-o")


@pytest.mark.timeout(240)
def test_dash_o_binds_the_outcome_in_a_kernel(project: Path, tmp_path: Path) -> None:
    model = scripted(
        tmp_path,
        [tool("python", code=MAKE)], [text("Here it is."), answer("summary")], done(REPLY),
        [tool("python", code="total = int(df.v.sum())"), answer("total")], done("Total is 6."),
    )
    nbc = client(project, [
        "%load_ext larik_jupyter",
        "import pandas as pd\ndf = pd.DataFrame({'g': [1, 1, 2], 'v': [1, 2, 3]})",
        f"%larik -o out --model {model} --yes summarise df",
        "print(out.value is summary, repr(out.text), out.status, out.prompt)\nout",
        "%%larik -o again --yes\nadd it up",
        "print(again.value, again.value is total, again.session_id == out.session_id)",
    ])
    with nbc.setup_kernel():
        texts = run_cells(nbc)
    assert f"True '{REPLY}' done summarise df" in texts[3]
    assert "<TurnOutcome done turn 1 value=summary (DataFrame)" in texts[3]
    assert "6 True True" in texts[5]
