"""The fork tree of a working directory's sessions as an interactive widget (`%larik /tree`).

Each session lists its prompts in order; a branch (fork or rewind) hangs under the last prompt
it shares with its source, so siblings under a prompt are alternative continuations.
"""

from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import traitlets

from larik_jupyter.llm.messages import Usage
from larik_jupyter.llm.pricing import cost as price_cost
from larik_jupyter.notebook.widgets import actions
from larik_jupyter.notebook.widgets.live import SessionWidget, escape, refresh_all
from larik_jupyter.session.branch import TreeNode, fork_tree
from larik_jupyter.session.outline import (
    MessageEntryOutline,
    MetaEntryOutline,
    UsageEntryOutline,
)
from larik_jupyter.session.reader import load_entries

_HERE = pathlib.Path(__file__).parent


@dataclass
class _Turn:
    """What the fork tree does not hold about one prompt's turn."""

    tokens: dict[str, list[int]] = field(default_factory=dict)
    interrupted: bool = False

    def cost(self) -> float | None:
        total = 0.0
        for model, (i, o, r, w) in self.tokens.items():
            usage = Usage(
                input_tokens=i, output_tokens=o, cache_read_tokens=r, cache_write_tokens=w
            )
            spent = price_cost(model, usage)
            if spent is None:
                return None
            total += spent
        return total


@dataclass
class _Details:
    time: str | None = None
    model: str | None = None
    turns: dict[int, _Turn] = field(default_factory=dict)


def _details(path: Path) -> _Details:
    """Start time, model and per-prompt usage and interruptions of one session file."""
    result = load_entries(path, prefix=True)
    entries = result.entries
    details = _Details()
    if not len(entries):
        return details
    first = entries.outline(0)
    provider = None
    if type(first) is MetaEntryOutline:
        details.time, details.model, provider = first.time, first.meta.model, first.meta.provider
    turn: _Turn | None = None
    position = 0
    for index in range(1, len(entries)):
        o = entries.outline(index)
        if type(o) is MessageEntryOutline:
            message = o.message
            if message.is_prompt():
                turn = details.turns[position] = _Turn()
            elif turn is not None and message.interrupted:
                turn.interrupted = True
            position += 1
        elif type(o) is UsageEntryOutline and turn is not None:
            model = o.model or details.model or ""
            if ":" not in model and provider:
                model = f"{provider}:{model}"
            tokens = turn.tokens.setdefault(model, [0, 0, 0, 0])
            u = o.usage
            tokens[0] += u.input_tokens
            tokens[1] += u.output_tokens
            tokens[2] += u.cache_read_tokens
            tokens[3] += u.cache_write_tokens
    return details


def _shares(fork_at: int | None, index: int) -> bool:
    """Whether a branch made at message `fork_at` shares the message at `index`."""
    return fork_at is None or index < fork_at


def _session(node: TreeNode, counter: list[int]) -> dict[str, Any]:
    details = _details(Path(node.path))
    counter[0] += 1
    items: list[tuple[tuple[int, int], dict[str, Any]]] = []
    total: float | None = 0.0
    for n, prompt in enumerate(node.prompts, 1):
        turn = details.turns.get(prompt.index, _Turn())
        spent = turn.cost()
        total = None if total is None or spent is None else total + spent
        if node.fork_of and _shares(node.fork_at, prompt.index):
            continue  # the copied prefix: shown once, in the session it was forked from
        last = n == len(node.prompts)
        item = {
            "kind": "prompt",
            "n": n,
            "index": prompt.index,
            "text": prompt.first_line,
            "time": prompt.time,
            "cost": spent,
            "interrupted": turn.interrupted or bool(last and node.interrupted),
            "children": [],
        }
        items.append(((prompt.index, 1), item))
        counter[0] += 1
    for at in node.compactions:
        if not (node.fork_of and _shares(node.fork_at, at)):
            items.append(((at, 0), {"kind": "compaction", "at": at}))
    items.sort(key=lambda pair: pair[0])
    ordered = [item for _, item in items]
    prompts = [item for item in ordered if item["kind"] == "prompt"]
    children: list[dict[str, Any]] = []
    for child in node.children:
        data = _session(child, counter)
        shared = sum(1 for p in node.prompts if _shares(child.fork_at, p.index))
        data["branch"] = f"branched after prompt {shared}" if shared else "branched at the start"
        before = [p for p in prompts if _shares(child.fork_at, p["index"])]
        (before[-1]["children"] if before else children).append(data)
    return {
        "kind": "session",
        "id": node.id,
        "time": details.time,
        "model": details.model,
        "cost": total,
        "fork_of": node.fork_of,
        "fork_at": node.fork_at,
        "interrupted": node.interrupted,
        "error": node.error,
        "items": ordered,
        "children": children,
    }


