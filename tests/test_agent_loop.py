"""End-to-end turns with scripted models in a temporary project."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from larik_jupyter import Agent
from larik_jupyter.agent import events as ae
from larik_jupyter.agent.permissions import PermissionAnswer, PermissionRequest
from larik_jupyter.config.layers import private_settings_path
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.state import replay
from tests.agent_helpers import results_of, scripted, text, tool
from tests.process_helpers import processes_running, unique_sleeps, wait_until


def test_turn_writes_edits_runs_bash_and_undo_restores(project: Path, tmp_path: Path) -> None:
    (project / "keep.txt").write_text("one\ntwo\n")
    spec = scripted(
        tmp_path,
        [tool("write", path="new.py", content="print('hi')\n")],
        [tool("edit", path="new.py", old_string="hi", new_string="hello")],
        [tool("multi_edit", path="keep.txt", edits=[{"old_string": "one", "new_string": "1"},
                                                     {"old_string": "two", "new_string": "2"}])],
        [tool("bash", command="python3 new.py > out.txt && cat out.txt")],
        [text("Done.")],
        [text("Noted.")],
    )
    agent = Agent(project, model=spec, yes=True)
    outcome = agent.run("make things")
    assert outcome.status == "done" and outcome.text == "Done."
    assert (project / "new.py").read_text() == "print('hello')\n"
    assert (project / "keep.txt").read_text() == "1\n2\n"
    results = results_of(agent)
    assert not any(r.is_error for r in results)
    assert "hello" in results[3].content
    assert (results[1].diff or "").startswith("--- a/new.py")

    (undone,) = agent.undo()
    assert sorted(undone.restored) == ["keep.txt", "new.py"]
    assert not (project / "new.py").exists()
    assert (project / "keep.txt").read_text() == "one\ntwo\n"
    agent.run("again")
    prompt = [m for m in agent.loop.session.state.all if m.is_prompt()][-1]
    assert prompt.content[0].text.startswith("<system-note>")
    assert "new.py" in prompt.content[0].text and "keep.txt" in prompt.content[0].text
    agent.close()


def test_tool_error_goes_back_to_model_and_loop_continues(project: Path, tmp_path: Path) -> None:
    (project / "a.txt").write_text("abc\n")
    spec = scripted(tmp_path, [tool("edit", path="a.txt", old_string="zzz", new_string="y")], [text("I see.")])
    agent = Agent(project, model=spec, yes=True)
    outcome = agent.run("edit")
    assert outcome.status == "done" and outcome.text == "I see."
    (result,) = results_of(agent)
    assert result.is_error and "old_string was not found" in result.content
    agent.close()


def test_headless_ask_is_denied_and_model_sees_the_denial(project: Path, tmp_path: Path) -> None:
    spec = scripted(tmp_path, [tool("write", path="x.txt", content="x")], [text("ok")])
    agent = Agent(project, model=spec)
    seen: list[ae.AgentEvent] = []
    agent.subscribe(seen.append)
    agent.run("write x")
    assert not (project / "x.txt").exists()
    (result,) = results_of(agent)
    assert result.is_error and "Permission denied" in result.content
    assert any(isinstance(e, ae.PermissionAnswered) and e.decision == "deny" for e in seen)
    agent.close()


def test_user_denial_with_reason_and_always_allow_rule(project: Path, tmp_path: Path) -> None:
    spec = scripted(
        tmp_path,
        [tool("write", path="x.txt", content="x")],
        [tool("write", path="y.txt", content="y")],
        [text("ok")],
        [tool("write", path="y.txt", content="yy")],
        [text("ok")],
    )
    answers = iter([PermissionAnswer("deny", "not that file"), PermissionAnswer("always")])
    asked: list[PermissionRequest] = []

    async def approver(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return next(answers)

    agent = Agent(project, model=spec, approver=approver)
    agent.run("write")
    first = results_of(agent)[0]
    assert first.is_error and "not that file" in first.content
    assert (project / "y.txt").read_text() == "y"
    assert asked[1].detail.startswith("--- /dev/null")
    agent.run("write again")  # the "always" rule now allows it without asking
    assert len(asked) == 2 and (project / "y.txt").read_text() == "yy"
    agent.close()


def test_max_steps_ends_a_looping_script(project: Path, tmp_path: Path) -> None:
    (project / ".larik").mkdir()
    (project / ".larik" / "settings.json").write_text(json.dumps({"max_steps": 3}))
    spec = scripted(tmp_path, *[[tool("ls")] for _ in range(5)])
    agent = Agent(project, model=spec)
    seen: list[ae.AgentEvent] = []
    agent.subscribe(seen.append)
    outcome = agent.run("loop")
    assert outcome.status == "max_steps"
    assert any(isinstance(e, ae.Notice) and "max_steps" in e.text for e in seen)
    assert len(results_of(agent)) == 3
    agent.close()


def test_compaction_keeps_all_and_shrinks_messages(project: Path, tmp_path: Path) -> None:
    spec = scripted(tmp_path, [text("first answer")], [text("second answer")],
                    [text("SUMMARY: two questions answered")], [text("third")])
    agent = Agent(project, model=spec)
    agent.run("q1")
    agent.run("q2")
    before = len(agent.loop.session.state.all)
    summary = agent.compact()
    assert "SUMMARY" in summary
    state = agent.loop.session.state
    assert len(state.all) == before == 4
    assert len(state.messages) < before
    agent.run("q3")
    reloaded = replay(load_entries(agent.session_path).entries)
    assert len(reloaded.all) == 6
    assert any("SUMMARY" in m.text() for m in reloaded.messages)
    agent.close()


def test_bash_checkpoint_paths_make_shell_edit_undoable(project: Path, tmp_path: Path) -> None:
    (project / "data.txt").write_text("original\n")
    (project / "other.txt").write_text("other\n")
    spec = scripted(
        tmp_path,
        [tool("bash", command="echo changed > data.txt; echo changed > other.txt",
              checkpoint_paths=["data.txt"])],
        [text("done")],
    )
    agent = Agent(project, model=spec, yes=True)
    seen: list[ae.AgentEvent] = []
    agent.subscribe(seen.append)
    agent.run("shell edit")
    finished = [e for e in seen if isinstance(e, ae.ToolFinished)][0]
    assert ("other.txt", "changed") in [(p, c) for p, c in finished.uncaptured]
    assert "not undoable" in finished.content
    agent.undo()
    assert (project / "data.txt").read_text() == "original\n"
    assert (project / "other.txt").read_text() == "changed\n"
    agent.close()


def test_stop_mid_tool_leaves_valid_resumable_session(project: Path, tmp_path: Path) -> None:
    sleep = next(unique_sleeps(60))
    spec = scripted(tmp_path, [tool("bash", command=sleep)], [text("after")])
    agent = Agent(project, model=spec, yes=True)
    threading.Thread(
        target=lambda: (wait_until(lambda: processes_running(sleep), f"`{sleep}` to run"), agent.stop()), daemon=True
    ).start()
    began = time.monotonic()
    outcome = agent.run("sleep")
    assert outcome.status == "interrupted"
    assert time.monotonic() - began < 30  # stopped: not the 60 s sleep's natural end
    path = agent.session_path
    agent.close()
    state = replay(load_entries(path).entries)
    (result,) = [b for m in state.all for b in m.tool_results()]
    assert result.is_error
    resumed = Agent(project, session=str(path), model=spec)
    assert resumed.run("next").status == "done"
    resumed.close()


def test_stop_mid_stream_keeps_the_partial_reply_marked_interrupted(project: Path, tmp_path: Path) -> None:
    words = " ".join(f"w{i}" for i in range(200))
    path = tmp_path / "slow.json"
    path.write_text(json.dumps({"responses": [{"content": [text(words)], "delay": 0.02}]}))
    agent = Agent(project, model=f"scripted:{path}")
    streamed = threading.Event()
    agent.subscribe(lambda e: streamed.set() if isinstance(e, ae.TextDelta) and "w10" in e.text else None)
    threading.Timer(0, lambda: (streamed.wait(10), agent.stop())).start()
    outcome = agent.run("talk")
    assert outcome.status == "interrupted"
    session_path = agent.session_path
    agent.close()
    state = replay(load_entries(session_path).entries)
    last = state.all[-1]
    assert last.role == "assistant" and last.interrupted
    assert "w10" in last.text() and "w199" not in last.text()
    assert state.interrupted
    resumed = Agent(project, session=str(session_path), model=scripted(tmp_path, [text("next")]))
    assert resumed.run("go on").status == "done"
    resumed.close()


def test_yes_allows_without_asking_even_when_someone_could(project: Path, tmp_path: Path) -> None:
    spec = scripted(tmp_path, [tool("write", path="y.txt", content="y")], [text("ok")])
    asked: list[PermissionRequest] = []

    async def approver(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return PermissionAnswer("deny")

    agent = Agent(project, model=spec, approver=approver, yes=True)
    agent.run("write")
    assert asked == [] and (project / "y.txt").read_text() == "y"
    agent.close()


def test_always_allow_says_where_the_rule_went_and_anchors_it_at_the_project_root(
    project: Path, tmp_path: Path
) -> None:
    (project / "sub").mkdir()
    spec = scripted(
        tmp_path,
        [tool("write", path="notes.txt", content="1")],
        [text("ok")],
        [tool("write", path="notes.txt", content="2")],  # the same file: allowed by the rule
        [tool("write", path="sub/notes.txt", content="3")],  # the same name deeper down: asks
        [text("ok")],
    )
    asked: list[PermissionRequest] = []

    async def approver(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return PermissionAnswer("always" if len(asked) == 1 else "deny")

    agent = Agent(project, model=spec, approver=approver)
    notices: list[str] = []
    agent.subscribe(lambda e: notices.append(e.text) if isinstance(e, ae.Notice) else None)
    agent.run("write")
    (notice,) = notices
    settings = private_settings_path(project)
    assert f"saved the rule `write(./notes.txt)` in {settings}" in notice
    assert "write of notes.txt (in the project root) only" in notice
    assert json.loads(settings.read_text())["permissions"]["allow"] == ["write(./notes.txt)"]
    agent.run("again")
    assert (project / "notes.txt").read_text() == "2"
    assert [r.summary for r in asked] == ["write: notes.txt", "write: sub/notes.txt"]
    assert not (project / "sub" / "notes.txt").exists()
    agent.close()


def test_an_edit_preview_of_a_missing_file_says_it_does_not_exist(project: Path, tmp_path: Path) -> None:
    spec = scripted(tmp_path, [tool("edit", path="gone.py", old_string="a", new_string="b")], [text("ok")])
    asked: list[PermissionRequest] = []

    async def approver(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return PermissionAnswer("deny")

    agent = Agent(project, model=spec, approver=approver)
    agent.run("edit")
    agent.close()
    assert asked[0].detail == "(no preview: gone.py does not exist, so there is nothing to edit; check the path with ls or glob.)"
