"""What the fork tree widget shows (`tree.py`; its page, `tree.js`, reads the same as JSON): the
sessions with their prompts, and a rewind with files awaiting confirmation."""

from __future__ import annotations

import msgspec


class PromptItem(msgspec.Struct, tag_field="kind", tag="prompt", kw_only=True):
    """A prompt of a session: its number `n`, where it stands in the transcript (`position`),
    its first line (`text`) and whole text (`prompt_text`, what the search matches), what it
    cost, whether it was interrupted or undone, and the branches made after it."""

    n: int
    position: int
    text: str
    prompt_text: str
    time: str | None
    cost: float | None
    cost_label: str
    interrupted: bool
    undone: bool
    children: list[TreeSession] = []


class CompactionItem(msgspec.Struct, tag_field="kind", tag="compaction"):
    """A compaction of the context, at message `at`."""

    at: int


class TreeSession(msgspec.Struct, tag_field="kind", tag="session", kw_only=True):
    """A session (or branch) with its own prompts and compactions in order (`items`) and the
    branches that share none of its prompts (`children`); `branch` names where a branch came
    from, when it hangs beside its source."""

    id: str
    time: str | None
    model: str | None
    cost: float | None
    cost_label: str
    fork_of: str | None
    fork_at: int | None
    fork_prompt: int | None
    parent_deleted: bool
    branch: str | None
    interrupted: str | None
    error: str | None
    items: list[PromptItem | CompactionItem]
    children: list[TreeSession]

    def empty(self) -> bool:
        """Whether none of its own prompts exist yet."""
        return not any(isinstance(item, PromptItem) for item in self.items)


class TreeData(msgspec.Struct, kw_only=True):
    """The sessions of `cwd` (`roots`, oldest first), the kernel's `current` one, and how many
    rows the tree has (`count`)."""

    cwd: str
    current: str | None
    roots: list[TreeSession]
    count: int


class RewindPlan(msgspec.Struct, kw_only=True):
    """What rewinding before a prompt with files would undo: `turns` (newest first), the
    `files`, `variables` and notebook `cells` they changed, and `stop` when an older-format
    turn would stop the undo before it reaches that prompt."""

    turns: list[int]
    files: list[str]
    variables: list[str]
    cells: list[str]
    stop: str | None


class Confirm(RewindPlan, kw_only=True, omit_defaults=True):
    """A rewind of `session` before `prompt` with files, awaiting the user's confirmation;
    `changed`: the files changed since their turn, when a rewind stopped at them (else absent)."""

    session: str
    prompt: int
    changed: list[str] = []
