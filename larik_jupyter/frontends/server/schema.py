"""The JSON shapes the `/larik/api/` endpoints answer and accept, declared once: the sidebar's
TypeScript types (`labextension/src/rest.ts`) are generated from these models (`python -m
larik_jupyter.frontends.server.schema > labextension/src/rest.ts`; a test keeps the file equal to the
output). The fork tree's nodes are the session layer's own `TreeNode`."""

from __future__ import annotations

import sys
from typing import Any

from pydantic import BaseModel, ConfigDict, field_serializer
from pydantic.json_schema import models_json_schema

from larik_jupyter.api import TreeNode, TurnChange
from larik_jupyter.api import typescript_declarations as declarations
from larik_jupyter.api import typescript_module as module
from larik_jupyter.approval_wire import ApprovalAnswer, PageApprovals
from larik_jupyter.frontends.server.page_entries import PageEntry


class SessionOut(BaseModel):
    """One session of a directory, as the sidebar lists it."""

    id: str
    time: str
    updated: str = ""  # when it was last written to (its last entry's time, UTC)
    held: bool = False  # a live kernel or process has it open for writing
    model: str | None = None  # its current model (after `/model`), `provider:model`
    cost_label: str = ""  # what it cost, as every view says it (`llm.pricing.cost_label`)
    first_prompt: str
    message_count: int
    fork_of: str | None = None
    fork_at: int | None = None
    fork_prompt: int | None = None  # a branch's last prompt shared with its source: what people read
    size: int
    error: str | None = None
    delete_token: str


class SessionList(BaseModel):
    """`GET /larik/api/sessions`: a directory's sessions and their fork tree."""

    cwd: str
    sessions: list[SessionOut]
    tree: list[TreeNode]


class UnfoundNumber(BaseModel):
    """A number a reply states that no output of its turn supports: its text and where it stands
    in the text block (`start`, `end` in UTF-16 code units, as JavaScript indexes strings)."""

    start: int
    end: int
    text: str


class UnfoundInBlock(BaseModel):
    """The unfound numbers of one assistant text block of the page."""

    entry: int  # the entry's index in the transcript
    block: int  # the text block's index in the message's content
    numbers: list[UnfoundNumber]


class UnfoundCount(BaseModel):
    """A turn's count line, shown after its last message (`entry`, an index in the transcript)."""

    entry: int
    count: int
    text: str  # "2 numbers not found in this turn's outputs"
    numbers: list[str]


class EgressTurn(BaseModel):
    """What the requests of one prompt's turn sent, from the session's egress ledger."""

    prompt: int
    requests: int
    bytes: int
    withheld: list[str]  # "df (schema) ×2"
    text: str  # "Sent 3 requests, 14.2 KiB · withheld df (schema) ×2"


class TranscriptPage(BaseModel):
    """`GET /larik/api/sessions/<id>`: a slice of the canonical transcript's entries, with the
    numbers of its replies that no output of their turn supports (`session/numbers.py`)."""

    id: str
    total: int
    offset: int
    limit: int
    entries: list[PageEntry]
    unfound: list[UnfoundInBlock] = []
    unfound_counts: list[UnfoundCount] = []
    egress: list[EgressTurn] = []  # every turn of the session with a ledger line, by prompt

    @field_serializer("entries", when_used="json")
    def _as_in_the_file(self, entries: list[PageEntry]):  # noqa: ANN202 - unannotated: the schema stays `PageEntry`'s
        # Empty fields left out, as the session file holds them.
        return [entry.to_json() for entry in entries]


class CheckpointTurn(BaseModel):
    """A turn of the session's undo list (`agent.undo_list`, the one every view renders): its
    files and cells (`ListedTurn.changes`, the one record of them every view shows) with diffs,
    its kernel variables, its `state` (`undoable`, `files only`, `not undoable`) and the `note`
    saying why not all."""

    turn: int
    prompt: int | None = None  # the prompt that began it: what the sidebar shows
    label: str = ""
    files: list[TurnChange]
    variables: list[str] = []
    state: str = "undoable"
    note: str | None = None


class Checkpoints(BaseModel):
    """`GET /larik/api/sessions/<id>/checkpoints`: undoable turns, newest first, what to
    say when there are none (`empty`: the undo report's words), and the prompts already undone
    (`undone`, 1-based, as the session records them)."""

    id: str
    turns: list[CheckpointTurn]
    empty: str
    undone: list[int] = []


class NotebookRequest(BaseModel):
    """`POST /larik/api/sessions/<id>/notebook`: write the branch up to prompt `at` (all: null)."""

    model_config = ConfigDict(extra="forbid")

    at: int | None = None


class NotebookWritten(BaseModel):
    """Where the new notebook went, relative to the server root (what the page opens)."""

    path: str


class DeleteRequest(BaseModel):
    """`POST /larik/api/sessions/<id>/delete`: the token from the listing confirms the deletion."""

    model_config = ConfigDict(extra="forbid")

    token: str


# What the endpoints answer (every field is sent) and what they accept.
ANSWERS: tuple[type[BaseModel], ...] = (SessionList, TranscriptPage, Checkpoints, NotebookWritten, PageApprovals)
ACCEPTS: tuple[type[BaseModel], ...] = (NotebookRequest, DeleteRequest, ApprovalAnswer)


def typescript() -> str:
    """`labextension/src/rest.ts`: an interface per answer and request body, and per model in them."""
    _, answers = models_json_schema([(m, "serialization") for m in ANSWERS], ref_template="#/$defs/{model}")
    _, accepts = models_json_schema([(m, "validation") for m in ACCEPTS], ref_template="#/$defs/{model}")
    # A page's entries are sent as the session file holds them, empty fields left out.
    entries = _reached(answers["$defs"], PageEntry.__name__)
    rest = {name: schema for name, schema in answers["$defs"].items() if name not in entries}
    body = (
        declarations(rest, {}, all_required=True)
        + declarations({name: answers["$defs"][name] for name in sorted(entries)}, {}, omit_none=True)
        + declarations(accepts["$defs"], {})
    )
    return module("python -m larik_jupyter.frontends.server.schema", "larik_jupyter/frontends/server/schema.py", body)


def _reached(components: dict[str, Any], name: str) -> set[str]:
    """`name` and every component its schema refers to, at any depth."""
    found: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current not in found:
            found.add(current)
            todo += [ref.rsplit("/", 1)[-1] for ref in _refs(components[current])]
    return found


def _refs(schema: object) -> list[str]:
    if isinstance(schema, dict):
        own = [str(schema["$ref"])] if "$ref" in schema else []
        return own + [ref for value in schema.values() for ref in _refs(value)]
    if isinstance(schema, list):
        return [ref for value in schema for ref in _refs(value)]
    return []


if __name__ == "__main__":
    sys.stdout.write(typescript())
