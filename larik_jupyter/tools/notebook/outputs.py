"""Cell outputs as the model reads them: text capped per cell, errors short, HTML as text,
images as image blocks."""

from __future__ import annotations

import base64
import binascii
import re
from html.parser import HTMLParser
from typing import Any

from larik_jupyter.tools.images import ImageCollector
from larik_jupyter.tools.output_text import IMAGE_TYPES, strip_ansi

MAX_CELL_OUTPUT = 4000
MAX_TRACEBACK_LINES = 30
def cap(text: str, limit: int = MAX_CELL_OUTPUT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit} characters cut]"


def short_traceback(lines: list[str]) -> str:
    """A traceback's text without ANSI codes, its middle cut when it is long."""
    text = strip_ansi("\n".join(lines)).rstrip("\n")
    rows = text.splitlines()
    if len(rows) > MAX_TRACEBACK_LINES:
        half = MAX_TRACEBACK_LINES // 2
        rows = rows[:half] + [f"[… {len(rows) - 2 * half} lines cut]"] + rows[-half:]
    return "\n".join(rows)


class _Text(HTMLParser):
    """HTML to text: cells of a table separated by tabs, rows and blocks by newlines."""

    def __init__(self) -> None:
        super().__init__()
        self.out: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("style", "script"):
            self._skip += 1
        elif tag in ("td", "th") and self.out and not self.out[-1].endswith("\n"):
            self.out.append("\t")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "script"):
            self._skip = max(0, self._skip - 1)
        elif tag in ("tr", "p", "div", "br", "li", "h1", "h2", "h3", "table"):
            self.out.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip and data.strip():
            self.out.append(data.strip())


def html_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return re.sub(r"\n{3,}", "\n\n", "".join(parser.out)).strip()


def _joined(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def outputs_text(outputs: list[dict[str, Any]], images: ImageCollector, label: str) -> str:
    """The outputs of one cell as text (capped); their PNG/JPEG images go to `images`."""
    parts: list[str] = []
    for output in outputs:
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(_joined(output.get("text", "")))
        elif kind == "error":
            head = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
            parts.append(head + "\n" + short_traceback(list(output.get("traceback", []))))
        elif kind in ("execute_result", "display_data"):
            data = output.get("data")
            parts.append(_data_text(data if isinstance(data, dict) else {}, images, label))
    return cap("\n".join(p.rstrip("\n") for p in parts if p))


def _data_text(data: dict[str, Any], images: ImageCollector, label: str) -> str:
    """One rich output: an image (sent as a block), else its text, HTML or a note."""
    media = next((m for m in IMAGE_TYPES if m in data), None)
    if media is not None:
        try:
            raw = base64.b64decode(_joined(data[media]).strip())
        except (binascii.Error, ValueError):
            raw = b""  # not base64: reported as invalid image data below
        invalid = images.add(raw, media, f"{media} of {label}")
        return f"[{media} image: {invalid}]" if invalid else f"[{media} image]"
    if "text/plain" in data:
        return _joined(data["text/plain"])
    if "text/html" in data:
        return html_text(_joined(data["text/html"]))
    if "image/svg+xml" in data:
        return "[SVG image omitted: only PNG and JPEG images are sent]"
    return "[output of type " + ", ".join(data) + "]"
