"""Names of the tools whose calls the transcript renderers show in their own way (the tools
themselves live in a higher layer)."""

from __future__ import annotations

TODO_WRITE = "todo_write"
SKILL_TOOL = "skill"
ANSWER_TOOL = "answer"
