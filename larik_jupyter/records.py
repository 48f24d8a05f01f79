"""A session as plain records for scripting: turns, tool calls, files changed, tokens, cost."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from larik_jupyter.llm.messages import Usage
from larik_jupyter.session.call_summary import positions_in_files
from larik_jupyter.session.state import State
from larik_jupyter.tools.calls import summarize_call, tool_class


def _written_path(name: str, tool_input: Mapping[str, Any]) -> str | None:
    """The file or notebook a call changes, as its input names it: the one its tool acts on
    (`path_input`, what rules read too) when the tool writes files or notebooks; else None."""
    cls = tool_class(name)
    if cls is None or cls.path_input is None or not cls.writes & {"files", "notebooks"}:
        return None
    path = tool_input.get(cls.path_input)
    return path if isinstance(path, str) and path else None


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call, with the prompt number (1-based) of the turn that made it."""

    prompt_number: int
    name: str
    summary: str
    is_error: bool


@dataclass
class TurnRecord:
    """One turn: its prompt number (1-based, as `/rewind N` reads it) and prompt text."""

    prompt_number: int
    prompt: str
    reply: str = ""
    tool_calls: int = 0
    files_changed: list[str] = field(default_factory=list)
    interrupted: bool = False


@dataclass
class SessionRecords:
    """Everything a notebook user may want to tabulate about one session."""

    session_id: str
    turns: list[TurnRecord]
    tool_calls: list[ToolCallRecord]
    usage: Usage
    cost: float | None

    @property
    def files_changed(self) -> list[str]:
        seen: dict[str, None] = {}
        for turn in self.turns:
            seen.update(dict.fromkeys(turn.files_changed))
        return list(seen)

    @classmethod
    def from_state(cls, state: State, session_id: str) -> SessionRecords:
        turns: list[TurnRecord] = []
        calls: list[ToolCallRecord] = []
        errors: dict[str, bool] = {}
        position = positions_in_files(Path(state.meta.cwd))  # cells named as the notebook file has them
        for message in state.all:
            for result in message.tool_results():
                errors[result.tool_use_id] = bool(result.is_error)
        for message in state.all:
            if message.is_prompt():
                turns.append(TurnRecord(prompt_number=len(turns) + 1, prompt=message.prompt_text()))
                continue
            if message.role != "assistant" or not turns:
                continue
            current = turns[-1]
            current.reply = message.text() or current.reply
            current.interrupted = current.interrupted or bool(message.interrupted)
            for use in message.tool_uses():
                current.tool_calls += 1
                failed = errors.get(use.id, True)
                calls.append(
                    ToolCallRecord(current.prompt_number, use.name, summarize_call(use.name, use.input, position), failed)
                )
                path = _written_path(use.name, use.input)
                if path is not None and not failed and path not in current.files_changed:
                    current.files_changed.append(path)
        return cls(session_id, turns, calls, state.usage, state.cost)

    def to_dataframe(self, what: str = "turns") -> Any:
        """`turns` or `tool_calls` as a pandas DataFrame (needs pandas installed)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("to_dataframe() needs pandas: pip install pandas") from exc
        rows = self.turns if what == "turns" else self.tool_calls
        return pd.DataFrame([asdict(r) for r in rows])
