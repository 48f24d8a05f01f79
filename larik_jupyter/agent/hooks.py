"""Shell hooks on agent events: `PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `Stop`.

Each hook is a shell command that receives a JSON description of the event on stdin. Tool
hooks run only for tool names their `matcher` selects: empty or `*` selects every tool,
anything else is a regular expression matched against the whole name, case-insensitively
(Claude's `Edit|Write` works; `Bash` matches our `bash`). A `PreToolUse` or
`UserPromptSubmit` hook blocks by exiting with code 2 (stderr is the reason) or by printing
`{"decision": "block", "reason": "..."}`; the reason is what the model (or the user) sees.
A hook that runs past its timeout is killed with its process group and blocks nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from larik_jupyter.agent import events as ae
from larik_jupyter.config.model import HookSpec

PRE_TOOL_USE = "PreToolUse"
POST_TOOL_USE = "PostToolUse"
USER_PROMPT_SUBMIT = "UserPromptSubmit"
STOP = "Stop"
EVENTS = (PRE_TOOL_USE, POST_TOOL_USE, USER_PROMPT_SUBMIT, STOP)
DEFAULT_TIMEOUT = 60.0
BLOCK_EXIT_CODE = 2
MAX_NOTICE = 2000


@dataclass
class HookRun:
    """What one hook command did."""

    command: str
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def block_reason(self) -> str | None:
        """The reason this run blocks the call or prompt, None when it does not."""
        if self.timed_out:
            return None
        if self.exit_code == BLOCK_EXIT_CODE:
            return self.stderr.strip() or self.stdout.strip() or "no reason given"
        decision = _json_object(self.stdout)
        if decision.get("decision") == "block":
            return str(decision.get("reason") or "no reason given")
        return None


@dataclass
class HookOutcome:
    """All hooks of one event: every run, the notices they gave (shown live and stored in the
    transcript), and `refusal`, the text the model or user sees when a hook blocked."""

    runs: list[HookRun] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    refusal: str | None = None

    @property
    def blocked(self) -> str | None:
        return next((r for r in (run.block_reason for run in self.runs) if r), None)


def _json_object(text: str) -> dict[str, Any]:
    stripped = text.strip()
    if not stripped.startswith("{"):
        return {}
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def matches(matcher: str, tool_name: str) -> bool:
    """Whether a hook's matcher selects `tool_name`."""
    if matcher in ("", "*"):
        return True
    try:
        return re.fullmatch(matcher, tool_name, re.IGNORECASE) is not None
    except re.error:
        return matcher.lower() == tool_name.lower()


class HookRunner:
    """Runs the configured hooks of one agent and reports their output as `Notice` events."""

    def __init__(
        self,
        hooks: Mapping[str, list[HookSpec]],
        *,
        cwd: Path,
        session_id: str,
        transcript: Path,
        emit: Callable[[ae.AgentEvent], None],
    ) -> None:
        self.configure(hooks)
        self.cwd = cwd
        self.session_id = session_id
        self.transcript = transcript
        self._emit = emit

    def configure(self, hooks: Mapping[str, list[HookSpec]]) -> None:
        """Use `hooks` from the next event on (the config was reloaded)."""
        self.hooks = {event: list(specs) for event, specs in hooks.items() if specs}

    def active(self, event: str, tool_name: str | None = None) -> list[HookSpec]:
        """The hooks that would run for `event` (and `tool_name`)."""
        specs = self.hooks.get(event, [])
        if tool_name is None:
            return specs
        return [s for s in specs if matches(s.matcher, tool_name)]

    async def run(self, event: str, payload: dict[str, Any], tool_name: str | None = None) -> HookOutcome:
        """Run the hooks of `event` one after another, each with the event as JSON on stdin."""
        outcome = HookOutcome()
        specs = self.active(event, tool_name)
        if not specs:
            return outcome
        body = {
            "session_id": self.session_id,
            "transcript_path": str(self.transcript),
            "cwd": str(self.cwd),
            "hook_event_name": event,
            **payload,
        }
        data = json.dumps(body, default=str).encode("utf-8")
        for spec in specs:
            run = await run_hook(spec, data, self.cwd)
            outcome.runs.append(run)
            notice = self._report(event, run)
            if notice is not None:
                outcome.notices.append(notice.text)
            if run.block_reason and event in (PRE_TOOL_USE, USER_PROMPT_SUBMIT):
                break
        return outcome

    async def before_tool(self, name: str, tool_input: dict[str, Any]) -> HookOutcome:
        """Run `PreToolUse` hooks; `refusal` is the text the model sees when one blocks the call."""
        outcome = await self.run(PRE_TOOL_USE, {"tool_name": name, "tool_input": tool_input}, name)
        if outcome.blocked is not None:
            outcome.refusal = f"A PreToolUse hook blocked this call: {outcome.blocked}"
        return outcome

    async def after_tool(
        self, name: str, tool_input: dict[str, Any], content: str, is_error: bool
    ) -> HookOutcome:
        """Run `PostToolUse` hooks with the call and its result."""
        response = {"content": content, "is_error": is_error}
        return await self.run(
            POST_TOOL_USE, {"tool_name": name, "tool_input": tool_input, "tool_response": response}, name
        )

    async def prompt_submitted(self, prompt: str) -> HookOutcome:
        """Run `UserPromptSubmit` hooks; `refusal` is the reason when one blocks the prompt."""
        outcome = await self.run(USER_PROMPT_SUBMIT, {"prompt": prompt})
        if outcome.blocked is not None:
            outcome.refusal = f"A UserPromptSubmit hook blocked the prompt: {outcome.blocked}"
        return outcome

    async def turn_ended(self, status: str) -> HookOutcome:
        """Run `Stop` hooks at the end of a turn that was not interrupted."""
        return await self.run(STOP, {"status": status, "stop_hook_active": False})

    def _report(self, event: str, run: HookRun) -> ae.Notice | None:
        """Emit the notice of one run (None when it printed nothing and did nothing notable)."""
        notice = _notice(event, run)
        if notice is not None:
            self._emit(notice)
        return notice


def _notice(event: str, run: HookRun) -> ae.Notice | None:
    if run.timed_out:
        return ae.Notice(
            f"{event} hook `{run.command}` timed out and was killed; it blocked nothing.",
            level="warning",
        )
    output = "\n".join(part for part in (run.stdout.strip(), run.stderr.strip()) if part)
    if run.block_reason:
        return ae.Notice(f"{event} hook `{run.command}` blocked: {run.block_reason}", level="warning")
    if run.exit_code:
        return ae.Notice(
            f"{event} hook `{run.command}` failed with exit code {run.exit_code}: {output[:MAX_NOTICE]}",
            level="warning",
        )
    if output:
        return ae.Notice(f"{event} hook `{run.command}`: {output[:MAX_NOTICE]}")
    return None


async def run_hook(spec: HookSpec, data: bytes, cwd: Path) -> HookRun:
    """Run one hook command with `data` on stdin, killing its process group after the timeout."""
    timeout = spec.timeout if spec.timeout and spec.timeout > 0 else DEFAULT_TIMEOUT
    process = await asyncio.create_subprocess_shell(
        spec.command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        start_new_session=True,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(data), timeout)
    except (TimeoutError, asyncio.CancelledError) as exc:
        _kill_group(process.pid)
        await process.wait()
        if isinstance(exc, asyncio.CancelledError):
            raise
        return HookRun(spec.command, None, "", "", timed_out=True)
    return HookRun(
        spec.command,
        process.returncode,
        stdout.decode("utf-8", "replace"),
        stderr.decode("utf-8", "replace"),
    )


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
