"""Plans: `todo_write` replaces the plan; the turn view shows one checklist updated in place;
`/plan`, `/history` and the export show it; resume, fork and rewind restore it from disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.utils.capture import capture_output
from nbclient import NotebookClient

from larik_jupyter import Agent
from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.frontends.notebook.view import TranscriptView
from larik_jupyter.session.export import export_markdown
from tests.agent_helpers import done, results_of, scripted, tool
from tests.process_helpers import wait_until
from tests.session_helpers import released
from tests.widget_helpers import larik, shell_with_magics

FIRST = [{"content": "Read the code", "status": "in_progress"},
         {"content": "Fix the bug", "status": "pending"},
         {"content": "Run the tests", "status": "pending"}]  # fmt: skip
SECOND = [{"content": "Read the code", "status": "completed"},
          {"content": "Fix the bug", "status": "in_progress"},
          {"content": "Run the tests", "status": "pending"}]  # fmt: skip
THIRD = [{"content": "Read the code", "status": "completed"},
         {"content": "Fix the bug", "status": "completed"},
         {"content": "Run the tests", "status": "completed"}]  # fmt: skip


def plan_reply(todos: list[dict[str, str]]) -> list[dict[str, Any]]:
    return [tool("todo_write", todos=todos)]


def markdown_of(outputs: list[Any]) -> str:
    return "\n".join(o.data.get("text/markdown", "") for o in outputs)


def test_three_updates_render_as_one_checklist_that_changes_in_place(project: Path, tmp_path: Path) -> None:
    model = scripted(tmp_path, plan_reply(FIRST), plan_reply(SECOND), plan_reply(THIRD), done("All done."))
    shell, magics = shell_with_magics(project, model)
    with capture_output() as shown:
        larik(shell, "fix the bug")
    with_plan = [o for o in shown.outputs if "Plan" in o.data.get("text/markdown", "")]
    # Every picture of the plan is an update of the one transcript output, never a new output.
    assert with_plan and all(o.update for o in with_plan)
    assert len({o.transient["display_id"] for o in with_plan}) == 1
    first_shown = [o for o in shown.outputs if not o.update and o.transient
                   and o.transient.get("display_id") == with_plan[0].transient["display_id"]]  # fmt: skip
    assert len(first_shown) == 1
    pictures = [o.data["text/markdown"] for o in with_plan]
    assert all(p.count("Plan") == 1 for p in pictures)
    states = list(dict.fromkeys(p.split("Plan", 1)[1].split("\n\n")[1] for p in pictures))
    assert states == [
        "- [ ] **Read the code** _(in progress)_\n- [ ] Fix the bug\n- [ ] Run the tests",
        "- [x] Read the code\n- [ ] **Fix the bug** _(in progress)_\n- [ ] Run the tests",
        "- [x] Read the code\n- [x] Fix the bug\n- [x] Run the tests",
    ]
    final = pictures[-1]
    assert "Plan** · 3/3 done" in final and "todo_write" not in final and "All done." in final
    with capture_output() as plan:
        larik(shell, "/plan")
    assert "- [x] Run the tests" in markdown_of(plan.outputs) and "3/3 done" in markdown_of(plan.outputs)
    assert magics.agent is not None
    assert [(t.content, t.status) for t in magics.agent.history.plan or []] == [(t["content"], t["status"]) for t in THIRD]
    magics.agent.close()


def test_todo_write_needs_no_approval_and_refuses_two_items_in_progress(project: Path, tmp_path: Path) -> None:
    both = [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]
    bad_status = [{"content": "a", "status": "doing"}]
    model = scripted(tmp_path, plan_reply(FIRST), plan_reply(both), plan_reply(bad_status), done())
    agent = Agent(project, model=model)  # no --yes, no approver: only read-only tools may run
    view = TranscriptView()
    agent.subscribe(view.handle)
    agent.run("plan")
    live = view.markdown()
    assert live.count("Plan") == 1 and "- [ ] **Read the code** _(in progress)_" in live
    assert live.count("✗ <code>todo_write") == 2  # each refused update has its own error row
    ok, two, status = results_of(agent)
    assert not ok.is_error and "Plan updated (0/3 done)" in ok.content
    assert two.is_error and "at most one item may be in_progress" in two.content
    assert status.is_error and "todos.0.status" in status.content
    agent.close()
    shell, magics = shell_with_magics(project, model)
    larik(shell, f"/resume {agent.session_id}")
    with capture_output() as plan:
        larik(shell, "/plan")
    assert "**Read the code** _(in progress)_" in markdown_of(plan.outputs)  # the refused plans changed nothing


def test_history_and_export_render_every_update_as_a_checklist(project: Path, tmp_path: Path) -> None:
    model = scripted(tmp_path, plan_reply(FIRST), plan_reply(THIRD), done())
    shell, magics = shell_with_magics(project, model)
    larik(shell, "work")
    with capture_output() as history:
        larik(shell, "/history")
    text = markdown_of(history.outputs)
    assert text.count("Plan") == 2
    assert "- [ ] **Read the code** _(in progress)_" in text and "- [x] Run the tests" in text
    assert magics.agent is not None
    path = magics.agent.session_path
    magics.agent.close()
    exported = export_markdown(path, None, cwd=project, redactor=redactor_for(project)).read_text()
    assert exported.count("**Plan updated**") == 2
    assert "· 0/3 done\n\n- [ ] **Read the code** _(in progress)_\n- [ ] Fix the bug" in exported
    assert "· 3/3 done\n\n- [x] Read the code\n- [x] Fix the bug\n- [x] Run the tests" in exported


def test_a_rewind_before_the_second_update_restores_the_first_plan(project: Path, tmp_path: Path) -> None:
    model = scripted(tmp_path, plan_reply(FIRST), done(), plan_reply(SECOND), done(), done())
    shell, magics = shell_with_magics(project, model)
    larik(shell, "make a plan")
    larik(shell, "go on")
    assert magics.agent is not None
    original = magics.agent.session_id
    with capture_output() as rewound:
        larik(shell, "/rewind 2")
        larik(shell, "/plan")
    shown = markdown_of(rewound.outputs)
    assert magics.agent.session_id != original
    assert "- [ ] **Read the code** _(in progress)_" in shown and "Fix the bug** _(in progress)_" not in shown
    with capture_output() as forked:
        larik(shell, f"/resume {original}")
        larik(shell, "/fork")
        larik(shell, "/plan")
    assert "- [ ] **Fix the bug** _(in progress)_" in markdown_of(forked.outputs).split("Forked")[-1]
    magics.agent.close()


def test_a_session_without_plan_says_so(project: Path, tmp_path: Path) -> None:
    shell, magics = shell_with_magics(project, scripted(tmp_path, done()))
    larik(shell, "hi")
    with capture_output() as plan:
        larik(shell, "/plan")
    assert "has no plan yet" in markdown_of(plan.outputs)
    assert magics.agent is not None
    magics.agent.close()


def _run_notebook(cells: list[str], workdir: Path) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(workdir)}}).execute()
    return nb


@pytest.mark.timeout(240)
def test_after_a_kernel_restart_resume_and_plan_show_the_last_plan(project: Path, tmp_path: Path) -> None:
    model = scripted(tmp_path, plan_reply(FIRST), plan_reply(SECOND), done())
    _run_notebook(["%load_ext larik_jupyter", f"%larik --model {model} fix the bug"], project)
    wait_until(lambda: released(project), "the first kernel to release its session")
    # A fresh kernel: nothing of the first one survives but the files on disk.
    nb = _run_notebook(["%load_ext larik_jupyter", "%larik /resume --last", "%larik /plan"], project)
    plan = "\n".join(o.get("data", {}).get("text/markdown", "") for o in nb.cells[2].outputs)
    assert "1/3 done" in plan
    assert "- [x] Read the code\n- [ ] **Fix the bug** _(in progress)_\n- [ ] Run the tests" in plan


def test_an_empty_list_clears_the_plan(project: Path, tmp_path: Path) -> None:
    agent = Agent(project, model=scripted(tmp_path, plan_reply(FIRST), plan_reply([]), done()))
    agent.run("plan, then drop it")
    assert agent.history.plan == []
    agent.close()
    shell, magics = shell_with_magics(project, "scripted:demo")
    larik(shell, f"/resume {agent.session_id}")
    with capture_output() as plan:
        larik(shell, "/plan")
    assert "0/0 done\n\n_(the plan is empty)_" in markdown_of(plan.outputs)
