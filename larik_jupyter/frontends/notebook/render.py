"""Markdown rendering of turns, shared by the live view and `/history` (same picture from disk)."""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from larik_jupyter.api import (
    DIAGNOSTICS_HEADING,
    CellPosition,
    Claim,
    Entry,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    Todo,
    ToolResultBlock,
    ToolUseBlock,
    VariableChange,
    asked_label,
    builtin_tool,
    cells_named,
    changed_by,
    changes_of,
    changes_text,
    checklist,
    code_fence,
    context_view,
    diff_html,
    image_markdown,
    is_context_text,
    plan_set,
    progress,
    receipts_lines,
    skill_loaded,
    summarize_call,
    trace_entries,
    undone_notice,
)
from larik_jupyter.api import mark_numbers as mark
from larik_jupyter.api import numbers_footer as footer

_OUTPUT_CAP = 4000
# The captions that part an expanded `python` call's code from its output.
CODE_CAPTION = "<sub>**Code**</sub>"
OUTPUT_CAPTION = "<sub>**Output**</sub>"


@dataclass
class ToolPart:
    """One tool call row: summary, status, duration, output, diff, and the notices of its hooks
    (from the stored result; the live view shows those as they arrive, as `NoticePart`s)."""

    id: str
    summary: str
    name: str = ""
    # The ids of the cells a notebook call names, shown on hover (the summary names them by position).
    hint: str | None = None  # the tool's name: who changed the files listed in `uncaptured`
    status: str = "requested"  # requested, asking, running, done, error, denied, interrupted, cancelled
    seconds: float | None = None
    output: str = ""
    diff: str | None = None
    uncaptured: list[tuple[str, str]] = field(default_factory=list)
    hooks: list[str] = field(default_factory=list)
    # A `todo_write` call's plan, or the name a `skill` call loaded: once done, the row shows
    # the checklist, or "loaded skill NAME", instead of the raw output.
    plan: list[Todo] | None = None
    skill: str | None = None
    images: list[ImageBlock] = field(default_factory=list)
    # A `python` call's code: one click away in the row's fold, whether or not it was asked about.
    code: str | None = None
    # What the call displayed besides images (its code's `display()`s, then a rich value), as
    # HTML, shown under its row (once).
    rich: str | None = None
    # What a running call printed so far (its last `_OUTPUT_CAP` characters), shown under its
    # row until its output replaces it; a call that streamed keeps that output open when it ends
    # (`streamed`), so what the person was reading does not fold away.
    live: str = ""
    streamed: bool = False
    # How an asked call was allowed (`allowed once`, `always allowed`), shown on its row: the
    # decision sits with its call (not stored: a session read from disk has none).
    decision: str | None = None
    # What a kernel call did to the user's variables, shown under its row.
    variables: list[VariableChange] = field(default_factory=list)
    # What each join, filter, group or concat of its code did to the rows, one line each.
    receipts: list[str] = field(default_factory=list)


@dataclass
class TextPart:
    """A reply's text, with its unfound numbers once its turn is traced (`session/numbers.py`)."""

    text: str
    unfound: list[Claim] = field(default_factory=list)


@dataclass
class ThinkingPart:
    text: str


@dataclass
class NoticePart:
    text: str


@dataclass
class PromptPart:
    text: str


@dataclass
class ContextPart:
    """What the front end added to a prompt for the model (notebook context, attachments):
    shown folded under the prompt."""

    text: str
    images: list[ImageBlock] = field(default_factory=list)


@dataclass
class NumbersPart:
    """A traced turn's count line: `N numbers not found in this turn's outputs`."""

    text: str


Part = TextPart | ThinkingPart | ToolPart | NoticePart | PromptPart | ContextPart | NumbersPart

# Text marks, not emoji: they render without an emoji font (and in a terminal).
# A call whose approval card was still waiting when the turn ended (its row says so, once).
UNANSWERED = "cancelled, the turn ended before an answer"

_MARKS = {
    "requested": "…",
    "asking": "?",
    "running": "… running:",
    "done": "✓",
    "error": "✗",
    "denied": "✗ denied:",
    "interrupted": "✗ interrupted:",
}


# One diff rendering for the transcript, approvals, the undo panel and the sidebar: the
# theme's success/error/info colours (readable in the dark theme), light-theme fallbacks for
# static pages. Inline styles, since a Markdown output loads no stylesheet of ours.
def _fence(text: str, lang: str = "") -> str:
    return code_fence(text.rstrip(), lang)


def _cap(text: str) -> str:
    if len(text) <= _OUTPUT_CAP:
        return text
    return text[:_OUTPUT_CAP] + f"\n… ({len(text) - _OUTPUT_CAP} more characters)"


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


def render_plan(todos: list[Todo]) -> str:
    """A plan as a checklist under a heading with its progress."""
    items = [t.model_copy(update={"content": _escape(t.content)}) for t in todos]
    return f"**Plan** · {progress(todos)}\n\n{checklist(items)}"


