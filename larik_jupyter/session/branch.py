"""Branches: fork a session at a turn boundary, rewind before a prompt, and the fork tree."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
from pydantic import BaseModel, Field

from larik_jupyter import paths
from larik_jupyter.errors import LarikError
from larik_jupyter.llm.messages import Message, ToolResultBlock, Usage
from larik_jupyter.plural import counted
from larik_jupyter.session.corrupt import CorruptSessionError, session_id_of
from larik_jupyter.session.entry import Entry, Meta
from larik_jupyter.session.outline import (
    CompactionEntryOutline,
    MessageEntryOutline,
    MetaEntryOutline,
    ToolUseOutline,
    UsageEntryOutline,
)
from larik_jupyter.session.reader import load_entries, prefix_boundary, read_meta
from larik_jupyter.session.state import INTERRUPTED_TOOL_RESULT, replay
from larik_jupyter.session.store import encode, write_new_file
from larik_jupyter.session.summary import summary


class BranchError(LarikError):
    """A fork or rewind that cannot be made where it was asked for."""


def _boundaries(prompts: list[int], end: int | None) -> list[int]:
    return sorted({*prompts, *(() if end is None else (end,))})


def fork(src_path: str | os.PathLike[str], keep: int | None = None) -> Path:
    """Copy the first `keep` messages of a session (default: all) into a new session in the
    sessions folder of the source's recorded cwd, wherever the source lies.

    `keep` must be a turn boundary: the end, or the index of a prompt. Compaction entries among
    the kept messages come along (unknown keys intact); usage does not, but the branch ends with
    one usage entry whose `undone` lists the copied prompts the source undid. When the last kept
    message asks for tool calls (the source stopped while they ran), the branch answers each
    with the interrupted error result resume sends, so it never ends in an unanswered call.
    The source is only read. A corrupt source can still be forked at an explicit boundary of
    its valid prefix.
    """
    src = Path(src_path)
    result = load_entries(src, prefix=True)
    entries = result.entries
    if not len(entries):
        assert result.error is not None  # load_entries reports a file without entries
        raise result.error
    prompts: list[int] = []
    count = 0
    outlines = [entries.outline(i) for i in range(len(entries))]
    for o in outlines:
        if type(o) is MessageEntryOutline:
            if o.message.is_prompt():
                prompts.append(count)
            count += 1
    end = count if result.error is None else prefix_boundary(outlines)
    boundaries = _boundaries(prompts, end)
    if keep is None:
        if result.error is not None:
            raise result.error  # the damaged file has no end to fork at; the error names a prefix boundary
        keep = count
    if keep not in boundaries:
        below = [b for b in boundaries if b < keep]
        above = [b for b in boundaries if b > keep]
        near = " or ".join(str(b) for b in (below[-1:] + above[:1]))
        damaged = f" (the file is damaged at line {result.error.line})" if result.error else ""
        raise BranchError(
            f"Cannot fork {session_id_of(src)} at message {keep}: it is not a turn boundary{damaged}; "
            f"the nearest valid boundaries are {near}."
        )

    first = outlines[0]
    assert type(first) is MetaEntryOutline
    src_meta = first.meta
    meta = Entry(
        type="meta",
        meta=Meta(
            cwd=src_meta.cwd,
            provider=src_meta.provider,
            model=src_meta.model,
            fork_of=session_id_of(src),
            fork_at=keep,
        ),
    )
    chunks = [encode(meta), b"\n"]
    parent = meta.id
    copied = 0
    last_message: MessageEntryOutline | None = None
    for index in range(1, len(entries)):
        outline = outlines[index]
        if type(outline) is MessageEntryOutline:
            if copied == keep:
                break
            copied += 1
            last_message = outline
        elif type(outline) is not CompactionEntryOutline:
            continue
        if outline.parent_id == parent:
            chunks += (entries.line(index), b"\n")  # byte for byte, unknown keys and all
        else:  # the entry before it was not copied: re-point its parent, keeping every other key
            data = entries.raw(index)
            data["parent_id"] = parent
            chunks += (orjson.dumps(data), b"\n")
        parent = outline.id
    unanswered = _calls_of(last_message)
    if unanswered:
        results = Entry(
            type="message",
            parent_id=parent,
            message=Message(
                role="user",
                content=[
                    ToolResultBlock(tool_use_id=call, content=INTERRUPTED_TOOL_RESULT, is_error=True)
                    for call in unanswered
                ],
            ),
        )
        chunks += (encode(results), b"\n")
        parent = results.id
    # An undo is done in the files and the kernel whenever it happened: a branch's copied
    # prompts that the source undid (before or after the branch point) stay undone.
    kept = sum(1 for at in prompts if at < keep)
    undone = sorted({n for o in outlines if type(o) is UsageEntryOutline for n in o.undone or () if n <= kept})
    if undone:
        chunks += (encode(Entry(type="usage", parent_id=parent, usage=Usage(), undone=undone)), b"\n")
    # Where every command looks for the branch's id, even when the source lies elsewhere.
    dest = paths.sessions_dir(src_meta.cwd) / f"{paths.new_session_id()}.jsonl"
    write_new_file(dest, b"".join(chunks))
    return dest


def _calls_of(message: MessageEntryOutline | None) -> list[str]:
    """The tool-call ids of `message` if it is an assistant message (nothing after it answers them)."""
    if message is None or message.message.role != "assistant":
        return []
    return [block.id for block in message.message.content if type(block) is ToolUseOutline]


def check_prompt(session_id: str, prompt_number: int, prompts: int) -> None:
    """Refuse a `prompt_number` that is not one of the session's `prompts` (1-based)."""
    if not 1 <= prompt_number <= prompts:
        raise BranchError(
            f"Session {session_id} has {counted(prompts, 'prompt')}; choose a prompt number from 1 to {prompts}."
        )


