"""How a person reads the blocks a front end added to a prompt for the model (`/history`, the
export, the sidebar): a label, and the text without the wrapping meant for the model."""

from __future__ import annotations

import re

# tools/envelope.py `wrap`: an open tag with the turn's nonce and the data's source, one line of
# instructions to the model, the data, the closing tag.
_ENVELOPE = re.compile(
    r'<notebook-data nonce="(?P<nonce>[^"]*)" source="(?P<source>[^"]*)">\n[^\n]*\n(?P<text>.*)\n'
    r'</notebook-data nonce="(?P=nonce)">',
    re.DOTALL,
)
_NOTE = re.compile(r"<system-note>(?P<text>.*)</system-note>", re.DOTALL)


def context_view(text: str) -> tuple[str, str]:
    """`(label, body)`: "note to the model" and the note of an undo's `<system-note>`,
    "attached SOURCE" and the data of a notebook-data envelope, "notebook context" and the
    context as sent."""
    if note := _NOTE.fullmatch(text.strip()):
        return "note to the model", note["text"].strip()
    if data := _ENVELOPE.fullmatch(text.strip()):
        return f"attached {data['source'].removeprefix('--with ')}".strip(), data["text"]
    return ("notebook context" if text.startswith("<notebook-context") else "attached"), text


def without_envelopes(text: str) -> str:
    """`text` with each notebook-data envelope in it replaced by the data it carries (what a
    person or a re-run compares, not the wrapping meant for the model)."""
    return _ENVELOPE.sub(lambda m: m["text"], text)
