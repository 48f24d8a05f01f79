"""Whether two outputs of the same code say the same thing: text equal after normalising object
addresses and timings, numbers within a relative tolerance (so a DataFrame's repr compares by
its shape line and values, not its column alignment), images by size."""

from __future__ import annotations

import base64
import difflib
import math
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from larik_jupyter.llm.messages import ImageBlock

DEFAULT_RTOL = 1e-6
MAX_DIFF_LINES = 6
MAX_LINE = 160
# Images a tool result carries are scaled to this long side (tools/images.py).
IMAGE_SIDE = 1568

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")
_TIMING = re.compile(
    r"(?<![\w.])[-+]?\d+(?:\.\d+)?\s?(?:ns|µs|us|ms|s|sec|secs|seconds|min|minutes)\b"
    r"|(?:Wall time|CPU times|user|sys|total):[^\n]*"
)
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|\b(?:nan|NaN|inf|-inf)\b")


def normalise(text: str) -> str:
    """`text` with object addresses and timings replaced by placeholders and runs of spaces
    squeezed (alignment is not content)."""
    text = _ADDRESS.sub("0x…", text)
    text = _TIMING.sub("<time>", text)
    return "\n".join(" ".join(line.split()) for line in text.strip().splitlines() if line.strip())


def _shape(line: str) -> str:
    return _NUMBER.sub("#", line)


def _numbers(line: str) -> list[float]:
    return [float(m) for m in _NUMBER.findall(line)]


def _close(a: float, b: float, rtol: float) -> bool:
    if math.isnan(a) and math.isnan(b):
        return True
    return math.isclose(a, b, rel_tol=rtol, abs_tol=1e-12)


def _same_line(old: str, new: str, rtol: float) -> bool:
    return all(_close(a, b, rtol) for a, b in zip(_numbers(old), _numbers(new), strict=True))


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…"


def text_diff(old: str, new: str, rtol: float = DEFAULT_RTOL) -> list[str]:
    """The lines that differ, as `- old` / `+ new` pairs (at most `MAX_DIFF_LINES`); empty when
    the two texts say the same."""
    a, b = normalise(old).splitlines(), normalise(new).splitlines()
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, [_shape(x) for x in a], [_shape(x) for x in b], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for x, y in zip(a[i1:i2], b[j1:j2], strict=True):
                if not _same_line(x, y, rtol):
                    out += [f"- {_cut(x)}", f"+ {_cut(y)}"]
        else:
            out += [f"- {_cut(x)}" for x in a[i1:i2]] + [f"+ {_cut(y)}" for y in b[j1:j2]]
    if len(out) > MAX_DIFF_LINES:
        out = out[:MAX_DIFF_LINES] + [f"… and {len(out) - MAX_DIFF_LINES} more changed lines"]
    return out


@dataclass(frozen=True)
class ImageSize:
    width: int
    height: int

    def capped(self) -> ImageSize:
        """The size a tool result would carry the image at."""
        side = max(self.width, self.height)
        if side <= IMAGE_SIDE:
            return self
        scale = IMAGE_SIDE / side
        return ImageSize(round(self.width * scale), round(self.height * scale))

    def __str__(self) -> str:
        return f"{self.width}×{self.height}"


def image_size(data: bytes) -> ImageSize | None:
    """The pixel size of PNG or JPEG bytes, read from their headers; None when neither."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return ImageSize(width, height)
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                return None
            marker, length = data[i + 1], struct.unpack(">H", data[i + 2 : i + 4])[0]
            if marker in (0xC0, 0xC1, 0xC2):
                height, width = struct.unpack(">HH", data[i + 5 : i + 9])
                return ImageSize(width, height)
            i += 2 + length
    return None


def block_size(block: ImageBlock) -> ImageSize | None:
    """The size of a stored image block (base64 data)."""
    if block.source.get("type") != "base64":
        return None
    try:
        return image_size(base64.b64decode(block.source.get("data", ""), validate=False))
    except ValueError:
        return None


def image_diff(old: Sequence[ImageSize | None], new: Sequence[ImageSize | None]) -> list[str]:
    """How the images differ by count and size (each new one as a tool result would carry it,
    within 2 pixels); empty when they match."""
    if len(old) != len(new):
        return [f"images: {len(old)} recorded, {len(new)} now"]
    out = []
    for n, (a, b) in enumerate(zip(old, new, strict=True), 1):
        if a is None or b is None:
            continue
        c = b.capped()
        if abs(a.width - c.width) > 2 or abs(a.height - c.height) > 2:
            out.append(f"image {n}: {a} recorded, {c} now")
    return out
