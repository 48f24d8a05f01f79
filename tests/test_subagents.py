"""The `task` tool: scripted parents spawning subagents, shared checkpoints and git worktrees."""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from larik_jupyter.agent import events as ae
from larik_jupyter.agent.loop import AgentLoop
from larik_jupyter.agent.options import AgentOptions
from larik_jupyter.agent.undo import undo_turn
from larik_jupyter.agent.worktree import clean_worktrees, list_worktrees, remove_worktree
from larik_jupyter.config.layers import load_config
from larik_jupyter.llm.messages import Message
from larik_jupyter.llm.script import ScriptReply, parse_script
from larik_jupyter.llm.scripted import ScriptedProvider
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.store import Session
from tests.agent_helpers import text, tool
from tests.process_helpers import processes_running, unique_sleeps, wait_until


def routed(scripts: dict[str, list[list[dict[str, Any]]]]) -> ScriptedProvider:
    """A scripted model whose reply depends on the conversation's first prompt (parent or subagent)."""
    parsed = {
        key: parse_script({"responses": [{"content": r} for r in replies]}, key)
        for key, replies in scripts.items()
    }

    def pick(messages: list[Message]) -> ScriptReply:
        first = next(m for m in messages if m.is_prompt()).text()
        key = next(k for k in parsed if k in first)
        step = parsed[key].responses[sum(1 for m in messages if m.role == "assistant")]
        assert isinstance(step, ScriptReply)
        return step

    return ScriptedProvider("routed", pick)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "Tester")
    (root / "README.md").write_text("hello\n")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "init")
    return root


def open_loop(repo: Path, provider: ScriptedProvider, **config: Any) -> AgentLoop:
    loaded = load_config(repo)
    loaded.config = loaded.config.model_copy(update=config)
    return AgentLoop(Session.create(repo), provider, AgentOptions(cwd=repo, yes=True), loaded=loaded)


PARENT = [
    [
        text("Splitting the work."),
        tool("task", description="write a", prompt="JOB-A: write a.txt"),
        tool("task", description="write b", prompt="JOB-B: write b.txt", isolation="worktree"),
    ],
    [text("Both done.")],
]
JOBS = {
    "JOB-A": [[tool("write", path="a.txt", content="from A\n")], [text("A wrote a.txt.")]],
    "JOB-B": [[tool("write", path="b.txt", content="from B\n")], [text("B wrote b.txt.")]],
}


def rendezvous(meeting: Path, me: str, other: str) -> dict[str, Any]:
    """A bash call that says `met` only if the other subagent is running at the same time."""
    command = (
        f"touch {meeting / me}; for i in $(seq 100); do "
        f"test -e {meeting / other} && echo met && exit 0; sleep 0.05; done; echo alone"
    )
    return tool("bash", command=command)


def test_two_parallel_subagents_one_in_a_worktree(repo: Path, tmp_path: Path) -> None:
    jobs = {
        key: [[rendezvous(tmp_path, key, other)], *replies]
        for (key, replies), other in zip(JOBS.items(), ["JOB-B", "JOB-A"], strict=True)
    }
    loop = open_loop(repo, routed({"PARENT": PARENT, **jobs}))
    outcome = asyncio.run(loop.run_turn("PARENT: do both"))
    assert outcome.status == "done" and outcome.text == "Both done."

    a_result, b_result = [b for m in loop.session.state.all for b in m.tool_results()]
    a, b = a_result.subagent, b_result.subagent  # type: ignore[attr-defined]
    assert a["status"] == b["status"] == "finished"
    assert a["prompt"] == "JOB-A: write a.txt" and a["summary"] == "A wrote a.txt."
    assert "A wrote a.txt." in a_result.content and not a_result.is_error

    # Transcripts in <session-id>-agents/, in the session format.
    agents = loop.session.path.with_name(f"{loop.session.id}-agents")
    assert sorted(p.name for p in agents.iterdir() if p.suffix == ".jsonl") == sorted(
        [Path(a["transcript"]).name, Path(b["transcript"]).name]
    )
    for record in (a, b):
        child = [e.message for e in load_entries(Path(record["transcript"])).entries if e.message]
        met = child[2].tool_results()[0].content
        assert met.startswith("met"), "the two subagents did not run at the same time"

    # The shared-store subagent wrote into the project; the worktree one on its branch.
    assert (repo / "a.txt").read_text() == "from A\n"
    assert not (repo / "b.txt").exists()
    branch = b["worktree"]["branch"]
    assert branch in b_result.content and "b.txt" in b["worktree"]["diff"]
    assert git(repo, "show", f"{branch}:b.txt") == "from B\n"
    (listed,) = list_worktrees(repo)
    assert listed.branch == branch and not listed.merged

    # Undoing the parent's turn reverts the shared-store write, not the worktree's branch.
    (undone,) = undo_turn(loop.checkpoints)  # the one undo path `Agent.undo` takes
    assert undone.restored == ["a.txt"]
    assert not (repo / "a.txt").exists()
    assert git(repo, "show", f"{branch}:b.txt") == "from B\n"
    loop.close()

    # Merged worktrees are cleaned up, with their branch.
    assert clean_worktrees(repo) == []
    git(repo, "merge", "-q", branch)
    assert [w.branch for w in clean_worktrees(repo)] == [branch]
    assert list_worktrees(repo) == []
    assert branch not in git(repo, "branch")
    assert (repo / "b.txt").read_text() == "from B\n"


