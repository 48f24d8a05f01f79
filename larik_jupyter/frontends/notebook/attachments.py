"""`--with NAME[,NAME…]`: kernel variables, figures and files attached to a prompt.

Each attachment becomes blocks the model reads (text inside the turn's data envelope, plus an
image block for figures and PNG/JPEG files) and one metadata record stored with the prompt:
`{name, kind, size, sha256}` (kind: variable, figure, image, file).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from larik_jupyter.api import (
    ContentBlock,
    InvalidImage,
    LarikError,
    PolicySet,
    TextBlock,
    exception_text,
    file_kind,
    file_tag,
    frame_of,
    image_block,
    image_of,
    is_binary,
    is_figure,
    project_root,
    sample_lines,
    tagged,
    variable_tag,
)
from larik_jupyter.api import describe_value as describe
from larik_jupyter.api import wrap_in_envelope as wrap

FILE_LINES = 40
MAX_FILE_READ = 5 * 1024 * 1024
HEAD_ROWS = 5
MAX_TEXT = 4000
_MAGIC = {b"\x89PNG\r\n\x1a\n": "image/png", b"\xff\xd8\xff": "image/jpeg"}


@dataclass
class Attached:
    """The blocks sent after the prompt and the metadata stored with it."""

    blocks: list[ContentBlock] = field(default_factory=list)
    metadata: list[dict[str, Any]] = field(default_factory=list)


def _record(name: str, kind: str, data: bytes) -> dict[str, Any]:
    return {"name": name, "kind": kind, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"\n[… {len(text) - MAX_TEXT} characters cut]"


def _variable_text(name: str, value: object) -> str:
    lines = [f"Variable `{name}`: {describe(value)}"]
    frame = frame_of(value)
    if frame is not None and frame.lazy:
        lines.append("(no preview: a lazy frame, whose rows larik does not compute; its schema is above)")
    elif frame is not None:
        try:
            lines.append(f"First {HEAD_ROWS} rows:\n" + "\n".join(sample_lines(frame, HEAD_ROWS, ())[1:]))
        except Exception as exc:
            lines.append(f"(no preview: {exception_text(exc)})")
    elif type(value) not in (int, float, complex, bool, type(None)):
        try:
            lines.append(f"repr: {_clip(repr(value))}")
        except Exception as exc:
            lines.append(f"(repr failed: {exception_text(exc)})")
    return "\n".join(lines)


def _read_file(path: Path) -> bytes:
    """The first bytes of a regular file, opened without following a symlink and without
    blocking (a FIFO would wait for a writer): its type is checked on the descriptor first."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise LarikError(
                f"--with {path}: it is {file_kind(info.st_mode)}, not a regular file; attach a "
                "file, variable or figure."
            )
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(MAX_FILE_READ)
    finally:
        os.close(fd)


def attach(
    names: tuple[str, ...], namespace: Mapping[str, Any], cwd: Path, nonce: str, policies: PolicySet | None = None
) -> Attached:
    """Resolve each name (a variable first, then a file under `cwd`); an unknown name raises.
    Each block is tagged with its variable or file and the views `policies` allow of it (the
    egress door decides what of it leaves)."""
    out = Attached()
    policies = policies or PolicySet()
    for name in names:
        start = len(out.blocks)
        if name in namespace:
            try:
                _attach_value(out, name, namespace[name], nonce)
            except Exception as exc:  # a value that fails even to be described says so
                kind = type(namespace[name]).__name__
                _add_variable(out, name, f"Variable `{name}`: {kind} (it could not be described: {exception_text(exc)})", nonce)
            tag = variable_tag(policies, {name: namespace[name]})
            out.blocks[start:] = [tagged(b, tag) for b in out.blocks[start:]]
            continue
        path = Path(name).expanduser()
        path = path if path.is_absolute() else cwd / path
        if path.is_symlink():
            raise LarikError(f"--with {name}: is a symlink; name the file it points to.")
        if not path.exists():
            raise LarikError(
                f"--with {name}: no variable of that name in the kernel and no file {path}; "
                "check the name."
            )
        try:
            data = _read_file(path)
        except OSError as exc:
            raise LarikError(f"--with {name}: cannot read {path} ({exc.strerror}).") from None
        _attach_file(out, name, path, data, nonce)
        real = Path(os.path.realpath(path))
        root = Path(os.path.realpath(project_root(cwd)))
        if real.is_relative_to(root):
            tag = file_tag(policies, real.relative_to(root).as_posix(), data.decode("utf-8", errors="replace"))
            out.blocks[start:] = [tagged(b, tag) for b in out.blocks[start:]]
    return out


def _attach_value(out: Attached, name: str, value: object, nonce: str) -> None:
    failure = ""
    try:
        found = image_of(value)
    except Exception as exc:  # described as a variable instead, saying why there is no image
        found, failure = None, f"\n(no image: drawing it raised {exception_text(exc)})"
    if found is None:
        _add_variable(out, name, _variable_text(name, value) + failure, nonce)
        return
    data, media = found
    kind = "figure" if is_figure(value) else "image"
    _add_image(out, name, kind, data, media, f"{kind.capitalize()} `{name}` ({describe(value)})", nonce)


def _add_variable(out: Attached, name: str, text: str, nonce: str) -> None:
    out.blocks.append(TextBlock(text=wrap(nonce, f"--with {name}", text)))
    out.metadata.append(_record(name, "variable", text.encode("utf-8", "replace")))


def _add_image(out: Attached, name: str, kind: str, data: bytes, media: str, label: str, nonce: str) -> None:
    try:
        block = image_block(data, media)
        note = "the image follows" if block is not None else "the image could not be reduced to about 1 MB and is not sent"
    except InvalidImage as exc:
        block, note = None, f"{exc}, so the image is not sent"
    out.blocks.append(TextBlock(text=wrap(nonce, f"--with {name}", f"{label}, {media}, {len(data)} bytes: {note}.")))
    if block is not None:
        out.blocks.append(block)
    out.metadata.append(_record(name, kind, data))


def _attach_file(out: Attached, name: str, path: Path, data: bytes, nonce: str) -> None:
    size = path.stat().st_size
    media = next((m for magic, m in _MAGIC.items() if data.startswith(magic)), None)
    if media is not None:
        _add_image(out, name, "image", data, media, f"File {path}", nonce)
        return
    if is_binary(data):
        text = f"File {path}: {size} bytes, binary (not shown)."
    else:
        lines = data.decode("utf-8", errors="replace").splitlines()
        more = f"\n[… {len(lines) - FILE_LINES} more lines]" if len(lines) > FILE_LINES else ""
        text = f"File {path}: {size} bytes, first lines:\n" + _clip("\n".join(lines[:FILE_LINES])) + more
    out.blocks.append(TextBlock(text=wrap(nonce, f"--with {name}", text)))
    record = _record(name, "file", data)
    record["size"] = size
    out.metadata.append(record)
