"""The tools an agent gets, and their schemas for the model."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from larik_jupyter.llm.provider import ToolSchema
from larik_jupyter.tools.base import Tool
from larik_jupyter.tools.check import NotebookCheckTool
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.files import (
    BashTool,
    DiagnosticsTool,
    EditTool,
    GlobTool,
    GrepTool,
    LsTool,
    MultiEditTool,
    ReadTool,
    WriteTool,
)
from larik_jupyter.tools.kernel import AnswerTool, InspectVariablesTool, PythonTool
from larik_jupyter.tools.notebook import NotebookEditTool, NotebookReadTool, NotebookRunTool
from larik_jupyter.tools.plan import TodoWriteTool

_FILE_AND_SHELL: tuple[type[Tool], ...] = (
    ReadTool,
    WriteTool,
    EditTool,
    MultiEditTool,
    GlobTool,
    GrepTool,
    LsTool,
    BashTool,
    TodoWriteTool,
)
_KERNEL: tuple[type[Tool], ...] = (
    PythonTool, InspectVariablesTool, NotebookRunTool, AnswerTool, NotebookCheckTool
)
_NOTEBOOK: tuple[type[Tool], ...] = (NotebookReadTool, NotebookEditTool)
# Every built-in tool class (the kernel's and the language servers' among them).
BUILTIN_TOOLS = _FILE_AND_SHELL + _NOTEBOOK + _KERNEL + (DiagnosticsTool,)


def default_tools(env: Env) -> dict[str, Tool]:
    """Every built-in tool that can run in `env`, by name: the kernel tools only when `env`
    has a kernel (their `needs_kernel` trait), `diagnostics` only with language servers."""
    classes = _FILE_AND_SHELL + _NOTEBOOK + _KERNEL
    classes += (DiagnosticsTool,) if env.diagnostics is not None else ()
    tools = (cls() for cls in classes)
    return {tool.name: tool for tool in tools if tool.unavailable(env) is None}


def kernel_tools() -> tuple[type[Tool], ...]:
    """The tools an outside agent may call over MCP (their `kernel_tool` trait), in order."""
    return tuple(cls for cls in BUILTIN_TOOLS if cls.kernel_tool)


def builtin_tool(name: str) -> type[Tool] | None:
    """The built-in tool class called `name`, for its traits; None for any other name."""
    return next((cls for cls in BUILTIN_TOOLS if cls.name == name), None)


def builtin_writes(name: str) -> frozenset[str]:
    """What a call of the built-in tool `name` writes (its `writes` trait: "files",
    "notebooks", "kernel"); nothing for any other name."""
    cls = builtin_tool(name)
    return cls.writes if cls is not None else frozenset()


def unavailable_reason(name: str, env: Env) -> str | None:
    """Why the built-in tool `name` is not offered in `env`, in one sentence; None when it is
    offered or no built-in tool has that name."""
    cls = builtin_tool(name)
    return None if cls is None else cls().unavailable(env)


def tool_schemas(tools: Mapping[str, Tool] | Iterable[Tool]) -> list[ToolSchema]:
    """The schemas offered to the model, in the tools' order."""
    values = tools.values() if isinstance(tools, Mapping) else tools
    return [ToolSchema(t.name, t.description, t.input_schema) for t in values]
