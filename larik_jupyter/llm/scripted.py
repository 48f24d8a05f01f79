"""`scripted:<file.json>` and `scripted:demo`: offline models that play a script.

They stream through the same interface as real providers, so the agent, the notebook
and tests exercise the full path without a key. Scripted failures (`{"error": {"status":
429}}`) go through the same retry logic as real ones. Everything scripted says so: the
provider name starts with `scripted:` and the demo's text is marked "[scripted demo]".
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from larik_jupyter.llm.anthropic_provider import request_messages
from larik_jupyter.llm.api_errors import ApiTarget, status_failure
from larik_jupyter.llm.builder import MessageBuilder, cut_short
from larik_jupyter.llm.events import (
    MessageEnd,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallStart,
)
from larik_jupyter.llm.messages import Message, ToolResultBlock, ToolUseBlock
from larik_jupyter.llm.models import UNKNOWN
from larik_jupyter.llm.provider import (
    Destination,
    ProviderError,
    RequestDoor,
    ToolSchema,
    request_body,
)
from larik_jupyter.llm.retry import RetryPolicy, with_retries
from larik_jupyter.llm.script import (
    Script,
    ScriptFailure,
    ScriptRedactedThinking,
    ScriptReply,
    ScriptText,
    ScriptThinking,
    ScriptToolUse,
    load_script,
    new_tool_id,
    parse_script,
)

# A simulated failure needs no real pause; a script's own retry_after is still honoured.
SCRIPTED_RETRY = RetryPolicy(base_delay=0.05, max_delay=0.5)
_WORDS = re.compile(r"\s*\S+\s*|\s+")
_JSON_FRAGMENT = 16
KEPT_REQUESTS = 100

Step = ScriptReply | ScriptFailure
Picker = Callable[[list[Message]], Step]


class ScriptedProvider:
    """Streams the responses chosen by `pick`, which sees the conversation of each call."""

    def __init__(
        self, source: str, pick: Picker, *, retry: RetryPolicy | None = None, delay: float = 0.0
    ) -> None:
        self.model = source
        self.name = f"scripted:{source}"
        # The scripted model takes anything, images included.
        self.info = dataclasses.replace(UNKNOWN, vision=True)
        self.http_client_factory: Callable[[], Any] | None = None  # no HTTP: nothing to trace
        self.door: RequestDoor | None = None
        # The bodies of the last requests it was sent, as they passed the door (tests read them).
        self.requests: list[dict[str, Any]] = []
        self.retry = retry or SCRIPTED_RETRY
        self.delay = delay
        self._pick = pick
        self._target = ApiTarget("Scripted model", self.name, source, source, None, "")

    def __repr__(self) -> str:
        return f"ScriptedProvider({self.name!r})"

    def stream(
        self, system: str, messages: list[Message], tools: list[ToolSchema], *, cache: bool = True
    ) -> AsyncIterator[StreamEvent]:
        """Play the next response; scripted 429/5xx failures are retried like real ones. The
        request passes the door like any other; the script sees what it let out."""
        sent: list[Message] = []

        def build(system: str, filtered: list[Message]) -> dict[str, Any]:
            sent[:] = filtered
            # The Messages API's form: what a wire provider would send.
            return {
                "system": system,
                "messages": request_messages(filtered, cache=False),
                "tools": [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools],
            }

        self.requests.append(request_body(self.door, Destination(self.name, None), system, messages, build))
        del self.requests[:-KEPT_REQUESTS]
        return with_retries(self.name, self.retry, lambda: self._attempt(sent))

    async def _attempt(self, messages: list[Message]) -> AsyncIterator[StreamEvent]:
        step = self._pick(messages)
        if isinstance(step, ScriptFailure):
            error = step.error
            headers = (
                {"retry-after": str(error.retry_after)} if error.retry_after is not None else None
            )
            raise status_failure(
                error.status, error.message or "scripted failure", headers, self._target
            )
        async for event in self._play(step):
            yield event

    async def _play(self, reply: ScriptReply) -> AsyncIterator[StreamEvent]:
        builder = MessageBuilder()
        deltas = 0
        for event in _events(reply):
            if reply.drop_after is not None and deltas >= reply.drop_after and _is_delta(event):
                reason = f"the script cuts the stream after {reply.drop_after} deltas"
                yield cut_short(self.name, builder, reply.usage, reason)
                return
            deltas += _is_delta(event)
            if isinstance(event, _EndTool):
                yield builder.end_tool(event.id)
            else:
                if isinstance(event, _Redacted):
                    builder.add_redacted_thinking(event.data)
                    continue
                builder.add(event)
                yield event
            # Yield to the event loop between deltas, as a network stream would.
            await asyncio.sleep(self.delay if reply.delay is None else reply.delay)
        yield MessageEnd(builder.message(), reply.final_stop_reason(), reply.usage)


@dataclass(frozen=True)
class _EndTool:
    """Marks where a scripted tool call's input is complete."""

    id: str


