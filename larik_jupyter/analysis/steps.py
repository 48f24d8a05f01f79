"""The steps of a branch, in order: its prompts, the agent's replies, the code it ran in the
kernel (`python`, `notebook_run`), the files it wrote or edited (with the content each call
left), shell commands, and notes for calls that did not run. Read from the transcript; the
content an `edit` started from comes from an earlier write of the branch or, failing that,
from the checkpoint snapshot taken before the turn."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from larik_jupyter.checkpoint.errors import CheckpointError
from larik_jupyter.checkpoint.store import CheckpointStore
from larik_jupyter.errors import LarikError, ToolError
from larik_jupyter.frames.receipt import Receipt, receipts_of
from larik_jupyter.llm.messages import ImageBlock, TextBlock, ToolResultBlock, ToolUseBlock
from larik_jupyter.nbjson.cells import source_text
from larik_jupyter.nbjson.read import NotebookUnreadable, cell_list, read_notebook
from larik_jupyter.paths import project_root
from larik_jupyter.session import catalog
from larik_jupyter.session.call_summary import positions_in_files
from larik_jupyter.session.context_view import without_envelopes
from larik_jupyter.session.corrupt import session_id_of
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.receipts import without_receipts
from larik_jupyter.session.state import INTERRUPTED_TOOL_RESULT, replay
from larik_jupyter.session.summary import first_line, summary
from larik_jupyter.tools.calls import summarize_call, tool_class
from larik_jupyter.tools.check import names_of_cell
from larik_jupyter.tools.files import TextTool

StepKind = Literal["user", "prompt", "reply", "code", "file", "shell", "note"]

# Lines a tool appends about images and rich display: not output of the code (sessions stored
# before the counted wording say `1 image(s) attached`).
_NOTE_LINE = re.compile(
    r"^\[([\d,]+ image(s|\(s\))? attached to this result|shown to the user as rich output|image .*"
    r"(not sent|omitted).*|the value renders only as SVG.*)\]$"
)
_RUN_HEAD = re.compile(r"^Ran cell \S+ of .+ as In \[\d*\]; its outputs are in .*$")
# The last line of a traceback: what the code raised.
_RAISED = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Iteration)\b(?::.*)?$")


class AtError(LarikError):
    """`--at N` names no prompt of the branch."""


@dataclass
class Step:
    """One step of a branch. `text` is the prompt, reply or note (Markdown), the code (the
    user's own, for a `user` step: a cell run in the kernel before prompt `prompt` that the
    branch's code relies on), the file content or the command; `recorded` the output text the
    call returned (tool notes about images removed) and `images` its images; `error` the
    exception a call (or user cell) raised when recorded, expected again; `path` the file a
    write left; `tool` the name of the tool called and `summary` its one-line summary (as every
    view names a call: `python: total = df.revenue.sum()`); `undone` marks a step of a prompt an undo
    put back, kept only when asked (`include_undone`); `receipts` what the code's joins,
    filters, groups and concats did to the rows when recorded (`frames/receipt.py`)."""

    kind: StepKind
    prompt: int
    text: str
    tool_use_id: str | None = None
    path: str | None = None
    tool: str | None = None
    recorded: str = ""
    images: list[ImageBlock] = field(default_factory=list)
    error: str | None = None
    undone: bool = False
    summary: str = ""
    receipts: list[Receipt] = field(default_factory=list)


@dataclass
class Branch:
    """A session's steps through its first `prompts` prompts; `cwd` is where it worked;
    `ended` the POSIX time of the session file's last entry; `undone` the prompts an undo put
    back (their steps left out, or kept marked `undone`)."""

    session_id: str
    path: Path
    cwd: Path
    prompts: int
    steps: list[Step]
    ended: float
    undone: list[int] = field(default_factory=list)


def undone_note(prompt_number: int, text: str, *, kept: bool) -> str:
    """The note a branch carries where prompt `prompt_number` (first line `text`) was undone."""
    why = f"*Prompt {prompt_number} (“{first_line(text, 80)}”) was undone in the session (`/undo` put its changes back), so "
    if kept:
        return why + "its code below is kept for reference, marked undone, and is not run.*"
    return why + "its code is left out (`--include-undone` keeps it, marked undone and not run).*"


def output_text(result: ToolResultBlock) -> str:
    """A call's output as the code printed it: the result's text without the tool's notes."""
    lines = [line for line in without_receipts(result.text()).split("\n") if not _NOTE_LINE.match(line)]
    text = "\n".join(lines).rstrip("\n")
    return "" if text == "(no output)" else text


def _images(result: ToolResultBlock) -> list[ImageBlock]:
    return [] if isinstance(result.content, str) else [b for b in result.content if isinstance(b, ImageBlock)]


def _outcome(result: ToolResultBlock | None) -> str | None:
    """Why a call did not run to success (denied, interrupted, failed), or None."""
    if result is None:
        return "was interrupted before it returned a result"
    if not result.is_error:
        return None
    text = result.text()
    if text.startswith(("Permission denied", "The user denied permission")):
        return "was denied"
    if text.startswith((INTERRUPTED_TOOL_RESULT, "Interrupted by the user")):
        return "was interrupted"
    return "failed"


def _raised(result: ToolResultBlock | None) -> str | None:
    """`Name: value` of the exception a failed run's code raised (its traceback's last line),
    or None when the call failed before its code ran."""
    lines = [line for line in (result.text() if result is not None else "").splitlines() if line.strip()]
    return lines[-1] if lines and _RAISED.match(lines[-1]) else None


def _call_label(call: ToolUseBlock, files: _Files) -> str:
    cls = tool_class(call.name)
    if cls is not None and (command := cls.shell_command(call.input)) is not None:
        return f"shell command `{first_line(command)}`"
    return f"call `{summarize_call(call.name, call.input, files.position)}`"


class _Files:
    """The content each file has after the branch's writes, as far as they can be known."""

    def __init__(self, cwd: Path, stores: list[tuple[CheckpointStore, int]]) -> None:
        self.cwd = cwd
        self.stores = stores
        # Cells named as they stand in the notebook files now (`cell 3`), as every view names them.
        self.position = positions_in_files(cwd)
        self.content: dict[str, str] = {}

    def key(self, raw: str) -> str:
        """The path as a cell names it: relative to the working directory when inside it."""
        full = Path(os.path.normpath(self.cwd / Path(raw).expanduser()))
        try:
            return full.relative_to(self.cwd).as_posix()
        except ValueError:
            return str(full)

    def before_turn(self, key: str, prompt_number: int) -> str | None:
        """The file as the checkpoint of the turn of prompt `prompt_number` saw it before the turn."""
        full = self.cwd / key
        for store, limit in self.stores:
            if prompt_number > limit:
                continue
            for turn in store.turns():
                if turn.prompt != prompt_number:
                    continue
                try:
                    data = store.original_bytes(turn.turn, full)
                except CheckpointError:
                    continue
                return "" if data is None else data.decode("utf-8", "replace")
        return None

    def apply(self, call: ToolUseBlock, tool: type[TextTool], prompt_number: int) -> tuple[str, str | None]:
        """The file's key and the content `call` left (None: unknown), by its tool's `new_text`."""
        key = self.key(str(call.input.get("path", "")))
        text = self.content.get(key)
        if text is None:
            text = self.before_turn(key, prompt_number)
        try:
            new = tool.new_text(text, call.input, key)
        except ToolError:
            return key, None
        self.content[key] = new
        return key, new


def _checkpoint_sources(path: Path) -> list[tuple[CheckpointStore, int]]:
    """The checkpoint stores holding this branch's turns, each with the last prompt it holds
    for the branch: the session's own, then along `fork_of` the sources of its copied prefix."""
    found: list[tuple[CheckpointStore, int]] = []
    limit = 1 << 30
    current: Path | None = path
    seen: set[str] = set()
    while current is not None and len(found) < 50:
        details = summary(current)
        sid = session_id_of(current)
        if sid in seen:
            break
        seen.add(sid)
        cwd = details.meta.cwd if details.meta else os.getcwd()
        try:
            found.append((CheckpointStore(sid, project_root(cwd)), limit))
        except (CheckpointError, OSError):
            pass
        source = details.meta.fork_of if details.meta else None
        if source is None:
            break
        limit = min(limit, details.fork_prompt or 0)
        try:
            current = catalog.resolve(source, cwd)
        except LarikError:
            current = None
    return found


def _run_source(call: ToolUseBlock, result: ToolResultBlock, cwd: Path) -> str | None:
    """The cell source a `notebook_run` call ran: stored with its result, else the cell of its
    notebook that carries the call's id in its `larik` metadata."""
    stored = getattr(result, "source", None)
    if isinstance(stored, str):
        return stored
    raw = call.input.get("path")
    if not isinstance(raw, str):
        return None
    try:
        cells = cell_list(read_notebook((cwd / raw).resolve(), raw).data) or []
    except (OSError, ValueError, NotebookUnreadable):
        return None
    for cell in cells:
        metadata = cell.get("metadata") if isinstance(cell, dict) else None
        larik = metadata.get("larik") if isinstance(metadata, dict) else None
        if isinstance(larik, dict) and larik.get("tool_use_id") == call.id:
            return source_text(cell)
    return None


def _run_output(result: ToolResultBlock) -> str:
    lines = without_envelopes(output_text(result)).split("\n")
    if lines and _RUN_HEAD.match(lines[0]):
        lines = lines[1:]
    text = "\n".join(lines)
    return "" if text == "(no output)" else text


def _tool_steps(
    call: ToolUseBlock, result: ToolResultBlock | None, prompt_number: int, files: _Files
) -> list[Step]:
    """What one tool call contributes to the branch."""
    steps = _call_steps(call, result, prompt_number, files)
    for step in steps:
        step.tool = call.name
        step.summary = summarize_call(call.name, call.input, files.position)
    return steps


def _call_steps(
    call: ToolUseBlock, result: ToolResultBlock | None, prompt_number: int, files: _Files
) -> list[Step]:
    tool = tool_class(call.name)
    if tool is not None and tool.read_only():  # it only looked: it leaves nothing a notebook needs
        return []
    why = _outcome(result)
    runs_code = tool is not None and tool.runs_user_code
    raised = _raised(result) if why == "failed" and runs_code else None
    if why is not None and raised is None:
        detail = f": {first_line(result.text())}" if result is not None and why == "failed" else ""
        return [Step("note", prompt_number, f"*The {_call_label(call, files)} {why}{detail}.*", call.id)]
    assert result is not None
    if tool is not None and runs_code and (code := tool.kernel_code(call.input)) is not None:
        return [Step("code", prompt_number, code, call.id, recorded=output_text(result), images=_images(result),
                     error=raised, receipts=receipts_of(result.receipts))]
    if tool is not None and runs_code:  # a notebook cell it ran
        source = _run_source(call, result, files.cwd)
        if source is None:
            return [Step("note", prompt_number, f"*The {_call_label(call, files)} ran a notebook cell whose source "
                         "is no longer known; it is left out.*", call.id)]
        return [Step("code", prompt_number, source, call.id, recorded=_run_output(result),
                     images=_images(result), error=raised, receipts=receipts_of(result.receipts))]
    if tool is not None and issubclass(tool, TextTool):
        key, content = files.apply(call, tool, prompt_number)
        if content is None:
            return [Step("note", prompt_number, f"*The {_call_label(call, files)} is not recreated: the file's "
                         "content before it is in neither the transcript nor the checkpoints.*", call.id)]
        return [Step("file", prompt_number, content, call.id, path=key)]
    if tool is not None and (command := tool.shell_command(call.input)) is not None:
        return [Step("shell", prompt_number, command, call.id, recorded=output_text(result))]
    return [Step("note", prompt_number, f"*The agent called {_call_label(call, files)}; it is not part of the "
                 "analysis.*", call.id)]


def read_branch(id_or_path: str | os.PathLike[str], *, prompt_number: int | None = None,
                cwd: str | os.PathLike[str] | None = None, include_undone: bool = False) -> Branch:
    """The steps of a session (an id, looked up in `cwd`'s folder first, or a file path), up
    to and including prompt `prompt_number` (1-based). A prompt an undo put back is a note
    (`undone_note`) in place of its prompt, replies and calls, which `include_undone` keeps
    after the note, marked `undone`; the user's cells before it stay (they were not undone),
    and its writes never count as a file's content for later edits."""
    path = catalog.resolve(id_or_path, cwd)
    entries = load_entries(path).entries
    state = replay(entries)
    workdir = Path(state.meta.cwd)
    total = len(state.prompt_positions)
    if prompt_number is not None and not 1 <= prompt_number <= total:
        raise AtError(
            f"Session {session_id_of(path)} has {total} prompt{'s' if total != 1 else ''}; "
            f"--at takes a prompt number from 1 to {total}, not {prompt_number}."
        )
    files = _Files(workdir, _checkpoint_sources(path))
    results = {r.tool_use_id: r for m in state.all for r in m.tool_results()}
    steps: list[Step] = []
    number = 0
    undone = False
    for message in state.all:
        if message.is_prompt():
            if prompt_number is not None and number >= prompt_number:
                break
            number += 1
            undone = number in state.undone
            steps += _user_steps(message.cells or [], number)
            if undone:
                steps.append(Step("note", number, undone_note(number, message.prompt_text(), kept=include_undone)))
            if include_undone or not undone:
                steps.append(Step("prompt", number, message.prompt_text(), undone=undone))
            continue
        if message.role != "assistant" or (undone and not include_undone):
            continue
        reply = "".join(b.text for b in message.content if isinstance(b, TextBlock)).strip()
        if reply:
            steps.append(Step("reply", number, reply, undone=undone))
        kept = dict(files.content)
        for call in message.tool_uses():
            for step in _tool_steps(call, results.get(call.id), number, files):
                step.undone = undone
                last = steps[-1]
                if step.kind == "file" and last.kind == "file" and (last.path, last.prompt) == (step.path, number):
                    steps[-1] = step  # one cell with the content the turn's run of writes left
                else:
                    steps.append(step)
        if undone:
            files.content = kept  # what an undone turn wrote was put back
    upto = prompt_number if prompt_number is not None else total
    return Branch(session_id_of(path), path, workdir, upto, _relied_on(steps), _ended(entries, path),
                  sorted(n for n in state.undone if n <= upto))


def _user_steps(cells: list[Any], prompt_number: int) -> list[Step]:
    """The user's cells a prompt recorded (see `Message.cells`), as `user` steps."""
    steps = []
    for cell in cells:
        source = cell.get("source") if isinstance(cell, dict) else None
        if isinstance(source, str) and source.strip():
            error = cell.get("error")
            steps.append(Step("user", prompt_number, source, error=error if isinstance(error, str) else None))
    return steps


def _relied_on(steps: list[Step]) -> list[Step]:
    """`steps` keeping only the user cells the branch relies on: those binding a name that
    later code (the agent's, or a user cell kept) reads."""
    needed: set[str] = set()
    kept: list[Step] = []
    for step in reversed(steps):
        if step.kind in ("code", "user") and not step.undone:
            defines, uses = names_of_cell(step.text)
            if step.kind == "user" and not defines & needed:
                continue
            needed = (needed - defines) | uses
        kept.append(step)
    return kept[::-1]


def _ended(entries: Sequence[Entry], path: Path) -> float:
    """When the session last wrote: its last entry's time (the file's when none can be read)."""
    for entry in reversed(entries):
        try:
            return datetime.fromisoformat(entry.time).timestamp()
        except (TypeError, ValueError):
            continue
    return path.stat().st_mtime
