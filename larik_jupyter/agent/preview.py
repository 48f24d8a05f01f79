"""What an approval shows: the tool's own preview of the call (its `preview` trait), and the
change it worked out for it (`plan`), which the run then makes as approved."""

from __future__ import annotations

from typing import Any, NamedTuple

from larik_jupyter.errors import LarikError, exception_text
from larik_jupyter.tools.base import Tool, os_error_text
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.planned import Planned


class Preview(NamedTuple):
    """What an approval shows of a call (`text`) and the change planned for it (`planned`, which
    the run makes; None: the tool plans none, or planning failed)."""

    text: str
    planned: Planned[Any] | None = None


def preview_change(env: Env, tool: Tool, tool_input: dict[str, Any]) -> Preview:
    """A read-only preview of the call; never touches the disk, never raises: a preview that
    fails says why instead (the call itself then fails with its own error result)."""
    try:
        planned = tool.plan(env, tool_input)
        return Preview(planned.preview, planned) if planned is not None else Preview(tool.preview(env, tool_input))
    except LarikError as exc:
        return Preview(f"(no preview: {exc})")
    except OSError as exc:
        return Preview(f"(no preview: {os_error_text(exc)})")
    except Exception as exc:
        return Preview(f"(no preview: {exception_text(exc)})")
