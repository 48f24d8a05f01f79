"""A tool's traits decide how its calls are treated: a new tool is a subclass that declares
them (nothing else changes), and a kernel-only tool in an agent without a kernel says why."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from larik_jupyter import Agent
from larik_jupyter.agent.permissions import PermissionAnswer, PermissionRequest
from larik_jupyter.tools.base import Tool, ToolResult
from larik_jupyter.tools.env import Env


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
    barrier = threading.Barrier(2, timeout=5)

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        self.barrier.wait()
        return ToolResult("met")


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
