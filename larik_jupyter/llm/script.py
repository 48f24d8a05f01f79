"""The script format played by `scripted:` models and by the local test server.

```json
{"responses": [
  {"content": [{"type": "thinking", "thinking": "..."},
               {"type": "text", "text": "..."},
               {"type": "tool_use", "name": "write", "input": {"path": "a.txt", "content": "hi"}}],
   "usage": {"input_tokens": 10, "output_tokens": 5}},
  {"error": {"status": 429, "retry_after": 0.1}}
]}
```

Each model call takes the next response. Tool-use ids are generated unless given;
`drop_after` cuts the stream after that many content deltas, to rehearse an interruption;
`delay` waits that many seconds between streamed deltas.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from larik_jupyter.errors import LarikError, first_problem
from larik_jupyter.llm.messages import Usage


class ScriptError(LarikError):
    """A script file is missing or does not follow the script format."""


class _Strict(BaseModel):
    # Unknown keys are refused so that a typo in a script fails loudly.
    model_config = ConfigDict(extra="forbid")


class ScriptText(_Strict):
    type: Literal["text"]
    text: str


class ScriptThinking(_Strict):
    type: Literal["thinking"]
    thinking: str
    signature: str | None = None


class ScriptRedactedThinking(_Strict):
    type: Literal["redacted_thinking"]
    data: str


class ScriptToolUse(_Strict):
    type: Literal["tool_use"]
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


ScriptBlock = Annotated[
    ScriptText | ScriptThinking | ScriptRedactedThinking | ScriptToolUse,
    Field(discriminator="type"),
]


class ScriptReply(_Strict):
    """One successful model response."""

    content: list[ScriptBlock]
    usage: Usage = Field(default_factory=Usage)
    stop_reason: str | None = None
    drop_after: int | None = Field(default=None, ge=0)
    # Seconds to wait between streamed deltas, so a demo or a test can watch (or stop) a reply.
    delay: float | None = Field(default=None, ge=0, le=10)

    def final_stop_reason(self) -> str:
        """The given stop reason, else `tool_use` when the reply calls tools, else `end_turn`."""
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ScriptToolUse) for b in self.content) else "end_turn"


class ScriptFailureDetail(_Strict):
    status: int = Field(ge=400, le=599)
    message: str | None = None
    retry_after: float | None = Field(default=None, ge=0)


class ScriptFailure(_Strict):
    """A simulated failed call, answered with an HTTP error status."""

    error: ScriptFailureDetail


class ScriptTurn(_Strict):
    """The responses that answer a prompt containing `prompt` (case-insensitive), in order."""

    prompt: str = Field(min_length=1)
    responses: list[ScriptReply | ScriptFailure]


class Script(_Strict):
    """`responses`, played in order whatever the prompt; or `turns`, each played for the prompt
    that names it (so a reader may type a notebook's prompts in any order, or only some)."""

    responses: list[ScriptReply | ScriptFailure] = []
    turns: list[ScriptTurn] = []

    @model_validator(mode="after")
    def _one_kind(self) -> Script:
        if self.responses and self.turns:
            raise ValueError("give either `responses` or `turns`, not both")
        return self


def new_tool_id(prefix: str = "toolu_") -> str:
    """A fresh tool-use id in the shape the APIs use."""
    return prefix + secrets.token_hex(12)


def parse_script(data: Any, source: str) -> Script:
    """Validate script JSON; `source` names it in the error."""
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        where, what = first_problem(exc, "top level")
        raise ScriptError(
            f"Script {source} is invalid at {where}: {what}; "
            "see the 'scripted models' section of docs/format.md."
        ) from None


def load_script(path: Path) -> Script:
    """Read and validate the script file at `path`."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScriptError(
            f"Script {path} does not exist; check the path after 'scripted:'."
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScriptError(f"Script {path} cannot be read ({exc}); check the file.") from None
    except json.JSONDecodeError as exc:
        raise ScriptError(
            f"Script {path} is not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}; fix the file."
        ) from None
    return parse_script(data, str(path))
