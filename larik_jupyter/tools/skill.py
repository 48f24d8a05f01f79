"""The `skill` tool: load a skill's instructions and the list of the files it holds."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from larik_jupyter.config.skills import Skill, read_skill
from larik_jupyter.errors import ToolError
from larik_jupyter.session.call_summary import CellPosition, clip
from larik_jupyter.tools.base import Tool, ToolResult
from larik_jupyter.tools.env import Env


class SkillTool(Tool):
    name = "skill"
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

    @classmethod
    def summary(cls, args: Mapping[str, Any], position: CellPosition | None = None) -> str:
        """`skill: pandas-style`."""
        skill = cls.skill_loaded(args)
        return f"{cls.name}: {clip(skill)}" if skill is not None else super().summary(args, position)

    @classmethod
    def skill_loaded(cls, args: Mapping[str, Any]) -> str | None:
        return name if isinstance(name := args.get("name"), str) else None

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
