"""A transcript page's entries as the sidebar reads them: the session file's entries
(`session/entry.py`, `llm/messages.py`) with what the server adds for people, each tool call's
one-line summary (`summary`) and the ids of the cells it names (`hint`, for the hover), and each
result that is a diff as the one diff HTML every front end shows (`diff_html`). Declared here,
so the sidebar's types are generated from them (`server/schema.py`, `rest.ts`)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from larik_jupyter.api import (
    CellPosition,
    Entry,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    VariableChange,
    cells_named,
    diff_html,
    looks_like_diff,
    receipts_lines,
    summarize_call,
)


class ImageSource(BaseModel):
    """An image's source, as the providers' messages carry it: base64 `data`, or a `url`."""

    model_config = ConfigDict(extra="allow")

    type: str  # `base64` or `url`
    media_type: str | None = None
    data: str | None = None
    url: str | None = None


class ShownImage(ImageBlock):
    """An image block."""

    source: ImageSource  # type: ignore[assignment]  # the stored dict, read as what it holds


class ShownCall(ToolUseBlock):
    """A tool call, with its one-line summary (cells named by position, as the notebook words
    it) and the ids of the cells it names (`hint`)."""

    summary: str = ""
    hint: str | None = None


class ShownResult(ToolResultBlock):
    """A tool's answer (its content's blocks shown too), with its text as the one diff HTML when
    it is a diff (`diff_html`), what a kernel call did to the user's variables (and in words,
    `variable_lines`, each as every view says it: `VariableChange.text`), and its receipts in
    words (`receipt_lines`, one line each, as every view says them)."""

    content: str | list[ShownBlock] = ""  # type: ignore[assignment]  # the stored blocks, shown
    variables: list[VariableChange] | None = None  # type: ignore[assignment]  # read as what they are
    diff_html: str | None = None
    variable_lines: list[str] | None = None
    receipt_lines: list[str] | None = None


ShownBlock = Annotated[
    TextBlock | ThinkingBlock | RedactedThinkingBlock | ShownCall | ShownResult | ShownImage,
    Field(discriminator="type"),
]
ShownResult.model_rebuild()


class ShownMessage(Message):
    """A message, its blocks as shown."""

    content: list[ShownBlock] = Field(default_factory=list)  # type: ignore[assignment]


class PageEntry(Entry):
    """One entry of the session file, as a transcript page sends it (empty fields left out)."""

    message: ShownMessage | None = None

    def to_json(self) -> dict[str, Any]:
        """Every field but the empty (None) ones, usage counts too (their interface declares them)."""
        return self.model_dump(mode="json", exclude_none=True)


def page_entry(entry: Entry, position: CellPosition) -> PageEntry:
    """`entry` with each tool call summarized and each result that is a diff as diff HTML."""
    shown = PageEntry.model_validate(entry.to_json())
    for block in shown.message.content if shown.message is not None else []:
        if isinstance(block, ShownCall):
            block.summary = summarize_call(block.name, block.input, position)
            block.hint = cells_named(block.name, block.input)
        elif isinstance(block, ShownResult):
            block.variable_lines = [change.text() for change in block.variables or []] or None
            block.receipt_lines = receipts_lines(block.receipts) or None
            if looks_like_diff(text := block.text()):
                block.diff_html = diff_html(text)
    return shown
