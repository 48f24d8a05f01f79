"""The request the kernel runs now, as the front end sent it (Jupyter's messaging protocol),
read through the few fields larik uses: who sent it (`header.session`), which kind it is
(`header.msg_type`), whether it may ask for input (`content.allow_stdin`), which cell it is
(`metadata.cellId`)."""

from __future__ import annotations

from typing import Any

import msgspec


class Header(msgspec.Struct):
    session: str = ""
    msg_type: str = ""


class Content(msgspec.Struct):
    allow_stdin: bool | None = None


class Metadata(msgspec.Struct):
    cellId: str | None = None  # noqa: N815 - the field's name in JupyterLab's messages


class KernelRequest(msgspec.Struct):
    """A shell request, as far as larik reads it (fields it lacks read as their defaults)."""

    header: Header = msgspec.field(default_factory=Header)
    content: Content = msgspec.field(default_factory=Content)
    metadata: Metadata = msgspec.field(default_factory=Metadata)


def read_request(message: Any) -> KernelRequest:
    """`message` (a shell message as ipykernel hands it over) read as a `KernelRequest`; a
    message whose fields are not of their declared kinds reads as an empty one."""
    try:
        return msgspec.convert(message, KernelRequest, strict=False)
    except msgspec.ValidationError:
        return KernelRequest()


def running_request(shell: Any) -> KernelRequest:
    """The shell request `shell`'s kernel is handling; an empty one outside a kernel (a plain
    InteractiveShell, terminal IPython)."""
    get_parent = getattr(getattr(shell, "kernel", None), "get_parent", None)
    return read_request(get_parent("shell")) if get_parent is not None else KernelRequest()


def running_client(shell: Any) -> str:
    """Which front-end connection sent the running request (its `header.session`); "" when none."""
    return running_request(shell).header.session