def render_tool(part: ToolPart) -> str:
    if part.status == "done" and part.plan is not None:
        return render_plan(part.plan)
    if part.status == "done" and part.skill is not None:
        body = _fence(_cap(part.output)) if part.output.strip() else "_(no output)_"
        head = f"loaded skill {_escape(part.skill)}"
        return f"<details><summary>{head}</summary>\n\n{body}\n\n</details>"
    duration = (f" · {_escape(part.decision)}" if part.decision else "") + (
        f" · {part.seconds:.1f}s" if part.seconds is not None else ""
    )
    label = asked_label(part.name, part.summary) if part.status == "asking" else part.summary
    title = f' title="{html.escape(part.hint)}"' if part.hint else ""
    head = f"{_MARKS.get(part.status, '·')} <code{title}>{_escape(label)}</code>{duration}"
    if part.status == "cancelled":  # its approval was still waiting when the turn ended
        return f"✗ <code{title}>{_escape(part.summary)}</code>: {UNANSWERED}"
    if part.status == "denied" and part.output.strip():
        # Why a call did not run matters more than its output: never folded away.
        return f"{head}\n\n" + "\n".join(render_notice(line) for line in _escape(part.output.strip()).split("\n"))
    # A file tool's language-server diagnostics go under its diff, outside the fold.
    output, diagnostics = part.output.replace(SHOWN_NOTE, ""), ""
    if part.diff:
        output, found, rest = part.output.partition("\n\n" + DIAGNOSTICS_HEADING)
        diagnostics = found.lstrip() + rest
    body = _fence(_cap(output)) if output.strip() else "_(no output)_"
    if part.code is not None and part.status != "asking":  # while asking, the card shows it
        # Two code blocks in a row read as one: each gets its caption.
        body = f"{CODE_CAPTION}\n\n{_fence(part.code, 'python')}\n\n{OUTPUT_CAPTION}\n\n{body}"
    opened = " open" if part.streamed and part.status != "running" else ""
    lines = [f"<details{opened}><summary>{head}</summary>\n\n{body}\n\n</details>"]
    if part.status == "running" and part.live:
        lines.append(_fence(part.live))
    lines += [image_markdown(image) for image in part.images]
    if part.rich is not None:
        lines.append(part.rich)
    if part.diff:
        lines.append(diff_html(_cap(part.diff)))
    if diagnostics:
        lines.append(_fence(_cap(diagnostics)))
    for path, change in part.uncaptured:
        lines.append(f"> **!** `{path}` {change} by {changed_by(part.name)} — **not undoable**")
    if part.variables:
        lines.append(render_variables(part.variables))
    lines += [f'<span class="larik-receipt">**Receipt** · {_escape(line)}</span>' for line in part.receipts]
    lines += [render_notice(notice) for notice in part.hooks]
    return "\n\n".join(lines)


SHOWN_NOTE = "\n[shown to the user as rich output]"  # tools/kernel/python.py: for the model, not the user


def live_tail(text: str) -> str:
    """The end of what a running call printed, as much as its row shows."""
    return text if len(text) <= _OUTPUT_CAP else "…" + text[-(_OUTPUT_CAP - 1) :]


def rich_html(displays: list[dict[str, Any]], value: object | None) -> str | None:
    """How what a call displayed shows under its row (its images aside, which the row shows
    from the result): each display's HTML, else its text; then the value's HTML, if it has any."""
    shown = [_bundle_html(data, plain=True) for data in displays]
    if value is not None:
        from IPython.core.formatters import format_display_data

        shown.append(_bundle_html(format_display_data(value)[0], plain=False))
    return "\n\n".join(s for s in shown if s) or None


def _bundle_html(data: dict[str, Any], *, plain: bool) -> str:
    if isinstance(data.get("text/html"), str):
        return f'<div class="larik-rich">{data["text/html"]}</div>'
    if plain and isinstance(data.get("text/plain"), str):
        return _fence(_cap(data["text/plain"]))
    return ""


def render_variables(changes: list[VariableChange]) -> str:
    """The line under a kernel call saying what it did to the user's variables."""
    return f'<span class="larik-variables">**Variables** · {_escape(changes_text(changes))}</span>'


def render_notice(text: str) -> str:
    return f"> {text}"


def render_context(part: ContextPart) -> str:
    label, text = context_view(part.text) if part.text.strip() else ("attached", "")
    body = _fence(_cap(text)) if text.strip() else ""
    images = "\n\n".join(image_markdown(image) for image in part.images)
    inner = "\n\n".join(x for x in (body, images) if x)
    return f"<details><summary>{label}</summary>\n\n{inner}\n\n</details>"


def render_parts(parts: list[Part]) -> str:
    """The Markdown of a turn (or several), the unfound numbers of traced replies marked."""
    chunks: list[str] = []
    for part in parts:
        if isinstance(part, PromptPart):
            chunks.append("**You:** " + part.text.strip().replace("\n", "  \n"))
        elif isinstance(part, TextPart):
            if part.text.strip():
                chunks.append(mark(part.text, part.unfound))
        elif isinstance(part, ThinkingPart):
            if part.text.strip():
                chunks.append(
                    f"<details><summary>thinking</summary>\n\n{_escape(part.text)}\n\n</details>"
                )
        elif isinstance(part, ToolPart):
            chunks.append(render_tool(part))
        elif isinstance(part, ContextPart):
            chunks.append(render_context(part))
        elif isinstance(part, NumbersPart):
            chunks.append(f"<sub>{part.text}</sub>")
        else:
            chunks.append(render_notice(part.text))
    return "\n\n".join(chunks)


