"""The `skill` tool: load a skill's instructions and the list of the files it holds."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from larik_jupyter.config.skills import Skill, read_skill
from larik_jupyter.errors import ToolError
from larik_jupyter.session.tool_names import SKILL_TOOL
from larik_jupyter.tools.base import Tool, ToolResult
from larik_jupyter.tools.env import Env


class SkillTool(Tool):
    name = SKILL_TOOL
    writes = frozenset()
    description = (
        "Load a skill listed in the system prompt by its name: returns its instructions and the "
        "other files in its folder. Read those files with read; run a skill's scripts only "
        "with bash."
    )
    input_schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "The skill's name."}},
        "required": ["name"],
    }

    def __init__(self, skills: Callable[[], list[Skill]]) -> None:
        self._skills = skills

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        name = args["name"]
        skills = self._skills()
        found = next((s for s in skills if s.name == name and s.usable), None)
        found = found or next((s for s in skills if s.name == name and s.error), None)
        if found is None:
            names = ", ".join(s.name for s in skills if s.usable) or "none"
            raise ToolError(f"No skill is named {name!r}; the skills are: {names}.")
        loaded = read_skill(found)
        lines = [
            f"Loaded skill {found.name} ({found.source}, {found.folder}).",
            "",
            f'<skill name="{found.name}">',
            loaded.body,
            "</skill>",
        ]
        if loaded.files:
            lines += ["", "Other files in the skill's folder (read them with read; run scripts only with bash):"]
            folder = Path(os.path.realpath(found.folder))
            lines += [f"- {env.rel(folder / name)}" for name in loaded.files]
            if loaded.more_files:
                lines.append(f"- … and {loaded.more_files} more")
        else:
            lines += ["", "The skill's folder holds no other files."]
        return ToolResult("\n".join(lines))
