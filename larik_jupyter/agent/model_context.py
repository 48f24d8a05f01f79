"""What the model is sent and how that context is kept: the system prompt, the messages as
stored, one model call, compaction and `/clear`, the provider a session uses from the next call
on. Part of `AgentLoop` (`loop.py`), whose session, config, door and tools it reads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from larik_jupyter.agent import events as ae
from larik_jupyter.agent.compaction import compact_session, compaction_due, request_tokens
from larik_jupyter.agent.model_call import call_model
from larik_jupyter.agent.outcome import TurnOutcome
from larik_jupyter.agent.prompt import egress_rules, system_prompt
from larik_jupyter.agent.tool_calls import unanswered
from larik_jupyter.config.skills import skills_prompt
from larik_jupyter.llm import events as ev
from larik_jupyter.llm.messages import Message, Usage
from larik_jupyter.llm.pricing import cost as price_usage
from larik_jupyter.llm.provider import Provider
from larik_jupyter.session.entry import Entry
from larik_jupyter.tools.registry import tool_schemas

if TYPE_CHECKING:
    from larik_jupyter.agent.options import AgentOptions
    from larik_jupyter.config.layers import LoadedConfig
    from larik_jupyter.egress.door import EgressDoor
    from larik_jupyter.session.store import Session
    from larik_jupyter.tools.base import Tool

CLEARED_SUMMARY = "The user cleared the conversation context (/clear); earlier messages are not part of it."


class ModelContext(ae.EventSource):
    """The loop's model context; the attributes below are `AgentLoop`'s."""

    session: Session
    options: AgentOptions
    loaded: LoadedConfig
    door: EgressDoor
    tools: dict[str, Tool]
    cwd: Path
    root: Path
    context: list[Message]
    last_call_usage: Usage | None
    _usage_at: int
    _http_trace: Callable[[], Any] | None
    _provider: Provider

    if TYPE_CHECKING:
        @property
        def protecting(self) -> bool: ...

    @property
    def provider(self) -> Provider:
        """The model provider; every request it sends passes the session's egress door."""
        return self._provider

    @provider.setter
    def provider(self, provider: Provider) -> None:
        provider.door = self.door
        self._provider = provider

    def _append(self, message: Message, *, sync: bool = False) -> Message:
        """Store `message` and add it to the model context as stored (its text valid UTF-8)."""
        stored = self.session.append(Entry(type="message", message=message), sync=sync).message
        assert stored is not None
        self.context.append(stored)
        return stored

    def _system(self) -> str:
        return system_prompt(
            self.cwd,
            self.root,
            self.loaded.instructions,
            in_kernel=self.options.host is not None,
            skills=skills_prompt(self.loaded.skills),
            protected=self.protecting and self.options.host is not None,
            egress=egress_rules(self.door.policies),
        )

    async def _call_model(self, step: int, outcome: TurnOutcome) -> ev.MessageEnd:
        """One model call; its end event carries the message as stored."""
        self.emit(ae.ModelCall(step=step))
        end, usage = await call_model(
            self.provider, self._system(), self.context, tool_schemas(self.tools), emit=self.emit,
            store=lambda message, sync: self._append(message, sync=sync), tools=self.tools,
        )
        outcome.usage = outcome.usage + usage
        outcome.cost = price_usage(self.provider.name, outcome.usage)
        self.last_call_usage, self._usage_at = usage, len(self.context)
        self.emit(ae.AssistantMessage(end.message))
        if end.error:
            outcome.status, outcome.error = "interrupted", end.error
        return end

    def _answer_unanswered(self, text: str) -> None:
        """Keep the transcript valid: every tool_use gets a tool_result before the next prompt."""
        if (answers := unanswered(self.context, text)) is not None:
            self._append(answers, sync=True)

    def next_request_tokens(self) -> int:
        """About how many tokens the next request takes (see `compaction.request_tokens`)."""
        return request_tokens(
            self.context, self.last_call_usage, self._usage_at, lambda: (self._system(), tool_schemas(self.tools))
        )

    async def _maybe_compact(self, *, only_if_over: bool = False) -> None:
        """Compact when `compaction.compaction_due` says so (before a prompt, and between the
        steps of a turn; `only_if_over`: right after the prompt)."""
        config = self.loaded.config
        if not self.context or not config.compaction.enabled:
            return
        if compaction_due(self.context, self.next_request_tokens(), config, self.provider.info, only_if_over=only_if_over):
            self.emit(ae.Notice("The conversation is nearing the model's window; compacting it."))
            await self.compact()

    async def compact(self, instructions: str = "") -> str:
        """Summarise the model context into a compaction entry; `All` keeps every message."""
        summary = await compact_session(
            self.session, self.provider, self._system(), self.context, tool_schemas(self.tools), instructions, self.emit
        )
        self.context = self.session.state.context_for_model()
        self.last_call_usage = None
        return summary

    def clear(self) -> None:
        """Start a fresh model context, recorded as a compaction entry so a resume keeps it
        cleared; `All` (and the session file) keep every message."""
        self.session.append(Entry(type="compaction", summary=CLEARED_SUMMARY, model=self.provider.name), sync=True)
        self.context = self.session.state.context_for_model()
        self.last_call_usage = None

    def switch_provider(self, provider: Provider) -> None:
        """Use `provider` from the next call on, recorded in the session (a usage entry with no
        tokens) so a resume picks it up; a running HTTP trace follows it."""
        self.provider = provider
        self.trace_http(self._http_trace)
        self.session.append(Entry(type="usage", usage=Usage(), model=provider.name), sync=True)

    def trace_http(self, factory: Callable[[], Any] | None) -> None:
        """Record provider HTTP bodies through `factory`'s clients (None stops), for this
        provider and any later one; providers without HTTP (scripted) ignore it."""
        self._http_trace = factory
        self.provider.http_client_factory = factory
