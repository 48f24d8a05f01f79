"""Arrow-backed columns fingerprinted by where their buffers are, not by their bytes.

Arrow buffers are immutable: a change to an Arrow-backed column (pandas' `string[pyarrow]`,
`ArrowDtype`) puts new buffers behind it. So the address and size of each buffer of each chunk,
with the chunk's offset, length and type, tell whether it changed, at a cost that does not grow
with its rows. An address is only proof while the buffer at it lives (a buffer freed during the
call could be replaced by a new one at the same address), so the fingerprint holds the buffers
(`held`) until it is compared. Nothing here imports pyarrow.
"""

from __future__ import annotations

from array import array
from typing import Any


def layout(chunked: Any, held: list[object]) -> tuple[str, bytes]:
    """The column's type and the addresses, sizes, offsets and lengths of its chunks' buffers
    (children of nested types included), as bytes to hash; the buffers go to `held`."""
    numbers = array("q")
    for chunk in chunked.chunks:
        numbers.extend((chunk.offset, len(chunk)))
        for buffer in chunk.buffers():
            if buffer is None:
                numbers.extend((0, 0))
            else:
                numbers.extend((buffer.address, buffer.size))
                held.append(buffer)
    return str(chunked.type), numbers.tobytes()
