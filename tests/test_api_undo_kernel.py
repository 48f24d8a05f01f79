"""Undo and rewind through the Python API cover the kernel's variables and the files together."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from larik_jupyter import Agent, KernelHost
from larik_jupyter.api import RewindStopped
from larik_jupyter.checkpoint.errors import NothingToUndoError
from tests.agent_helpers import done, personal, scripted, tool

# The issue's own code; pandas 3 warns that `inplace` is going away, which is not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword")
CHANGE = 'df.drop(columns=["a"], inplace=True); data.append(4); x = 5'


def kernel_namespace() -> dict[str, Any]:
    return {"df": pd.DataFrame({"a": [1, 2], "b": [3, 4]}), "data": [1, 2, 3]}


def test_undo_puts_variables_back_deletes_created_ones_and_tells_the_model(project: Path, tmp_path: Path) -> None:
    ns = kernel_namespace()
    model = scripted(tmp_path, [tool("python", code=CHANGE)], done(), done("Again."))
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns))
    agent.run("change the data")
    assert list(ns["df"].columns) == ["b"] and ns["data"] == [1, 2, 3, 4] and ns["x"] == 5

    (result,) = agent.undo()
    assert list(ns["df"].columns) == ["a", "b"] and list(ns["df"]["a"]) == [1, 2]
    assert ns["data"] == [1, 2, 3] and "x" not in ns
    assert result.variables_text() == "restored variables: df, data; removed: x"
    assert result.restored == [] and result.ok

    agent.run("go on")
    prompt = [m for m in agent.loop.session.state.all if m.is_prompt()][-1]
    note = prompt.content[0].text
    assert note.startswith("<system-note>") and "restored variables: df, data; removed: x" in note
    with pytest.raises(NothingToUndoError):
        agent.undo()
    agent.close()


def test_a_value_over_the_budget_is_reported_and_left_as_it_is(project: Path, tmp_path: Path) -> None:
    personal({"kernel_snapshot_budget_mb": 1})
    ns = kernel_namespace()
    ns["big"] = np.zeros(2 * 1024 * 1024 // 8)  # 2 MB of float64
    model = scripted(tmp_path, [tool("python", code="big.fill(7.0)\n" + CHANGE)], done())
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns))
    agent.run("change everything")
    (result,) = agent.undo()
    assert result.variables_text() == (
        "restored variables: df, data; removed: x; could not restore: big (2.0 MB, over the 1 MB budget)"
    )
    assert float(ns["big"][0]) == 7.0 and list(ns["df"].columns) == ["a", "b"]
    agent.close()


def test_the_budget_is_honoured_from_personal_config_only(project: Path, tmp_path: Path) -> None:
    (project / ".larik").mkdir()
    (project / ".larik" / "settings.json").write_text(json.dumps({"kernel_snapshot_budget_mb": 0}))
    ns = kernel_namespace()
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code=CHANGE)], done()), yes=True, host=KernelHost(ns))
    assert any("kernel_snapshot_budget_mb" in n for n in agent.notices)
    agent.run("change")
    assert agent.undo()[0].variables_text() == "restored variables: df, data; removed: x"
    agent.close()


def test_functions_come_back_as_themselves_and_uncopyable_values_are_not_restorable(project: Path, tmp_path: Path) -> None:
    import threading

    def helper() -> int:
        return 1

    ns: dict[str, Any] = {"json": json, "helper": helper, "lock": threading.Lock(), "n": 1}
    code = "import json\nhelper = 2\nlock = None\nn += 1"
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code=code)], done()), yes=True, host=KernelHost(ns))
    agent.run("rebind")
    (result,) = agent.undo()
    # A function is not copied but put back as the object it was; `import json` rebound the
    # same module: nothing to report; the lock stays as the code left it.
    assert result.restored_variables == ["helper", "n"] and ns["n"] == 1 and ns["helper"] is helper
    reasons = dict(result.unrestored_variables)
    assert set(reasons) == {"lock"} and reasons["lock"].startswith("cannot be copied") and ns["lock"] is None
    agent.close()


RESTARTED = textwrap.dedent(
    """
    import json, sys
    from larik_jupyter import Agent, KernelHost
    agent = Agent(sys.argv[1], session=sys.argv[2], host=KernelHost({}))
    (result,) = agent.undo()
    print(json.dumps({"restored": result.restored, "text": result.variables_text(),
                      "lost": result.lost_variables}))
    agent.close()
    """
)


def test_after_a_restart_undo_restores_the_files_and_says_the_variables_are_gone(project: Path, tmp_path: Path) -> None:
    (project / "notes.txt").write_text("before\n")
    ns = kernel_namespace()
    model = scripted(
        tmp_path, [tool("write", path="notes.txt", content="after\n"), tool("python", code=CHANGE)], done()
    )
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns))
    agent.run("change both")
    session = agent.session_id
    agent.close()
    # A new process is what a kernel restart leaves: the session and its checkpoints on disk only.
    out = subprocess.run(
        [sys.executable, "-c", RESTARTED, str(project), session],
        capture_output=True, text=True, timeout=120, env=os.environ, check=True,
    )
    report = json.loads(out.stdout)
    assert report["restored"] == ["notes.txt"] and (project / "notes.txt").read_text() == "before\n"
    assert report["lost"] == ["df", "data", "x"]
    assert "gone with the kernel" in report["text"] and "df, data, x" in report["text"]


def three_file_turns(project: Path, tmp_path: Path, ns: dict[str, Any] | None = None) -> Agent:
    """Prompt 1 writes a.txt, prompt 2 edits it and creates b.txt, prompt 3 edits b.txt."""
    model = scripted(
        tmp_path,
        [tool("write", path="a.txt", content="one\n")], done(),
        [tool("edit", path="a.txt", old_string="one", new_string="two"),
         tool("write", path="b.txt", content="b\n")] + ([tool("python", code=CHANGE)] if ns else []), done(),
        [tool("edit", path="b.txt", old_string="b", new_string="bb")], done(),
        done("on the branch"),
    )
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns))
    for prompt in ("first", "second", "third"):
        agent.run(prompt)
    return agent


def test_rewind_with_files_restores_them_to_before_the_prompt(project: Path, tmp_path: Path) -> None:
    ns = kernel_namespace()
    agent = three_file_turns(project, tmp_path, ns)
    source = agent.session_path
    before = source.read_bytes()
    assert agent.rewind(2, files=True) == "second"
    assert (project / "a.txt").read_text() == "one\n" and not (project / "b.txt").exists()
    assert list(ns["df"].columns) == ["a", "b"] and ns["data"] == [1, 2, 3] and "x" not in ns
    assert [r.prompt for r in agent.last_undo] == [3, 2]
    assert source.read_bytes() == before
    branch = agent.records
    assert [t.prompt for t in branch.turns] == ["first"]  # ends just before prompt 2
    assert agent.session_path != source
    # What remains undoable: the source's turn before prompt 2, from the source; the branch has none.
    with pytest.raises(NothingToUndoError):
        agent.undo()
    agent.resume(str(source))
    assert [r.turn for r in agent.undo()] == [1] and not (project / "a.txt").exists()
    agent.close()


def test_rewind_without_files_changes_nothing_on_disk(project: Path, tmp_path: Path) -> None:
    agent = three_file_turns(project, tmp_path)
    files = {p.name: p.read_bytes() for p in project.iterdir() if p.is_file()}
    source = agent.session_path
    before = source.read_bytes()
    agent.rewind(2)
    assert {p.name: p.read_bytes() for p in project.iterdir() if p.is_file()} == files
    assert source.read_bytes() == before and not agent.last_undo
    assert [t.prompt for t in agent.records.turns] == ["first"]
    agent.close()


def test_undo_to_stops_at_the_first_refusal_and_rewind_then_makes_no_branch(project: Path, tmp_path: Path) -> None:
    agent = three_file_turns(project, tmp_path)
    (project / "b.txt").unlink()
    (project / "b.txt").symlink_to(project / "elsewhere.txt")
    source = agent.session_id
    with pytest.raises(RewindStopped, match="prompt 3 could not restore b.txt") as stopped:
        agent.rewind(1, files=True)
    assert agent.session_id == source and [r.turn for r in stopped.value.results] == [3]
    results = agent.undo(prompt_number=1)
    assert [(r.turn, r.ok) for r in results] == [(3, False)]
    assert (project / "a.txt").read_text() == "two\n"  # turn 2 was not touched
    (project / "b.txt").unlink()
    results = agent.undo(prompt_number=2)
    assert [(r.turn, r.ok) for r in results] == [(3, True), (2, True)]
    assert (project / "a.txt").read_text() == "one\n" and not (project / "b.txt").exists()
    with pytest.raises(NothingToUndoError, match="from prompt 2 on"):
        agent.undo(prompt_number=2)
    with pytest.raises(Exception, match="choose a prompt number from 1 to 3"):
        agent.undo(prompt_number=4)
    agent.close()


def test_prompt_numbers_not_checkpoint_turns_choose_what_is_undone(project: Path, tmp_path: Path) -> None:
    first = Agent(project, model=scripted(tmp_path, done("hi"), done("hello")), yes=True)
    first.run("talk")
    first.run("talk more")
    session = first.session_id
    first.close()
    # Reopened, the store numbers new turns after the last one on disk (none): turn 1 is prompt 3.
    model = scripted(
        tmp_path, [tool("write", path="c.txt", content="3\n")], done(),
        [tool("write", path="d.txt", content="4\n")], done(),
    )
    agent = Agent(project, session=session, model=model, yes=True)
    agent.run("write c")
    agent.run("write d")
    assert [(t.turn, t.prompt) for t in agent.loop.checkpoints.turns()] == [(1, 3), (2, 4)]
    assert [r.turn for r in agent.undo(prompt_number=4)] == [2]
    assert (project / "c.txt").exists() and not (project / "d.txt").exists()
    agent.rewind(3, files=True)
    assert not (project / "c.txt").exists()
    agent.close()