def rewind(src_path: str | os.PathLike[str], prompt_number: int) -> tuple[Path, str]:
    """Branch just before prompt `prompt_number` (1-based); returns the new file and that
    prompt's text."""
    src = Path(src_path)
    state = replay(load_entries(src).entries)
    prompts = state.prompt_positions
    check_prompt(session_id_of(src), prompt_number, len(prompts))
    index = prompts[prompt_number - 1]
    return fork(src, index), state.all[index].prompt_text()


def fork_after(src_path: str | os.PathLike[str], prompt_number: int | None = None) -> Path:
    """Branch after the turn of prompt `prompt_number` (1-based; None: at the end); the source
    is only read, so it may be held by another process."""
    src = Path(src_path)
    if prompt_number is None:
        return fork(src)
    prompts = replay(load_entries(src).entries).prompt_positions
    check_prompt(session_id_of(src), prompt_number, len(prompts))
    return fork(src, prompts[prompt_number] if prompt_number < len(prompts) else None)


class PromptInfo(BaseModel):
    """One prompt of a session: its message position, first line, whole text (what a search
    matches), time, and whether an undo put its turn back (`undone`)."""

    position: int
    first_line: str
    text: str = ""
    time: str | None = None
    undone: bool = False


class TreeNode(BaseModel):
    """One session in a working directory's fork tree. A branch carries `fork_prompt` (the
    last prompt it shares with its source, 0 before the first) and `parent_deleted` when its
    source is no longer among the directory's sessions (it is then a root). The one model of a
    node: the REST API answers it and the sidebar's types are generated from it."""

    id: str
    # The session file: never serialised (the browser never needs the data directory's location).
    path: str = Field(exclude=True)
    fork_of: str | None = None
    fork_at: int | None = None
    fork_prompt: int | None = None
    parent_deleted: bool = False
    prompts: list[PromptInfo] = Field(default_factory=list)
    interrupted: str | None = None
    compactions: list[int] = Field(default_factory=list)
    error: str | None = None
    children: list[TreeNode] = Field(default_factory=list)


def fork_label(
    fork_of: str | None, fork_prompt: int | None, parent_deleted: bool = False, *, name_source: bool = False
) -> str | None:
    """How people read where a branch came from: by prompt number ("branched after prompt 3"),
    naming the source when asked or when it was deleted; None for a session that is no branch."""
    if fork_of is None:
        return None
    where = f"after prompt {fork_prompt}" if fork_prompt else "at the start"
    source = f" of {fork_of}" if name_source or parent_deleted else ""
    return f"branched {where}{source}" + (", which was deleted" if parent_deleted else "")


def _node(path: Path) -> TreeNode:
    s = summary(path)
    return TreeNode(
        id=s.id,
        path=str(s.path),
        fork_of=s.meta.fork_of if s.meta else None,
        fork_at=s.meta.fork_at if s.meta else None,
        fork_prompt=s.fork_prompt,
        prompts=[PromptInfo(position=p.position, first_line=p.first_line, text=p.text, time=p.time, undone=p.undone) for p in s.prompts],
        interrupted=s.interrupted,
        compactions=list(s.compactions),
        error=s.error,
    )


def _owner(node: TreeNode, nodes: dict[str, TreeNode]) -> TreeNode | None:
    """The session whose own prompt `node` branched after: its source, or, when it branched
    inside the prefix its source copied (`/rewind 1` on a branch), the session that prefix
    came from, so it hangs beside its source rather than under it."""
    parent = nodes.get(node.fork_of) if node.fork_of else None
    seen = {node.id}
    while parent is not None and parent.id not in seen and parent.fork_of in nodes:
        if (node.fork_prompt or 0) > (parent.fork_prompt or 0):
            break
        seen.add(parent.id)
        parent = nodes[parent.fork_of]
    return None if parent is None or parent.id in seen else parent


def fork_tree(cwd: str | os.PathLike[str]) -> list[TreeNode]:
    """The sessions of `cwd` as a forest, oldest first: each branch under the session whose own
    prompt it branched after (its source, or the source's source for a branch made inside the
    prompts its source copied; `fork_of` still names the source)."""
    folder = paths.sessions_dir(cwd)
    files = sorted(p for p in folder.glob("*.jsonl") if paths.is_session_id(session_id_of(p))) if folder.is_dir() else []
    nodes = {n.id: n for n in map(_node, files)}
    roots: list[TreeNode] = []
    for node in nodes.values():
        node.parent_deleted = bool(node.fork_of) and node.fork_of not in nodes
        parent = _owner(node, nodes)
        (parent.children if parent is not None else roots).append(node)
    return roots


def ancestors(path: Path) -> list[Path]:
    """The session files `path` was forked from, oldest first (those still in its folder and
    readable; a circle or a missing source ends the walk)."""
    found: list[Path] = []
    current = path
    while len(found) < 100:
        try:
            source = read_meta(current).fork_of
        except (OSError, CorruptSessionError):
            break
        parent = path.with_name(f"{source}.jsonl") if source else None
        if parent is None or parent == path or parent in found or not parent.is_file():
            break
        found.append(parent)
        current = parent
    return found[::-1]