def parts_from_messages(
    messages: Iterable[Message], *, include_prompts: bool = True, position: CellPosition | None = None
) -> list[Part]:
    """Rebuild the parts of stored messages, pairing each tool_use with its tool_result, as
    `parts_from_entries` does; `position` numbers the cells notebook calls name."""
    entries = [Entry(type="message", message=message) for message in messages]
    return parts_from_entries(entries, include_prompts=include_prompts, position=position)


def parts_from_entries(
    entries: Iterable[Entry], *, include_prompts: bool = True, position: CellPosition | None = None
) -> list[Part]:
    """The parts of a stored transcript, with the `Stop` hook notices kept on usage entries and
    each turn's numbers traced (its count line where the turn ends); `position` numbers the
    cells notebook calls name."""
    listed = list(entries)
    unfound, turns = trace_entries(enumerate(listed))
    rebuilt = _Rebuild(include_prompts, position)
    count = ""  # the count line of the turn being rebuilt, shown where it ends
    for index, entry in enumerate(listed):
        if entry.message is not None:
            if entry.message.is_prompt() and count:
                rebuilt.parts.append(NumbersPart(count))
                count = ""
            rebuilt.message(entry.message, unfound.get(index, {}))
        rebuilt.parts += [NoticePart(notice) for notice in entry.hooks or []]
        rebuilt.parts += [NoticePart(undone_notice(n)) for n in entry.undone or []]
        if index in turns:
            count = footer(turns[index].count)
    if count:
        rebuilt.parts.append(NumbersPart(count))
    return rebuilt.parts


class _Rebuild:
    """Parts accumulated message by message; tool results find their call's row by id."""

    def __init__(self, include_prompts: bool, position: CellPosition | None) -> None:
        self.include_prompts = include_prompts
        self.position = position
        self.parts: list[Part] = []
        self.tools: dict[str, ToolPart] = {}

    def message(self, message: Message, unfound: dict[int, list[Claim]] | None = None) -> None:
        """Add the parts of `message`; `unfound` holds its text blocks' unfound numbers."""
        parts = self.parts
        if message.role == "user":
            prompt = self.include_prompts and message.is_prompt()
            context: list[ContextPart] = []
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    _apply_result(self.tools.get(block.tool_use_id), block)
                elif not prompt:
                    continue
                elif isinstance(block, TextBlock) and not is_context_text(block.text):
                    parts.append(PromptPart(block.text))
                elif isinstance(block, TextBlock):  # labelled as what it is: see `context_view`
                    context.append(ContextPart(block.text))
                elif isinstance(block, ImageBlock):
                    if not context or not context[-1].text.startswith("<notebook-data"):
                        context.append(ContextPart(""))
                    context[-1].images.append(block)
            # The prompt's UserPromptSubmit hooks, where the live view showed them; then what
            # the prompt carried for the model, folded.
            parts += [NoticePart(notice) for notice in message.hooks or []]
            parts += context
            return
        for index, block in enumerate(message.content):
            if isinstance(block, TextBlock):
                parts.append(TextPart(block.text, (unfound or {}).get(index, [])))
            elif isinstance(block, ThinkingBlock):
                parts.append(ThinkingPart(block.thinking))
            elif isinstance(block, ToolUseBlock):
                part = tool_part(block.id, block.name, block.input, self.position)
                self.tools[block.id] = part
                parts.append(part)
        if message.interrupted:
            parts.append(NoticePart("**interrupted**"))


def tool_part(call_id: str, name: str, tool_input: dict[str, Any], position: CellPosition | None = None) -> ToolPart:
    """The row of a tool call; a plan update or a skill load carries what it shows when done."""
    part = ToolPart(
        id=call_id, summary=summarize_call(name, tool_input, position), name=name, hint=cells_named(name, tool_input)
    )
    part.plan = plan_set(name, tool_input)
    part.skill = skill_loaded(name, tool_input)
    if (cls := builtin_tool(name)) is not None and (code := cls.kernel_code(tool_input)) is not None:
        part.code = code
    return part


def _apply_result(part: ToolPart | None, block: ToolResultBlock) -> None:
    if part is None:
        return
    content = block.content if isinstance(block.content, str) else "\n".join(
        b.text for b in block.content if isinstance(b, TextBlock)
    )
    if not isinstance(block.content, str):
        part.images = [b for b in block.content if isinstance(b, ImageBlock)]
    part.output = content
    part.status = "error" if block.is_error else "done"
    part.diff = block.diff
    part.seconds = block.duration
    part.hooks = list(block.hooks or [])
    part.variables = changes_of(block.variables)
    part.receipts = receipts_lines(block.receipts)
