"""Turns the official SDKs' exceptions into one clear sentence, or a retryable failure.

The `anthropic` and `openai` SDKs share one exception hierarchy (`APIStatusError` with
`status_code`, `APIConnectionError`, ...), so both providers translate through here.
API keys are scrubbed from every server message before it reaches the user.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from larik_jupyter.llm.provider import ProviderError
from larik_jupyter.llm.retry import TransientError, parse_retry_after

# Errors sent inside a 200 stream (SSE `error` events) carry a type, not a status.
_STATUS_OF_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


@dataclass(frozen=True)
class ApiTarget:
    """Who a call went to, for error sentences: `title` is the vendor, `label` the provider spec."""

    title: str
    label: str
    model: str
    base_url: str
    key_env: str | None
    secret: str = field(repr=False)


def _server_message(body: Any, target: ApiTarget) -> str:
    error = body.get("error", body) if isinstance(body, dict) else body
    message = error.get("message") if isinstance(error, dict) else error
    text = str(message or "").strip().rstrip(".")
    if target.secret and len(target.secret) >= 4:
        text = text.replace(target.secret, "***")
    return text


def _status(exc: Any, body: Any) -> int:
    status = int(getattr(exc, "status_code", 0) or 0)
    if status >= 400:
        return status
    error = body.get("error", body) if isinstance(body, dict) else {}
    kind = error.get("type") if isinstance(error, dict) else None
    return _STATUS_OF_TYPE.get(str(kind), 500)


def is_transport_error(exc: BaseException) -> bool:
    """A network-level failure (refused, reset, cut mid-body) from the SDK's HTTP client."""
    module = type(exc).__module__
    return isinstance(exc, OSError) or module.startswith(("httpx", "httpcore", "h11", "anyio"))


def translate(exc: BaseException, sdk: ModuleType, target: ApiTarget) -> Exception | None:
    """A `TransientError` or `ProviderError` for an SDK failure; None if `exc` is not one."""
    if isinstance(exc, sdk.APIStatusError):
        body = getattr(exc, "body", None)
        status = _status(exc, body)
        detail = _server_message(body, target)
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        return status_failure(status, detail, headers, target)
    if isinstance(exc, sdk.APITimeoutError):
        return TransientError(
            f"no answer from {target.base_url} in time",
            status=None,
            retry_after=None,
            advice=f"check that the server at {target.base_url} is reachable",
        )
    if isinstance(exc, sdk.APIConnectionError) or is_transport_error(exc):
        cause = exc.__cause__ or exc
        return TransientError(
            f"connection to {target.base_url} failed: {cause}".rstrip(": "),
            status=None,
            retry_after=None,
            advice=f"check the network and that the server at {target.base_url} is running",
        )
    return None


def status_failure(status: int, detail: str, headers: Any, target: ApiTarget) -> Exception:
    """The failure for an HTTP error `status`: retryable for 429 and 5xx, else one sentence."""
    suffix = f": {detail}" if detail else ""
    if status == 401:
        fix = (
            f"set {target.key_env} to a valid key"
            if target.key_env
            else "check the API key in config"
        )
        return ProviderError(
            f"{target.title} rejected the API key (401 unauthorized); {fix}.", status=401
        )
    if status == 403:
        return ProviderError(
            f"{target.title} refused access to model '{target.model}' (403 forbidden){suffix}; "
            "check your account's permissions.",
            status=403,
        )
    if status == 404:
        return ProviderError(
            f"{target.title} at {target.base_url} does not know model '{target.model}' (404); "
            f"check the model name in '{target.label}'.",
            status=404,
        )
    if status == 429:
        return TransientError(
            f"rate limited, 429{suffix}",
            status=429,
            retry_after=parse_retry_after(headers),
            advice="wait a minute or check your plan's rate limits",
        )
    if status >= 500:
        return TransientError(
            f"server error {status}{suffix}",
            status=status,
            retry_after=parse_retry_after(headers),
            advice=f"{target.title} may be having trouble, try again later",
        )
    return ProviderError(
        f"{target.title} rejected the request ({status}){suffix}; {_advice(status, detail, target)}.",
        status=status,
        detail=detail,
    )


# Where an API's 400 names the part of the request it refused: a message (`messages.3.content.0`,
# `messages[2].tool_calls[0].id`), a tool (`tools.1.custom.input_schema`, `tools[13].function`,
# "Invalid schema for function 'x'"), or a setting at the top (`thinking.enabled.budget_tokens`).
_MESSAGE = re.compile(r"\bmessages(?:\.\d+|\[\d+\])")
_TOOL = re.compile(r"\btools(?:\.\d+|\[\d+\])[\w.\[\]]*|Invalid schema for function '[^']*'")
_SETTING = re.compile(r"^`?(thinking|budget_tokens|max_tokens)|`thinking\.budget_tokens`|thinking\.type")


def _mentions(detail: str, *words: str) -> bool:
    text = detail.lower()
    return any(word in text for word in words)


def refused_for_images(exc: ProviderError) -> bool:
    """Whether the API refused a request over its images or its size (413)."""
    return exc.status == 413 or (exc.status == 400 and _mentions(exc.detail, "image"))


def _advice(status: int, detail: str, target: ApiTarget) -> str:
    """What to do about a refused request (400, 413, ...): the command or config key that fixes
    what the API's message names, else where to look."""
    provider = target.label.partition(":")[0]
    models_key = f'"models": {{"{target.model}": {{…}}}}'
    if _mentions(detail, "image"):
        return (
            "the images of that request are left out of the next ones, so send the prompt "
            "again; if it still fails, run `/compact` or `/clear`"
        )
    if status == 413:
        return (
            "any images it carried are left out of the next requests; if the next prompt "
            "fails too, run `/compact` to shrink the conversation, or `/clear`"
        )
    if _mentions(detail, "prompt is too long", "context length", "context window", "too many tokens"):
        return "run `/compact` to summarise the conversation, or `/clear` to start afresh"
    # The cause the API names decides the advice: a message of the conversation, a tool's
    # definition, or a setting (checked last: a message's error may mention `thinking` too).
    named = _MESSAGE.search(detail)
    if named or _mentions(detail, "reasoning_content", "tool_result", "tool_use_id"):
        where = f" ({named.group(0)})" if named else ""
        return (
            f"the API refused a message of the conversation{where}, not a setting; run `/rewind` "
            "to a prompt before it, or `/clear` (the request is in the debug trace: `/debug on`, "
            "then send the prompt again)"
        )
    if tool := _TOOL.search(detail):
        return (
            f"the API refused the definition of a tool ({tool.group(0).rstrip(':')}); `/mcp` lists "
            "the MCP servers and their tools: disable the server that offers it, or `/model` to "
            "another provider"
        )
    if _SETTING.search(detail) and _mentions(detail, "thinking", "budget_tokens"):
        return (
            f"change `providers.{provider}.thinking_budget`, or the model's `thinking` with "
            f"{models_key}, in your config"
        )
    if _mentions(detail, "max_tokens", "max_completion_tokens", "temperature", "top_p"):
        return (
            f"change `providers.{provider}.max_tokens`, or the model's `max_output_tokens` / "
            f"`reasoning` with {models_key}, in your config"
        )
    return (
        "the request is in the debug trace (`/debug on`, then send the prompt again); if the "
        "next prompt fails the same way, run `/compact` or `/clear`"
    )


def closed_early(target: ApiTarget) -> TransientError:
    """The failure of a stream that ended cleanly before sending anything."""
    return TransientError(
        "the connection closed before any reply",
        status=None,
        retry_after=None,
        advice=f"check that the server at {target.base_url} is reachable",
    )
