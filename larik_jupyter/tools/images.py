"""Images a tool hands the model: downscaled, size-capped and counted.

Providers reject or bill heavily for big images, so each one is scaled to at most
`MAX_SIDE` pixels on its long side and re-encoded until it is about `MAX_BYTES`; a tool
result carries at most `MAX_PER_RESULT` (the rest are listed in its text). Pillow is
imported on first use; without it an image already within the limits is sent as it is
(a PNG's size is read from its header) and a bigger one is left out with a note.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field

from larik_jupyter.image_size import image_size
from larik_jupyter.llm.messages import ImageBlock

MAX_SIDE = 1568
MAX_BYTES = 1_000_000
MAX_PER_RESULT = 8
# An image declaring more pixels than this is not decoded (Pillow would refuse it as a
# decompression bomb past twice its own limit, and spend the call's time and memory below it).
MAX_PIXELS = 50_000_000


_SIGNATURES = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}


class InvalidImage(ValueError):
    """Image data that is not an image of its type (empty, cut short, another format), or
    one too large to decode (`why`)."""

    def __init__(self, media_type: str, why: str = "") -> None:
        kind = media_type.removeprefix("image/").upper()
        super().__init__(f"a {kind} that {why}" if why else f"invalid {kind} data")


def _fits(data: bytes) -> bool:
    return len(data) <= MAX_BYTES


def shrink(data: bytes, media_type: str) -> tuple[bytes, str] | None:
    """`data` within the limits (maybe re-encoded as JPEG), or None when that is impossible;
    raises `InvalidImage` when `data` is not an image of its type."""
    signature = _SIGNATURES.get(media_type)
    if signature is not None and not data.startswith(signature):
        raise InvalidImage(media_type)
    declared = image_size(data)
    if declared is not None and declared.width * declared.height > MAX_PIXELS:
        raise InvalidImage(media_type, f"declares {declared} pixels, too many to decode (at most {MAX_PIXELS:,})")
    from PIL import Image

    try:
        image = Image.open(io.BytesIO(data))
        image.load()
    except Exception:
        raise InvalidImage(media_type) from None
    if max(image.size) <= MAX_SIDE and _fits(data):
        return data, media_type
    scale = min(1.0, MAX_SIDE / max(image.size))
    for _ in range(6):
        size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        resized = image.resize(size) if size != image.size else image
        out = io.BytesIO()
        if media_type == "image/png" and resized.mode in ("RGBA", "LA", "P", "RGB", "L"):
            resized.save(out, format="PNG", optimize=True)
        else:
            resized.convert("RGB").save(out, format="JPEG", quality=85)
            media_type = "image/jpeg"
        if _fits(out.getvalue()):
            return out.getvalue(), media_type
        scale *= 0.7
    return None


def image_block(data: bytes, media_type: str) -> ImageBlock | None:
    """A Larik `image` block of `data`, shrunk to the limits; None if it cannot be
    (`InvalidImage` when it is not an image)."""
    shrunk = shrink(data, media_type)
    if shrunk is None:
        return None
    raw, kind = shrunk
    return ImageBlock(
        source={"type": "base64", "media_type": kind, "data": base64.b64encode(raw).decode("ascii")}
    )


@dataclass
class ImageCollector:
    """The images of one tool result: the first `MAX_PER_RESULT` are kept, later ones are
    only named in `notes` (which the tool appends to its text)."""

    images: list[ImageBlock] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, data: bytes, media_type: str, label: str) -> str | None:
        """Keep the image (or note why not); returns why it is not an image ("invalid PNG
        data"), for the caller to say where it shows the image."""
        if len(self.images) >= MAX_PER_RESULT:
            self.notes.append(f"[image {label} not sent: at most {MAX_PER_RESULT} per result]")
            return None
        try:
            block = image_block(data, media_type)
        except InvalidImage as exc:
            return str(exc)
        if block is None:
            self.notes.append(f"[image {label} omitted: it could not be reduced to about 1 MB]")
            return None
        self.images.append(block)
        return None

    def text(self, base: str) -> str:
        """`base` followed by the notes about images left out."""
        return "\n".join([base, *self.notes]) if self.notes else base
