"""Two old gaps of the notebook surface (issue 53, point 10): a value whose `_repr_png_` returns
bytes that are not an image, or a PNG declaring 100,000 × 100,000 pixels, gets a one-line
note to the model (a valid PNG is sent as an image, no note); `/undo` of a call that rebound a
name holding a module puts the module back (the twin: a name the call left alone)."""

from __future__ import annotations

import io
import math
import struct
import zlib
from pathlib import Path
from typing import Any

import msgspec
import pytest
from agent_helpers import done, scripted, tool
from test_tools_kernel import kernel_env, run_python

from larik_jupyter import Agent, KernelHost


def _png_declaring(width: int, height: int) -> bytes:
    """A PNG header declaring `width` × `height` pixels, with no pixels behind it."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = struct.pack(">I", 13) + b"IHDR" + header + struct.pack(">I", zlib.crc32(b"IHDR" + header))
    return b"\x89PNG\r\n\x1a\n" + chunk + struct.pack(">I", 0) + b"IEND" + struct.pack(">I", zlib.crc32(b"IEND"))


def _real_png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (20, 10), "red").save(out, format="PNG")
    return out.getvalue()


class Picture:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def _repr_png_(self) -> bytes:
        return self.data

    def __repr__(self) -> str:
        return "Picture()"


@pytest.mark.parametrize(
    ("data", "note"),
    [
        (b"hello, not a png", "[image of the value not sent: invalid PNG data]"),
        (_png_declaring(100_000, 100_000),
         "[image of the value not sent: a PNG that declares 100000×100000 pixels, too many to decode"),
        (_real_png(), None),
    ],
)
def test_a_value_whose_png_is_no_image_gets_a_note(tmp_path: Path, data: bytes, note: str | None) -> None:
    result = run_python(kernel_env(tmp_path, {"picture": Picture(data)}), "picture")
    text = str(result.content)
    assert text.startswith("Picture()")
    if note is None:
        assert len(result.images or []) == 1 and "not sent" not in text
    else:
        assert not result.images and note in text and len(text.splitlines()) == 2


@pytest.mark.parametrize("rebind", [True, False])
def test_undo_puts_back_a_module_a_call_rebound(project: Path, tmp_path: Path, rebind: bool) -> None:
    namespace: dict[str, Any] = {"mod": math, "n": 1}
    code = "mod = 5" if rebind else "n = 2"
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code=code)], done()), yes=True,
                  host=KernelHost(namespace))
    agent.run("rebind it")
    report = agent.undo()
    agent.close()
    assert namespace["mod"] is math and namespace["n"] == 1
    assert ("restored variables: mod" in report.plain()) is rebind


def test_the_undo_panel_says_created_alike_for_a_module_and_a_value(project: Path, tmp_path: Path) -> None:
    from larik_jupyter.frontends.notebook.widgets.undo import undo_data

    agent = Agent(project, model=scripted(tmp_path, [tool("python", code="import math as m\nx = 1")], done()),
                  yes=True, host=KernelHost({}))
    agent.run("make two names")
    (turn,) = msgspec.to_builtins(undo_data(agent))["turns"]
    agent.close()
    texts = sorted(v["text"] for v in turn["variables"])
    assert texts == ["m: created module", "x: created int"]
    assert not any("did not exist" in text for text in texts)
