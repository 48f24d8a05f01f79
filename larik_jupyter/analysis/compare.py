"""Whether two outputs of the same code say the same thing: text equal after normalising object
addresses, timings, where the code ran and dropping printed warnings, numbers within a relative tolerance (so a DataFrame's repr compares by
its shape line and values, not its column alignment), images by size and then by their pixels
(scaled down, in grey levels, with a tolerance for scaling and re-encoding)."""

from __future__ import annotations

import base64
import difflib
import io
import math
import re
from collections.abc import Sequence
from typing import Any

from larik_jupyter.image_size import image_size
from larik_jupyter.llm.messages import ImageBlock

DEFAULT_RTOL = 1e-6
MAX_DIFF_LINES = 6
MAX_LINE = 160
# Images a tool result carries are scaled to this long side (tools/images.py).
IMAGE_SIDE = 1568
# Images are compared at this long side, in grey levels: a pixel differs clearly past this
# step of 255, and a plot has changed past this share of such pixels.
COMPARE_SIDE = 160
CLEAR_DIFFERENCE = 64
CHANGED_SHARE = 0.002

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")
_TIMING = re.compile(
    r"(?<![\w.])[-+]?\d+(?:\.\d+)?\s?(?:ns|µs|us|ms|s|sec|secs|seconds|min|minutes)\b"
    r"|(?:Wall time|CPU times|user|sys|total):[^\n]*"
)
# Names a kernel gives the code it runs, which say where it ran, not what it did: the python
# tool's `<larik-python-3>`, ipykernel's `/tmp/ipykernel_12/345.py` and `Cell In[3]`, older
# IPython's `<ipython-input-3-abc>`.
_CELL_NAME = re.compile(
    r"<larik-python-\d+>|(?:/[^\s:\"']*)?/ipykernel_\d+/\d+\.py|Cell In\s?\[\d*\]|<ipython-input-\d+-[0-9a-f]+>"
)
# A warning Python printed (`file:12: FutureWarning: …` and the indented source line after
# it), and the `[stderr]` line the python tool puts before what went to stderr: whether a
# warning shows depends on the kernel's filters and what ran before, not on the result.
_WARNING = re.compile(r"^[^\n]*:\d+: \w*Warning: [^\n]*(?:\n[ \t]+[^\n]*)?$|^\[stderr\]$", re.MULTILINE)
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|\b(?:nan|NaN|inf|-inf)\b")


def normalise(text: str, places: Sequence[str] = ()) -> str:
    """`text` without the warnings Python printed (and the python tool's `[stderr]` line), with
    object addresses, timings, the names kernels give cells (`<cell>`) and the directories in
    `places` (`<project>`: where the session ran and where it runs now) replaced by
    placeholders, and runs of spaces squeezed (alignment is not content)."""
    for place in sorted({p.rstrip("/") for p in places if p.rstrip("/")}, key=len, reverse=True):
        text = text.replace(place, "<project>")
    text = _WARNING.sub("", text)
    text = _CELL_NAME.sub("<cell>", text)
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


def text_diff(old: str, new: str, rtol: float = DEFAULT_RTOL, places: Sequence[str] = ()) -> list[str]:
    """The lines that differ, as `- old` / `+ new` pairs (at most `MAX_DIFF_LINES`); empty when
    the two texts say the same (`places`: see `normalise`)."""
    a, b = normalise(old, places).splitlines(), normalise(new, places).splitlines()
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


def block_bytes(block: ImageBlock) -> bytes | None:
    """The bytes of a stored image block (base64 data), or None."""
    if block.source.get("type") != "base64":
        return None
    try:
        return base64.b64decode(block.source.get("data", ""), validate=False)
    except ValueError:
        return None


def _gray(data: bytes, size: tuple[int, int]) -> Any:
    """The image scaled to `size`, in grey levels (Pillow); None when it cannot be read."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.convert("L").resize(size, Image.Resampling.BILINEAR)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return None


def pixels_differ(old: bytes, new: bytes) -> float:
    """The share of pixels that differ clearly (by more than a quarter of the grey range) once
    both images are scaled to `COMPARE_SIDE` on their long side: scaling and re-encoding move
    few pixels by much, a changed plot many; 0.0 when either cannot be read."""
    if old == new:
        return 0.0
    size = image_size(old)
    if size is None or not size.width or not size.height:
        return 0.0
    scale = COMPARE_SIDE / max(size.width, size.height)
    shape = (max(1, round(size.width * scale)), max(1, round(size.height * scale)))
    a, b = _gray(old, shape), _gray(new, shape)
    if a is None or b is None:
        return 0.0
    from PIL import ImageChops

    counts = ImageChops.difference(a, b).histogram()
    return sum(counts[CLEAR_DIFFERENCE:]) / (shape[0] * shape[1])


def image_diff(old: Sequence[bytes | None], new: Sequence[bytes | None]) -> list[str]:
    """How the images differ: by count, by size (each new one as a tool result would carry it,
    within 2 pixels), else by content (`plot changed` when more than `CHANGED_SHARE` of the
    pixels differ clearly); empty when they match."""
    if len(old) != len(new):
        return [f"images: {len(old)} recorded, {len(new)} now"]
    out = []
    for n, (a, b) in enumerate(zip(old, new, strict=True), 1):
        if a is None or b is None:
            continue
        was, now = image_size(a), image_size(b)
        if was is None or now is None:
            continue
        c = now.capped(IMAGE_SIDE)
        if abs(was.width - c.width) > 2 or abs(was.height - c.height) > 2:
            out.append(f"image {n}: {was} recorded, {c} now")
        elif (share := pixels_differ(a, b)) > CHANGED_SHARE:
            out.append(f"image {n}: plot changed ({share:.1%} of its pixels differ)")
    return out
