"""A tool's traits decide how its calls are treated: a new tool is a subclass that declares
them (nothing else changes), and a kernel-only tool in an agent without a kernel says why."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from larik_jupyter import Agent
from larik_jupyter.agent.permissions import PermissionAnswer, PermissionRequest
from larik_jupyter.testing import ScriptedHTTPServer
from larik_jupyter.tools.base import Tool, ToolResult
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.registry import BUILTIN_TOOLS
from tests.agent_helpers import wire_model


class WordCount(Tool):
    """Reads only: allowed without asking."""

    name = "word_count"
    description = "Count the words of a text."
    input_schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    writes = frozenset()

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        return ToolResult(f"{len(args['text'].split())} words")


class Stamp(Tool):
    """Writes a file: asks, and its approval shows its own preview."""

    name = "stamp"
    description = "Write a stamp file."
    input_schema = {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}
    writes = frozenset({"files"})

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        path = env.resolve("stamp.txt")
        env.capture_before_write(path)
        path.write_text(args["label"])
        return ToolResult("stamped")

    def preview(self, env: Env, args: dict[str, Any]) -> str:
        return f"stamp.txt := {args['label']}"


class Meet(Tool):
    """Concurrent: two calls in one reply run together (each waits for the other to start)."""

    name = "meet"
    description = "Meet another call."
    input_schema = {"type": "object", "properties": {}}
    writes = frozenset()
    concurrent = True
    barrier = threading.Barrier(2, timeout=60)  # calls run one after another: a failure, not a hang

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        self.barrier.wait()
        return ToolResult("met")


class Shred(Tool):
    """Refused by default: no approver is asked, and nothing runs."""

    name = "shred"
    description = "Shred a file."
    input_schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    writes = frozenset({"files"})
    default_permission = "deny"

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        env.resolve(args["path"]).unlink()
        return ToolResult("shredded")


def _script(tmp_path: Path, *calls: tuple[str, dict[str, Any]]) -> str:
    script = tmp_path / "script.json"
    uses = [{"type": "tool_use", "name": name, "input": args} for name, args in calls]
    script.write_text(json.dumps({"responses": [{"content": uses}, {"content": [{"type": "text", "text": "done"}]}]}))
    return f"scripted:{script}"


def _results(agent: Agent) -> list[tuple[str, bool]]:
    return [
        (str(block.content), bool(block.is_error))
        for message in agent.loop.session.state.all
        for block in message.tool_results()
    ]


def test_a_new_tool_is_a_subclass_with_traits(tmp_path: Path) -> None:
    asked: list[PermissionRequest] = []

    async def approve(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return PermissionAnswer("allow")

    model = _script(
        tmp_path, ("word_count", {"text": "one two three"}), ("stamp", {"label": "v1"}),
        ("meet", {}), ("meet", {}),
    )
    agent = Agent(tmp_path, model=model, tools=[WordCount(), Stamp(), Meet()])
    try:
        agent.run("go", approver=approve)
        assert _results(agent) == [("3 words", False), ("stamped", False), ("met", False), ("met", False)]
        # Only the writing tool asked, showing its own preview; the read-only one just ran.
        assert [(r.tool, r.detail) for r in asked] == [("stamp", "stamp.txt := v1")]
        assert (tmp_path / "stamp.txt").read_text() == "v1"
        # Its write was captured like any file tool's, so undo takes it back.
        agent.undo()
        assert not (tmp_path / "stamp.txt").exists()
    finally:
        agent.close()


def test_kernel_only_tools_without_a_kernel_say_why(tmp_path: Path) -> None:
    calls = [("python", {"code": "1"}), ("inspect_variables", {}), ("notebook_run", {"cell_id": "a"})]
    agent = Agent(tmp_path, model=_script(tmp_path, *calls), yes=True)
    try:
        agent.run("use the kernel")
        results = _results(agent)
        assert [error for _, error in results] == [True, True, True]
        for (name, _), (text, _) in zip(calls, results, strict=True):
            assert text == (
                f"The {name} tool needs a live kernel: it runs only inside Jupyter (`%larik` in a "
                "notebook), and this agent has none (the CLI, the server or a plain Python "
                "script); use bash or the file tools instead."
            )
    finally:
        agent.close()


def test_a_new_tool_is_offered_to_the_model_and_its_default_permission_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Through the real SDK: the request carries the new tools' schemas; a call of the tool
    # whose default is "deny" is refused without asking, one that asks shows its preview.
    (tmp_path / "keep.txt").write_text("kept")
    uses = [
        {"type": "tool_use", "name": "shred", "input": {"path": "keep.txt"}},
        {"type": "tool_use", "name": "stamp", "input": {"label": "v2"}},
    ]
    replies = [{"content": uses}, {"content": [{"type": "text", "text": "done"}]}]
    asked: list[PermissionRequest] = []

    async def approve(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return PermissionAnswer("allow")

    with ScriptedHTTPServer(replies, api_key="k") as server:
        agent = Agent(tmp_path, model=wire_model("anthropic", server, "k", monkeypatch), tools=[Shred(), Stamp()])
        try:
            assert agent.run("go", approver=approve).status == "done"
            results = _results(agent)
        finally:
            agent.close()
        offered = {t["name"]: t for t in server.requests[0].body["tools"]}
    assert offered["shred"]["input_schema"] == Shred.input_schema
    assert offered["shred"]["description"] == "Shred a file."
    assert "stamp" in offered
    assert [(r.tool, r.detail) for r in asked] == [("stamp", "stamp.txt := v2")]
    (shredded, shred_error), stamped = results
    assert shred_error and "shred" in shredded and stamped == ("stamped", False)
    assert (tmp_path / "keep.txt").read_text() == "kept"


KERNEL_ONLY = [cls for cls in BUILTIN_TOOLS if cls.needs_kernel]


def test_the_kernel_only_tools_are_known() -> None:
    # The parametrized test below covers every built-in tool that needs a kernel.
    assert {cls.name for cls in KERNEL_ONLY} >= {"python", "inspect_variables", "notebook_run", "answer"}


@pytest.mark.parametrize("tool", KERNEL_ONLY, ids=lambda cls: cls.name)
def test_each_kernel_only_tool_without_a_kernel_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: type[Tool]
) -> None:
    # Not offered to the model; called anyway, one sentence saying it needs a kernel.
    uses = [{"type": "tool_use", "name": tool.name, "input": {}}]
    replies = [{"content": uses}, {"content": [{"type": "text", "text": "done"}]}]
    with ScriptedHTTPServer(replies, api_key="k") as server:
        agent = Agent(tmp_path, model=wire_model("anthropic", server, "k", monkeypatch), yes=True)
        try:
            assert agent.run("use the kernel").status == "done"
            ((text, is_error),) = _results(agent)
        finally:
            agent.close()
        offered = [t["name"] for t in server.requests[0].body["tools"]]
    assert tool.name not in offered and "read" in offered
    assert is_error
    assert text == (
        f"The {tool.name} tool needs a live kernel: it runs only inside Jupyter (`%larik` in a "
        "notebook), and this agent has none (the CLI, the server or a plain Python "
        "script); use bash or the file tools instead."
    )
