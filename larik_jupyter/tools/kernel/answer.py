"""The answer tool: the agent hands a variable it made in the kernel back as the turn's value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from larik_jupyter.errors import ToolError
from larik_jupyter.session.call_summary import CellPosition, clip
from larik_jupyter.tools.base import Answer, Tool, ToolResult
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.kernel.variables import describe


class AnswerTool(Tool):
    name = "answer"
    writes = frozenset()
    needs_kernel = True
    description = (
        "Hand a variable you made in the user's kernel back to the user as this turn's result "
        "(`%larik -o NAME` binds it, `Agent.run(...).value` returns it): the object itself, not "
        "a copy. Call it once, after the python call that created the variable; a later call in "
        "the same turn replaces the earlier answer."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The name of a variable in the kernel."}
        },
        "required": ["name"],
    }
    inline = True

    @classmethod
    def summary(cls, args: Mapping[str, Any], position: CellPosition | None = None) -> str:
        """`answer: hand back summary as the turn's value`."""
        if isinstance(handed := args.get("name"), str) and handed:
            return f"{cls.name}: hand back {clip(handed)} as the turn's value"
        return super().summary(args, position)

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        if env.host is None:
            raise ToolError("The answer tool needs a live kernel; run the agent inside Jupyter to use it.")
        namespace = env.host.namespace
        name: str = args["name"]
        if not name.isidentifier():
            raise ToolError(f"{name!r} is not a variable name; pass the name of a kernel variable, e.g. \"summary\".")
        if name not in namespace:
            raise ToolError(
                f"There is no variable {name!r} in the kernel; create it with the python tool first, "
                "then call answer with its name."
            )
        value = namespace[name]
        try:
            what = describe(value, preview=False)
        except Exception:
            what = type(value).__name__
        return ToolResult(f"Handed back {name} ({what}) as this turn's value.", answer=Answer(name, value))
