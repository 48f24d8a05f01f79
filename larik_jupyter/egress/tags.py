"""Where content came from, marked on the block where it is made.

A tag is the block's `egress` field (stored with the session, never sent): `sources`, the
ids of what the content was made from (`variable:df`, `file:data/x.csv`), and `views`, what
each restricted source's policy let out of it when the content was made (`{"variable:df":
{"policy": "schema", "text": "df: DataFrame, shape 3 x 2 …"}}`), so the door can send that
in place of the content without the value at hand.
"""

from __future__ import annotations

import os
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


def tagged(block: B, sources: list[str], views: dict[str, dict[str, str]] | None = None) -> B:
    """`block` carrying `sources` and `views` (nothing added when there are none)."""
    if not sources:
        return block
    tag: dict[str, Any] = {"sources": list(dict.fromkeys(sources))}
    if views:
        tag["views"] = views
    return block.model_copy(update={"egress": tag})


def tag_of(block: object) -> tuple[list[str], dict[str, dict[str, str]]]:
    """The sources and views a block was tagged with (empty when it was not)."""
    extra = getattr(block, "model_extra", None) or {}
    tag = extra.get("egress")
    if not isinstance(tag, dict):
        return [], {}
    sources = [s for s in tag.get("sources", []) if isinstance(s, str)]
    views = tag.get("views") if isinstance(tag.get("views"), dict) else {}
    return sources, views or {}


View = dict[str, dict[str, str]]


def _view_policy(policy: Policy) -> Policy:
    # A source not restricted now keeps its schema, in case a later rule restricts it.
    return policy if policy.restricted else Policy("schema")


def variable_tag(policies: PolicySet, values: dict[str, object]) -> tuple[list[str], View]:
    """The sources and views of content made from the variables `values` (name -> value)."""
    sources: list[str] = []
    views: View = {}
    for name, value in values.items():
        source = variable_source(name)
        sources.append(source)
        policy = _view_policy(policies.for_variable(name).policy)
        if policy.kind != "never" and (text := value_view(name, value, policy)):
            views[source] = {"policy": str(policy), "text": text}
    return sources, views


def file_tag(policies: PolicySet, rel: str, text: str) -> tuple[list[str], View]:
    """The source and view of content read from the file at `rel` holding `text`."""
    source = file_source(rel)
    policy = _view_policy(policies.for_file(rel).policy)
    view = file_view(rel, text, policy) if policy.kind != "never" else ""
    return [source], ({source: {"policy": str(policy), "text": view}} if view else {})


def files_tag(policies: PolicySet, root: Path, rels: list[str]) -> tuple[list[str], View]:
    """The sources and views of content made from the files at `rels` (relative to `root`):
    each is read (its first `VIEW_BYTES`, no link followed) only for the view."""
    sources: list[str] = []
    views: View = {}
    for rel in rels:
        try:
            fd = os.open(root / rel, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as handle:
                text = handle.read(VIEW_BYTES).decode("utf-8", errors="replace")
        except OSError:
            text = ""
        found, view = file_tag(policies, rel, text)
        sources += found
        views |= view
    return sources, views
