"""What each endpoint answers, built from the session layer (the handlers only route)."""

from __future__ import annotations

from pathlib import Path

from larik_jupyter.api import (
    by_turn,
    cost_label,
    fork_tree,
    ledger_path,
    list_sessions,
    load_entries,
    page_entries,
    positions_in_files,
    read_ledger,
    redactor_for,
    render_markdown,
)
from larik_jupyter.frontends.server.confine import relative_to_root
from larik_jupyter.frontends.server.page_entries import page_entry
from larik_jupyter.frontends.server.page_numbers import page_numbers
from larik_jupyter.frontends.server.schema import (
    EgressTurn,
    SessionList,
    SessionOut,
    TranscriptPage,
)
from larik_jupyter.frontends.server.tokens import DeleteTokens
from larik_jupyter.frontends.server.turn_diffs import checkpoints

__all__ = ["checkpoints", "export_bytes", "session_list", "transcript_page"]


def session_list(root_dir: str, cwd: Path, tokens: DeleteTokens) -> SessionList:
    """The sessions of `cwd` (the one last written to first) with delete tokens, and their fork tree."""
    sessions = [
        SessionOut(
            id=info.id,
            time=info.time,
            updated=info.updated,
            held=info.held,
            model=info.model,
            cost_label=cost_label(info.cost),
            first_prompt=info.first_prompt or "",
            message_count=info.message_count,
            fork_of=info.fork_of,
            fork_at=info.fork_at,
            fork_prompt=info.fork_prompt,
            size=info.size,
            error=info.error,
            delete_token=tokens.token(Path(info.path)),
        )
        for info in list_sessions(cwd)
    ]
    return SessionList(
        cwd=relative_to_root(root_dir, cwd),
        sessions=sessions,
        tree=fork_tree(cwd),
    )


def transcript_page(session_id: str, path: Path, offset: int, limit: int, cwd: Path) -> TranscriptPage:
    """Entries `offset … offset+limit` of the canonical transcript at `path` (an offset index
    kept per file identity reads only the page), with the numbers of its replies that no output
    of their turn supports (only the page's turns are read for them), and its tool calls
    summarized with the cells named by where they stand in the notebooks under `cwd`."""
    total, entries = page_entries(path, offset, limit)
    position = positions_in_files(cwd)
    unfound, counts = page_numbers(path, offset, entries, total)
    return TranscriptPage(
        id=session_id,
        total=total,
        offset=offset,
        limit=limit,
        entries=[page_entry(entry, position) for entry in entries],
        unfound=unfound,
        unfound_counts=counts,
        egress=egress_turns(path),
    )


def egress_turns(path: Path) -> list[EgressTurn]:
    """Each prompt's requests as the session's egress ledger recorded them."""
    out = []
    for turn in by_turn(read_ledger(ledger_path(path))):
        if turn.prompt is None:
            continue
        withheld = [f"{name} ×{n}" for name, n in turn.withheld.items()]
        text = f"Sent {turn.sent()}, {turn.bytes:,} bytes" + (" · withheld " + ", ".join(withheld) if withheld else "")
        out.append(EgressTurn(prompt=turn.prompt, requests=turn.requests, bytes=turn.bytes, withheld=withheld, text=text))
    return out


def export_bytes(path: Path, cwd: Path) -> bytes:
    """The Markdown export of `path`, byte for byte what `larik-jupyter export` writes (from
    `cwd`: its project's secrets redacted)."""
    return render_markdown(path, load_entries(path).entries, redactor=redactor_for(cwd)).encode("utf-8")
