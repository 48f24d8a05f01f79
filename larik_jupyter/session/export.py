"""Markdown export of the canonical transcript: every message, tool call and result, compaction
markers and interrupted turns, rendered from the entries (never from a view's projection), with
every secret the caller's `Redactor` knows replaced by its marker."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from larik_jupyter.errors import LarikError
from larik_jupyter.llm.messages import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    is_context_text,
)
from larik_jupyter.llm.pricing import cost_label
from larik_jupyter.redaction import Redactor
from larik_jupyter.session.call_summary import CellPosition, positions_in_files
from larik_jupyter.session.context_view import context_view
from larik_jupyter.session.corrupt import session_id_of
from larik_jupyter.session.entry_list import EntryList
from larik_jupyter.session.new_file import write_new, write_numbered
from larik_jupyter.session.numbers import Claim, footer, mark, trace_entries
from larik_jupyter.session.plan import checklist, progress
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.receipts import receipts_lines
from larik_jupyter.session.state import replay, undone_notice
from larik_jupyter.session.summary import prompts_before
from larik_jupyter.session.variable_changes import changes_of, changes_text
from larik_jupyter.tools.calls import cells_named, plan_set, skill_loaded, summarize_call


class ExportExistsError(LarikError):
    """Export never overwrites a file."""


def code_fence(text: str, lang: str = "") -> str:
    """`text` as a Markdown code block whose fence is longer than any backtick run inside."""
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def _render_result(block: ToolResultBlock, call: ToolUseBlock | None) -> str:
    """A tool result; a plan update shows its checklist and a skill load says so."""
    body = code_fence(block.text(image="[image]"))
    if call is not None and not block.is_error:
        if (todos := plan_set(call.name, call.input)) is not None:
            return f"**Plan updated** for `{block.tool_use_id}` · {progress(todos)}\n\n{checklist(todos)}"
        if (name := skill_loaded(call.name, call.input)) is not None:
            return f"**Tool result** for `{block.tool_use_id}`: loaded skill {name}\n\n{body}"
    label = "**Tool error**" if block.is_error else "**Tool result**"
    return f"{label} for `{block.tool_use_id}`\n\n{body}"


def image_markdown(block: ImageBlock) -> str:
    """An image block as a Markdown image (a data URL for base64 data)."""
    source = block.source
    media = source.get("media_type", "image")
    if source.get("type") == "base64":
        return f"![{media}](data:{media};base64,{source.get('data', '')})"
    return f"![{media}]({source.get('url', '')})"


def _folded(text: str) -> str:
    label, body = context_view(text)
    return f"<details><summary>{label[:1].upper() + label[1:]}</summary>\n\n{code_fence(body)}\n\n</details>"


def _code_span(text: str) -> str:
    """`text` as one Markdown code span, however many backticks it holds."""
    ticks = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _render_message(
    message: Message,
    calls: dict[str, ToolUseBlock],
    unfound: dict[int, list[Claim]] | None = None,
    position: CellPosition | None = None,
) -> list[str]:
    """A message's blocks; `unfound` marks the numbers of its text blocks (by block index)
    that no output of the turn supports; `position` numbers the cells tool calls name."""
    out: list[str] = []
    prompt = message.is_prompt()
    for index, block in enumerate(message.content):
        if isinstance(block, TextBlock):
            folded = prompt and is_context_text(block.text)
            if unfound and index in unfound:
                out.append(mark(block.text, unfound[index]))
            else:
                out.append(_folded(block.text) if folded else block.text)
        elif isinstance(block, ThinkingBlock):
            out.append("\n".join(["> *Thinking*", ">", *(f"> {line}" for line in block.thinking.splitlines())]))
        elif isinstance(block, RedactedThinkingBlock):
            out.append("> *Thinking (redacted)*")
        elif isinstance(block, ToolUseBlock):
            calls[block.id] = block
            payload = json.dumps(block.input, indent=2, ensure_ascii=False)
            said = _code_span(summarize_call(block.name, block.input, position))
            ids = ", ".join(filter(None, [f"`{block.id}`", cells_named(block.name, block.input)]))
            out.append(f"**Tool call** {said} ({ids})\n\n{code_fence(payload, 'json')}")
        elif isinstance(block, ToolResultBlock):
            out.append(_render_result(block, calls.get(block.tool_use_id)))
            if not isinstance(block.content, str):
                out += [image_markdown(b) for b in block.content if isinstance(b, ImageBlock)]
            out += [_hook_notice(notice) for notice in block.hooks or []]
            if changes := changes_of(block.variables):
                out.append(f"*Variables:* {changes_text(changes)}")
            out += [f"*Receipt:* {line}" for line in receipts_lines(block.receipts)]
        elif isinstance(block, ImageBlock):
            out.append(image_markdown(block))
    for item in message.attachments or []:
        out.append(
            f"*Attached `{item.get('name')}` ({item.get('kind')}, {item.get('size')} bytes, "
            f"sha256 {str(item.get('sha256', ''))[:12]}…)*"
        )
    out += [_hook_notice(notice) for notice in message.hooks or []]
    if message.interrupted:
        out.append("*⚠ Interrupted: this reply was cut short.*")
    return out


def _hook_notice(text: str) -> str:
    """A hook's notice as a quote (its output may span lines)."""
    return "\n".join(f"> {line}".rstrip() for line in f"*Hook:* {text}".splitlines())