def tree_data(cwd: str | os.PathLike[str], current: str | None = None) -> dict[str, Any]:
    """The JSON the tree widget renders: `roots` (sessions, oldest first), `current`, `count`."""
    counter = [0]
    roots = [_session(node, counter) for node in fork_tree(cwd)]
    return {"cwd": os.fspath(cwd), "current": current, "roots": roots, "count": counter[0]}


def _static(data: dict[str, Any]) -> str:
    current = data.get("current")

    def session(node: dict[str, Any]) -> str:
        mark = " <b>(current)</b>" if node["id"] == current else ""
        branch = f" <i>{escape(node['branch'])}</i>" if node.get("branch") else ""
        rows = []
        for item in node["items"]:
            if item["kind"] == "compaction":
                rows.append("<li><i>compacted</i></li>")
                continue
            stop = " <i>(interrupted)</i>" if item["interrupted"] else ""
            below = "".join(session(child) for child in item["children"])
            rows.append(
                f"<li>{item['n']}. {escape(item['text'])}{stop}"
                + (f"<ul>{below}</ul>" if below else "")
                + "</li>"
            )
        rows += [session(child) for child in node["children"]]
        return f"<li><code>{escape(node['id'])}</code>{branch}{mark}<ul>{''.join(rows)}</ul></li>"

    body = "".join(session(root) for root in data.get("roots", []))
    return f"<ul class='larik-tree-static'>{body}</ul>" if body else "<p>No sessions yet.</p>"


def _static_text(data: dict[str, Any]) -> str:
    current = data.get("current")
    lines: list[str] = []

    def session(node: dict[str, Any], depth: int) -> None:
        pad = "  " * depth
        branch = f" {node['branch']}" if node.get("branch") else ""
        lines.append(f"{pad}{node['id']}{branch}" + (" (current)" if node["id"] == current else ""))
        for item in node["items"]:
            if item["kind"] == "compaction":
                lines.append(f"{pad}  (compacted)")
                continue
            stop = " (interrupted)" if item["interrupted"] else ""
            lines.append(f"{pad}  {item['n']}. {item['text']}{stop}")
            for child in item["children"]:
                session(child, depth + 2)
        for child in node["children"]:
            session(child, depth + 1)

    for root in data.get("roots", []):
        session(root, 0)
    return "\n".join(lines) or "No sessions yet."


class ForkTreeWidget(SessionWidget):
    """The fork tree of the working directory's sessions, with rewind, fork and resume.

    Parameters: `magics` (the kernel's `LarikMagics`). The front end sends `rewind`,
    `fork` and `resume` messages; the same actions are the methods below. After a rewind the
    prompt's `%%larik` cell goes to the front end as `{"type": "insert_cell", "code": ...}`.
    """

    _esm = _HERE / "tree.js"
    _css = _HERE / "widgets.css"

    tree = traitlets.Dict(help="the fork tree as computed by `tree_data`").tag(sync=True)

    def actions(self) -> dict[str, Any]:
        return {
            "rewind": lambda m: self.rewind_here(str(m["session"]), int(m["prompt"])),
            "fork": lambda m: self.fork_here(
                str(m["session"]), None if m.get("prompt") is None else int(m["prompt"])
            ),
            "resume": lambda m: self.resume(str(m["session"])),
        }

    def refresh(self, memo: dict[tuple[Any, ...], Any] | None = None) -> None:
        key = ("tree", str(self.magics.cwd), self.current)
        memo = {} if memo is None else memo
        if key not in memo:
            memo[key] = tree_data(self.magics.cwd, self.current)
        self.tree = memo[key]

    def static_html(self) -> str:
        return _static(self.tree)

    def static_text(self) -> str:
        return _static_text(self.tree)

    def rewind_here(self, session_id: str, prompt_index: int) -> str:
        """Branch `session_id` before its prompt `prompt_index` (1-based, as `/rewind N`),
        continue there, and send that prompt as a new `%%larik` cell; returns the cell."""
        code = actions.rewind(self.magics, session_id, prompt_index)
        self.status = f"Rewound {session_id} to before prompt {prompt_index}; now on {self.current}."
        self.send({"type": "insert_cell", "code": code})
        refresh_all()
        return code

    def fork_here(self, session_id: str, prompt_index: int | None = None) -> Path:
        """Branch `session_id` after the turn of prompt `prompt_index` (default: its end) and
        continue on the branch; returns the branch's file."""
        path = actions.fork(self.magics, session_id, prompt_index)
        where = "its end" if prompt_index is None else f"prompt {prompt_index}"
        self.status = f"Forked {session_id} after {where}; now on {self.current}."
        refresh_all()
        return path

    def resume(self, session_id: str) -> None:
        """Continue `session_id` in this kernel, as `%larik /resume ID`."""
        actions.resume(self.magics, session_id)
        self.status = f"Resumed {session_id}."
        refresh_all()
