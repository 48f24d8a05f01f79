"""The on-disk entry of a session transcript (one JSON object per line)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from larik_jupyter.llm.messages import Message, Usage
from larik_jupyter.paths import new_entry_id

EntryType = Literal["meta", "message", "compaction", "usage"]


class Meta(BaseModel):
    """The first entry's payload: where and with what model the session runs, and its fork origin."""

    model_config = ConfigDict(extra="allow")

    cwd: str
    provider: str | None = None
    model: str | None = None
    fork_of: str | None = None
    fork_at: int | None = None


def now_rfc3339() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Entry(BaseModel):
    """One line of a session file. Empty fields are omitted on write; unknown keys are kept."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(default_factory=new_entry_id)
    parent_id: str | None = None
    type: EntryType
    time: str = Field(default_factory=now_rfc3339)
    message: Message | None = None
    usage: Usage | None = None
    summary: str | None = None
    model: str | None = None
    meta: Meta | None = None
    # On a turn's closing usage entry: the notices its `Stop` hooks printed.
    hooks: list[str] | None = None
    # On a usage entry with no tokens that `/undo` writes: the <system-note> the next prompt
    # carries, kept here so it survives a kernel restart.
    note: str | None = None
    # On a usage entry with no tokens that an undo writes: the prompts (1-based) whose turns it
    # undid, so every view, export and replay knows them as undone.
    undone: list[int] | None = None

    def to_json(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", exclude_none=True)
        if self.usage is not None:
            data["usage"] = self.usage.to_json()
        return data