@dataclass(frozen=True)
class _Redacted:
    """A redacted thinking block: stored, never streamed."""

    data: str


def _is_delta(event: object) -> bool:
    return isinstance(event, TextDelta | ThinkingDelta | ToolCallDelta)


def _events(reply: ScriptReply) -> list[StreamEvent | _EndTool | _Redacted]:
    out: list[StreamEvent | _EndTool | _Redacted] = []
    for block in reply.content:
        if isinstance(block, ScriptText):
            out += [TextDelta(w) for w in _WORDS.findall(block.text)]
        elif isinstance(block, ScriptThinking):
            out += [ThinkingDelta(thinking=w) for w in _WORDS.findall(block.thinking)]
            if block.signature:
                out.append(ThinkingDelta(signature=block.signature))
        elif isinstance(block, ScriptRedactedThinking):
            out.append(_Redacted(block.data))
        elif isinstance(block, ScriptToolUse):
            tool_id = block.id or new_tool_id()
            raw = json.dumps(block.input)
            out.append(ToolCallStart(tool_id, block.name))
            out += [
                ToolCallDelta(tool_id, raw[i : i + _JSON_FRAGMENT])
                for i in range(0, len(raw), _JSON_FRAGMENT)
            ]
            out.append(_EndTool(tool_id))
    return out


def sequence(script: Script, source: str) -> Picker:
    """A picker that hands out the script's responses in order, one per call."""
    played = 0

    def pick(messages: list[Message]) -> Step:
        nonlocal played
        if played >= len(script.responses):
            raise ProviderError(
                f"The script {source} has no response left for model call {played + 1} "
                f"(it holds {len(script.responses)}); add responses to it or start a new session."
            )
        played += 1
        return script.responses[played - 1]

    return pick


def by_prompt(script: Script, source: str) -> Picker:
    """A picker that answers each prompt with the script's turn it names (`turns`): the turn's
    next response after the latest prompt. Stateless, so any order, session or branch works."""

    def pick(messages: list[Message]) -> Step:
        prompts = [i for i, m in enumerate(messages) if m.is_prompt()]
        asked = messages[prompts[-1]].prompt_text() if prompts else ""
        since = messages[prompts[-1] + 1:] if prompts else messages
        replies = sum(1 for m in since if m.role == "assistant")
        turn = next((t for t in script.turns if t.prompt.lower() in asked.lower()), None)
        if turn is None:
            known = "; ".join(f"'{t.prompt}'" for t in script.turns)
            raise ProviderError(
                f"The script {source} has no turn for the prompt '{asked.strip()[:80]}'; it answers "
                f"prompts containing {known}. Ask one of those, or set a real model (an API key)."
            )
        if replies >= len(turn.responses):
            raise ProviderError(
                f"The script {source} has no response left for model call {replies + 1} of the prompt "
                f"'{turn.prompt}' (it holds {len(turn.responses)}); add responses to that turn."
            )
        return turn.responses[replies]

    return pick


def file_provider(path: Path, *, retry: RetryPolicy | None = None) -> ScriptedProvider:
    """`scripted:<path>`: plays the script file at `path` (read once, now): its responses in
    order, or its turns by prompt."""
    script = load_script(path)
    pick = by_prompt(script, str(path)) if script.turns else sequence(script, str(path))
    return ScriptedProvider(str(path), pick, retry=retry)


