"""The pixel size of PNG or JPEG bytes, read from their headers (no decoding): what tool
results, token estimates and replay's comparison need to know of an image."""

from __future__ import annotations

import struct
from dataclasses import dataclass


@dataclass(frozen=True)
class ImageSize:
    width: int
    height: int

    @property
    def side(self) -> int:
        """The long side."""
        return max(self.width, self.height)

    def capped(self, side: int) -> ImageSize:
        """The size scaled down to `side` on its long side (as it is when larger)."""
        if self.side <= side:
            return self
        scale = side / self.side
        return ImageSize(round(self.width * scale), round(self.height * scale))

    def __str__(self) -> str:
        return f"{self.width}×{self.height}"


def image_size(data: bytes) -> ImageSize | None:
    """The pixel size of PNG or JPEG bytes, read from their headers; None when neither (or
    when the bytes stop before the size)."""
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