def test_max_subagents_bounds_concurrency_and_discard_removes_a_worktree(repo: Path) -> None:
    parent = [
        [
            tool("task", description="a", prompt="JOB-A: go", isolation="worktree"),
            tool("task", description="b", prompt="JOB-B: go", isolation="worktree"),
        ],
        [text("ok")],
    ]
    loop = open_loop(repo, routed({"PARENT": parent, **JOBS}), max_subagents=1)
    notices: list[str] = []
    loop.subscribe(lambda e: notices.append(e.text) if isinstance(e, ae.Notice) else None)
    asyncio.run(loop.run_turn("PARENT"))
    loop.close()
    lifecycle = [n.split(":")[0].split(" ", 2)[2] for n in notices if n.startswith("Subagent ")]
    assert lifecycle == ["started", "finished", "started", "finished"]
    first, second = list_worktrees(repo)
    remove_worktree(repo, first.name)
    assert [w.name for w in list_worktrees(repo)] == [second.name]
    assert not first.path.exists()


def test_interrupting_the_parent_interrupts_its_subagents(repo: Path) -> None:
    parent = [[tool("task", description="slow", prompt="JOB-SLOW")], [text("never")]]
    sleep = next(unique_sleeps(60))
    slow = {"JOB-SLOW": [[tool("bash", command=sleep)], [text("never")]]}
    loop = open_loop(repo, routed({"PARENT": parent, **slow}))
    outcome: dict[str, Any] = {}
    runner = threading.Thread(target=lambda: outcome.update(r=asyncio.run(loop.run_turn("PARENT"))))
    begun = time.monotonic()
    runner.start()
    wait_until(lambda: processes_running(sleep), f"the subagent's `{sleep}` to run")
    loop.stop()
    runner.join(30)
    assert not runner.is_alive() and time.monotonic() - begun < 30  # not the 60 s sleep's natural end
    assert outcome["r"].status == "interrupted"
    (result,) = [b for m in loop.session.state.all for b in m.tool_results()]
    assert result.is_error
    transcript = next(loop.session.path.with_name(f"{loop.session.id}-agents").glob("*.jsonl"))
    loop.close()
    last = [e.message for e in load_entries(transcript).entries if e.message][-1]
    (killed,) = last.tool_results()
    assert killed.is_error and "Interrupted" in str(killed.content)


def test_the_task_itself_needs_no_approval_but_the_subagents_calls_do(repo: Path) -> None:
    parent = [[tool("task", description="a", prompt="JOB-A: go")], [text("ok")]]
    loaded = load_config(repo)
    loop = AgentLoop(Session.create(repo), routed({"PARENT": parent, **JOBS}), AgentOptions(cwd=repo), loaded=loaded)
    asyncio.run(loop.run_turn("PARENT"))
    loop.close()
    (result,) = [b for m in loop.session.state.all for b in m.tool_results()]
    assert result.subagent["status"] == "finished"  # type: ignore[attr-defined]
    child = [e.message for e in load_entries(Path(result.subagent["transcript"])).entries if e.message]  # type: ignore[attr-defined]
    (denied,) = child[2].tool_results()
    assert denied.is_error and "Permission denied" in str(denied.content)
    assert not (repo / "a.txt").exists()


def test_the_commands_parse() -> None:
    from larik_jupyter.frontends.notebook.parser import MagicUsageError, parse_magic

    assert parse_magic("/agents discard task-1a2b3c").args == {"action": "discard", "name": "task-1a2b3c"}  # type: ignore[union-attr]
    assert parse_magic("/agents").args == {"action": None, "name": None}  # type: ignore[union-attr]
    assert parse_magic("/debug on").args == {"state": "on"}  # type: ignore[union-attr]
    assert parse_magic("/mcp").name == "mcp"  # type: ignore[union-attr]
    with pytest.raises(MagicUsageError, match="Name one worktree"):
        parse_magic("/agents discard")