DEMO_FILE = "larik_demo.txt"
DEMO_INTRO = (
    "[scripted demo] This is a fixed offline script, not a model: whatever the prompt says, it "
    f"writes {DEMO_FILE}, edits one line of it, runs `cat` on it and reports what happened."
)
_EDITED = "This line will be edited."


def _demo_calls(prompt_number: int) -> list[tuple[str, str, dict[str, str]]]:
    """The demo's (text, tool, input) steps; the file names the prompt, so every turn changes it."""
    return [
        (
            f"{DEMO_INTRO} First I'll write {DEMO_FILE}.",
            "write",
            {"path": DEMO_FILE, "content": f"Hello from the Larik demo, prompt {prompt_number}.\n{_EDITED}\n"},
        ),
        (
            "[scripted demo] Now I'll edit one line of it.",
            "edit",
            {
                "path": DEMO_FILE,
                "old_string": _EDITED,
                "new_string": f"This line was edited by the agent at prompt {prompt_number}.",
            },
        ),
        ("[scripted demo] Let me look at the result from the shell.", "bash", {"command": f"cat {DEMO_FILE}"}),
    ]


def _outcome(use: ToolUseBlock, result: ToolResultBlock | None) -> str:
    what = {"write": f"writing {DEMO_FILE}", "edit": f"editing {DEMO_FILE}"}.get(
        use.name, f"`{use.input.get('command', use.name)}`"
    )
    text = result.text() if result is not None else ""
    if result is None:
        return f"{what}: no result"
    if not result.is_error:
        return f"{what}: done"
    if "denied" in text or "Permission" in text:
        return f"{what}: denied"
    first = text.strip().splitlines()[0] if text.strip() else "an error"
    return f"{what}: failed ({first})"


def _demo_report(since: list[Message]) -> str:
    """The final answer: what really happened to each call of this turn."""
    results = {b.tool_use_id: b for m in since for b in m.tool_results()}
    uses = [u for m in since if m.role == "assistant" for u in m.tool_uses()]
    outcomes = [_outcome(u, results.get(u.id)) for u in uses]
    changed = any(
        u.name in ("write", "edit") and (r := results.get(u.id)) is not None and not r.is_error
        for u in uses
    )
    next_step = (
        f"{DEMO_FILE} changed: `%larik /undo` restores it, and `/tree` shows the conversation."
        if changed
        else "Nothing changed on disk, so there is nothing to undo."
    )
    return (
        f"[scripted demo] What happened: {'; '.join(outcomes)}. {next_step} This was the offline "
        "scripted demo: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or choose a model as "
        "provider:model, to work with a real model."
    )


def _reply(blocks: list[dict[str, object]]) -> Step:
    return parse_script({"responses": [{"content": blocks}]}, "scripted:demo").responses[0]


def demo_step(messages: list[Message]) -> Step:
    """The demo's next response: chosen by how many replies follow the latest prompt.

    Stateless, so every new prompt replays the whole demo, in any session or branch.
    """
    prompts = [i for i, m in enumerate(messages) if m.is_prompt()]
    since = messages[prompts[-1] + 1 :] if prompts else messages
    replies = sum(1 for m in since if m.role == "assistant")
    calls = _demo_calls(len(prompts))
    if replies >= len(calls):
        return _reply([{"type": "text", "text": _demo_report(since)}])
    text, name, args = calls[replies]
    blocks: list[dict[str, object]] = []
    if replies == 0:
        blocks.append({"type": "thinking", "thinking": "Scripted plan: write a file, edit it, run a command, report."})
    blocks += [{"type": "text", "text": text}, {"type": "tool_use", "name": name, "input": args}]
    return _reply(blocks)


def demo_provider(*, retry: RetryPolicy | None = None, delay: float = 0.01) -> ScriptedProvider:
    """`scripted:demo`: writes a file, edits it, runs a shell command and reports what happened."""
    return ScriptedProvider("demo", demo_step, retry=retry, delay=delay)
