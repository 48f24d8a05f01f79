"""What the kernel capture and the notebook tools share about outputs, kept free of heavy
imports: the image types the model can see, and terminal codes to strip from text."""

from __future__ import annotations

import re

IMAGE_TYPES = ("image/png", "image/jpeg")

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")


def strip_ansi(text: str) -> str:
    """`text` without terminal colour and cursor codes (tracebacks carry them)."""
    return _ANSI.sub("", text)
