"""Where content came from, marked on the block where it is made.

A tag is the block's `egress` field (stored with the session, never sent): `sources`, the
ids of what the whole content was made from (`variable:df`, `file:data/x.csv`); `spans`, parts
of its text made from others (`[[start, end, ["variable:df"]]]`, offsets in the text as
stored: a cell's outputs among a notebook's); and `views`, what each restricted source's policy
let out of it when the content was made (`{"variable:df": {"policy": "schema", "text": "df:
DataFrame, shape 3 x 2 …"}}`), so the door can send that in place of the content without the
value at hand.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from larik_jupyter.egress.policy import Policy, PolicySet
from larik_jupyter.egress.views import file_view, value_view

B = TypeVar("B", bound=BaseModel)
# How much of a file is read to make its view.
VIEW_BYTES = 1024 * 1024


def variable_source(name: str) -> str:
    return f"variable:{name}"


def file_source(rel: str) -> str:
    return f"file:{rel}"


def source_label(source: str) -> str:
    """How a source is named to the model and in the ledger: `df`, `data/x.csv`."""
    return source.partition(":")[2] or source


View = dict[str, dict[str, str]]
Span = tuple[int, int, list[str]]


@dataclass
class Tag:
    """What a piece of content was made from (see the module's docstring)."""

    sources: list[str] = field(default_factory=list)
    views: View = field(default_factory=dict)
    spans: list[Span] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.sources or self.spans)

    def __or__(self, other: Tag) -> Tag:
        return Tag(
            list(dict.fromkeys(self.sources + other.sources)), self.views | other.views, self.spans + other.spans
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.sources:
            out["sources"] = list(dict.fromkeys(self.sources))
        if self.spans:
            out["spans"] = [[a, b, list(s)] for a, b, s in self.spans]
        if self.views:
            out["views"] = self.views
        return out


def tagged(block: B, tag: Tag | None) -> B:
    """`block` carrying `tag` (unchanged when there is none)."""
    if not tag:
        return block
    return block.model_copy(update={"egress": tag.to_json()})


def tag_of(block: object) -> Tag:
    """The tag a block carries (empty when it has none, or a malformed one)."""
    extra = getattr(block, "model_extra", None) or {}
    raw = extra.get("egress")
    if not isinstance(raw, dict):
        return Tag()
    sources = [s for s in raw.get("sources", []) if isinstance(s, str)]
    views = raw.get("views") if isinstance(raw.get("views"), dict) else {}
    spans: list[Span] = []
    for span in raw.get("spans", []) if isinstance(raw.get("spans"), list) else []:
        if isinstance(span, list) and len(span) == 3 and isinstance(span[0], int) and isinstance(span[1], int):
            spans.append((span[0], span[1], [s for s in span[2] if isinstance(s, str)]))
    return Tag(sources, views or {}, spans)




def _view_policy(policy: Policy) -> Policy:
    # A source not restricted now keeps its schema, in case a later rule restricts it.
    return policy if policy.restricted else Policy("schema")


def variable_tag(policies: PolicySet, values: dict[str, object]) -> Tag:
    """The tag of content made from the variables `values` (name -> value)."""
    tag = Tag()
    for name, value in values.items():
        source = variable_source(name)
        tag.sources.append(source)
        policy = _view_policy(policies.for_variable(name).policy)
        if policy.kind != "never" and (text := value_view(name, value, policy)):
            tag.views[source] = {"policy": str(policy), "text": text}
    return tag


def file_tag(policies: PolicySet, rel: str, text: str) -> Tag:
    """The tag of content read from the file at `rel` holding `text`."""
    source = file_source(rel)
    policy = _view_policy(policies.for_file(rel).policy)
    view = file_view(rel, text, policy) if policy.kind != "never" else ""
    return Tag([source], {source: {"policy": str(policy), "text": view}} if view else {})


def files_tag(policies: PolicySet, root: Path, rels: list[str]) -> Tag:
    """The tag of content made from the files at `rels` (relative to `root`): each is read
    (its first `VIEW_BYTES`, no link followed) only for the view."""
    tag = Tag()
    for rel in rels:
        try:
            fd = os.open(root / rel, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as handle:
                text = handle.read(VIEW_BYTES).decode("utf-8", errors="replace")
        except OSError:
            text = ""
        tag = tag | file_tag(policies, rel, text)
    return tag
