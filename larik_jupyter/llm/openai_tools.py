"""Tool definitions as OpenAI's function calling takes them.

A tool's schema may come from an MCP server, written for any JSON Schema reader. OpenAI checks
a subset, and one tool it refuses fails every request, so each definition is brought into it
the same way every time (the tools lead every request, so the prompt cache keeps its prefix):
the parameters are an object schema; an object schema lists `properties` and an array schema
its `items` (OpenAI: "In context=(), object schema missing properties", "array schema missing
items"); a description is at most 1,024 characters ("Invalid 'tools[13].function.description':
string too long. Expected a string with maximum length 1024").
"""

from __future__ import annotations

from typing import Any

from larik_jupyter.llm.provider import ToolSchema

MAX_DESCRIPTION = 1024
# Keywords whose value is one schema, or a list or map of schemas.
_ONE = ("items", "additionalProperties", "not", "contains")
_MANY = ("anyOf", "oneOf", "allOf", "prefixItems")
_MAP = ("properties", "$defs", "definitions", "patternProperties")


def _kinds(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    return set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else set()


def openai_schema(schema: Any) -> Any:
    """`schema` with every object schema listing `properties` and every array schema its
    `items` (empty when it named none); anything else unchanged."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _ONE:
        if isinstance(out.get(key), dict):
            out[key] = openai_schema(out[key])
    for key in _MANY:
        if isinstance(out.get(key), list):
            out[key] = [openai_schema(s) for s in out[key]]
    for key in _MAP:
        if isinstance(out.get(key), dict):
            out[key] = {name: openai_schema(s) for name, s in out[key].items()}
    kinds = _kinds(out)
    if "object" in kinds and "properties" not in out:
        out["properties"] = {}
    if "array" in kinds and "items" not in out:
        out["items"] = {}
    return out


def openai_function(tool: ToolSchema) -> dict[str, Any]:
    """The `tools` entry of one tool (see the module's docstring)."""
    description = tool.description
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1] + "…"
    parameters = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    if "type" not in parameters:
        parameters = {"type": "object", **parameters}
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": description,
            "parameters": openai_schema(parameters),
        },
    }