def _traced_numbers(entries: EntryList) -> tuple[dict[int, dict[int, list[Claim]]], dict[int, str]]:
    """Each turn's numbers traced (see `session/numbers.py`): the unfound ones by entry index
    and block index, and each turn's count line keyed by the entry index where it ends."""
    unfound, turns = trace_entries((i, entries[i]) for i in range(1, len(entries)))
    footers = {last + 1: f"{footer(traced.count)}: {', '.join(traced.texts())}" for last, traced in turns.items()}
    return unfound, footers


def render_markdown(path: Path, entries: EntryList, *, redactor: Redactor) -> str:
    """The Markdown transcript of a session's entries, its secrets redacted by `redactor`."""
    state = replay(entries)
    meta = state.meta
    lines = [f"# Session {session_id_of(path)}", ""]
    lines.append(f"- Directory: `{meta.cwd}`")
    if meta.model:
        lines.append(f"- Model: `{':'.join(filter(None, (meta.provider, meta.model)))}`")
    if meta.fork_of:
        shared = prompts_before(state.prompt_positions, meta.fork_at)
        lines.append(f"- Forked from `{meta.fork_of}` " + (f"after prompt {shared}" if shared else "at the start"))
    if entries.raw(0).get("time"):
        lines.append(f"- Started: {entries.raw(0)['time']}")
    usage = state.usage
    lines.append(f"- Tokens: {usage.input_tokens} in, {usage.output_tokens} out")
    lines.append(f"- Cost: {cost_label(state.cost)}")
    turn = 0
    calls: dict[str, ToolUseBlock] = {}
    position = positions_in_files(Path(meta.cwd))  # cells named by where they stand in the file
    unfound, footers = _traced_numbers(entries)
    for index in range(1, len(entries)):
        entry = entries[index]
        if index in footers:
            lines += ["", f"*{footers[index]}*"]
        if entry.type == "compaction":
            lines += ["", "---", "", "*Context compacted; the model continued from this summary:*", ""]
            lines += [f"> {line}" for line in (entry.summary or "").splitlines()]
        elif entry.type == "message" and entry.message is not None:
            message = entry.message
            if message.is_prompt():
                turn += 1
                heading = f"## {turn}. User" + (" (undone)" if turn in state.undone else "")
            elif message.role == "user":
                heading = "### Tool results"
            else:
                heading = "### Assistant"
            when = f" · {entry.time}" if entry.time else ""
            lines += ["", f"{heading}{when}", ""]
            lines.append("\n\n".join(_render_message(message, calls, unfound.get(index), position)))
        # A turn's closing usage entry keeps what its Stop hooks printed.
        for notice in entry.hooks or []:
            lines += ["", _hook_notice(notice)]
        lines += [line for n in entry.undone or [] for line in ("", f"*{undone_notice(n)}*")]
    if len(entries) in footers:
        lines += ["", f"*{footers[len(entries)]}*"]
    if state.interrupted:
        lines += ["", f"*⚠ The session ended in an interrupted turn: {state.interrupted}.*"]
    return redactor.text("\n".join(lines) + "\n")


def export_markdown(
    path: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    cwd: str | os.PathLike[str],
    redactor: Redactor,
) -> Path:
    """Write a session's Markdown transcript, its secrets redacted by `redactor`, and return
    where it went.

    Default: `<cwd>/.larik/exports/<id>.md`, or `<id>-2.md`, `<id>-3.md`, … if taken. An
    explicit `out` (relative to `cwd`) that exists is refused.
    """
    path = Path(path)
    text = render_markdown(path, load_entries(path).entries, redactor=redactor)
    if out is not None:
        target = Path(cwd) / Path(out).expanduser()
        try:
            write_new(target, text)
        except FileExistsError:
            raise ExportExistsError(f"{target} already exists; export never overwrites, so choose another path.") from None
        return target
    return write_numbered(Path(cwd) / ".larik" / "exports", session_id_of(path), ".md", text)
